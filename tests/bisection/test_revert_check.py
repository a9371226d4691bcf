"""The revert check and the hunt for every culprit (issue 38, items 1, 2 and 4).

After the culprit is confirmed, the bad endpoint with it reverted is built and measured
like any candidate; when that still measures bad, the range is searched again with the
culprits found reverted in every candidate that contains them, until the bad endpoint
with all of them reverted measures good or `max_culprits` is reached. In-process runs
over real git histories (tests.helpers.repo) with the file-value backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bisector.backends.base import Candidate
from bisector.commands.run import outcome_code
from bisector.errors import LaunchError
from bisector.exitcodes import RunExit
from bisector.gitrepo import GitRepo
from bisector.measure.journal import Measured, read_journal
from bisector.measure.measurement import Measurement
from bisector.report import summary_lines
from bisector.report.model import Report
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.inprocess import bisect_built
from tests.helpers.repo import BuiltRepo, build_repo

ONE = [2, 2, 2, 2, 40, 40, 40, 40, 40]  # the culprit is mainline index 4
# value2 regresses at 3 (to 200), value at 6 (by 30): 2 -> 202 -> 232.
TWO_VALUE = [2, 2, 2, 2, 2, 2, 32, 32, 32, 32]
TWO_SECOND = [0, 0, 0, 200, 200, 200, 200, 200, 200, 200]


def _run(
    tmp_path: Path,
    built: BuiltRepo,
    backend: FileValueBackend | None = None,
    **flags: Any,
) -> Report:
    backend = backend or FileValueBackend()
    return bisect_built(tmp_path, built, backend, run_dir=tmp_path / "run", **flags)[0]


def _measured(tmp_path: Path) -> list[Measurement]:
    records = read_journal(tmp_path / "run" / "journal.jsonl")
    return [r.measurement for r in records if isinstance(r, Measured)]


def test_the_culprit_reverted_on_the_bad_endpoint_restores_the_good_value(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", ONE, revertable=True)
    culprit, bad = built.mainline[4], built.mainline[-1]
    report = _run(tmp_path, built)

    assert report.culprit is not None and report.culprit.commit == culprit
    check = report.culprit.revert
    assert check is not None
    assert (check.outcome, check.verdict, check.value) == ("restores", "good", 2)
    assert check.reverted == [culprit] and check.base == bad
    # Built and measured like any candidate: the tool's commit, journaled with its tree.
    (run,) = [m for m in _measured(tmp_path) if m.phase == "revert"]
    assert run.commit == bad and run.built == check.built and run.reverted == [culprit]
    repo = GitRepo(built.path)
    assert check.built is not None and run.tree == repo.tree_of(check.built)
    assert repo.info(check.built).parents == (bad,)
    assert report.culprit.share == pytest.approx(1.0) and report.culprit.share_basis == "revert"
    assert report.unexplained == "" and outcome_code(report) == RunExit.FOUND
    lines = "\n".join(summary_lines(report))
    assert f"revert check: reverting {culprit[:12]} on bad {bad[:12]}: 2 (good" in lines
    assert "the revert restores the good value" in lines
    assert f"revert: git revert {culprit}" in "\n".join(report.action)


def test_a_revert_that_does_not_apply_is_reported_with_its_files(tmp_path: Path) -> None:
    # Plain histories rewrite `serial` in every commit: the culprit's revert conflicts.
    built = build_repo(tmp_path / "repo", ONE)
    report = _run(tmp_path, built)
    assert report.culprit is not None and report.culprit.confirmed
    check = report.culprit.revert
    assert check is not None and check.outcome == "conflict"
    assert check.conflict_files == ["serial"] and check.built is None
    assert not [m for m in _measured(tmp_path) if m.phase == "revert"]
    # Not a failure of the run: the culprit stands, confirmed; its share is its own step.
    assert outcome_code(report) == RunExit.FOUND
    assert report.culprit.share_basis == "step"
    assert "does not apply (conflict in serial)" in "\n".join(summary_lines(report))


def test_revert_check_off_measures_no_revert(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", ONE, revertable=True)
    report = _run(tmp_path, built, revert_check=False)
    assert report.culprit is not None and report.culprit.revert is None
    assert not [m for m in _measured(tmp_path) if m.phase == "revert"]
    assert "revert check: off ([run] revert_check = false)" in "\n".join(summary_lines(report))


class _RevertsDoNotLaunch(FileValueBackend):
    """A launch that fails for every commit bisector made (the reverted ones)."""

    def __init__(self, ours: set[str]) -> None:
        super().__init__()
        self.ours = ours

    def launch(self, candidate: Candidate) -> None:
        if candidate.commit not in self.ours:
            raise LaunchError("the cluster did not come up")
        super().launch(candidate)


@pytest.mark.slow
def test_an_infrastructure_failure_of_the_revert_is_a_skip_and_tried_again(
    tmp_path: Path,
) -> None:
    built = build_repo(tmp_path / "repo", ONE, revertable=True)
    report = _run(tmp_path, built, backend=_RevertsDoNotLaunch(set(built.commits)))
    assert report.culprit is not None and report.culprit.confirmed
    check = report.culprit.revert
    assert check is not None and check.outcome == "not measured" and check.verdict == "skip"
    assert "did not come up" in check.reason
    assert outcome_code(report) == RunExit.FOUND  # the culprit stands; the revert is unknown
    # An infrastructure skip is not final: the same run again measures the revert.
    again = _run(tmp_path, built)
    assert again.culprit is not None and again.culprit.revert is not None
    assert again.culprit.revert.outcome == "restores"


@pytest.mark.slow
@pytest.mark.parametrize("error_rate", [0.0, 0.05], ids=["git-bisect", "posterior"])
def test_two_regressions_are_both_found_each_with_its_share(
    tmp_path: Path, error_rate: float
) -> None:
    built = build_repo(tmp_path / "repo", TWO_VALUE, second=TWO_SECOND)
    first, second, bad = built.mainline[3], built.mainline[6], built.mainline[-1]
    report = _run(tmp_path, built, error_rate=error_rate, threshold=20.0)

    assert [c.commit for c in report.culprits] == [first, second]
    one, two = report.culprits
    assert one.confirmed and two.confirmed and report.culprit == one
    # The first search finds the earlier regression; its revert leaves the later one: 32.
    assert one.revert is not None and one.revert.outcome == "does not restore"
    assert one.revert.value == 32 and one.revert.reverted == [first]
    assert one.share == pytest.approx((232 - 32) / 230)
    # The second search had the first culprit reverted in every candidate holding it.
    assert two.hunt == 2 and two.reverted == [first] and two.parent.reverted == [first]
    assert (two.value, two.parent.value) == (32, 2)
    assert two.revert is not None and two.revert.outcome == "restores"
    assert two.revert.reverted == [second, first] and two.revert.value == 2
    assert two.share == pytest.approx(30 / 230)
    assert report.unexplained == "" and outcome_code(report) == RunExit.FOUND
    # Its measurements are of the reverted trees, never the plain candidates'.
    later = [m for m in _measured(tmp_path) if m.reverted]
    assert later and all(m.reverted == [first] for m in later if m.phase != "revert")
    action = "\n".join(report.action)
    assert f"Culprit 1: {first}" in action and f"Culprit 2: {second}" in action
    assert f"confirmed (with {first[:12]} reverted)" in action
    assert bad[:12] in action


def test_max_culprits_stops_the_hunt_and_says_what_is_left(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", TWO_VALUE, second=TWO_SECOND)
    report = _run(tmp_path, built, threshold=20.0, max_culprits=1)
    assert [c.commit for c in report.culprits] == [built.mainline[3]]
    assert "still measures 32 (bad" in report.unexplained
    assert "max_culprits = 1" in report.unexplained
    assert outcome_code(report) == RunExit.PARTIAL
    assert "NOT ALL EXPLAINED" in "\n".join(summary_lines(report))
    assert "Not all explained" in "\n".join(report.action)


@pytest.mark.slow
def test_candidates_where_the_first_culprits_revert_conflicts_are_skips_never_a_culprit(
    tmp_path: Path,
) -> None:
    # value2 regresses at 3 (to 200), value at 6 (by 30), as in the two-regression
    # history; commits 4 to 7 put a blank line after value2's number, so reverting 3 on
    # them conflicts; 8 drops it, and the revert applies on 8 and the bad endpoint 9.
    built = build_repo(tmp_path / "repo", TWO_VALUE, second=TWO_SECOND, tangled=range(4, 8))
    first, tangled = built.mainline[3], built.mainline[4:8]
    report = _run(tmp_path, built, threshold=20.0)

    one = report.culprits[0]
    assert one.commit == first and one.confirmed
    assert one.revert is not None and one.revert.outcome == "does not restore"
    # The second search could not measure 4..7 with 3 reverted: each a skip that says
    # the conflict and its file, none measured, none named or confirmed as a culprit.
    second_search = [e for e in report.evaluations if e.phase == "bisect" and e.commit in tangled]
    assert {e.commit for e in second_search if e.value is None} == set(tangled)
    for e in second_search:
        if e.value is None:
            assert e.reason is not None and "does not apply (conflict: value2)" in e.reason
    measured = {m.commit for m in _measured(tmp_path) if m.reverted and m.value is not None}
    assert not measured & set(tangled)
    assert [c.commit for c in report.culprits if c.confirmed] == [first]
    assert all(c.commit not in tangled or not c.confirmed for c in report.culprits)
    # Not all explained, and said so: never exit 0 as if the answer were whole.
    assert "ended without a single culprit" in report.unexplained
    assert outcome_code(report) == RunExit.PARTIAL


def test_a_revert_git_cannot_make_leaves_the_confirmed_culprit_and_its_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # git failing under the revert (a ref lock, a full disk) ended the run with exit 2 and
    # no report, the confirmed culprit lost with it.
    from bisector.gitrepo import GitFailure

    def no_revert(self: GitRepo, base: str, culprits: object) -> object:
        raise GitFailure("git update-ref: cannot lock ref 'refs/bisector/reverts/x'")

    monkeypatch.setattr(GitRepo, "revert_onto", no_revert)
    built = build_repo(tmp_path / "repo", ONE, revertable=True)
    report = _run(tmp_path, built)
    assert report.culprit is not None and report.culprit.commit == built.mainline[4]
    assert report.culprit.confirmed
    check = report.culprit.revert
    assert check is not None and check.outcome == "not measured"
    assert "cannot lock ref" in check.reason
    assert not [m for m in _measured(tmp_path) if m.phase == "revert"]
    assert outcome_code(report) == RunExit.FOUND
