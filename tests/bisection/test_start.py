"""prepare_bisection: what is refused before any state, build or launch."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.entry import main
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
