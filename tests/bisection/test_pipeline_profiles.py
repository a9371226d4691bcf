"""The culprit's and its parent's confirmation runs are profiled, and the report carries
what grew between them: in-process runs over a real git history (tests.helpers.repo)
with a backend that leaves real Go profiles (tests/data/pprof) where procs writes its own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bisector.backends.base import Candidate
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.inprocess import bisect_built
from tests.helpers.repo import build_repo

DATA = Path(__file__).parents[1] / "data" / "pprof"
GO = next(
    (g for g in ("/usr/lib/go-1.19/bin/go", shutil.which("go")) if g and Path(g).is_file()), None
)
VALUES = [2, 2, 2, 2, 40, 40, 40, 40, 40]  # the culprit is mainline index 4


class ProfilingBackend(FileValueBackend):
    """Leaves `profiles/{cpu,heap}.pprof` for the evaluations asked to profile: the
    recorded culprit's for a bad value, the parent's for a good one."""

    def __init__(self) -> None:
        super().__init__()
        self.profiled: list[str] = []

    def collect(self, candidate: Candidate) -> list[Path]:
        logs = super().collect(candidate)
        if candidate.profile:
            self.profiled.append(candidate.commit)
            bad = int((candidate.worktree / "value").read_text()) > 10
            side = "culprit" if bad else "parent"
            candidate.profile_dir.mkdir(parents=True, exist_ok=True)
            for kind in ("cpu", "heap"):
                shutil.copy(DATA / f"{side}-{kind}.pprof", candidate.profile_dir / f"{kind}.pprof")
            (candidate.profile_dir / "go.txt").write_text(f"{GO}\n")
        return logs


@pytest.mark.skipif(GO is None, reason="no Go installed (Debian: apt-get install golang-1.19-go)")
def test_the_report_says_what_grew_between_the_culprit_and_its_parent(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    backend = ProfilingBackend()
    report, _ = bisect_built(tmp_path, built, backend, run_dir=tmp_path / "run")
    culprit = report.culprit
    assert culprit is not None and culprit.commit == built.mainline[4] and culprit.confirmed
    # Only the culprit's and its parent's confirmation runs were profiled.
    assert set(backend.profiled) == {built.mainline[4], built.mainline[3]}
    kinds = [p.kind for p in culprit.profiles]
    assert kinds == ["cpu", "heap in use", "heap allocated"]
    cpu = culprit.profiles[0]
    assert not cpu.error and cpu.rows[0].function == "runtime.memmove"
    assert "strings.Clone" in [r.function for r in cpu.rows]  # 570ms more of its own
    assert Path(cpu.text).is_relative_to(tmp_path / "run" / "profiles")
    # The culprit changed `value`, no Go file: nothing is marked as its own.
    assert not any(r.in_culprit for p in culprit.profiles for r in p.rows)
    # The revert check's runs are not profiled.
    assert report.culprits[0].revert is not None


def test_no_profiles_left_means_no_diff_and_no_go_needed(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", VALUES)
    report, _ = bisect_built(tmp_path, built, FileValueBackend(), run_dir=tmp_path / "run")
    assert report.culprit is not None and report.culprit.confirmed
    assert report.culprit.profiles == []
    assert not (tmp_path / "run" / "profiles").exists()
