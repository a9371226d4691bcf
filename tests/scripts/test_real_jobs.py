"""scripts/real_jobs.py: the config `make real-jobs` writes is the modern hunt's, its
evaluations as Jobs, as the run's own settings reader takes it; and a report whose
evaluations do not name their pods is caught."""

from __future__ import annotations

import importlib.util
import json
import sys
import tomllib
from pathlib import Path
from types import ModuleType

from bisector.config import Section
from bisector.executors.kubernetes.settings import KubernetesSettings
from bisector.settings import RunSettings

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("real_jobs", ROOT / "scripts" / "real_jobs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("real_jobs", module)
    spec.loader.exec_module(module)
    return module


def test_the_config_is_the_modern_hunt_over_jobs_as_the_settings_read_it(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "admin.kubeconfig"
    text = _script().jobs_config(kubeconfig, "git://192.0.2.2:9418/run-tree", 2, tmp_path)
    config = tomllib.loads(text)
    modern = tomllib.loads((ROOT / "configs" / "procs-modern.toml").read_text())
    assert config["backends"] == modern["backends"]
    assert config["metrics"] == modern["metrics"]
    settings = RunSettings.from_config(
        Section(config, "real-jobs.toml"), good="a", bad="b", repo=tmp_path
    )
    assert (settings.executor, settings.backend) == ("kubernetes", "procs")
    assert settings.search.parallel == 2
    cfg = KubernetesSettings.from_section(settings.executor_section)
    assert (cfg.kubeconfig, cfg.git_url) == (str(kubeconfig), "git://192.0.2.2:9418/run-tree")
    assert cfg.cache_host_path == str(tmp_path)
    assert set(cfg.cache_mounts.values()) == {"go-build", "builds"}


def test_evaluations_that_do_not_name_their_pod_are_found(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    pod = "Job default/bisector-x-001-abc, pod bisector-x-001-abc-q7fg6 on node n"
    report.write_text(
        json.dumps(
            {
                "evaluations": [
                    {"n": 1, "ran_on": pod},
                    {"n": 2, "ran_on": ""},
                    {"n": 3, "cached": True, "ran_on": ""},
                ]
            }
        )
    )
    assert _script().pods_named(report) == (2, [2])
    assert _script().pods_named(tmp_path / "missing.json") == (0, [])
