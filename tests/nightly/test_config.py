"""The nightly refuses metrics its series cannot score yet (it reads logs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.errors import ConfigError
from bisector.nightly.config import load_nightly_config


def test_a_cl2_metric_is_refused_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "nightly.toml"
    config.write_text(
        '[nightly]\n[[nightly.jobs]]\njob = "ci-kubernetes-e2e-gce-scale-performance-100"\n'
        'metric = "apiserver_patch_node_status_p99_ms"\n'
    )
    with pytest.raises(ConfigError, match=r"nightly.jobs\[0\].metric`: .* is a cl2 metric"):
        load_nightly_config(config)
