"""`bisector runs` sees a run given --run-dir outside the repository's runs/ (issue 29: the
demo's summary suggested `bisector runs --prune`, which saw no run and freed 0 B)."""

from __future__ import annotations

import io
import json
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


def _run_elsewhere(tmp_path: Path) -> tuple[Path, Path]:
    """A finished run whose --run-dir is beside the repository, as the demo's is."""
    built = build_repo(tmp_path / "repo", [GOOD] * 4 + [BAD] * 4)
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        run_dir=tmp_path / "elsewhere" / "run",
        threshold=10.0,
    )
    run_bisection(settings, backend=FileValueBackend(), progress=PlainProgress(io.StringIO()))
    return built.path, (tmp_path / "elsewhere" / "run").resolve()


@pytest.mark.slow
def test_runs_lists_and_prunes_a_run_given_run_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, run_dir = _run_elsewhere(tmp_path)
    code, out, _ = _cli(capsys, "runs", "--repo", str(repo), "--json")
    assert code == 0 and [r["run_dir"] for r in json.loads(out)] == [str(run_dir)]
    before = len(list(run_dir.glob("evals/*/logs")))
    code, out, _ = _cli(capsys, "runs", "--repo", str(repo), "--prune")
    assert code == 0 and f"pruned {run_dir}" in out
    assert "freed 0 B" not in out
    assert 0 < len(list(run_dir.glob("evals/*/logs"))) <= 2 < before  # the smoking gun's
    assert (run_dir / "report.html").is_file()


def test_a_removed_run_dir_is_no_longer_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, run_dir = _run_elsewhere(tmp_path)
    code, out, _ = _cli(capsys, "runs", "--repo", str(repo), "--remove", str(run_dir))
    assert code == 0 and not run_dir.exists()
    code, out, _ = _cli(capsys, "runs", "--repo", str(repo), "--json")
    assert code == 0 and json.loads(out) == []


def test_the_summarys_prune_advice_works_as_printed_from_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo's summary is read from the project's checkout, not the demo's repository."""
    import json
    import re
    import shlex

    from bisector.report.summary import disk_line

    repo, run_dir = _run_elsewhere(tmp_path)
    bisected = json.loads((run_dir / "report.json").read_text())["repo"]
    assert Path(bisected) == repo.resolve()  # the report says which checkout it bisected
    monkeypatch.chdir(tmp_path)  # not inside the run's repository
    advice = re.search(r"`(bisector runs[^`]*)`", disk_line(run_dir, bisected))
    assert advice is not None and "--repo" in advice[1]
    monkeypatch.chdir(repo)  # inside it: the short form
    assert "`bisector runs --prune`" in disk_line(run_dir, bisected)
    monkeypatch.chdir(tmp_path)
    code, out, _ = _cli(capsys, *shlex.split(advice[1])[1:])
    assert code == 0 and f"pruned {run_dir}" in out
