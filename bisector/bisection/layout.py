"""Where a run keeps what: the one description of a run directory.

<run dir>/journal.jsonl        every record of the run, fsync'ed line by line
<run dir>/lock                 held while a process uses the directory
<run dir>/owner                the repository the directory belongs to
<run dir>/resources.json       clusters a backend brought up, with their teardown
<run dir>/processes.jsonl      process groups started, stopped after a kill -9
<run dir>/progress.log         the progress as plain lines, timestamped (`tail -f` it)
<run dir>/worktrees/bisect     git bisect's own worktree
<run dir>/worktrees/good       the good endpoint's tree (a backend's base checkout)
<run dir>/worktrees/slot-N     the candidate checkout of parallel slot N
<run dir>/evals/NNN-<commit>/  one evaluation: logs/, build.log, launch.log, ...
<run dir>/report.{json,md,html}
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunLayout:
    root: Path

    @classmethod
    def default(cls, common_dir: Path, good: str, bad: str, question: str) -> RunLayout:
        """`.git/bisector/runs/<good>-<bad>-<hash of the question>`."""
        digest = hashlib.sha256(question.encode()).hexdigest()[:8]
        return cls(common_dir / "bisector" / "runs" / f"{good[:12]}-{bad[:12]}-{digest}")

    @property
    def journal(self) -> Path:
        return self.root / "journal.jsonl"

    @property
    def lock(self) -> Path:
        return self.root / "run.lock"

    @property
    def resources(self) -> Path:
        return self.root / "resources.json"

    @property
    def processes(self) -> Path:
        return self.root / "processes.jsonl"

    @property
    def progress_log(self) -> Path:
        return self.root / "progress.log"

    @property
    def worktrees(self) -> Path:
        return self.root / "worktrees"

    @property
    def bisect_worktree(self) -> Path:
        return self.worktrees / "bisect"

    @property
    def good_worktree(self) -> Path:
        return self.worktrees / "good"

    def slot_worktree(self, slot: int) -> Path:
        return self.worktrees / f"slot-{slot}"

    @property
    def evals(self) -> Path:
        return self.root / "evals"

    def eval_dir(self, number: int, commit: str) -> Path:
        return self.evals / f"{number:03d}-{commit[:12]}"

    def report(self, suffix: str) -> Path:
        return self.root / f"report.{suffix}"


def measurement_cache(common_dir: Path) -> Path:
    """Measurements of every run of the repository, reused across runs."""
    return common_dir / "bisector" / "measurements.jsonl"
