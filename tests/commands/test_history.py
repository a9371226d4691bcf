"""`bisector history` end to end against the emulator holding runs 427..447 of the 2017 hunt."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bisector.ci import scoring
from bisector.commands import run as run_cmd
from bisector.entry import main
from bisector.settings import RunSettings
from tests.helpers.ci_history import BAD_2017, GOOD_2017, incident_history, write_job_history

BUCKET = "kubernetes-jenkins"
JOB = "ci-kubernetes-kubemark-gce-scale"


@pytest.fixture(scope="module")
def incident(gcs_client: Any) -> None:
    write_job_history(gcs_client, BUCKET, JOB, incident_history())


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One score cache for the tests that are not about caching: each run is scored once."""
    return tmp_path_factory.mktemp("history-cache")


def _history(capsys: pytest.CaptureFixture[str], cache: Path, *args: str) -> tuple[int, str, str]:
    argv = ["history", "--job", JOB, "--bucket", BUCKET, "--cache-dir", str(cache)]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, *args])
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def _rows(out: str) -> dict[int, list[str]]:
    rows = {}
    for line in out.splitlines():
        if match := re.match(r"^\s*(\d+)  (.*)$", line):
            rows[int(match.group(1))] = re.split(r"\s{2,}", match.group(2).strip())
    return rows


@pytest.mark.slow
@pytest.mark.usefixtures("incident")
def test_table_range_and_command(capsys: pytest.CaptureFixture[str], shared_cache: Path) -> None:
    code, out, _ = _history(capsys, shared_cache, "--runs", "427..447")
    assert code == 0
    rows = _rows(out)
    assert sorted(rows) == list(range(427, 448))
    # run: date, result, commit, metric[, mark]
    assert rows[427][1:4] == ["SUCCESS", "000001abc0ffee", "44"]
    assert rows[427][0].startswith("2017-")
    assert rows[428][3] == "no logs"  # never shown as good
    assert rows[430][3] == "no data"  # --v=2: no request lines
    assert rows[433][1:4] == ["FAILURE", "000001b1c0ffee", "520"]  # the noisy run
    assert rows[433][4:] == []  # ... is not the step
    assert rows[436][2] == "000001b4c0ffee"  # commit from the version string only
    assert rows[442] == [rows[442][0], "SUCCESS", GOOD_2017[:14], "86", "<- last good"]
    assert rows[446] == [rows[446][0], "SUCCESS", BAD_2017[:14], "463", "<- first bad"]
    assert rows[447][1:4] == ["FAILURE", "000001bfc0ffee", "221"]
    assert f"last good: run 442, commit {GOOD_2017}" in out
    assert f"first bad: run 446, commit {BAD_2017}" in out
    assert "change point" in out
    assert f"  bisector run --good {GOOD_2017} --bad {BAD_2017} --metric conflicts\n" in out
    # Every change point with its p-value and direction; the hunted one marked.
    changes = out.split("change points in conflicts")[1].splitlines()
    assert re.fullmatch(
        r"  runs 442\.\.446: 53\.5 -> 342 \(\+539%\), regression, p<1e-12  <- hunted",
        changes[1],
    )
    assert changes[2].startswith("regression in conflicts: 53.5 -> 342 (threshold 131.2")


@pytest.mark.usefixtures("incident")
def test_json_output_is_exactly_the_issue_shape(
    capsys: pytest.CaptureFixture[str], shared_cache: Path
) -> None:
    code, out, _ = _history(capsys, shared_cache, "--json", "--last", "21")
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"runs", "range", "change_points"}
    assert doc["range"] == {"good": GOOD_2017, "bad": BAD_2017, "good_run": 442, "bad_run": 446}
    # One change point, the one the range came from; 433 (520 among ~50s) is no level.
    [point] = doc["change_points"]
    assert set(point) == {
        "run", "last_before_run", "first_after_run", "last_before_commit",
        "first_after_commit", "before", "after", "change", "p_value", "direction", "hunted",
    }  # fmt: skip
    assert (point["run"], point["last_before_run"], point["first_after_run"]) == (446, 442, 446)
    assert (point["last_before_commit"], point["first_after_commit"]) == (GOOD_2017, BAD_2017)
    # Medians of the segments: 44..86 with 433's 520 (10 runs), 463 and 221.
    assert (point["before"], point["after"]) == (53.5, 342.0)
    assert point["change"] == pytest.approx(342 / 53.5 - 1)
    assert point["p_value"] < 1e-3
    assert (point["direction"], point["hunted"]) == ("regression", True)
    assert [r["run"] for r in doc["runs"]] == list(range(427, 448))
    by_run = {r["run"]: r for r in doc["runs"]}
    assert all(set(r) == {"run", "commit", "result", "metrics"} for r in doc["runs"])
    assert by_run[427]["metrics"]["conflicts"] == 44
    assert by_run[428]["metrics"] is None
    assert by_run[430]["metrics"]["conflicts"] is None
    assert by_run[446]["commit"] == BAD_2017
    assert by_run[433]["result"] == "FAILURE"


