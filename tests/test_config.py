from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from bisector.config import Section, load_config
from bisector.errors import ConfigError


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_typed_getters_and_tables(tmp_path: Path) -> None:
    root = load_config(
        _write(tmp_path, '[run]\nmetric = "conflicts"\nwarmup = "5m"\nrepeats = 3\n')
    )
    run = root.table("run")
    assert run.get_str("metric") == "conflicts"
    assert run.get_duration("warmup") == 300.0
    assert run.get_int("repeats") == 3
    assert run.opt_float("threshold") is None
    assert root.table("backends").table("local").data == {}


def test_wrong_type_names_file_and_key(tmp_path: Path) -> None:
    path = _write(tmp_path, '[run]\nrepeats = "three"\n')
    with pytest.raises(ConfigError, match=r"c\.toml: key `run\.repeats`: expected a whole number"):
        load_config(path).table("run").get_int("repeats")


def test_bool_is_not_a_number(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="expected a number"):
        load_config(_write(tmp_path, "[run]\nthreshold = true\n")).table("run").get_float(
            "threshold"
        )


def test_missing_key_and_unknown_key(tmp_path: Path) -> None:
    run = load_config(_write(tmp_path, "[run]\nmetrik = 1\n")).table("run")
    with pytest.raises(ConfigError, match=r"`run\.metric` is missing"):
        run.get_str("metric")
    with pytest.raises(ConfigError, match=r"`run\.metrik` is not a known setting"):
        run.check_keys(["metric", "threshold"])


def test_bad_toml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(_write(tmp_path, "[run\n"))
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")


def test_overrides_and_fingerprint() -> None:
    base = Section({"metric": "conflicts", "threshold": 10}, "f.toml", "run")
    over = base.with_overrides({"threshold": 20, "metric": None})
    assert over.get_float("threshold") == 20.0
    assert over.get_str("metric") == "conflicts"
    assert base.fingerprint() != over.fingerprint()
    assert base.fingerprint() == Section(dict(base.data)).fingerprint()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "+inf"])
def test_numbers_are_finite(tmp_path: Path, value: str) -> None:
    """TOML has nan and inf: a threshold of nan would score every run good."""
    run = load_config(_write(tmp_path, f"[run]\nthreshold = {value}\n")).table("run")
    with pytest.raises(ConfigError, match=r"`run\.threshold` must be a finite number"):
        run.opt_float("threshold")
    with pytest.raises(ConfigError, match="finite"):
        run.get_float("threshold", 1.0)


def test_an_error_about_a_flag_names_the_flag_not_the_file() -> None:
    base = Section({"warmup": "5m"}, "f.toml", "run").with_overrides({"launch_attempts": 0})
    with pytest.raises(ConfigError, match=r"^--launch-attempts must be at least 1, got 0$"):
        base.get_int("launch_attempts", low=1)
    assert base.where("warmup") == "f.toml: key `run.warmup`"


def test_whole_numbers_in_range_and_durations_that_must_be_positive(tmp_path: Path) -> None:
    run = load_config(_write(tmp_path, '[run]\nrepeats = 101\nevery = "0s"\n')).table("run")
    with pytest.raises(ConfigError, match=r"`run\.repeats` must be at most 100, got 101"):
        run.get_int("repeats", low=1, high=100)
    assert run.get_duration("every") == 0.0
    with pytest.raises(ConfigError, match=r"`run\.every` must be longer than 0"):
        run.get_duration("every", positive=True)


# Issue 22, point 1: a missing key names the file read (or that none was given) and the
# shipped example under configs/ that sets it.
def test_a_missing_key_names_the_file_and_the_example_that_sets_it(tmp_path: Path) -> None:
    local = load_config(_write(tmp_path, '[run]\nbackend = "local"\n'))
    section = local.table("backends").table("local")
    with pytest.raises(ConfigError) as info:
        section.get_str("launch")
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'c.toml'}: key `backends.local.launch` is missing")
    assert message.endswith("configs/local-example.toml sets it")


def test_with_no_config_the_missing_key_says_so_and_says_to_pass_one() -> None:
    with pytest.raises(ConfigError) as info:
        Section(path="backends.gce").get_str("project")
    message = str(info.value)
    assert message.startswith("no --config FILE given: key `backends.gce.project` is missing")
    assert "configs/gce-kubemark-500.toml sets it: pass a config like it with --config FILE" in (
        message
    )
    assert "<defaults>" not in message


def test_a_key_no_example_sets_still_says_to_pass_a_config() -> None:
    with pytest.raises(ConfigError, match=r"no such key anywhere.*pass --config FILE$"):
        Section(path="no such key anywhere").get_str("x")


