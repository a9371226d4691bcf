"""The procs backend's `[backends.procs]` table (bisector/backends/procs/options.py):
defaults, bounds, the watches it can open, the shipped config."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.backends.procs.options import DATA, ProcsSettings
from bisector.backends.registry import backend_info
from bisector.config import Section, load_config
from bisector.errors import ConfigError
from bisector.settings import RunSettings
from tests.helpers.procs_backend import procs_settings


def test_defaults_are_the_2017_setup() -> None:
    cfg = procs_settings()
    assert cfg.go == "/usr/lib/go-1.19/bin/go" and cfg.hollow_nodes == 100
    assert cfg.harness_patch == DATA / "hollow-node-1.7.patch"
    assert cfg.node_status_period == 10.0 and cfg.watchers == 0 and cfg.serving == "auto"


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"hollow_nodes": 0}, "hollow_nodes` must be at least 1"),
        ({"watchers": -1}, "watchers` must be at least 0"),
        ({"node_status_period": "500ms"}, "at least 1s"),
        ({"serving": "tls"}, "serving` must be one of auto, insecure, secure"),
        ({"prefetch_nice": 20}, "prefetch_nice` must be at most 19 (the range of nice levels)"),
        ({"harness_commit": "main"}, "write a commit hash"),
        ({"harness_patch": "builtin:nope"}, "no built-in patch 'nope'"),
        ({"hollow_node": 5}, "is not a known setting"),
        # Found in the adversarial pass: accepted, and with workload_ends_warmup it ended
        # every warmup at once.
        ({"workload": "  "}, "workload` is empty: write a command or leave the key out"),
        ({"build_fixes": [{"name": "x"}]}, "one `command` or `patch`"),
        ({"build_fixes": [{"name": "x", "command": "a", "patch": "b"}]}, "one `command`"),
        ({"build_fixes": [{"name": "x", "command": "a", "since": "HEAD~1"}]}, "commit hash"),
        ({"build_fixes": [{"name": "x", "command": "a", "when": "1"}]}, "not a known setting"),
        ({"build_fixes": [{"name": "x", "command": "a"}, {"name": "x", "command": "b"}]}, "share"),
        ({"build_fixes": "sed"}, "build_fixes]] tables"),
    ],
)
def test_bad_settings_are_one_clear_config_error(data: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError, match=r"p\.toml") as caught:
        procs_settings(**data)
    assert says in str(caught.value)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        # issue 30 item 2: each launched a cluster (or hung) before it was refused.
        ({"ready_timeout": "0s"}, "ready_timeout` must be at least 10s (a kube-apiserver"),
        # Found on a real cluster: 1ms passed (the bound was "more than 0") and every launch
        # then failed `kube-apiserver /healthz ok: not after 0.00s`, a skip per candidate.
        ({"ready_timeout": "1ms"}, "ready_timeout` must be at least 10s (a kube-apiserver"),
        ({"hollow_nodes": 1_000_000_000}, "hollow_nodes` must be at most 27,766 (each takes 2"),
        ({"watchers": 1_000_000_000}, "watchers` must be at most 1,048,576 (one socket each"),
        ({"build_timeout": "0s"}, "build_timeout` must be more than 0s"),
        ({"git_timeout": 0}, "git_timeout` must be more than 0s"),
        ({"verbosity": -1}, "verbosity` must be at least 0"),
        ({"watch_open_rate": 0}, "watch_open_rate` must be more than 0"),
    ],
)
def test_a_key_out_of_bounds_is_refused_naming_table_key_value_and_bound(
    data: dict[str, object], says: str
) -> None:
    # A nightly job's table: the error keeps its path (config.Section.where()).
    section = Section(data, "n.toml", "nightly.jobs[2].backends.procs")
    with pytest.raises(ConfigError) as caught:
        ProcsSettings.from_section(section)
    line = str(caught.value)
    assert line.startswith("n.toml: key `nightly.jobs[2].backends.procs.") and says in line
    assert f"got {next(iter(data.values()))!r}" in line and "\n" not in line


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"watchers": 200, "watch_open_rate": 0.01}, "backends.procs.watch_open_rate"),
        ({"watchers": 16000, "watch_open_rate": 50}, "backends.procs.watch_open_rate"),
        (
            {"watches": [{"resource": "pods", "count": 100, "open_rate": 1e-300}]},
            "backends.procs.watches[0].open_rate",
        ),
    ],
)
def test_watches_that_cannot_open_within_the_launch_wait_are_refused_naming_the_rate(
    data: dict[str, object], key: str
) -> None:
    # The adversarial pass of 4 December 2026: `watch_open_rate = 0.01` with 200 watches
    # was accepted ("more than 0"); the load generator opens one watch each 1/rate s
    # (load.py `run`), so every launch waited ready_timeout (5m) for "200 node watches
    # open" and failed, a launch skip per candidate naming no key.
    with pytest.raises(ConfigError) as caught:
        procs_settings(**data)
    line = str(caught.value)
    assert line.startswith(f"p.toml: key `{key}`") and "\n" not in line, line
    assert "longer than ready_timeout (5m00s)" in line and "open them faster" in line, line


def test_watches_that_open_within_the_launch_wait_are_accepted() -> None:
    # 16,000 watches at 6,000 a second (configs/procs-2017.toml): 2.7 s of a 5-minute wait;
    # and a rate that just fits a longer wait.
    assert procs_settings(watchers=16000, watch_open_rate=6000).watch_open_rate == 6000
    assert procs_settings(watchers=200, watch_open_rate=1, ready_timeout="4m").watchers == 200


def test_a_tmpdir_that_does_not_exist_is_refused_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    with pytest.raises(ConfigError, match=r"tmpdir` = '.*no/such' is not an existing directory"):
        procs_settings(tmpdir=str(missing))
    assert not (tmp_path / "no").exists()


def test_the_registry_describes_the_backend_and_its_keys() -> None:
    info = backend_info("procs")
    assert "hollow_nodes" in info.keys() and info.checks is not None  # noqa: SIM118


def test_the_shipped_config_reads() -> None:
    config = load_config(Path(__file__).parents[3] / "configs" / "procs-2017.toml")
    s = RunSettings.from_config(config, good="a", bad="b")
    cfg = ProcsSettings.from_section(s.backend_section)
    assert s.backend == "procs" and s.first_parent and s.check_every_s
    assert [f.name for f in cfg.build_fixes] == [
        "apiextensions-import-comments",
        "generate-openapi",
    ]


def test_a_cache_directory_that_is_not_a_directory_is_refused_when_read() -> None:
    # The adversarial pass's `build_cache_dir = "/dev/null"`: an existing path that is not a
    # directory is refused with the settings (bisector/config.py), before doctor or a run.
    with pytest.raises(ConfigError, match="build_cache_dir` = '/dev/null' exists and is not a"):
        ProcsSettings.from_section(
            Section({"build_cache_dir": "/dev/null"}, "p.toml", "backends.procs")
        )
