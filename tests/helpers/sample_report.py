"""A small report with every kind of row: repeats, a skip with command output, a cached run,
a stopped-early run, a launch retry, a teardown failure, a mark, logs for the smoking gun."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from bisector.report.model import (
    CostSummary,
    Culprit,
    Endpoint,
    Evaluation,
    LogWindow,
    Mark,
    MeasuredCost,
    MergeRef,
    ModelCost,
    ModelPhases,
    ParentResult,
    Report,
    SearchSummary,
    TeardownFailure,
    Threshold,
)

T0 = 1496382660.0  # 2017-06-02 05:51:00 UTC, as the glog lines below say


def sha(name: str) -> str:
    """A 40-hex commit id whose first characters spell the name (m3 -> m3m3m3...)."""
    text = "".join(f"{ord(c):02x}" for c in name)
    return (text * 40)[:40]


# First-parent chain m0 (good) .. m7 (bad); m4 merges branch b1, b2 (b2 is the culprit).
MAINLINE = [sha(f"m{i}") for i in range(8)]
BRANCH = [sha("b1"), sha("b2")]
RANGE = [*MAINLINE[:4], *BRANCH, *MAINLINE[4:]]
SKIP_REASON = (
    "build failed for m2m2m2: `make quick-release KUBE_FASTBUILD=true` exited with code 2: "
    "compiling k8s.io/apiserver | pkg/storage/cacher.go:566: undefined: watchCacheCapacity "
    "| make: *** [quick-release] Error 1"
)


def glog(at: float, text: str) -> str:
    seconds = at - T0
    minute, second = divmod(seconds, 60)
    return f"I0602 05:{51 + int(minute):02d}:{second:09.6f}       7 {text}\n"


def write_log(path: Path, conflicts_per_s: int, queued: list[int]) -> Path:
    """120 s of apiserver log: node PATCHes (some 409) and node-cacher queue messages."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for second in range(120):
        for k in range(5):
            lines.append(
                glog(
                    T0 + second + k / 10,
                    f"wrap.go:42] PATCH /api/v1/nodes/hollow-node-{k}/status: (3ms) 200 "
                    "[[kubelet/v1.7.0] 10.0.0.1:1]",
                )
            )
        for k in range(conflicts_per_s if second >= 30 else 0):
            lines.append(
                glog(
                    T0 + second + 0.5 + k / 1000,
                    f"wrap.go:42] PATCH /api/v1/nodes/hollow-node-{k}/status: (1ms) 409 "
                    "[[kubelet/v1.7.0] 10.0.0.1:1]",
                )
            )
    for i, value in enumerate(queued):
        lines.append(
            glog(
                T0 + 10 * i + 0.9,
                f"cacher.go:566] cacher (*api.Node): {value} objects queued in incoming channel.",
            )
        )
    lines.sort()
    path.write_text("".join(lines))
    os.utime(path, (T0 + 200, T0 + 200))  # glog lines have no year: the file's mtime gives it
    return path


def evaluation(n: int, commit: str, phase: str, value: float | None, **kw: object) -> Evaluation:
    verdict = "skip" if value is None else ("bad" if value >= 100 else "good")
    fields: dict[str, object] = {
        "n": n,
        "commit": commit,
        "subject": f"subject of {commit[:6]}",
        "phase": phase,
        "verdict": verdict,
        "value": value,
        "metrics": {"conflicts": value},
        "duration_s": 60.0 + n,
        "reason": None,
        "launch_attempts": 1,
        "logs": [],
        "cached": False,
        "started_at": T0 + 100 * n,
        "why": f"why {n}",
        "window": LogWindow(T0 + 10, T0 + 120, 110.0),
    }
    fields.update(kw)
    return Evaluation(**fields)  # type: ignore[arg-type]


# The cost model's figures for a gce-like run (the 2017 job's phases, 8 evaluations) at
# 4.0 per cluster-hour, beside what 10 evaluations (1 more reused) used.
SAMPLE_COST = CostSummary(
    price_per_cluster_hour=4.0,
    model=ModelCost(
        evaluations=8,
        rounds=8,
        basis="the 2017 kubemark job's phases (ci-kubernetes-kubemark-gce-scale)",
        phases=ModelPhases(1800.0, 720.0, 1800.0, 120.0, 300.0, 900.0),
        wall_s=900.0 + 8 * 4740.0,
        cluster_s=8 * 2940.0,
        cluster_hours=8 * 2940.0 / 3600,
        money=26.13,
    ),
    measured=MeasuredCost(
        evaluations=10,
        reused=1,
        wall_s=8 * 3600.0 + 1500.0,
        cluster_s=5.5 * 3600,
        cluster_hours=5.5,
        counted_whole=0,
        money=22.0,
    ),
)


