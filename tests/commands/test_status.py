from __future__ import annotations

from pathlib import Path

import pytest

from bisector.commands.status import status
from bisector.config import load_config
from bisector.errors import BisectorError
from bisector.gitrepo import GitRepo
from bisector.settings import RunSettings
from tests.helpers.repo import build_repo

EXAMPLE = Path(__file__).resolve().parents[2] / "configs" / "local-example.toml"


def test_no_runs_yet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_repo(tmp_path / "r", [1, 2])
    assert status(tmp_path / "r", None) == 0
    assert "no bisector runs" in capsys.readouterr().out


def test_example_config_is_valid() -> None:
    settings = RunSettings.from_config(load_config(EXAMPLE), good="a", bad="b")
    assert settings.backend == "local" and settings.warmup_s == 300
    assert settings.backend_section.get_str("launch") == "./hack/local-up.sh"


def test_interrupted_run_shows_progress_and_the_resume_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bisector.measure.journal import append_line

    built = build_repo(tmp_path / "r", [1, 2])
    run_dir = tmp_path / "r" / ".git" / "bisector" / "runs" / "x"
    start = {"type": "start", "good": "a" * 40, "bad": "b" * 40}
    append_line(run_dir / "journal.jsonl", {**start, "command": "bisector run --good a --bad b"})
    append_line(run_dir / "journal.jsonl", {"type": "verdict", "commit": "c", "verdict": "good"})
    append_line(run_dir / "journal.jsonl", {"type": "interrupted"})
    assert status(built.path, None) == 0
    out = capsys.readouterr().out
    assert "aaaaaaaaaaaa..bbbbbbbbbbbb: interrupted" in out
    assert "verdicts: good 1" in out
    assert "resume with: bisector run --good a --bad b" in out
    with GitRepo(built.path).lock():
        status(built.path, None)
    assert ": running" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["missing", "file", "empty dir"])
def test_a_run_dir_that_is_not_a_run_is_an_error(tmp_path: Path, kind: str) -> None:
    built = build_repo(tmp_path / "r", [1, 2])
    run_dir = tmp_path / "not-a-run"
    if kind == "file":
        run_dir.write_text("x\n")
    elif kind == "empty dir":
        run_dir.mkdir()
    with pytest.raises(BisectorError, match="not a bisector run directory"):
        status(built.path, run_dir)
