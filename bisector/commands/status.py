"""`bisector status`: progress of the runs of a repository (or of one run directory).

Each run is read into a `RunStatus` (typed; `--json` prints a list of them, docs/json.md)
and written as lines for a person.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import typer

from bisector.bisection.layout import RunLayout
from bisector.commands.runs_dirs import check_run_dir, run_dirs
from bisector.config import Section
from bisector.gitrepo import GitRepo, RepoGiven
from bisector.measure.journal import (
    Done,
    EarlyGoodWithdrawn,
    Failed,
    Interrupted,
    Mark,
    Measured,
    Pruned,
    Record,
    Resume,
    Start,
    TeardownFailed,
    ThresholdSet,
    Verdict,
    read_journal,
)
from bisector.measure.measurement import Measurement
from bisector.metric_registry import MetricRegistry
from bisector.numbers import format_threshold
from bisector.runfiles import disk_use, size_text

FINISHED = "finished"
# Records a run writes when it starts and ends; anything else (a `mark`, the `cleaned`
# records of `bisector cleanup`) may be appended later by other commands.
_LIFECYCLE = (Start, Resume, Done, Interrupted, Failed)


def lock_held(lock: Path) -> bool:
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def run_state(records: list[Record]) -> str:
    """How the run's last session ended, from its own start and end records.

    "finished", "interrupted", "failed: WHY" (an error stopped it), or "stopped
    (killed?)" (started and never said how it ended); a finished run a person marked
    a commit of since says so: rerunning it takes the mark.
    """
    at = max((i for i, r in enumerate(records) if isinstance(r, _LIFECYCLE)), default=-1)
    last = records[at] if at >= 0 else None
    if isinstance(last, Done):
        if any(isinstance(r, Mark) for r in records[at:]):
            return f"{FINISHED}; a commit was marked since: rerun its command to use the mark"
        return FINISHED
    if isinstance(last, Interrupted):
        return "interrupted"
    if isinstance(last, Failed):
        return f"failed: {last.reason}"
    return "stopped (killed?)"


@dataclass(frozen=True)
class Threshold:
    value: float
    how: str
    shown: str  # as `bisector run` printed it (a count's threshold rounded toward its side)


@dataclass(frozen=True)
class RunStatus:
    """One run directory as `status` and `runs` show it (`--json`: docs/json.md)."""

    run_dir: str
    good: str
    bad: str
    state: str  # finished, running, interrupted, failed: WHY, stopped (killed?)
    measurements: int
    verdicts: dict[str, int]  # verdict -> how many were given
    threshold: Threshold | None
    early_good_withdrawn: str | None  # why, when they were
    teardown_failures: int
    culprit: str | None  # when finished: the culprit, or None (inconclusive)
    finished: bool
    command: str  # the command that started (or resumes) it
    disk_bytes: int  # what the run directory holds
    logs_bytes: int  # of which logs, what `bisector runs --prune` drops
    pruned_at: float | None = None  # when `bisector runs --prune` last dropped its logs
    # The measurements by phase (endpoint, bisect, confirm) and how many were skips: they
    # add up to `measurements`.
    measured_in: dict[str, int] = field(default_factory=dict)
    skips: int = 0
    # Where the verdicts came from: "measured" (a run of that commit), "marked" (by hand),
    # "same tree" (runs of its source tree, another commit's or an earlier run's); they
    # add up to the verdicts'.
    verdicts_from: dict[str, int] = field(default_factory=dict)
    repo: str = ""  # the checkout the run bisects, as its journal recorded it

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def run_status(run_dir: Path, *, running: bool = False) -> RunStatus:
    layout = RunLayout(run_dir)
    records = read_journal(layout.journal)
    start = next((r for r in records if isinstance(r, Start)), Start("?", "?"))
    # What git bisect was last told about each commit (a rerun replays, never adds).
    latest = {r.commit: r.verdict for r in records if isinstance(r, Verdict)}
    verdicts = Counter(latest.values())
    runs = [r.measurement for r in records if isinstance(r, Measured)]
    measured = len(runs)
    state = run_state(records)
    if running and state != FINISHED:
        state = "running"
    threshold = next((r for r in reversed(records) if isinstance(r, ThresholdSet)), None)
    withdrawn = next((r for r in records if isinstance(r, EarlyGoodWithdrawn)), None)
    failed = [r for r in records if isinstance(r, TeardownFailed)]
    done = next((r for r in reversed(records) if isinstance(r, Done)), None)
    command = next(
        (r.command for r in reversed(records) if isinstance(r, (Start, Resume)) and r.command),
        "",
    )
    disk = disk_use(run_dir, _report_log_dirs(run_dir))
    pruned = next((r for r in reversed(records) if isinstance(r, Pruned)), None)
    return RunStatus(
        repo=start.repo or "",
        run_dir=str(run_dir),
        good=start.good,
        bad=start.bad,
        state=state,
        measurements=measured,
        verdicts=dict(sorted(verdicts.items())),
        threshold=_threshold(threshold, start) if threshold else None,
        early_good_withdrawn=withdrawn.why if withdrawn else None,
        teardown_failures=len(failed),
        culprit=done.culprit if done else None,
        finished=state.startswith(FINISHED),
        command=command,
        disk_bytes=disk.total_bytes,
        logs_bytes=disk.logs_bytes,
        pruned_at=pruned.at if pruned else None,
        measured_in=dict(Counter(m.phase for m in runs)),
        skips=sum(m.value is None for m in runs),
        verdicts_from=_verdicts_from(latest, runs, records),
    )


def _verdicts_from(
    latest: dict[str, str], runs: list[Measurement], records: list[Record]
) -> dict[str, int]:
    """Where each commit's latest verdict came from (a person's mark wins, as in the run)."""
    marked = {r.commit: r.verdict for r in records if isinstance(r, Mark)}
    own = {m.commit for m in runs if m.phase != "confirm"}
    sources = Counter(
        "marked" if marked.get(commit) == verdict else "measured" if commit in own else "same tree"
        for commit, verdict in latest.items()
    )
    return {k: sources[k] for k in ("measured", "marked", "same tree") if sources[k]}


def _report_log_dirs(run_dir: Path) -> set[Path]:
    """The evaluations whose logs the run's report draws (`bisector runs --prune` keeps them)."""
    from bisector.report import report_of
    from bisector.report.smoking_gun import drawn_log_dirs

    report = report_of(run_dir)
    return drawn_log_dirs(report) if report is not None else set()


