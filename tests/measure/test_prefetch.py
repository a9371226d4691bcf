"""Prefetched builds: while a cluster warms up, the possible next candidates are built;
a build made ahead is used, and one that failed is never a verdict."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest

from bisector.backends.base import Backend, Candidate, PrefetchBuilds
from bisector.bisection.pipeline import run_bisection
from bisector.gitrepo import GitFailure, GitRepo
from bisector.measure.journal import Journal, Measured, Prefetch, read_journal
from bisector.measure.measurement import Measurement
from bisector.measure.parallel import CancellableBackend
from bisector.measure.prefetch import Prefetcher
from bisector.nightly.budget import BudgetedBackend
from bisector.nightly.config import Budget
from bisector.report.model import Report
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import FileValueBackend, PrefetchingBackend
from tests.helpers.inprocess import bisect_built, whole_range
from tests.helpers.repo import PR, BuiltRepo, build_repo


def _run(
    tmp_path: Path, values: list[int], broken: tuple[int, ...] = (), prefetch: int = 2
) -> tuple[BuiltRepo, PrefetchingBackend, Report, str]:
    built = build_repo(tmp_path / "repo", values, broken=broken)
    backend = PrefetchingBackend()
    assert isinstance(backend, PrefetchBuilds)
    report, out = bisect_built(
        tmp_path,
        built,
        backend,
        threshold=10.0,
        prefetch_builds=prefetch,
    )
    return built, backend, report, out


def test_the_next_candidates_are_built_during_a_warmup_and_used(tmp_path: Path) -> None:
    built, backend, report, out = _run(tmp_path, [2] * 9 + [40] * 8)
    assert report.culprit is not None and report.culprit.commit == built.mainline[9]
    assert backend.prefetch_calls, "nothing was prefetched"
    trees = {w for _, w in backend.prefetch_calls}
    assert trees <= {Path(report.run_dir) / "worktrees" / f"prefetch-{i}" for i in range(2)}
    journal = read_journal(Path(report.run_dir) / "journal.jsonl")
    prefetched = [r for r in journal if isinstance(r, Prefetch)]
    assert {r.commit for r in prefetched} == {c for c, _ in backend.prefetch_calls}
    assert all(r.error is None for r in prefetched)
    used = [
        r.measurement for r in journal if isinstance(r, Measured) and r.measurement.prefetched_build
    ]
    assert used, "no prefetched build was used"
    # A measurement says its build was prefetched exactly when the build came from there.
    assert sorted(m.commit for m in used) == sorted(backend.cache_hits)
    for m in used:
        assert f"using the prefetched build of {m.commit[:12]}" in out
    assert "prefetched the build of" in out
    # Never more builds ahead than asked: at most 2 per warmup.
    assert len(backend.prefetch_calls) <= 2 * len(report.evaluations)


def test_a_failed_prefetch_is_journaled_and_the_commit_is_a_skip(tmp_path: Path) -> None:
    values = [2] * 9 + [40] * 8
    # Mainline 8 and 12 do not build; whatever was prefetched, they are skips, never verdicts.
    built, _backend, report, _ = _run(tmp_path, values, broken=(4, 12))
    assert report.culprit is not None and report.culprit.commit == built.mainline[9]
    journal = read_journal(Path(report.run_dir) / "journal.jsonl")
    failed = [r for r in journal if isinstance(r, Prefetch) and r.error]
    broken = {built.mainline[4], built.mainline[12]}
    assert failed and {r.commit for r in failed} <= broken
    for r in journal:
        if isinstance(r, Measured) and r.measurement.commit in broken:
            assert r.measurement.value is None and r.measurement.prefetched_build is False


def test_no_prefetch_when_off(tmp_path: Path) -> None:
    _, backend, report, out = _run(tmp_path, [2] * 5 + [40] * 4, prefetch=0)
    assert backend.prefetch_calls == [] and "prefetch" not in out
    assert report.culprit is not None


class SlowPrefetchBackend(PrefetchingBackend):
    """A prefetch that takes 'forever'; Ctrl-C arrives during the first warmup."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.started = threading.Event()

    def prefetch_build(self, commit: str, worktree: Path) -> None:
        self.started.set()
        self.release.wait(60)  # a 30-minute make quick-release, as far as the run knows

    def warmup(self, candidate: Candidate) -> None:
        assert self.started.wait(10), "no prefetch started during the warmup"
        raise KeyboardInterrupt


