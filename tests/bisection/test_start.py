"""prepare_bisection: what is refused before any state, build or launch."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.backends.registry import create_backend
from bisector.bisection.start import measure_settings
from bisector.config import Section
from bisector.entry import main
from bisector.settings import RunSettings
from tests.helpers.repo import build_repo


@pytest.mark.parametrize("metric", ["scheduling_throughput", "pod_startup_p99_ms"])
def test_a_cl2_metric_on_a_backend_with_no_cl2_report_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], metric: str
) -> None:
    # Every evaluation would have been a skip, each paid for with a cluster (the sim here;
    # gce and procs alike): one line, the usage code, no run directory.
    built = build_repo(tmp_path / "repo", [1, 1, 9, 9])
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "run",
                "--repo",
                str(built.path),
                "--good",
                built.mainline[0],
                "--bad",
                built.mainline[-1],
                "--metric",
                metric,
                "--run-dir",
                str(run_dir),
            ]
        )
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert f"{metric} is a cl2 metric and the sim backend runs no ClusterLoader2" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not run_dir.exists()


@pytest.mark.parametrize(
    ("backend", "table", "warmup_s"),
    [
        ("sim", {}, 60.0),  # [run] warmup
        ("sim", {"duration": "2m"}, 120.0),  # the sim's own simulated length
        ("kind", {}, 60.0),
        ("kind", {"workload": "cl2.sh"}, 0.0),  # the workload's own run ends the warmup
    ],
)
def test_the_warmup_a_measurement_lasts_is_decided_once_from_settings_and_backend(
    tmp_path: Path, backend: str, table: dict[str, object], warmup_s: float
) -> None:
    tables = {"run": {"backend": backend, "warmup": "1m"}, "backends": {backend: table}}
    settings = RunSettings.from_config(Section(tables), good="a", bad="b")
    built = create_backend(backend, settings.backend_context(tmp_path))
    assert measure_settings(settings, built).warmup_s == warmup_s


@pytest.mark.parametrize(("metric", "looks"), [("conflicts", 10.0), ("conflicts_per_min", None)])
def test_the_backend_and_the_measurement_get_the_same_looks(
    tmp_path: Path, metric: str, looks: float | None
) -> None:
    run = {"warmup": "1m", "check_every": "10s", "metric": metric}
    settings = RunSettings.from_config(Section({"run": run}), good="a", bad="b")
    context = settings.backend_context(tmp_path)
    measured = measure_settings(settings, create_backend("sim", context))
    assert context.check_every_s == measured.check_every_s == looks  # a rate can fall: no looks
