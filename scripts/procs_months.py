"""Build and launch one first-parent commit a month with one `procs` configuration.

The proof that a configuration builds every tree of an era: for each month from --since
to --until, the first first-parent commit of --tip committed in that month is built
(`ProcsBackend.build`: the tree's own steps, the config's fixes, `go build`) and launched
(the bisection's own evaluation: etcd, the apiserver answering /version with the
commit, the hollow nodes Ready, the watches open; the warmup, the load check, the metric;
the teardown). Nothing is changed per month.

    PYTHONPATH=. python scripts/procs_months.py --repo /work/kube/k2017 --tip master \\
        --config configs/procs-2017.toml --since 2017-06 --until 2018-03

It prints what it does as it goes (a cold build takes minutes) and a table at the end:
commit, date, built, launched, seconds. Exit 0 when every month built and launched, 1
otherwise. The worktrees it adds are removed on every exit path; teardown runs on every
exit path (Ctrl-C and SIGTERM too).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bisector import proc
from bisector.backends.base import Candidate, ForwardingBackend
from bisector.backends.registry import create_backend
from bisector.config import Section, load_config
from bisector.errors import InfraError
from bisector.gitrepo import GitRepo
from bisector.measure.evaluation import EvaluationSettings, evaluate_candidate
from bisector.measure.provenance import WindowRule
from bisector.report.adaptation import read_build_fixes
from bisector.settings import RunSettings
from bisector.signals import held_during, sigterm_as_interrupt


@dataclass
class Month:
    month: str  # 2017-06
    commit: str
    date: str  # committer date, ISO
    built: str = "-"  # "yes", or why not
    launched: str = "-"
    build_s: float | None = None
    launch_s: float | None = None
    value: float | None = None  # the config's metric over the warmup


class _FinishingTeardown(ForwardingBackend):
    """The backend with a teardown that runs to its end whatever signal arrives."""

    def teardown(self, candidate: Candidate) -> None:
        with held_during("teardown"), proc.protected():
            self.inner.teardown(candidate)


def months(since: str, until: str) -> list[str]:
    """`2017-11`, `2018-02` -> 2017-11, 2017-12, 2018-01, 2018-02."""
    year, month = (int(p) for p in since.split("-"))
    last = tuple(int(p) for p in until.split("-"))
    found = []
    while (year, month) <= last:
        found.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return found


def first_of_months(repo: GitRepo, tip: str, wanted: list[str]) -> list[Month]:
    """Per month, the oldest first-parent commit of `tip` committed in it (UTC)."""
    log = repo.git("log", "--first-parent", "--format=%H %cI", tip)
    chosen: dict[str, Month] = {}
    for line in log.splitlines():  # newest first: the last one seen in a month is its first
        commit, _, date = line.partition(" ")
        when = dt.datetime.fromisoformat(date).astimezone(dt.UTC)
        key = f"{when:%Y-%m}"
        if key in wanted:
            chosen[key] = Month(key, commit, when.strftime("%Y-%m-%d %H:%M"))
    return [chosen[m] for m in wanted if m in chosen]


def _why(exc: InfraError) -> str:
    return exc.reason.replace("\n", " | ")


def _table(rows: list[Month], metric: str) -> str:
    head = (
        f"{'month':7}  {'commit':12}  {'date (UTC)':16}  {'built':>8}  {'launched':>8}  "
        f"{'seconds (build + launch)':24}  {metric}"
    )
    lines = [head]
    for r in rows:
        seconds = " + ".join(f"{s:.0f}" for s in (r.build_s, r.launch_s) if s is not None)
        value = "-" if r.value is None else f"{r.value:g}"
        lines.append(
            f"{r.month:7}  {r.commit[:12]:12}  {r.date:16}  {r.built[:8]:>8}  "
            f"{r.launched[:8]:>8}  {seconds or '-':24}  {value}"
        )
    failed = [r for r in rows if r.built != "yes" or r.launched != "yes"]
    for r in failed:
        why = r.built if r.built != "yes" else r.launched
        lines.append(f"  {r.month} {r.commit[:12]}: {why}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a Kubernetes checkout")
    parser.add_argument("--config", type=Path, default=Path("configs/procs-2017.toml"))
    parser.add_argument("--tip", default="HEAD", help="whose first-parent history")
    parser.add_argument("--since", default="2017-06", help="first month, YYYY-MM")
    parser.add_argument("--until", default="2018-03", help="last month, YYYY-MM")
    parser.add_argument("--run-dir", type=Path, help="default: a new directory under /tmp")
    parser.add_argument("--warmup", help="override [run] warmup (e.g. 20s)")
    args = parser.parse_args(argv)

    repo = GitRepo(args.repo)
    rows = first_of_months(repo, args.tip, months(args.since, args.until))
    if not rows:
        print(f"no first-parent commit of {args.tip} in {args.since}..{args.until}")
        return 1
    config = load_config(args.config)
    if args.warmup:
        run = dict(config.table("run").data, warmup=args.warmup)
        config = Section({**config.data, "run": run}, config.file)
    settings = RunSettings.from_config(
        config, good=rows[0].commit, bad=rows[-1].commit, repo=repo.root
    )
    run_dir = (args.run_dir or Path(f"/tmp/procs-months-{int(time.time())}")).absolute()
    worktrees = run_dir / "worktrees"
    base = worktrees / "base"
    print(f"run directory {run_dir}; {len(rows)} months; config {args.config}", flush=True)
    for r in rows:
        print(f"  {r.month}: {r.commit[:12]} ({r.date})", flush=True)
    try:
        with sigterm_as_interrupt(), proc.track_groups(run_dir / "processes.jsonl"):
            print(f"checking out {rows[0].commit[:12]} (the harness's repository)", flush=True)
            repo.add_worktree(base, rows[0].commit)
            backend = _FinishingTeardown(
                create_backend(
                    settings.backend, settings.backend_context(run_dir, base_worktree=base)
                )
            )
            print(
                "setup: etcd, and the harness (kubemark) built once or from the cache", flush=True
            )
            backend.setup()
            evaluation = EvaluationSettings(
                settings.metric,
                scorer=settings.metrics.scorer(settings.metric),
                window=WindowRule(expected_s=settings.warmup_s, real_time=True),
                launch_attempts=settings.launch_attempts,
                retry_wait_s=settings.retry_wait_s,
            )
            try:
                for r in rows:
                    _one(repo, backend, r, run_dir, evaluation)
            finally:
                backend.close()
    except KeyboardInterrupt:
        print("interrupted; teardown done", file=sys.stderr)
        # The months done so far are figures of their own (a cold build takes minutes).
        tried = [r for r in rows if r.built != "-"]
        if tried:
            print()
            print(_table(tried, settings.metric))
        return 130
    finally:
        print(f"removing the worktrees under {worktrees}", flush=True)
        repo.remove_worktrees_under(worktrees)
    print()
    print(_table(rows, settings.metric))
    ok = all(r.built == "yes" and r.launched == "yes" for r in rows)
    print("every month built and launched" if ok else "NOT every month built and launched")
    return 0 if ok else 1


def _one(
    repo: GitRepo,
    backend: ForwardingBackend,
    r: Month,
    run_dir: Path,
    evaluation: EvaluationSettings,
) -> None:
    worktree = run_dir / "worktrees" / r.month
    eval_dir = run_dir / "evals" / f"{r.month}-{r.commit[:12]}"
    print(f"{r.month} {r.commit[:12]}: checking out", flush=True)
    try:
        repo.add_worktree(worktree, r.commit)
    except InfraError as exc:
        r.built = f"checkout failed: {_why(exc)}"
        print(f"{r.month}: {r.built}", flush=True)
        return
    try:
        print(f"{r.month} {r.commit[:12]}: building", flush=True)
        start = time.monotonic()
        try:
            backend.build(Candidate(r.commit, worktree, eval_dir / "build"))
        except InfraError as exc:
            r.built = f"build failed: {_why(exc)}"
            print(f"{r.month}: {r.built}", flush=True)
            return
        finally:
            r.build_s = time.monotonic() - start
        r.built = "yes"
        applied = read_build_fixes(eval_dir / "build")
        shown = ", ".join(a.describe() for a in applied) or "nothing"
        print(f"{r.month}: built in {r.build_s:.0f}s; beyond go build: {shown}", flush=True)
        print(f"{r.month} {r.commit[:12]}: launching, a warmup, teardown", flush=True)
        # The bisection's own evaluation (its build now from the cache): launch attempts,
        # readiness, the load check and the teardown are what a hunt gets.
        m = evaluate_candidate(backend, Candidate(r.commit, worktree, eval_dir), evaluation)
        r.launch_s = m.phase_s.get("launch")
        r.launched = "yes" if "warmup" in m.phase_s else f"launch failed: {m.reason}"
        r.value = m.value
        print(f"{r.month}: launched {r.launched}; {evaluation.metric} {m.value}", flush=True)
    finally:
        repo.remove_worktree(worktree)


if __name__ == "__main__":
    sys.exit(main())