def status_lines(run: RunStatus) -> list[str]:
    lines = [
        run.run_dir,
        f"  range {run.good[:12]}..{run.bad[:12]}: {run.state}",
        f"  measurements: {run.measurements}{_measured_in(run)}",
        f"  search verdicts (told git bisect): {_verdicts(run)}",
    ]
    if run.threshold:
        lines.append(f"  threshold {run.threshold.shown} ({run.threshold.how})")
    if run.early_good_withdrawn:
        # Verdicts above count both searches: the first one's early goods decided nothing.
        lines.append(f"  early good verdicts withdrawn: {run.early_good_withdrawn}; searched again")
    if run.teardown_failures:
        lines.append(
            f"  TEARDOWN FAILED {run.teardown_failures} time(s): "
            f"bisector cleanup --run-dir {run.run_dir}"
        )
    if run.finished:
        lines.append(f"  culprit: {run.culprit or 'none (inconclusive)'}")
    if run.command:
        verb = "command" if run.state.startswith((FINISHED, "running")) else "resume with"
        lines.append(f"  {verb}: {run.command}")
    from bisector.report.summary import prune_command

    # The command as it works from here: the demo's run is read from bisector's checkout.
    prune = prune_command(run.repo)
    lines.append(f"  disk: {disk_text(run.disk_bytes, run.logs_bytes, run.pruned_at, prune)}")
    return lines


