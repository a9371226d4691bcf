"""Measure commits of a Kubernetes checkout with the `procs` backend, outside a bisection.

Each evaluation is the bisection's own (`evaluate_candidate`: build, launch, warmup,
collect, score, teardown), so what this prints is what a hunt would see. Runs of several
commits are interleaved (A B A B ...) so a slow drift of the machine touches all alike.

    PYTHONPATH=. python scripts/procs_measure.py --repo ~/kubernetes \\
        --config configs/procs-2017.toml 1444d25:good 7043372:bad --runs 3

    # the separation against the number of node watches
    ... 1444d25 7043372 --set watchers=1000 --runs 1

`REV:good` / `REV:bad` state what a commit should score; with `--check` the threshold
is calibrated from the good and bad runs as the bisection does (`calibrate_threshold`),
every run is held to its side, and the exit code is 1 when one is on the wrong side.
Per run it prints the metric, the other log metrics, the CPU seconds of the apiserver
and etcd over the warmup (processes.json), the watch delay and the build time; `--json`
keeps it all. Nothing is left running: teardown runs on every exit path (Ctrl-C too).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import statistics
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bisector import proc
from bisector.backends.base import Candidate, ForwardingBackend
from bisector.backends.registry import create_backend
from bisector.collected import read_processes
from bisector.config import Section, load_config
from bisector.errors import BisectorError, CollectError, InfraError
from bisector.gitrepo import GitRepo
from bisector.measure.evaluation import EvaluationSettings, evaluate_candidate
from bisector.measure.provenance import WindowRule
from bisector.search.decide import calibrate_threshold
from bisector.settings import RunSettings
from bisector.signals import held_during, sigterm_as_interrupt


@dataclass
class Target:
    rev: str
    expect: str | None
    commit: str = ""
    build_s: float | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)


class _FinishingTeardown(ForwardingBackend):
    """The backend with a teardown that runs to its end whatever signal arrives."""

    def teardown(self, candidate: Candidate) -> None:
        with held_during("teardown"), proc.protected():
            self.inner.teardown(candidate)


def _parse_target(text: str) -> Target:
    rev, _, expect = text.partition(":")
    if expect not in ("", "good", "bad"):
        raise SystemExit(f"{text!r}: write REV, REV:good or REV:bad")
    return Target(rev, expect or None)


def _override(section: Section, sets: list[str]) -> Section:
    data = dict(section.data)
    for item in sets:
        key, eq, value = item.partition("=")
        if not eq:
            raise SystemExit(f"--set {item!r}: write KEY=VALUE (a TOML value)")
        try:
            data[key] = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            data[key] = value  # a bare string
    return Section(data, section.file, section.path)


def _row(target: Target, m: Any, log_dir: Path) -> dict[str, Any]:
    row: dict[str, Any] = {
        "commit": target.commit[:12],
        "value": m.value,
        "reason": m.reason,
        "duration_s": m.duration_s,
        "conflicts": m.metrics.get("conflicts"),
        "node_writes": m.metrics.get("node_writes"),
        "cacher_hwm": m.metrics.get("cacher_hwm"),
        "eval_dir": m.eval_dir,
    }
    with contextlib.suppress(CollectError):
        for name, usage in read_processes(log_dir).items():
            row[f"cpu_s[{name}]"] = usage.cpu_s
            row[f"peak_rss_mib[{name}]"] = round(usage.peak_rss_bytes / 2**20)
    with contextlib.suppress(OSError, ValueError):
        load = json.loads((log_dir / "watch-load.json").read_text())
        row["watch_delay_p50_s"] = load.get("delay_s", {}).get("p50")
        row["watches_open"] = load.get("open")
        row["watches_reopened"] = load.get("reopened")
    return row


def _show(row: dict[str, Any]) -> str:
    keys = [
        "value",
        "conflicts",
        "cacher_hwm",
        "cpu_s[kube-apiserver]",
        "cpu_s[etcd]",
        "cpu_s[hollow-nodes]",
        "watch_delay_p50_s",
        "duration_s",
    ]
    shown = " ".join(f"{k}={row.get(k)}" for k in keys)
    return f"{row['commit']} {shown}" + (f" SKIP: {row['reason']}" if row["reason"] else "")


def _off_side(rev: str, number: int, run: dict[str, Any], expect: str) -> str:
    """Why one run fails the check: a skip is an infrastructure failure, not a value on a side."""
    if run["value"] is None:
        return f"{rev} run {number}: skipped ({run['reason']}), expected {expect}"
    side = "below" if expect == "bad" else "at or above"
    return f"{rev} run {number}: {run['value']} ({side} the threshold, expected {expect})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="+", help="REV, REV:good or REV:bad")
    parser.add_argument("--repo", type=Path, required=True, help="a Kubernetes checkout")
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=1, help="runs of each commit")
    parser.add_argument("--set", action="append", default=[], help="[backends.procs] KEY=VALUE")
    parser.add_argument("--warmup", help="override [run] warmup (e.g. 5m)")
    parser.add_argument("--run-dir", type=Path, help="default: a new directory under /tmp")
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    parser.add_argument("--check", action="store_true", help="exit 1 unless runs fit REV:good/bad")
    args = parser.parse_args(argv)

    config = load_config(args.config)
    if args.warmup:
        run = dict(config.table("run").data, warmup=args.warmup)
        config = Section({**config.data, "run": run}, config.file)
    repo = GitRepo(args.repo)
    targets = [_parse_target(t) for t in args.targets]
    for t in targets:
        t.commit = repo.resolve(t.rev)
    settings = RunSettings.from_config(
        config, good=targets[0].commit, bad=targets[0].commit, repo=repo.root
    )
    section = _override(settings.backend_section, args.set)
    run_dir = (args.run_dir or Path(f"/tmp/procs-measure-{int(time.time())}")).absolute()
    run_dir.mkdir(parents=True, exist_ok=True)
    base = run_dir / "worktrees" / "base"
    repo.add_worktree(base, targets[0].commit)
    # The run's own context (bisector.settings), with the --set overrides in its table.
    context = dataclasses.replace(
        settings.backend_context(run_dir, base_worktree=base), section=section
    )
    backend = create_backend(settings.backend, context)
    scorer = settings.metrics.scorer(settings.metric)  # a [metrics.NAME] one too
    rule = WindowRule(expected_s=settings.warmup_s, real_time=True, times_required=True)
    print(
        f"run directory {run_dir}; {settings.backend}, metric {settings.metric}, warmup "
        f"{settings.warmup_s:g}s; {', '.join(args.set) or 'config settings'}",
        flush=True,
    )

    n = 0
    with sigterm_as_interrupt(), proc.track_groups(run_dir / "processes.jsonl"):
        for line in proc.stop_orphans(run_dir / "processes.jsonl"):
            print(line)
        backend.setup()
        try:
            for t in targets:  # builds first: their times are figures of their own
                worktree = run_dir / "worktrees" / t.commit[:12]
                repo.add_worktree(worktree, t.commit)
                candidate = Candidate(t.commit, worktree, run_dir / "builds" / t.commit[:12])
                start = time.monotonic()
                try:
                    backend.build(candidate)
                    t.build_s = round(time.monotonic() - start, 1)
                    print(f"built {t.commit[:12]} in {t.build_s:g}s", flush=True)
                except InfraError as exc:
                    print(f"build of {t.commit[:12]} failed: {exc.reason}", flush=True)
            for _ in range(args.runs):
                for t in targets:
                    n += 1
                    worktree = run_dir / "worktrees" / t.commit[:12]
                    candidate = Candidate(t.commit, worktree, run_dir / "evals" / f"{n:03d}")
                    m = evaluate_candidate(
                        _FinishingTeardown(backend),
                        candidate,
                        EvaluationSettings(
                            settings.metric,
                            scorer=scorer,
                            window=rule,
                            launch_attempts=settings.launch_attempts,
                            retry_wait_s=settings.retry_wait_s,
                        ),
                    )
                    row = _row(t, m, candidate.log_dir)
                    t.runs.append(row)
                    print(_show(row), flush=True)
        finally:
            backend.close()
    return _summary(targets, args)


def _summary(targets: list[Target], args: argparse.Namespace) -> int:
    print("\nsummary (median [min-max] of the runs with a value):")
    for t in targets:
        values = [r["value"] for r in t.runs if r["value"] is not None]
        cpu = [r["cpu_s[kube-apiserver]"] for r in t.runs if r.get("cpu_s[kube-apiserver]")]
        spread = (
            f"{statistics.median(values):g} [{min(values):g}-{max(values):g}]" if values else "-"
        )
        cpus = f"{statistics.median(cpu):g} [{min(cpu):g}-{max(cpu):g}]" if cpu else "-"
        print(
            f"  {t.rev} ({t.commit[:12]}, {t.expect or '?'}): metric {spread}; apiserver "
            f"CPU-s {cpus}; build {t.build_s}s; {len(values)}/{len(t.runs)} runs measured"
        )
    if args.json:
        blob = [
            {
                "rev": t.rev,
                "commit": t.commit,
                "expect": t.expect,
                "build_s": t.build_s,
                "runs": t.runs,
            }
            for t in targets
        ]
        args.json.write_text(json.dumps(blob, indent=1) + "\n")
    if not args.check:
        return 0
    good = [
        r["value"] for t in targets if t.expect == "good" for r in t.runs if r["value"] is not None
    ]
    bad = [
        r["value"] for t in targets if t.expect == "bad" for r in t.runs if r["value"] is not None
    ]
    if not good or not bad:
        print("CHECK FAILED: no measured run on one side")
        return 1
    try:
        threshold, how = calibrate_threshold(statistics.median(good), statistics.median(bad))
    except BisectorError as exc:
        print(f"CHECK FAILED: {exc}")
        return 1
    wrong = [
        _off_side(t.rev, i + 1, r, t.expect)
        for t in targets
        if t.expect
        for i, r in enumerate(t.runs)
        if r["value"] is None or (r["value"] >= threshold) != (t.expect == "bad")
    ]
    print(f"threshold {threshold:g} ({how})")
    for line in wrong:
        print(f"CHECK FAILED: {line}")
    print("check passed" if not wrong else f"{len(wrong)} run(s) on the wrong side or skipped")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