def test_ctrl_c_does_not_wait_for_a_build_ahead(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [2] * 5 + [40] * 4)
    backend = SlowPrefetchBackend()
    settings = whole_range(tmp_path, built, threshold=10.0, prefetch_builds=1)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_bisection(settings, backend=backend, progress=PlainProgress(io.StringIO()))
        assert time.monotonic() - started < 30  # not the prefetch's 60 s
        assert ("teardown", built.mainline[0]) in backend.steps  # the cluster still went down
    finally:
        backend.release.set()


@pytest.mark.slow
@pytest.mark.parametrize("parallel", [1, 2])
def test_the_guesses_are_the_picks_so_no_search_build_waits(tmp_path: Path, parallel: int) -> None:
    # git's own picks (one slot: `git rev-list --bisect`, down into the culprit's merged
    # branch too; two slots: the split of git's list), so with enough builds ahead every
    # search run after the first finds its build made: first-parent walk over PRs, the
    # culprit the second commit of PR 7 (as #46588 was).
    values = [1] * 7 + [9] * 10
    prs = [PR(at=3, values=[1, 1, 1]), PR(at=7, values=[1, 9], number=7), PR(at=12, values=[9] * 3)]
    built = build_repo(tmp_path / "repo", values, prs=prs)
    backend = PrefetchingBackend()
    settings = whole_range(
        tmp_path,
        built,
        threshold=5.0,
        first_parent=True,
        parallel=parallel,
        prefetch_builds=2 if parallel == 1 else 6,
    )
    report = run_bisection(settings, backend=backend, progress=PlainProgress(io.StringIO()))
    assert report.culprit is not None and report.culprit.commit == built.pr_commits[7][1]
    search = [e.commit for e in report.evaluations if e.phase == "bisect"]
    assert len(search) >= 3
    # Every search run took its build from a prefetch (this backend's cache holds a build
    # for one use: the confirmation builds again).
    assert set(search) <= set(backend.cache_hits), (search, backend.cache_hits)


def test_git_failing_to_guess_the_next_picks_only_costs_the_builds_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(*_args: object, **_kwargs: object) -> str:
        raise GitFailure("git rev-list failed: fatal: bad object")

    monkeypatch.setattr(GitRepo, "bisect_midpoint", fails)
    built, backend, report, _out = _run(tmp_path, [2] * 9 + [40] * 8)
    assert report.culprit is not None and report.culprit.commit == built.mainline[9]
    assert report.confirmed
    # Nothing was guessed: only the bad endpoint (the next job in its batch) was built ahead.
    assert set(backend.cache_hits) <= {built.mainline[-1]}


class BuildCacheBackend(PrefetchingBackend):
    """A build cache keyed by commit that keeps its builds (as gce's and kind's, by tree):
    every commit listed in `built_before` is in it from the start."""

    def __init__(self, built_before: set[str]) -> None:
        super().__init__()
        self.cache = set(built_before)

    def build(self, candidate: Candidate) -> None:
        with self.lock:
            if candidate.commit in self.cache:
                self.cache_hits.append(candidate.commit)
                return
        super().build(candidate)