def test_examples_are_found_through_arrays_and_tables(tmp_path: Path) -> None:
    from bisector.config import example_setting

    (tmp_path / "a.toml").write_text('[[nightly.jobs]]\nrepo = "/k"\n')
    (tmp_path / "b.toml").write_text("[run]\nwarmup = '1m'\n")
    (tmp_path / "broken.toml").write_text("[run\n")  # skipped, never an error
    assert example_setting("nightly.jobs[3].repo", tmp_path) == str(tmp_path / "a.toml")
    assert example_setting("run.warmup", tmp_path) == str(tmp_path / "b.toml")
    assert example_setting("run.metric", tmp_path) is None
    assert example_setting("run.warmup", tmp_path / "absent") is None


# -- declared settings and tables (issues 27.5, 29.4) ------------------------------------


def _run_settings(path: Path) -> object:
    from bisector.settings import RunSettings

    return RunSettings.from_config(load_config(path), good="a", bad="b")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # issue 29: each was accepted and its keys silently unused (the defaults ran).
        ("[serch]\nparallel = 2\n", "`[serch]` is not a known table; did you mean [search]?"),
        (
            "[backend.sim]\nnodes = 10\n",
            "`[backend]` is not a known table; did you mean [backends]?",
        ),
        (
            "[backends.simm]\nnodes = 10\n",
            "`[backends.simm]` is not a known table; did you mean [backends.sim]?",
        ),
        ("[zzz]\n", "`[zzz]` is not a known table; known tables here: backends, metrics, run"),
        ('warmup = "1m"\n[run]\n', "key `warmup` is in no known table; known tables here: b"),
    ],
)
def test_a_misspelt_table_is_refused_with_the_nearest_known_name(
    tmp_path: Path, text: str, says: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _run_settings(_write(tmp_path, text))
    assert str(caught.value).startswith(f"{tmp_path / 'c.toml'}: ") and says in str(caught.value)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[search]\nerror_rate = 0.5\n", "search.error_rate` must be less than 0.5 (a run's"),
        ("[search]\nconfidence = 1\n", "search.confidence` must be less than 1 ("),
        ("[search]\nconfidence = 0.5\n", "search.confidence` must be more than 0.5, got 0.5"),
        ("[search]\nparallel = 0\n", "search.parallel` must be at least 1, got 0"),
        ("[search]\nendpoint_runs = -1\n", "search.endpoint_runs` must be at least 0, got -1"),
        ('[search]\nlikelihood = "x"\n', "likelihood` must be one of verdict, metric, got 'x'"),
        ('[run]\nestimate = "0s"\n', "run.estimate` must be more than 0s, got '0s'"),
        ("[run]\nprefetch_builds = 65\n", "run.prefetch_builds` must be at most 64, got 65"),
        ("[run]\nprice_per_cluster_hour = -1\n", "price_per_cluster_hour` must be at least 0"),
    ],
)
def test_run_and_search_keys_out_of_bounds_name_key_value_and_bound(
    tmp_path: Path, text: str, says: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _run_settings(_write(tmp_path, text))
    assert says in str(caught.value) and "c.toml: key `" in str(caught.value)


def test_automatic_counts_read_as_none_and_keys_come_from_the_declaration(tmp_path: Path) -> None:
    from bisector.settings import SEARCH_KEYS, RunSettings, SearchSettings

    settings = RunSettings.from_config(
        load_config(_write(tmp_path, "[search]\nmax_evaluations = 0\nendpoint_runs = 2\n")),
        good="a",
        bad="b",
    )
    assert isinstance(settings, RunSettings)
    assert settings.search.max_evaluations is None and settings.search.endpoint_runs == 2
    assert SearchSettings().max_evaluations is None and SearchSettings().parallel == 1
    assert "measure_ahead" not in SEARCH_KEYS and "parallel" in SEARCH_KEYS


def test_a_nightly_job_error_keeps_the_jobs_table_path(tmp_path: Path) -> None:
    from bisector.settings import RunSettings

    job = Section({"search": {"parallel": 0}}, "n.toml", "nightly.jobs[2]")
    with pytest.raises(ConfigError, match=r"^n\.toml: key `nightly\.jobs\[2\]\.search\.parallel`"):
        RunSettings.from_config(job, good="a", bad="b")


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ('go = "go\\u0000"', lambda s: s.get_str("go")),
        ('args = ["--v=3", "\\u0000"]', lambda s: s.get_str_list("args")),
    ],
)
def test_a_nul_in_a_string_is_one_line_naming_the_key(
    tmp_path: Path, text: str, read: Callable[[Section], object]
) -> None:
    """`go = "\\u0000"` in [backends.procs] reached subprocess, whose ValueError ("embedded
    null byte") came out of doctor and `run`'s preflight as a traceback."""
    config = tmp_path / "c.toml"
    config.write_text(f"[backends.procs]\n{text}\n")
    section = load_config(config).table("backends").table("procs")
    with pytest.raises(ConfigError, match=r"key `backends\.procs\.(go|args)`: .*NUL") as caught:
        read(section)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("key", ["gocache", "build_cache_dir", "tmpdir"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_path_is_refused_not_read_as_the_current_directory(key: str, value: str) -> None:
    """`tmpdir = ""` put etcd's data, `build_cache_dir = ""` the built binaries, in whatever
    directory bisector ran from (Path("") is "."), silently."""
    from bisector.backends.procs.options import ProcsSettings

    section = Section({key: value}, "p.toml", "backends.procs")
    with pytest.raises(ConfigError, match=rf"^p\.toml: key `backends\.procs\.{key}` is empty"):
        ProcsSettings.from_section(section)


def test_an_endless_config_is_refused_not_read_to_the_end() -> None:
    """`--config /dev/zero` was read until the OOM killer ended bisector (exit 137)."""
    with pytest.raises(ConfigError, match=r"^config file /dev/zero holds more than 16 MiB"):
        load_config("/dev/zero")


# -- values refused up front (issue 30, follow-up to item 2) ------------------------------


def _declared() -> list[tuple[str, type]]:
    """Every declared settings table, by the table path its errors name."""
    from bisector.backends.gce.options import GceSettings
    from bisector.backends.kind.steps import KindSettings
    from bisector.backends.local import LocalSettings
    from bisector.backends.procs.load import WatchSpec
    from bisector.backends.procs.options import ProcsSettings
    from bisector.backends.sim import SimSettings
    from bisector.nightly.config import JobTable, NightlyTable
    from bisector.settings import RunSettings, SearchSettings

    return [
        ("backends.procs", ProcsSettings),
        ("backends.procs.watches[0]", WatchSpec),
        ("backends.kind", KindSettings),
        ("backends.gce", GceSettings),
        ("backends.local", LocalSettings),
        ("backends.sim", SimSettings),
        ("nightly", NightlyTable),
        ("nightly.jobs[0]", JobTable),
        ("run", RunSettings),
        ("search", SearchSettings),
    ]


def _keys_of_kind(*kinds: str) -> list[tuple[str, str]]:
    from bisector.config import key_specs

    return [
        (table, name)
        for table, cls in _declared()
        for name, key in key_specs(cls).items()
        if key.kind in kinds and key.reader is None and key.default != ""
    ]


def _read_one(table: str, name: str, value: object) -> object:
    from bisector.config import key_specs

    cls = dict(_declared())[table]
    return key_specs(cls)[name].read(Section({name: value}, "c.toml", table), name)


@pytest.mark.parametrize(("table", "name"), _keys_of_kind("str"))
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_string_is_refused_naming_table_and_key(table: str, name: str, value: str) -> None:
    """`[[nightly.jobs]] bucket = ""`, `etcd = ""`, `go = ""` were accepted and failed (if
    at all) only at the first read, launch or build: every string key whose default is not
    "" (a selector's "" means none) refuses an empty value with one line."""
    with pytest.raises(ConfigError) as caught:
        _read_one(table, name, value)
    said = str(caught.value)
    assert said.startswith(f"c.toml: key `{table}.{name}` is empty ({value!r})"), said
    assert "\n" not in said


def test_the_sweep_of_string_keys_covers_the_named_cases() -> None:
    """The sweep above is not empty by accident: the brief's keys are among its cases."""
    swept = set(_keys_of_kind("str"))
    assert {("nightly.jobs[0]", "bucket"), ("backends.procs", "etcd")} <= swept
    assert ("backends.local", "launch") in swept
    assert ("backends.procs.watches[0]", "label_selector") not in swept  # "": no selector


@pytest.mark.parametrize(("table", "name"), _keys_of_kind("str_list"))
def test_an_empty_item_of_a_list_is_refused(table: str, name: str) -> None:
    """`apiserver_args = ["--v=4", ""]`: kube-apiserver ignores an empty argument (2017's
    flag.InitFlags leaves it an unread positional: cmd/kube-apiserver/apiserver.go in the
    hyperhq/kubernetes mirror; v1.32's cobra Args skips `len(arg) == 0`:
    cmd/kube-apiserver/app/server.go), so the flag the user meant is silently absent."""
    with pytest.raises(ConfigError, match=rf"key `{re.escape(table)}\.{name}`: item 2 of"):
        _read_one(table, name, ["--v=4", ""])
    assert _read_one(table, name, ["--v=4"]) == ("--v=4",)


def test_the_procs_apiserver_args_refuse_an_empty_argument_through_the_backend() -> None:
    from bisector.backends.procs.options import ProcsSettings

    section = Section({"apiserver_args": [""]}, "p.toml", "backends.procs")
    with pytest.raises(ConfigError, match=r"^p\.toml: key `backends\.procs\.apiserver_args`: "):
        ProcsSettings.from_section(section)


@pytest.mark.parametrize(("table", "name"), _keys_of_kind("path"))
def test_a_cache_directory_that_is_a_file_is_refused(tmp_path: Path, table: str, name: str) -> None:
    """`gocache = "/etc/hosts"`: go fails at the first build (GOCACHE is not a directory);
    every directory key bisector creates when absent refuses an existing file up front."""
    file = tmp_path / "a-file"
    file.write_text("x")
    with pytest.raises(ConfigError) as caught:
        _read_one(table, name, str(file))
    assert str(caught.value).startswith(
        f"c.toml: key `{table}.{name}` = '{file}' exists and is not a directory"
    )
    assert _read_one(table, name, str(tmp_path / "new")) == tmp_path / "new"  # created later


def test_the_procs_gocache_refuses_a_file_through_the_backend(tmp_path: Path) -> None:
    from bisector.backends.procs.options import ProcsSettings

    assert ("backends.procs", "gocache") in _keys_of_kind("path")
    (tmp_path / "cache").write_text("")
    section = Section({"gocache": str(tmp_path / "cache")}, "p.toml", "backends.procs")
    with pytest.raises(ConfigError, match=r"gocache` = '.*cache' exists and is not a directory"):
        ProcsSettings.from_section(section)


def test_a_kind_config_must_be_a_file_and_a_base_checkout_a_directory(tmp_path: Path) -> None:
    """Both were read only at launch: a directory as `kind_config` (read_text: IsADirectory),
    a `base_checkout` that does not exist (its release tarball looked for at setup)."""
    with pytest.raises(ConfigError, match=r"kind_config` = .* is not an existing regular file"):
        _read_one("backends.kind", "kind_config", str(tmp_path))
    with pytest.raises(ConfigError, match=r"base_checkout` = .* is not an existing directory"):
        _read_one("backends.gce", "base_checkout", str(tmp_path / "absent"))


def test_an_empty_base_prefix_is_refused() -> None:
    from bisector.backends.gce.options import _base_prefix

    with pytest.raises(ConfigError, match=r"key `backends\.gce\.base_prefix` is empty"):
        _base_prefix(Section({"base_prefix": ""}, "c.toml", "backends.gce"), "base_prefix")


@pytest.mark.parametrize("key", ["state", "reports"])
def test_a_nightly_directory_that_is_a_file_is_refused(tmp_path: Path, key: str) -> None:
    from bisector.nightly.config import load_nightly_config

    (tmp_path / "taken").write_text("")
    config = tmp_path / "nightly.toml"
    config.write_text(f'[nightly]\n{key} = "taken"\n[[nightly.jobs]]\njob = "ci-x"\n')
    with pytest.raises(ConfigError, match=rf"key `nightly\.{key}`: .*taken exists and is not a d"):
        load_nightly_config(config)


def test_an_empty_nightly_bucket_is_refused_when_the_config_is_loaded(tmp_path: Path) -> None:
    from bisector.nightly.config import load_nightly_config

    config = tmp_path / "nightly.toml"
    config.write_text('[nightly]\n[[nightly.jobs]]\njob = "ci-x"\nbucket = ""\n')
    with pytest.raises(ConfigError, match=r"key `nightly\.jobs\[0\]\.bucket` is empty \(''\)"):
        load_nightly_config(config)


@pytest.mark.parametrize("key", ["name", "command", "patch"])
def test_an_empty_build_fix_key_is_refused(key: str) -> None:
    """`[[backends.procs.build_fixes]] command = ""` ran `bash -c ""` (exit 0): a fix that
    did nothing; `patch = ""` read as no patch at all (a fix with neither); `name = ""` no name."""
    from bisector.backends.procs.options import ProcsSettings

    fix = {"name": "n", "command": "true", key: ""}
    if key == "patch":
        del fix["command"]
    section = Section({"build_fixes": [fix]}, "p.toml", "backends.procs")
    with pytest.raises(ConfigError, match=rf"build_fixes\[0\]\.{key}` is empty"):
        ProcsSettings.from_section(section)
