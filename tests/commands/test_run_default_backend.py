"""The default backend (sim) runs without a config, as `run -h` and `doctor` promise
(issue 29: `bisector run --good A --bad B` failed with `needs a simulated duration`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.backends.base import BackendContext
from bisector.backends.registry import create_backend
from bisector.config import Section
from bisector.entry import main
from bisector.sim.demo_repo import create_demo_repo
from tests.helpers.settings import settings_for


def test_no_config_gives_the_sim_backend_a_warmup_it_can_run() -> None:
    settings = settings_for(Section(), good="a", bad="b")
    assert settings.backend == "sim" and settings.warmup_s == 300.0  # configs/default.toml's
    context = BackendContext(settings.backend_section, Path("unused"), settings.warmup_s)
    create_backend("sim", context)  # raised ConfigError before


def test_a_config_that_sets_a_warmup_keeps_it() -> None:
    settings = settings_for(Section({"run": {"warmup": "2m"}}), good="a", bad="b")
    assert settings.warmup_s == 120.0


def test_run_without_config_plans_in_a_demo_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = create_demo_repo(tmp_path / "kubernetes", prs=12)
    with pytest.raises(SystemExit) as info:
        main(["run", "--repo", str(demo.path), "--good", demo.good, "--bad", demo.bad,
              "--first-parent", "--dry-run"])  # fmt: skip
    _out, err = capsys.readouterr()
    assert info.value.code in (0, None), err
    assert "simulated duration" not in err