def test_a_commit_already_in_the_build_cache_is_not_built_ahead(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", [2] * 9 + [40] * 8)
    cached = set(built.mainline[:6])  # an earlier bisection built these
    backend = BuildCacheBackend(cached)
    report, _out = bisect_built(tmp_path, built, backend, threshold=10.0, prefetch_builds=2)
    assert report.culprit is not None and report.culprit.commit == built.mainline[9]
    assert backend.prefetch_calls, "nothing was built ahead: the test tests nothing"
    wasted = [c for c, _ in backend.prefetch_calls if c in cached]
    assert wasted == []


class SlowConcurrentPrefetch(PrefetchingBackend):
    """Builds ahead that take a while; records how many ran at once."""

    def __init__(self) -> None:
        super().__init__()
        self.running = 0
        self.most = 0

    def prefetch_build(self, commit: str, worktree: Path) -> None:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(0.3)
            super().prefetch_build(commit, worktree)
        finally:
            with self.lock:
                self.running -= 1

    def warmup(self, candidate: Candidate) -> None:
        super().warmup(candidate)
        time.sleep(0.05)  # both slots' clusters are up while the first build ahead runs


def test_builds_ahead_never_exceed_the_cap_with_several_slots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --parallel 2, prefetch_builds = 1, a slow build: two slots start their builds ahead
    # while the first is still running. More at once than the cap would also take more
    # worktrees than exist (`pop from empty list` in a build thread).
    failures: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    built = build_repo(tmp_path / "repo", [2] * 20 + [40] * 12)
    backend = SlowConcurrentPrefetch()
    report, _out = bisect_built(
        tmp_path, built, backend, threshold=10.0, parallel=2, prefetch_builds=1
    )
    assert report.culprit is not None and report.culprit.commit == built.mainline[20]
    assert backend.prefetch_calls, "nothing was built ahead: the test tests nothing"
    assert failures == []
    assert backend.most == 1
    errors = [
        r.error for r in read_journal(Path(report.run_dir) / "journal.jsonl")
        if isinstance(r, Prefetch) and r.error
    ]  # fmt: skip
    assert errors == []


# -- the Prefetcher on its own (bisector/measure/prefetch.py) ------------------------------


def _prefetcher(tmp_path: Path, backend: Backend, builds: int) -> Prefetcher:
    built = build_repo(tmp_path / "repo", [2, 2, 40])
    return Prefetcher(
        backend=backend,
        builds=builds,
        repo=GitRepo(built.path),
        journal=Journal(tmp_path / "journal.jsonl", tmp_path / "cache.jsonl", "f"),
        worktrees_dir=tmp_path / "worktrees",
        progress=PlainProgress(io.StringIO()),
        lock=threading.RLock(),
        worktrees=set(),
        in_flight=set,
    )


def test_builds_ahead_are_found_through_the_wrappers_a_run_puts_around_the_backend(
    tmp_path: Path,
) -> None:
    """A nightly hunt's budget and a slot's cancellable view hid PrefetchBuilds (issue 27)."""
    wrapped = CancellableBackend(BudgetedBackend(PrefetchingBackend(), Budget()), threading.Event())
    assert _prefetcher(tmp_path / "a", wrapped, builds=1).enabled
    assert not _prefetcher(tmp_path / "b", wrapped, builds=0).enabled  # [run] prefetch_builds 0
    plain = BudgetedBackend(FileValueBackend(), Budget())
    assert not _prefetcher(tmp_path / "c", plain, builds=2).enabled  # it cannot build ahead


def test_a_build_ahead_through_the_budget_is_used(tmp_path: Path) -> None:
    inner = PrefetchingBackend()
    prefetcher = _prefetcher(tmp_path, BudgetedBackend(inner, Budget()), builds=1)
    commit = prefetcher.repo.resolve("HEAD")
    prefetcher.set_upcoming([commit, commit])
    assert prefetcher.upcoming == [commit]
    prefetcher.start()
    prefetcher.finish()
    assert [c for c, _ in inner.prefetch_calls] == [commit]
    m = Measurement(commit, "t", "bisect")
    prefetcher.use(m)
    assert m.prefetched_build
    records = read_journal(prefetcher.journal.path)
    assert [r for r in records if isinstance(r, Prefetch)] == [Prefetch(commit)]


class _SlowAhead(PrefetchingBackend):
    """A build ahead that outlasts the evaluation it runs beside; at its end, what the
    progress showed."""

    def __init__(self, progress: PlainProgress) -> None:
        super().__init__()
        self.progress = progress
        self.shown_at_end: list[list[str]] = []

    def prefetch_build(self, commit: str, worktree: Path) -> None:
        time.sleep(1.0)
        self.shown_at_end.append(self.progress.board.lines(time.monotonic()))
        super().prefetch_build(commit, worktree)


def test_waiting_for_a_build_ahead_is_not_shown_as_the_teardown(tmp_path: Path) -> None:
    # An evaluation torn down in 0.2 s, then waiting for the build ahead: the live line
    # said "teardown 47s of ~0.21s". The evaluation's line ends with its teardown; the
    # build ahead is what is shown, and a line says the run waits for it.
    built = build_repo(tmp_path / "repo", [2] * 5 + [40] * 4)
    out = io.StringIO()
    progress = PlainProgress(out)
    backend = _SlowAhead(progress)
    settings = whole_range(tmp_path, built, threshold=10.0, prefetch_builds=1)
    report = run_bisection(settings, backend=backend, progress=progress)
    assert report.culprit is not None and report.culprit.commit == built.mainline[5]
    said = out.getvalue()
    assert "waiting for the build ahead of " in said
    assert backend.shown_at_end
    for lines in backend.shown_at_end:
        assert not any(" teardown " in line for line in lines), lines
