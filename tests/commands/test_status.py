from __future__ import annotations

from pathlib import Path

import pytest

from bisector.commands.status import status
from bisector.config import load_config
from bisector.search import RunOptions
from tests.helpers.repo import build_repo

EXAMPLE = Path(__file__).resolve().parents[2] / "configs" / "local-example.toml"


def test_no_runs_yet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_repo(tmp_path / "r", [1, 2])
    assert status(tmp_path / "r", None) == 0
    assert "no bisector runs" in capsys.readouterr().out


def test_example_config_is_valid() -> None:
    options = RunOptions.from_config(load_config(EXAMPLE), good="a", bad="b")
    assert options.backend == "local" and options.warmup_s == 300
    assert options.backend_section().get_str("launch") == "./hack/local-up.sh"
