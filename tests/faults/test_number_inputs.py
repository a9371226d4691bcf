"""Every number and duration a user gives is checked before anything is launched.

`warmup = nan`, `inf` or `1e308` (in a config or as `--warmup`) launched a cluster and
ended in exit 70, "internal error ... ValueError" (nan: `sleep` refuses it) or
"OverflowError: timestamp out of range" (1e308); `--parallel` or `--repeats`
100000000000000000000 hung before the first launch. Each row here goes through the
CLI's own entry point (`bisector.entry.main`) with the fault-injecting local backend,
and must end in the command's usage code with one line naming the flag or the file
and key, and nothing built or launched.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bisector.entry import main
from bisector.exitcodes import DemoExit, HistoryExit, NightlyExit, RunExit, ScoreExit
from tests.helpers.faults import FaultDriver, write_fault_config
from tests.helpers.repo import BuiltRepo, build_repo

HUGE = "100000000000000000000"
X_METRIC = '[metrics.x]\nverb = "PATCH"\npath = "^/api/v1/nodes/"\n'
X_PATH = '[metrics.x]\npath = "^/api/v1/nodes/"\n'
NAN, INF = float("nan"), float("inf")

# (id, flags, [run] table, extra TOML text after the config, what the line names)
RUN_ROWS: list[tuple[str, list[str], dict[str, object], str, str]] = [
    ("warmup-flag-nan", ["--warmup", "nan"], {}, "", "--warmup"),
    ("warmup-flag-inf", ["--warmup", "inf"], {}, "", "--warmup"),
    ("warmup-flag-1e308", ["--warmup", "1e308"], {}, "", "--warmup"),
    ("warmup-flag-1e400", ["--warmup", "1e400"], {}, "", "--warmup"),
    ("warmup-flag-huge-h", ["--warmup", HUGE + "h"], {}, "", "--warmup"),
    ("warmup-flag-negative", ["--warmup", "-5m"], {}, "", "--warmup"),
    ("warmup-nan", [], {"warmup": NAN}, "", "run.warmup"),
    ("warmup-inf", [], {"warmup": INF}, "", "run.warmup"),
    ("warmup-1e308", [], {"warmup": 1e308}, "", "run.warmup"),
    ("warmup-text-nan", [], {"warmup": "nan"}, "", "run.warmup"),
    ("warmup-text-1e308s", [], {"warmup": "1e308"}, "", "run.warmup"),
    ("warmup-31-days", [], {"warmup": "745h"}, "", "run.warmup"),
    ("retry-wait-nan", [], {"retry_wait": NAN}, "", "run.retry_wait"),
    ("estimate-inf", [], {"estimate": INF}, "", "run.estimate"),
    ("estimate-zero", [], {"estimate": "0s"}, "", "run.estimate"),
    ("check-every-nan", [], {"check_every": NAN}, "", "run.check_every"),
    ("check-every-zero", [], {"check_every": "0s"}, "", "run.check_every"),
    ("threshold-nan", [], {"threshold": NAN}, "", "run.threshold"),
    ("threshold-flag-inf", ["--threshold", "inf"], {}, "", "--threshold"),
    ("threshold-flag-minus-inf", ["--threshold", "-inf"], {}, "", "--threshold"),
    ("price-nan", [], {"price_per_cluster_hour": NAN}, "", "run.price_per_cluster_hour"),
    ("price-negative", [], {"price_per_cluster_hour": -1.0}, "", "run.price_per_cluster_hour"),
    ("prefetch-negative", [], {"prefetch_builds": -1}, "", "run.prefetch_builds"),
    ("prefetch-huge", [], {"prefetch_builds": 10**9}, "", "run.prefetch_builds"),
    ("repeats-zero", ["--repeats", "0"], {}, "", "--repeats"),
    ("repeats-huge", ["--repeats", HUGE], {}, "", "--repeats"),
    ("repeats-config-huge", [], {"repeats": 2**62}, "", "run.repeats"),
    ("launch-attempts-zero", ["--launch-attempts", "0"], {}, "", "--launch-attempts"),
    ("launch-attempts-huge", ["--launch-attempts", HUGE], {}, "", "--launch-attempts"),
    ("parallel-zero", ["--parallel", "0"], {}, "", "--parallel"),
    ("parallel-huge", ["--parallel", HUGE], {}, "", "--parallel"),
    ("max-evaluations-negative", ["--max-evaluations", "-1"], {}, "", "--max-evaluations"),
    ("max-evaluations-huge", ["--max-evaluations", HUGE], {}, "", "--max-evaluations"),
    ("error-rate-nan", ["--error-rate", "nan"], {}, "", "--error-rate"),
    ("error-rate-inf", ["--error-rate", "inf"], {}, "", "--error-rate"),
    ("error-rate-half", ["--error-rate", "0.5"], {}, "", "--error-rate"),
    ("confidence-nan", [], {}, "[search]\nconfidence = nan\n", "search.confidence"),
    ("confidence-one", [], {}, "[search]\nconfidence = 1.0\n", "search.confidence"),
    ("endpoint-runs-huge", [], {}, f"[search]\nendpoint_runs = {2**62}\n", "search.endpoint_runs"),
    ("parallel-config-huge", [], {}, f"[search]\nparallel = {2**62}\n", "search.parallel"),
    ("error-rate-config-inf", [], {}, "[search]\nerror_rate = inf\n", "search.error_rate"),
    ("local-timeout-nan", [], {}, "timeout = nan\n", "backends.local.timeout"),
    ("local-timeout-zero", [], {}, 'timeout = "0s"\n', "backends.local.timeout"),
    ("local-timeout-1e308", [], {}, "timeout = 1e308\n", "backends.local.timeout"),
    ("metric-status-typo", ["--metric", "x"], {}, X_METRIC + "statuses = [4090]\n", "statuses"),
    ("metric-status-none", ["--metric", "x"], {}, X_METRIC + "statuses = []\n", "statuses"),
    ("metric-status-bool", ["--metric", "x"], {}, X_METRIC + "statuses = [true]\n", "statuses"),
    # git refused the empty pathspec only after the run directory was made.
    ("paths-empty", [], {"paths": ["", "pkg"]}, "", "run.paths"),
    # A verb that is no verb matched no line: every commit counted 0 and scored good.
    ("metric-verb-none", ["--metric", "x"], {}, X_PATH + "verb = []\n", "x.verb"),
    ("metric-verb-empty", ["--metric", "x"], {}, X_PATH + 'verb = ""\n', "x.verb"),
    ("metric-verb-uri", ["--metric", "x"], {}, X_PATH + 'verb = ["PATCH /api"]\n', "x.verb"),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltRepo:
    return build_repo(tmp_path_factory.mktemp("numbers") / "repo", [2, 2, 40, 40])


def _config(tmp_path: Path, run: dict[str, object], extra: str) -> FaultDriver:
    """The fault backend's config with `run` in [run]; `extra` goes after [backends.local]
    (keys of that table, or tables of their own)."""
    driver = write_fault_config(tmp_path, run=run)
    text = driver.config.read_text()
    if extra and not extra.startswith("["):  # keys of [backends.local]: replace its timeout
        text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("timeout")) + "\n"
    driver.config.write_text(text + extra)
    return driver


def _one_line(err: str, needle: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("bisector: error: "), err
    assert needle in lines[0], err
    assert "Traceback" not in err and "internal error" not in err


@pytest.mark.parametrize("row", [pytest.param(row[1:], id=row[0]) for row in RUN_ROWS])
def test_run_checks_every_number_before_anything_is_launched(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    built: BuiltRepo,
    row: tuple[list[str], dict[str, object], str, str],
) -> None:
    flags, run, extra, needle = row
    driver = _config(tmp_path, run, extra)
    argv = ["run", "--repo", str(built.path), "--config", str(driver.config)]
    argv += ["--good", built.mainline[0], "--bad", built.mainline[-1]]
    argv += ["--run-dir", str(tmp_path / "run"), *flags]
    try:
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == RunExit.USAGE, capsys.readouterr().err
        _one_line(capsys.readouterr().err, needle)
        assert driver.calls("built") == [] and driver.calls("launches") == []
    finally:
        driver.kill_leftovers()


@pytest.mark.parametrize(
    "flags",
    [
        ["--since", "nan"],
        ["--since", "inf"],
        ["--until", "1e308"],
        ["--min-window", "1e400"],
        ["--min-window", HUGE + "m"],
        ["--threshold", "-inf", "--metric", "conflicts"],
    ],
    ids=lambda f: "-".join(f[:2]),
)
def test_score_checks_its_numbers_with_its_own_usage_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    log = tmp_path / "kube-apiserver.log"
    log.write_text("")
    with pytest.raises(SystemExit) as info:
        main(["score", str(log), *flags])
    assert info.value.code == ScoreExit.USAGE  # 128: git bisect run stops, never "bad"
    _one_line(capsys.readouterr().err, flags[0])


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--nodes", HUGE], "--nodes"),
        (["--nodes", "-1"], "--nodes"),
        (["--prs", HUGE], "--prs"),
        (["--duration", "nan"], "--duration"),
        (["--duration", "inf"], "--duration"),
        (["--duration", "1e308"], "--duration"),
        (["--duration", "400h"], "--duration"),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, list) else "",
)
def test_demo_checks_its_numbers_before_making_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], needle: str
) -> None:
    where = tmp_path / "demo"
    with pytest.raises(SystemExit) as info:
        main(["demo", "--dir", str(where), *flags])
    assert info.value.code == DemoExit.USAGE
    _one_line(capsys.readouterr().err, needle)
    assert not where.exists()


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--workers", "0"], "--workers"),
        (["--workers", "-3"], "--workers"),
        (["--workers", HUGE], "--workers"),
        (["--last", "0"], "--last"),
        (["--threshold", "inf"], "--threshold"),
        (["--threshold", "nan"], "--threshold"),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, list) else "",
)
def test_history_checks_its_numbers_before_reading_gcs(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    needle: str,
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:9")  # nothing listens
    with pytest.raises(SystemExit) as info:
        main(["history", "--job", "ci-job", "--no-cache", *flags])
    assert info.value.code == HistoryExit.USAGE
    _one_line(capsys.readouterr().err, needle)


@pytest.mark.parametrize(
    ("job", "needle"),
    [
        ("budget = { cluster_hours = nan }", "budget.cluster_hours"),
        ("budget = { cluster_hours = inf }", "budget.cluster_hours"),
        ("budget = { cluster_hours = -1 }", "budget.cluster_hours"),
        ("budget = { evaluations = 0 }", "budget.evaluations"),
        (f"budget = {{ evaluations = {2**62} }}", "budget.evaluations"),
        ("threshold = nan", "threshold"),
        ("min_bad_runs = 0", "min_bad_runs"),
        ('[nightly.jobs.run]\nwarmup = nan\nbackend = "local"', "run.warmup"),
        ('[nightly.jobs.run]\nwarmup = "1e308"\nbackend = "local"', "run.warmup"),
        ('[nightly.jobs.run]\nrepeats = 0\nbackend = "local"', "run.repeats"),
        ("[nightly.jobs.search]\nparallel = 0", "search"),
    ],
    ids=lambda v: (
        v.replace("\n", " ").replace('backend = "local"', "")[:44] if isinstance(v, str) else ""
    ),
)
def test_nightly_checks_every_number_before_scoring_or_hunting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], job: str, needle: str
) -> None:
    config = tmp_path / "nightly.toml"
    repo = tmp_path / "kubernetes"
    repo.mkdir()
    config.write_text(
        f'[nightly]\nstate = "{tmp_path / "state"}"\n\n[[nightly.jobs]]\njob = "ci-job"\n'
        f'repo = "{repo}"\n{job}\n'
    )
    env = os.environ.get("STORAGE_EMULATOR_HOST")
    os.environ["STORAGE_EMULATOR_HOST"] = "http://127.0.0.1:9"  # nothing listens
    try:
        with pytest.raises(SystemExit) as info:
            main(["nightly", "--config", str(config)])
    finally:
        if env is None:
            os.environ.pop("STORAGE_EMULATOR_HOST")
        else:
            os.environ["STORAGE_EMULATOR_HOST"] = env
    assert info.value.code == NightlyExit.USAGE, capsys.readouterr()
    _one_line(capsys.readouterr().err, needle)