def sample_report(
    run_dir: Path, *, remote: str | None = "https://github.com/kubernetes/kubernetes"
) -> Report:
    culprit, parent = BRANCH[1], BRANCH[0]
    culprit_log = write_log(run_dir / "evals/010/logs/kube-apiserver.log", 20, [3, 40, 100, 100])
    parent_log = write_log(run_dir / "evals/011/logs/kube-apiserver.log", 0, [2, 5, 9])
    build_log = run_dir / "evals/005/build.log"
    build_log.parent.mkdir(parents=True, exist_ok=True)
    build_log.write_text("$ make quick-release\nexit 2\n")
    evaluations = [
        evaluation(1, MAINLINE[0], "endpoint", 10.0),
        evaluation(2, MAINLINE[0], "endpoint", 12.0),
        evaluation(3, MAINLINE[7], "endpoint", 2400.0),
        evaluation(4, MAINLINE[7], "endpoint", 2500.0),
        evaluation(
            5,
            MAINLINE[2],
            "bisect",
            None,
            reason=SKIP_REASON,
            command_logs=[str(build_log)],
            window=None,
        ),
        evaluation(6, MAINLINE[3], "bisect", 11.0, cached=True),
        evaluation(7, MAINLINE[4], "bisect", 2450.0, stopped_early="conflicts 2450 >= 100"),
        evaluation(8, parent, "bisect", 13.0, launch_attempts=2),
        evaluation(9, culprit, "bisect", 2300.0, teardown_error="kind delete cluster: exit 1"),
        evaluation(10, culprit, "confirm", 2350.0, logs=[str(culprit_log)]),
        evaluation(11, parent, "confirm", 12.5, logs=[str(parent_log)]),
    ]
    merge = MergeRef(MAINLINE[4], "Merge pull request #46588 from wojtek-t/selectors", 46588)
    found = Culprit(
        commit=culprit,
        subject="Optimize selector for single-matching items",
        author="wojtek-t <wojtek-t@users.noreply.github.com>",
        date="2017-05-26T15:06:03+00:00",
        pr=46588,
        merge=merge,
        merges=[merge],
        confirmed=True,
        confirmation={culprit: "bad", parent: "good"},
        confidence=None,
        value=2350.0,
        parent=ParentResult(parent, 12.5, "good"),
    )
    return Report(
        status="found",
        culprit=found,
        culprits=[found],  # as a run writes it: `culprit` is culprits[0]
        candidates=[],
        search=SearchSummary(mode="git-bisect"),
        good=Endpoint(MAINLINE[0], "good subject", 11.0, [10.0, 12.0]),
        bad=Endpoint(MAINLINE[7], "bad subject", 2450.0, [2400.0, 2500.0]),
        threshold=Threshold(100.0, "given"),
        metric="conflicts",
        repeats=2,
        first_parent=True,
        paths=[],
        backend="kind",
        config_fingerprint="f00d",
        run_dir=str(run_dir),
        range_size=7,
        range=RANGE,
        first_parent_range=MAINLINE,
        evaluations=evaluations,
        verdicts={},
        verdict_reasons={},
        bisect_log="git bisect start\n# first bad commit: [x] y\n",
        marks=[Mark(MAINLINE[1], "skip", "known broken: does not boot")],
        teardown_failures=[
            TeardownFailure(culprit, str(run_dir / "evals/009"), "kind delete cluster: exit 1")
        ],
        remote=remote,
        cost=SAMPLE_COST,
    )


def inconclusive_report(run_dir: Path) -> Report:
    """The sample's first-parent range where git was left with m1 (marked skip by hand),
    m2 (does not build) and m3 (bad): no culprit, its `conclusive` not set."""
    report = sample_report(run_dir)
    m1, m2, m3 = MAINLINE[1:4]
    runs = [e for e in report.evaluations if e.commit != m3]
    return replace(
        report,
        status="inconclusive",
        culprit=None,
        culprits=[],
        candidates=[m2, m1, m3],  # in git's order, not the range's
        verdicts={m1: "skip", m2: "skip", m3: "bad"},
        evaluations=[*runs, evaluation(6, m3, "bisect", 2000.0)],
        teardown_failures=[],
    )
