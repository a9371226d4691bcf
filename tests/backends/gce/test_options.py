"""`[backends.gce]` read from its declaration (bisector/backends/gce/options.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.backends.gce import steps as gce_steps
from bisector.backends.gce.options import KEYS, GceSettings
from bisector.config import Section
from bisector.errors import ConfigError

JOB = "nightly.jobs[1].backends.gce"


def _read(tmp_path: Path, **data: object) -> GceSettings:
    section = Section({"project": "p-1", **data}, "n.toml", JOB)
    return GceSettings.from_section(section, tmp_path / "run")


@pytest.mark.parametrize(
    ("data", "says"),
    [
        # These five built `f"{file}: key ..."` by hand and lost the job's table path.
        ({"retry_attempts": 0}, "retry_attempts` must be at least 1, got 0"),
        ({"num_nodes": 0}, "num_nodes` must be at least 1, got 0"),
        ({"kubemark_num_nodes": -5}, "kubemark_num_nodes` must be at least 1, got -5"),
        ({"up_timeout": "0s"}, "up_timeout` must be more than 0s"),
        ({"retry_initial": "-1s"}, "retry_initial"),
    ],
)
def test_an_error_names_the_file_the_jobs_table_the_key_and_the_bound(
    tmp_path: Path, data: dict[str, object], says: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _read(tmp_path, **data)
    assert str(caught.value).startswith(f"n.toml: key `{JOB}.") and says in str(caught.value)


def test_the_env_table_error_keeps_the_path_and_steps_still_exports_the_settings(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match=r"key `nightly\.jobs\[1\]\.backends\.gce\.env\.PROJECT`"):
        _read(tmp_path, env={"PROJECT": "other"})
    cfg = _read(tmp_path, retry_attempts=5, retry_initial="1s", instance_prefix="k")
    assert cfg.retry.attempts == 5 and cfg.retry.initial_s == 1.0 and cfg.retry.max_s == 300.0
    assert cfg.base_instance_prefix == "k" and cfg.run_dir == (tmp_path / "run").absolute()
    assert gce_steps.GceSettings is GceSettings and gce_steps.KEYS == KEYS
    assert "run_dir" not in KEYS and "retry_attempts" in KEYS
