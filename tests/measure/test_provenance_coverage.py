"""What a log must cover when a run's length depends on the tree (issue 20, class 3).

A workload run to its end takes as long as the tree makes it: a good tree's run is
shorter. The measured time from launch-ready to collect (the warmup as it ran) is what
the log must cover, MIN_COVERAGE of it: never a skip because a good tree was fast, and
still a skip for a log cut short by a restart.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from bisector.backends.base import BackendTraits, Candidate
from bisector.bisection.pipeline import run_bisection
from bisector.gitrepo import GitRepo
from bisector.measure import provenance
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import build_repo
from tests.helpers.settings import settings_for


def _glog(when: float, status: int) -> str:
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(when))
    return (
        f"I{stamp}.{int(when % 1 * 1e6):06d}       7 wrap.go:42] PATCH "
        f"/api/v1/nodes/hollow-node-1/status: (3.1ms) {status} "
        "[[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.0.0.5:3]"
    )


class WorkloadBackend(FileValueBackend):
    """A warmup that ends when its workload ends: `seconds[value]` of real time. The log
    is on the wall clock from the launch to the collect; a `crashed` commit's apiserver
    restarted and its log holds only the run's last fifth, and a fifth of its conflicts
    (read as good: the danger)."""

    traits = BackendTraits(real_time_logs=True)

    def __init__(self, seconds: dict[int, float], crashed: set[str]) -> None:
        super().__init__()
        self.seconds = seconds
        self.crashed = crashed
        self.launched = 0.0

    def launch(self, candidate: Candidate) -> None:
        super().launch(candidate)
        self.launched = time.time()

    def warmup(self, candidate: Candidate) -> None:
        super().warmup(candidate)
        time.sleep(self.seconds[int((candidate.worktree / "value").read_text())])

    def collect(self, candidate: Candidate) -> list[Path]:
        value = int((candidate.worktree / "value").read_text())
        end = time.time()
        start = self.launched
        if candidate.commit in self.crashed:
            start = end - (end - start) / 5
            value //= 5
        times = [start + (end - start) * k / (value + 1) for k in range(value + 2)]
        lines = [_glog(times[0], 200), *(_glog(t, 409) for t in times[1:-1])]
        lines.append(_glog(times[-1], 200))
        candidate.log_dir.mkdir(parents=True, exist_ok=True)
        log = candidate.log_dir / "kube-apiserver.log"
        log.write_text("".join(line + "\n" for line in lines))
        return [log]


@pytest.mark.slow
def test_a_fast_good_tree_is_no_log_cut_short_and_a_restart_still_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seconds of workload per tree: the good endpoint's 0.4 s, faster good trees 0.1 s
    # (an optimisation in the range), bad trees 1.6 s. Half the endpoints' median span
    # (about 0.5 s) skipped every good run; half of what each run ran is the measure.
    monkeypatch.setattr(provenance, "MIN_RAN_S", 0.05)
    values = [2, 1, 1, 40, 40, 40, 40, 40, 40, 40]
    built = build_repo(tmp_path / "repo", values)
    # The first commit git measures, bad, past the culprit: cut short, it reads good.
    crashed = GitRepo(built.path).bisect_midpoint(built.mainline[-1], [built.mainline[0]])
    assert crashed in built.mainline[4:-1]
    backend = WorkloadBackend({1: 0.1, 2: 0.4, 40: 1.6}, {crashed})
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        threshold=10.0,
    )
    report = run_bisection(settings, backend=backend, progress=PlainProgress(io.StringIO()))
    assert report.culprit is not None and report.culprit.commit == built.mainline[3]
    assert report.confirmed
    fast = [e for e in report.evaluations if built.value(e.commit) == 1]
    assert fast and all(e.verdict == "good" for e in fast)
    restarted = [e for e in report.evaluations if e.commit == crashed]
    assert restarted and all(e.verdict == "skip" for e in restarted)
    assert all("the cluster ran: apiserver restarted" in (e.reason or "") for e in restarted)