# How the phases are said, in the order a run goes through them.
_PHASES = {"endpoint": "endpoints", "bisect": "search", "confirm": "confirmation"}


def _measured_in(run: RunStatus) -> str:
    """` (endpoints 2, search 6, confirmation 3; 1 of them a skip)`: parts that add up."""
    if not run.measured_in:
        return ""
    parts = [f"{_PHASES.get(k, k)} {run.measured_in[k]}" for k in _PHASES if k in run.measured_in]
    parts += [f"{k} {v}" for k, v in run.measured_in.items() if k not in _PHASES]
    skips = f"; {run.skips} of them {'skips' if run.skips > 1 else 'a skip'}" if run.skips else ""
    return f" ({', '.join(parts)}{skips})"


def _verdicts(run: RunStatus) -> str:
    """`bad 4, good 3 on 7 commits (6 measured, 1 from runs of the same source tree)`: the
    search's; the endpoints and the confirmation tell git bisect nothing."""
    if not run.verdicts:
        return "none yet"
    given = ", ".join(f"{k} {v}" for k, v in run.verdicts.items())
    commits = sum(run.verdicts.values())
    words = {
        "measured": "measured",
        "marked": "marked by hand",
        "same tree": "from runs of the same source tree",
    }
    sources = ", ".join(f"{n} {words[k]}" for k, n in run.verdicts_from.items())
    return f"{given} on {commits} commit{'s' if commits > 1 else ''}" + (
        f" ({sources})" if sources else ""
    )


def _threshold(record: ThresholdSet, start: Start) -> Threshold:
    """The threshold written as the run wrote it: for the run's metric, in its direction
    (a built-in's; the question the run answers names the metric)."""
    metric = ""
    with contextlib.suppress(ValueError, IndexError, TypeError):
        named = json.loads(start.question)[1]
        metric = named if isinstance(named, str) else ""
    worse = MetricRegistry.from_config(Section()).worse(metric) if metric else "higher"
    return Threshold(record.value, record.how, format_threshold(record.value, metric, worse))


def disk_text(
    total: int, logs: int, pruned_at: float | None = None, prune: str = "bisector runs --prune"
) -> str:
    """`338 MB, of which logs 335 MB (bisector runs --prune drops them)`; after a prune,
    when it ran (what is left is the report's: the smoking gun's logs)."""
    pruned = ""
    if pruned_at is not None:
        at = datetime.fromtimestamp(pruned_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
        pruned = f"; logs pruned on {at}, the smoking gun's kept"
    if not logs:
        return size_text(total) + pruned
    return f"{size_text(total)}, of which logs {size_text(logs)} ({prune} drops them){pruned}"


def describe(run_dir: Path, *, running: bool = False) -> list[str]:
    return status_lines(run_status(run_dir, running=running))


def statuses(repo: Path | None, run_dir: Path | None) -> list[RunStatus]:
    git_repo = GitRepo(repo or Path(), given=RepoGiven.flag(repo))
    running = lock_held(git_repo.common_dir / "bisector.lock")
    dirs = [check_run_dir(run_dir)] if run_dir is not None else run_dirs(git_repo)
    # The lock is per repository: only the most recently active run can be the live one.
    return [
        run_status(d, running=lock_held(RunLayout(d).lock) or (running and d == dirs[-1]))
        for d in dirs
    ]


def status(repo: Path | None, run_dir: Path | None, *, as_json: bool = False) -> int:
    found = statuses(repo, run_dir)
    if as_json:
        typer.echo(json.dumps([run.to_json() for run in found], indent=2))
        return 0
    if not found:
        typer.echo("no bisector runs in this repository")
        return 0
    for run in found:
        for line in status_lines(run):
            typer.echo(line)
    return 0