@pytest.mark.usefixtures("incident")
def test_no_step_among_good_runs_and_a_given_threshold(
    capsys: pytest.CaptureFixture[str], shared_cache: Path
) -> None:
    code, out, _ = _history(capsys, shared_cache, "--runs", "427..442", "--json")
    assert (code, json.loads(out)["range"]) == (0, None)  # 433 alone is noise
    code, out, _ = _history(capsys, shared_cache, "--runs", "427..442")
    assert "no regression in conflicts" in out
    assert "bisector run" not in out
    code, out, _ = _history(capsys, shared_cache, "--runs", "443..445")
    assert (code, out.count("no logs")) == (0, 3)
    assert "no run has data for conflicts" in out
    assert "bisector run" not in out
    # With a threshold of 80, run 442 (86) is bad too: the step moves before it. The
    # change points are still listed, none of them hunted: the range is the threshold's.
    code, out, _ = _history(capsys, shared_cache, "--threshold", "80", "--json")
    assert json.loads(out)["range"]["good_run"] == 440
    assert json.loads(out)["range"]["bad_run"] == 442
    assert [(c["run"], c["hunted"]) for c in json.loads(out)["change_points"]] == [(446, False)]
    code, out, _ = _history(capsys, shared_cache, "--threshold", "80")
    assert "(threshold 80, given)\n" in out
    assert "<- hunted" not in out


@pytest.mark.usefixtures("incident")
def test_second_pass_reads_the_cache(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, first, _ = _history(capsys, tmp_path, "--runs", "440..447")
    assert len(list(tmp_path.rglob("*.json"))) == 4  # runs with logs: 440, 442, 446, 447

    def must_not_score(*args: object, **kwargs: object) -> None:
        raise AssertionError("scored although cached")

    monkeypatch.setattr(scoring, "score_logs", must_not_score)
    _, second, _ = _history(capsys, tmp_path, "--runs", "440..447")
    assert second == first
    _, uncached, _ = _history(capsys, tmp_path, "--runs", "440..447", "--no-cache")
    assert "unreadable" in uncached  # --no-cache scored again (and hit the fake)


@pytest.mark.usefixtures("incident")
def test_bisect_starts_the_run_command(
    capsys: pytest.CaptureFixture[str], shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[RunSettings] = []

    def fake_run(settings: RunSettings, *, is_dry_run: bool = False) -> int:
        started.append(settings)
        return 7

    # --bisect calls the run API in this process (no CLI text re-entered).
    monkeypatch.setattr(run_cmd, "run", fake_run)
    code, _, err = _history(
        capsys,
        shared_cache,
        "--bisect",
        "--config",
        "configs/gce-kubemark-5000.toml",
        "--repo",
        "k8s",
    )
    expected = [
        "run", "--good", GOOD_2017, "--bad", BAD_2017, "--metric", "conflicts",
        "--config", "configs/gce-kubemark-5000.toml", "--repo", "k8s",
    ]  # fmt: skip
    assert [(s.good, s.bad, s.metric, s.backend, s.repo) for s in started] == [
        (GOOD_2017, BAD_2017, "conflicts", "gce", Path("k8s"))
    ]
    assert started[0].resume_command == f"bisector {' '.join(expected)}"
    assert code == 7  # the bisection's exit code
    assert f"starting: bisector {' '.join(expected)}" in err
    # Nothing to bisect: nothing started.
    started.clear()
    code, _, err = _history(capsys, shared_cache, "--bisect", "--runs", "427..442")
    assert (code, started) == (0, [])
    assert "nothing to bisect" in err


@pytest.mark.usefixtures("incident")
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bucket", "no-such-bucket"], "gs://no-such-bucket does not exist"),
        (["--job", "ci-no-such-job"], "no runs of job 'ci-no-such-job'"),
        (["--runs", "500..510"], r"no run in 500\.\.510; this job has runs 427\.\.447"),
        (["--runs", "447..427"], "must not be after"),
        (["--metric", "nope"], "unknown metric 'nope'"),
        (["--runs", "427..430", "--last", "2"], "either --runs A..B or --last N"),
        (["--threshold", "nan"], "--threshold must be a finite number"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], shared_cache: Path, args: list[str], message: str
) -> None:
    code, _, err = _history(capsys, shared_cache, *args)
    assert code == 2
    assert re.fullmatch(rf"bisector: error: .*{message}.*\n", err)
    assert "Traceback" not in err


@pytest.mark.usefixtures("incident")
def test_cli_in_a_subprocess(shared_cache: Path) -> None:
    argv = [sys.executable, "-m", "bisector", "history", "--job", JOB, "--bucket", BUCKET]
    env_args = ["--runs", "442..447", "--cache-dir", str(shared_cache)]
    done = subprocess.run(
        [*argv, *env_args], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert f"bisector run --good {GOOD_2017} --bad {BAD_2017}" in done.stdout


@pytest.mark.usefixtures("incident")
def test_a_user_metric_from_the_config_drives_history(
    capsys: pytest.CaptureFixture[str], shared_cache: Path, tmp_path: Path
) -> None:
    # The same requests as `conflicts`, defined by the user: the same step must be found,
    # and the printed command carries the config so `run` knows the metric too (issue 11).
    config = tmp_path / "metrics.toml"
    config.write_text(
        '[metrics.node_patch_409]\nverb = "PATCH"\npath = "^/api/v1/nodes/"\nstatuses = [409]\n'
    )
    code, out, _ = _history(
        capsys, shared_cache, "--runs", "427..447", "--metric", "node_patch_409",
        "--config", str(config),
    )  # fmt: skip
    assert code == 0, out
    rows = _rows(out)
    assert rows[442][3:] == ["86", "<- last good"]
    assert rows[446][3:] == ["463", "<- first bad"]
    assert (
        f"bisector run --good {GOOD_2017} --bad {BAD_2017} --metric node_patch_409 "
        f"--config {config}" in out
    )
    # Unknown without the config, with the registry's one message.
    code, _, err = _history(
        capsys, shared_cache, "--runs", "427..447", "--metric", "node_patch_409"
    )
    assert code == 2
    assert "unknown metric 'node_patch_409'" in err and "[metrics.node_patch_409]" in err
