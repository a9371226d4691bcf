"""`bisector mark` (a person's verdict, taken instead of a measurement) and `bisector runs`."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from bisector.bisection.pipeline import run_bisection
from bisector.entry import main
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.fake_backends import FileValueBackend
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import build_repo
from tests.helpers.settings import settings_for

GOOD, BAD = 2, 40


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_a_marked_commit_is_not_measured_and_the_report_lists_the_mark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Commit 7 does not build; a person knows it is good (its code is the same as 6's),
    # so the run takes that verdict instead of a skip and still names the culprit.
    built = build_repo(tmp_path / "repo", [GOOD] * 9 + [BAD] * 7, broken={7})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    good, bad = built.mainline[0], built.mainline[-1]
    (run_dir / "journal.jsonl").write_text(
        f'{{"type": "start", "good": "{good}", "bad": "{bad}", "command": ""}}\n'
    )
    code, out, _ = _cli(
        capsys, "mark", built.mainline[7][:10], "good", "--note", "same code as 6",
        "--repo", str(built.path), "--run-dir", str(run_dir),
    )  # fmt: skip
    assert code == 0 and "marked" in out
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=good,
        bad=bad,
        repo=built.path,
        run_dir=run_dir,
        threshold=10.0,
    )
    backend = FileValueBackend()
    report = run_bisection(settings, backend=backend, progress=PlainProgress(io.StringIO()))
    assert ("build", built.mainline[7]) not in backend.steps
    assert report.verdicts.get(built.mainline[7]) == "good"
    assert report.culprit is not None and report.culprit.commit == built.mainline[9]
    assert [(m.commit, m.verdict, m.note) for m in report.marks] == [
        (built.mainline[7], "good", "same code as 6")
    ]


def test_mark_refuses_a_commit_outside_the_run_and_a_bad_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    built = build_repo(tmp_path / "repo", [GOOD] * 4 + [BAD] * 4)
    run_dir = tmp_path / "run"
    (run_dir).mkdir()
    (run_dir / "journal.jsonl").write_text(
        f'{{"type": "start", "good": "{built.mainline[2]}", "bad": "{built.mainline[-1]}"}}\n'
    )
    args = ["--repo", str(built.path), "--run-dir", str(run_dir)]
    code, _, err = _cli(capsys, "mark", built.mainline[1], "bad", *args)
    assert code == 2 and "is not inside the run's range" in err
    code, _, err = _cli(capsys, "mark", built.mainline[4], "broken", *args)
    assert code == 2 and "verdict must be one of good, bad, skip" in err


def test_runs_lists_and_removes_finished_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    built = build_repo(tmp_path / "repo", [GOOD] * 4 + [BAD] * 4)
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        threshold=10.0,
    )
    report = run_bisection(
        settings, backend=FileValueBackend(), progress=PlainProgress(io.StringIO())
    )
    run_dir = Path(report.run_dir)
    code, out, _ = _cli(capsys, "runs", "--repo", str(built.path))
    assert code == 0 and str(run_dir) in out and "finished" in out and "  disk: " in out
    code, out, _ = _cli(capsys, "runs", "--repo", str(built.path), "--remove-finished")
    assert code == 0 and f"removed {run_dir}" in out
    assert not run_dir.exists()
    code, _, err = _cli(capsys, "runs", "--repo", str(built.path), "--remove", str(tmp_path))
    assert code == 2 and "not a bisector run directory" in err


# Issue 22, point 7: logs gzipped at rest, the disk a run uses said, `runs --prune`.
def _finished_run(tmp_path: Path) -> tuple[Path, Path]:
    built = build_repo(tmp_path / "repo", [GOOD] * 4 + [BAD] * 4)
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        threshold=10.0,
    )
    report = run_bisection(
        settings, backend=FileValueBackend(), progress=PlainProgress(io.StringIO())
    )
    return built.path, Path(report.run_dir)


def test_logs_are_gzipped_once_scored_and_the_journal_names_the_gz(tmp_path: Path) -> None:
    from bisector.measure.journal import Measured, read_journal

    _repo, run_dir = _finished_run(tmp_path)
    logs = [log for r in read_journal(run_dir / "journal.jsonl") if isinstance(r, Measured)
            for log in r.measurement.logs]  # fmt: skip
    assert logs and all(log.endswith("kube-apiserver.log.gz") for log in logs)
    assert all(Path(log).is_file() and Path(log).read_bytes()[:2] == b"\x1f\x8b" for log in logs)
    assert not list(run_dir.glob("evals/*/logs/*.log"))  # no plain copy left beside


@pytest.mark.slow
def test_runs_says_the_disk_used_and_prune_keeps_reports_and_drops_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    repo, run_dir = _finished_run(tmp_path)
    code, out, _ = _cli(capsys, "runs", "--repo", str(repo), "--json")
    listed = json.loads(out)
    assert code == 0 and [r["run_dir"] for r in listed] == [str(run_dir)]
    assert listed[0]["state"] == "finished" and listed[0]["logs_bytes"] > 0
    assert listed[0]["disk_bytes"] > listed[0]["logs_bytes"]
    code, out, _ = _cli(capsys, "runs", "--repo", str(repo), "--prune")
    assert code == 0 and f"pruned {run_dir}" in out and "freed " in out
    # Only the smoking gun's two runs keep their logs (the culprit's and its parent's).
    assert len(list(run_dir.glob("evals/*/logs"))) == 2
    for kept in ("journal.jsonl", "report.json", "report.md", "report.html"):
        assert (run_dir / kept).is_file(), kept
    code, out, _ = _cli(capsys, "runs", "--repo", str(repo), "--json")
    assert json.loads(out)[0]["logs_bytes"] == 0  # nothing more that --prune would drop
    assert json.loads(out)[0]["pruned_at"] > 0
    code, out, _ = _cli(capsys, "status", "--repo", str(repo), "--json")
    assert code == 0 and json.loads(out)[0]["culprit"] is not None


def test_prune_leaves_a_run_that_is_not_finished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, run_dir = _finished_run(tmp_path)
    journal = run_dir / "journal.jsonl"
    journal.write_text("".join(line + "\n" for line in journal.read_text().splitlines()
                               if '"done"' not in line))  # fmt: skip
    code, out, _ = _cli(capsys, "runs", "--repo", str(repo), "--prune")
    assert code == 0 and "pruned" not in out and list(run_dir.glob("evals/*/logs"))


def _rerun(repo: Path, run_dir: Path, tmp_path: Path) -> str:
    """The finished run's command again (the README tour's resume): its report.md."""
    from bisector.measure.journal import Start, read_journal

    start = next(r for r in read_journal(run_dir / "journal.jsonl") if isinstance(r, Start))
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=start.good,
        bad=start.bad,
        repo=repo,
        run_dir=run_dir,
        threshold=10.0,
    )
    run_bisection(settings, backend=FileValueBackend(), progress=PlainProgress(io.StringIO()))
    return (run_dir / "report.md").read_text()


@pytest.mark.slow
def test_prune_keeps_the_smoking_guns_logs_and_the_report_says_when(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `runs --prune` then the tour's resume rewrote report.md with "Smoking gun ... no
    # readable log for culprit ..., parent ...", and nothing said the logs were pruned.
    repo, run_dir = _finished_run(tmp_path)
    before = (run_dir / "report.md").read_text()
    code, out, _ = _cli(capsys, "runs", "--repo", str(repo), "--prune")
    assert code == 0 and "the smoking gun's logs kept" in out, out
    pruned = (run_dir / "report.md").read_text()  # rewritten by the prune
    # Nothing else changed: the report before, and what pruning took.
    assert _but_the_timeline(before) == _but_the_timeline(pruned)
    for report_md in (pruned, _rerun(repo, run_dir, tmp_path)):
        assert "no readable log" not in report_md
        assert "| culprit " in report_md and "(run #6) | parent " in report_md
        said = re.search(
            r"The runs' apiserver logs were pruned on (\d{4}-\d\d-\d\d \d\d:\d\d UTC) by "
            r"`bisector runs --prune` \(\S+ \w*B dropped\): kept those of runs #6 and #7, "
            "which the smoking gun draws",
            report_md,
        )
        assert said is not None, report_md
        assert "apiserver log pruned" in report_md  # the timeline's rows whose logs went
    code, out, _ = _cli(capsys, "status", "--repo", str(repo))
    assert re.search(r"disk: .*; logs pruned on \d{4}-\d\d-\d\d \d\d:\d\d UTC", out), out


def _but_the_timeline(report_md: str) -> list[str]:
    """The report's lines but the timeline's (their log links, now gone), blank lines and
    what says the logs were pruned."""
    timeline = report_md.index("## Timeline")
    rest = report_md[:timeline] + report_md[report_md.index("\n## ", timeline + 1) :]
    return [line for line in rest.splitlines() if line.strip() and "pruned" not in line]


def test_a_report_whose_logs_are_gone_says_they_were_pruned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A prune that kept nothing (a run without report.json): the smoking gun cannot be
    # drawn, and says why instead of only "no readable log".
    repo, run_dir = _finished_run(tmp_path)
    (run_dir / "report.json").unlink()
    code, _, _ = _cli(capsys, "runs", "--repo", str(repo), "--prune")
    assert code == 0 and not list(run_dir.glob("evals/*/logs"))
    report_md = _rerun(repo, run_dir, tmp_path)
    assert re.search(
        r"no readable log for culprit \w+, parent \w+ \(the logs were pruned on "
        r"\d{4}-\d\d-\d\d \d\d:\d\d UTC by `bisector runs --prune`\)",
        report_md,
    ), report_md
    assert "kept none" in report_md
