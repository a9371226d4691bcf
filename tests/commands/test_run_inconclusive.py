"""A run that ends without one culprit leads with what it established (issue 40, item 8).

Commits 4 and 5 of the history cannot be measured and the regression came in at 4: the
search ends with git's "only skipped commits left". What a person reads first, on the
terminal, in report.md, report.html and report.json, is the bracket the run did
establish: after 3 (good, measured) and at or before 6 (bad, measured), 6 or one of
4 and 5, with why each could not be measured, and what to do next. Through the real
`bisector run` (the local backend: a build fails where the commit has a BROKEN file).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bisector.exitcodes import RunExit
from tests.helpers.local_backend import LocalDriver, bisector_argv, write_local_config
from tests.helpers.repo import BuiltRepo, build_repo

GOOD, BAD = 2, 40


def _history(path: Path) -> BuiltRepo:
    # The regression comes in at 4; 4 and 5 do not build.
    return build_repo(path, [GOOD] * 4 + [BAD] * 6, broken={4, 5})


def _run(tmp_path: Path, built: BuiltRepo, driver: LocalDriver) -> subprocess.CompletedProcess[str]:
    argv = bisector_argv(
        "run", "--repo", str(built.path), "--config", str(driver.config),
        "--good", built.mainline[0], "--bad", built.mainline[-1],
        "--run-dir", str(tmp_path / "run"),
    )  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_an_inconclusive_run_leads_with_the_bracket_it_established(tmp_path: Path) -> None:
    built = _history(tmp_path / "repo")
    good, broken_a, broken_b, bad = (built.mainline[i] for i in (3, 4, 5, 6))
    run_dir = tmp_path / "run"
    done = _run(tmp_path, built, write_local_config(tmp_path / "cfg", run={"threshold": 10.0}))
    assert "Traceback" not in done.stderr
    assert done.returncode == RunExit.INCONCLUSIVE, done.stdout + done.stderr

    bracket = (
        f"the regression came in after {good[:12]} (good, conflicts 2, measured) and at or "
        f"before {bad[:12]} (bad, conflicts 40, measured): {bad[:12]} or one of the 2 commits "
        "before it, which could not be measured:"
    )
    lines = done.stdout.splitlines()
    assert lines[0] == f"not one culprit: {bracket}"
    assert lines[1].startswith(f"  {broken_a[:12]} ") and ": build: " in lines[1]
    assert lines[2].startswith(f"  {broken_b[:12]} ") and ": build: " in lines[2]
    assert lines[3] == (
        f"next: read the changes it could be: `git log --oneline {good[:12]}..{bad[:12]}`"
    )
    assert lines[4].startswith(
        f"next: {broken_a[:12]}, {broken_b[:12]} cannot be measured here: measure "
        f"{broken_b[:12]} yourself"
    )
    assert f"`bisector mark {broken_b[:12]} good --run-dir {run_dir}` (or bad)" in lines[4]
    assert lines[5] == "evidence:"

    md = (run_dir / "report.md").read_text().splitlines()
    assert md[:3] == ["# bisector report", "", f"**Not one culprit**: {bracket}"]
    assert md[4].startswith(f"- {broken_a[:12]} ") and ": build: " in md[4]
    assert md[5].startswith(f"- {broken_b[:12]} ")
    assert md[7] == "**Next**:"
    assert md.index("**Next**:") < md.index("## Evidence")

    html = (run_dir / "report.html").read_text()
    established = html.index("<h2>What the run established</h2>")
    assert established < html.index("<h2>Evidence</h2>")
    assert f"<strong>Not one culprit</strong>: {bracket}" in html
    # The next steps' commands are code, as report.md shows them, not backticks.
    assert f"<code>bisector mark {broken_b[:12]} good --run-dir {run_dir}</code>" in html
    assert "`" not in html[established : html.index("<h2>Evidence</h2>")]

    report = json.loads((run_dir / "report.json").read_text())
    assert report["status"] == "inconclusive" and report["culprit"] is None
    assert set(report["candidates"]) == {broken_a, broken_b, bad}  # kept as it was
    conclusive = report["conclusive"]
    assert conclusive["last_good"] == {
        "commit": good,
        "subject": built.commits[good].subject,
        "verdict": "good",
        "value": GOOD,
        "runs": [GOOD],
        "how": "measured",
    }
    assert conclusive["first_bad"] == {
        "commit": bad,
        "subject": built.commits[bad].subject,
        "verdict": "bad",
        "value": BAD,
        "runs": [BAD],
        "how": "measured",
    }
    assert [b["commit"] for b in conclusive["between"]] == [broken_a, broken_b]
    assert all(b["runs"] == [] and b["reason"].startswith("build: ") for b in conclusive["between"])
    assert conclusive["unmeasured"] == [broken_a, broken_b]
    assert conclusive["probability"] is None
    # The block to paste into an issue says the same.
    assert f"not one culprit: {bracket}" in report["action"]


@pytest.mark.slow
def test_a_commit_the_machine_failed_is_measured_again_not_by_hand(tmp_path: Path) -> None:
    """A commit whose launch failed is the machine's skip: the next step is to run the
    same command again, which measures it again; only the one that does not build is
    left to a person."""
    built = build_repo(tmp_path / "repo", [GOOD] * 4 + [BAD] * 6, broken={4})
    down, broken = built.mainline[5], built.mainline[4]
    driver = write_local_config(tmp_path / "cfg", run={"threshold": 10.0, "launch_attempts": 1})
    driver.switch(f"down-{down}")
    done = _run(tmp_path, built, driver)
    assert done.returncode == RunExit.INCONCLUSIVE, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(
        f"not one culprit: the regression came in after {built.mainline[3][:12]}"
    )
    steps = [line for line in lines if line.startswith("next: ")]
    assert steps[1] == (
        f"next: run the same command again: it measures {down[:12]} again (the machine failed "
        "it, not its tree: such a skip is not final)"
    )
    assert steps[2].startswith(f"next: {broken[:12]} cannot be measured here")
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    skipped = {e["commit"]: e["infra_skip"] for e in report["evaluations"] if e["value"] is None}
    assert skipped == {down: True, broken: False}

    # As said: the same command again measures it (the machine is back), and the bracket
    # closes on the commit that does not build.
    (driver.tools / f"down-{down}").unlink()
    again = _run(tmp_path, built, driver)
    assert again.returncode == RunExit.INCONCLUSIVE, again.stdout + again.stderr
    assert driver.calls("collected").count(down) == 1
    conclusive = json.loads((tmp_path / "run" / "report.json").read_text())["conclusive"]
    assert conclusive["first_bad"]["commit"] == down
    assert conclusive["unmeasured"] == [broken]
