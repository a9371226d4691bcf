"""`bisector run` and `bisector status` as a user runs them: a real process, real signals."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bisector.gitrepo import GitRepo
from tests.helpers.checkout import snapshot
from tests.helpers.gcs import ensure_bucket
from tests.helpers.local_backend import LocalDriver, bisector_argv, write_local_config
from tests.helpers.repo import PR, BuiltRepo, build_repo


def _values(n: int, at: int) -> list[int]:
    return [2] * at + [40] * (n - at)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(bisector_argv(*args), capture_output=True, text=True, check=False)


def _args(built: BuiltRepo, driver: LocalDriver, *extra: str) -> list[str]:
    return [
        "run",
        "--repo",
        str(built.path),
        "--config",
        str(driver.config),
        "--good",
        built.mainline[0],
        "--bad",
        built.mainline[-1],
        *extra,
    ]


def _wait_for(predicate: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def _assert_one_line_exit_2(result: subprocess.CompletedProcess[str], needle: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("bisector: error: ")
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert needle in result.stderr


@pytest.mark.slow
def test_run_prints_the_culprit_and_status_shows_it(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _values(10, 6))
    driver = write_local_config(tmp_path)
    result = _cli(*_args(built, driver))
    assert result.returncode == 0, result.stderr
    assert f"culprit: {built.mainline[6]}" in result.stdout
    assert "threshold" in result.stderr  # plain progress lines when not on a terminal
    status = _cli("status", "--repo", str(built.path))
    assert status.returncode == 0
    assert "finished" in status.stdout and built.mainline[6] in status.stdout
    # The threshold as the run wrote it (a count's rounded toward its side), not re-rounded.
    shown = re.search(r"threshold (\S+) \(", result.stderr)
    assert shown is not None and f"threshold {shown.group(1)} (" in status.stdout


@pytest.mark.slow
def test_json_is_the_final_summary_and_status_json_agrees(tmp_path: Path) -> None:
    """Issue 22, point 4: `run --json` (stdout: JSON only), `status --json`."""
    built = build_repo(tmp_path / "repo", _values(10, 6))
    driver = write_local_config(tmp_path)
    result = _cli(*_args(built, driver, "--json"))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)  # nothing else on stdout
    assert summary["exit_code"] == 0 and summary["report"]["culprit"]["commit"] == built.mainline[6]
    assert summary["report"]["culprit"]["confirmed"] is True
    assert Path(summary["report_html"]).is_file() and summary["disk_bytes"] > 0
    assert "threshold" in result.stderr  # progress stays on stderr
    status = _cli("status", "--repo", str(built.path), "--json")
    runs = json.loads(status.stdout)
    assert status.returncode == 0 and len(runs) == 1
    assert runs[0]["state"] == "finished" and runs[0]["culprit"] == built.mainline[6]
    assert runs[0]["run_dir"] == str(Path(summary["report_json"]).parent)
    refused = _cli(*_args(built, driver, "--json", "--dry-run"))
    _assert_one_line_exit_2(refused, "--json is the final summary of a run")


@pytest.mark.slow
def test_relative_run_dir_from_another_directory(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _values(6, 2))
    driver = write_local_config(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    args = _args(built, driver, "--run-dir", "myrun")
    result = subprocess.run(
        bisector_argv(*args), cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "myrun" / "report.json").is_file()
    assert len(list((tmp_path / "myrun" / "evals").glob("*/logs/kube-apiserver.log.gz"))) >= 4


@pytest.mark.slow
def test_bad_inputs_are_one_line_and_exit_2(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _values(6, 3))
    driver = write_local_config(tmp_path)
    before = snapshot(built.path)
    base = ["run", "--repo", str(built.path), "--config", str(driver.config)]
    good, bad = built.mainline[0], built.mainline[-1]
    _assert_one_line_exit_2(_cli(*base, "--good", "nope", "--bad", bad), "unknown revision 'nope'")
    _assert_one_line_exit_2(_cli(*base, "--good", bad, "--bad", "HEAD"), "same commit")
    _assert_one_line_exit_2(_cli(*base, "--good", bad, "--bad", good), "--bad swapped?")
    not_repo = ["run", "--repo", str(tmp_path / "tools"), "--config", str(driver.config)]
    not_repo += ["--good", "a", "--bad", "b"]
    _assert_one_line_exit_2(_cli(*not_repo), "not a git repository")
    with GitRepo(built.path).lock():
        _assert_one_line_exit_2(_cli(*base, "--good", good, "--bad", bad), "already running")
    assert snapshot(built.path) == before


def test_a_run_dir_that_is_a_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _values(6, 3))
    driver = write_local_config(tmp_path)
    before = snapshot(built.path)
    taken = tmp_path / "taken"
    taken.write_text("a file, not a directory\n")
    result = _cli(*_args(built, driver, "--run-dir", str(taken)))
    _assert_one_line_exit_2(result, "cannot create run directory")
    assert taken.read_text() == "a file, not a directory\n"
    assert snapshot(built.path) == before


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ('[run]\nbackend = "local"\nrepeats = "three"\n', "run.repeats`: expected a whole number"),
        ('[run]\nbackend = "local"\nwarmpu = "1s"\n', "run.warmpu` is not a known setting"),
        ('[run]\nbackend = "local"\n[backends.local]\ncollect = "x"\n', "launch` is missing"),
        ('[run]\nbackend = "nosuch"\n', "unknown backend 'nosuch'"),
        ("[run\n", "not valid TOML"),
        ('[run]\nbackend = "local"\nthreshold = nan\n', "run.threshold` must be a finite number"),
    ],
)
def test_config_errors_name_file_and_key(tmp_path: Path, config: str, needle: str) -> None:
    built = build_repo(tmp_path / "repo", _values(4, 2))
    path = tmp_path / "bad.toml"
    path.write_text(config)
    result = _cli(
        "run", "--repo", str(built.path), "--config", str(path),
        "--good", built.mainline[0], "--bad", built.mainline[-1],
    )  # fmt: skip
    _assert_one_line_exit_2(result, needle)
    if "TOML" not in needle:
        assert str(path) in result.stderr


@pytest.mark.slow
def test_dry_run_shows_the_plan_and_runs_nothing(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _values(65, 30))
    driver = write_local_config(tmp_path, run={"estimate": "30m"})
    result = _cli(*_args(built, driver, "--dry-run"))
    assert result.returncode == 0, result.stderr
    assert "64 commits" in result.stdout
    assert "expected evaluations: 11" in result.stdout  # endpoints 2, steps 6, confirm 2, revert 1
    assert "estimated wall time: 5h30m" in result.stdout
    assert "launch.sh" in result.stdout
    assert driver.calls("launches") == []
    paths = _cli(*_args(built, driver, "--dry-run", "--repeats", "3", "--", "value"))
    assert paths.returncode == 0, paths.stderr
    assert ", 1 commit\n" in paths.stdout  # only the commit that changed `value`
    assert "expected evaluations: 10" in paths.stdout  # flag beats file: (2 + 0 + 2 + 1) x 2 runs


@pytest.mark.slow
def test_first_parent_flag_counts_merges_only(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _values(6, 3), prs=[PR(at=3, values=[2, 40, 40])])
    driver = write_local_config(tmp_path)
    everything = _cli(*_args(built, driver, "--dry-run"))
    merges = _cli(*_args(built, driver, "--dry-run", "--first-parent"))
    assert "8 commits" in everything.stdout and "5 commits" in merges.stdout


def _journal(built: BuiltRepo) -> list[dict[str, object]]:
    (run_dir,) = (built.path / ".git" / "bisector" / "runs").iterdir()
    lines = (run_dir / "journal.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.slow
def test_kill_9_then_same_command_resumes_without_repeating(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _values(64, 41))
    driver = write_local_config(tmp_path)
    args = _args(built, driver)
    process = subprocess.Popen(bisector_argv(*args), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    _wait_for(lambda: len(driver.calls("collected")) >= 4)
    process.send_signal(signal.SIGKILL)
    process.wait()
    time.sleep(0.3)  # let an orphaned step of the killed run finish
    measured_before = sum(r["type"] == "measurement" for r in _journal(built))
    assert measured_before >= 3
    result = _cli(*args)
    assert result.returncode == 0, result.stderr
    assert f"culprit: {built.mainline[41]}" in result.stdout
    journal = _journal(built)
    measurements = [r["measurement"] for r in journal if r["type"] == "measurement"]
    per_commit = Counter((m["commit"], m["phase"]) for m in measurements)  # type: ignore[index]
    assert max(per_commit.values()) == 1, per_commit
    assert any(r["type"] == "resume" for r in journal)
    # at most the one measurement in flight at the kill is measured twice
    assert len(driver.calls("collected")) <= len(measurements) + 1


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_tears_down_prints_resume_and_resumes(tmp_path: Path, signum: int) -> None:
    built = build_repo(tmp_path / "repo", _values(8, 5))
    driver = write_local_config(tmp_path)
    driver.switch(f"hang-{built.mainline[-1]}")
    before = snapshot(built.path)
    process = subprocess.Popen(bisector_argv(*_args(built, driver)), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    _wait_for((driver.tools / "hanging").exists)
    process.send_signal(signum)
    _out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "Resume with: bisector run" in err
    assert "Traceback" not in err
    assert built.mainline[-1] in driver.calls("teardowns")
    assert snapshot(built.path) == before  # tool worktrees removed, user state as it was
    (driver.tools / f"hang-{built.mainline[-1]}").unlink()
    result = _cli(*_args(built, driver))
    assert result.returncode == 0, result.stderr
    assert f"culprit: {built.mainline[5]}" in result.stdout


@pytest.mark.slow
def test_cluster_left_up_by_kill_9_is_torn_down_on_resume(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _values(8, 5))
    driver = write_local_config(tmp_path)
    hang = driver.tools / f"hang-{built.mainline[-1]}"
    driver.switch(hang.name)
    process = subprocess.Popen(bisector_argv(*_args(built, driver)), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    _wait_for((driver.tools / "hanging").exists)
    process.send_signal(signal.SIGKILL)
    process.wait()
    hang.unlink()
    before = driver.calls("teardowns")
    assert built.mainline[-1] not in before  # SIGKILL: no teardown could run
    result = _cli(*_args(built, driver))
    assert result.returncode == 0, result.stderr
    assert "left up by a killed run" in result.stderr
    assert driver.calls("teardowns")[len(before)] == built.mainline[-1]  # first thing done
    assert any(r["type"] == "cleaned" for r in _journal(built))


def _two_slot_args(built: BuiltRepo, driver: LocalDriver, *extra: str) -> list[str]:
    return _args(built, driver, "--parallel", "2", *extra)


@pytest.mark.slow
def test_parallel_2_kill_9_then_resume_repeats_nothing(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _values(64, 41))
    driver = write_local_config(tmp_path)
    args = _two_slot_args(built, driver)
    process = subprocess.Popen(bisector_argv(*args), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    _wait_for(lambda: len(driver.calls("collected")) >= 5)
    process.send_signal(signal.SIGKILL)
    process.wait()
    time.sleep(0.3)
    assert sum(r["type"] == "measurement" for r in _journal(built)) >= 3
    result = _cli(*args)
    assert result.returncode == 0, result.stderr
    assert f"culprit: {built.mainline[41]}" in result.stdout
    journal = _journal(built)
    measurements = [r["measurement"] for r in journal if r["type"] == "measurement"]
    per_commit = Counter((m["commit"], m["phase"]) for m in measurements)  # type: ignore[index]
    assert max(per_commit.values()) == 1, per_commit
    slots = {r["slot"] for r in journal if r["type"] == "begin"}
    assert slots == {0, 1}
    # at most the two measurements in flight at the kill are measured twice
    assert len(driver.calls("collected")) <= len(measurements) + 2


@pytest.mark.slow
def test_parallel_2_sigterm_tears_down_every_slot_then_resumes(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _values(12, 7))
    driver = write_local_config(tmp_path)
    good, bad = built.mainline[0], built.mainline[-1]
    driver.switch(f"hang-{good}")
    driver.switch(f"hang-{bad}")
    before = snapshot(built.path)
    argv = bisector_argv(*_two_slot_args(built, driver))
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: set(driver.calls("launches")) == {good, bad})  # both slots in launch
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    _out, err = process.communicate(timeout=30)
    assert time.monotonic() - started < 20  # the hanging launches were stopped, not awaited
    assert process.returncode == 130, err
    assert "Resume with: bisector run" in err and "Traceback" not in err
    assert {good, bad} <= set(driver.calls("teardowns"))
    assert snapshot(built.path) == before
    assert not any(r["type"] == "measurement" for r in _journal(built))  # interrupted != skip
    (driver.tools / f"hang-{good}").unlink()
    (driver.tools / f"hang-{bad}").unlink()
    result = _cli(*_two_slot_args(built, driver))
    assert result.returncode == 0, result.stderr
    assert f"culprit: {built.mainline[7]}" in result.stdout


def test_parallel_2_sigterm_waits_for_the_slot_slowest_to_tear_down(tmp_path: Path) -> None:
    """Slot 0 tears down slowly: the interrupt lands in the main thread's wait for slot 0,
    which Python 3.11 then reports dead (python/cpython#90882, see
    bisector.measure.parallel); the run exited once slot 1 was done, slot 0's teardown
    unfinished (its cluster left up). Every slot's teardown ends before the exit."""
    built = build_repo(tmp_path / "repo", _values(6, 3))
    driver = write_local_config(tmp_path)
    good, bad = built.mainline[0], built.mainline[-1]
    driver.switch(f"hang-{good}")
    driver.switch(f"hang-{bad}")
    teardown = driver.tools / "teardown.sh"  # slot 0 (the good endpoint) takes a second
    slow = 'if [ "$BISECTOR_SLOT" = 0 ]; then sleep 1; fi\n'
    teardown.write_text(teardown.read_text().replace("echo ", slow + "echo ", 1))
    argv = bisector_argv(*_two_slot_args(built, driver))
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: set(driver.calls("launches")) == {good, bad})  # both slots in launch
    process.send_signal(signal.SIGTERM)
    _out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert {good, bad} <= set(driver.calls("teardowns")), err
    cleaned = {str(r["eval_dir"]) for r in _journal(built) if r["type"] == "cleaned"}
    begun = {str(r["eval_dir"]) for r in _journal(built) if r["type"] == "begin"}
    assert begun and begun <= cleaned  # each evaluation journaled as torn down


@pytest.mark.slow
def test_error_rate_flag_reports_confidence(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _values(24, 9))
    driver = write_local_config(tmp_path)
    result = _cli(*_args(built, driver, "--error-rate", "0.1", "--threshold", "10"))
    assert result.returncode == 0, result.stderr
    assert f"culprit: {built.mainline[9]}" in result.stdout
    assert "confidence: 0.99" in result.stdout
    (run_dir,) = (built.path / ".git" / "bisector" / "runs").iterdir()
    data = json.loads((run_dir / "report.json").read_text())
    assert data["culprit"]["confidence"] >= 0.99
    assert data["search"]["mode"] == "posterior"
    assert "confidence: 0.99" in (run_dir / "report.md").read_text()


@pytest.mark.slow
def test_search_option_errors_are_one_line(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _values(6, 3))
    driver = write_local_config(tmp_path)
    # A value given as a flag is named as the flag (the config file does not hold it).
    _assert_one_line_exit_2(_cli(*_args(built, driver, "--error-rate", "0.7")), "--error-rate")
    _assert_one_line_exit_2(_cli(*_args(built, driver, "--parallel", "0")), "--parallel")
    _assert_one_line_exit_2(_cli(*_args(built, driver, "--likelihood", "vibes")), "--likelihood")


@pytest.mark.slow
def test_user_defined_metric_from_the_config_drives_the_verdicts(tmp_path: Path) -> None:
    built = build_repo(tmp_path / "repo", _values(8, 5))
    driver = write_local_config(tmp_path)
    with driver.config.open("a") as config:
        config.write(
            '\n[metrics.hollow1_conflicts]\nverb = "PATCH"\n'
            'path = "^/api/v1/nodes/hollow-node-1/"\nstatuses = [409]\n'
        )
    result = _cli(*_args(built, driver, "--metric", "hollow1_conflicts"))
    assert result.returncode == 0, result.stderr
    assert f"culprit: {built.mainline[5]}" in result.stdout
    unknown = _cli(*_args(built, driver, "--metric", "hollow2_conflicts"))
    _assert_one_line_exit_2(unknown, "--metric: unknown metric 'hollow2_conflicts'")


@pytest.mark.slow
def test_upload_copies_the_run_directory_to_gcs(tmp_path: Path, gcs_client: Any) -> None:
    ensure_bucket(gcs_client, "bisections")
    built = build_repo(tmp_path / "repo", _values(6, 3))
    driver = write_local_config(tmp_path)
    run_dir = tmp_path / "run"
    args = _args(built, driver, "--run-dir", str(run_dir), "--upload", "gs://bisections/r1")
    result = _cli(*args)
    assert result.returncode == 0, result.stderr
    names = {blob.name for blob in gcs_client.list_blobs("bisections", prefix="r1/")}
    assert {"r1/report.json", "r1/report.md", "r1/journal.jsonl"} <= names
    # Scored logs are kept gzipped (bisector.runfiles) and uploaded as they are.
    logs = {n for n in names if n.endswith("/logs/kube-apiserver.log.gz")}
    assert len(logs) == len(list(run_dir.glob("evals/*/logs/kube-apiserver.log.gz"))) >= 4
    assert "uploaded" in result.stdout


@pytest.mark.slow
def test_cleanup_after_kill_9_tears_down_a_local_cluster_from_the_journal(tmp_path: Path) -> None:
    # The local backend records no resources: `bisector cleanup` rebuilds it from the
    # run's config named in the journal and runs its teardown (issue 12: every backend).
    built = build_repo(tmp_path / "repo", _values(8, 5))
    driver = write_local_config(tmp_path)
    hang = driver.tools / f"hang-{built.mainline[-1]}"
    driver.switch(hang.name)
    run_dir = tmp_path / "run"
    process = subprocess.Popen(bisector_argv(*_args(built, driver), "--run-dir", str(run_dir)),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    _wait_for((driver.tools / "hanging").exists)
    process.send_signal(signal.SIGKILL)
    process.wait()
    hang.unlink()
    assert built.mainline[-1] not in driver.calls("teardowns")
    result = subprocess.run(
        bisector_argv("cleanup", "--run-dir", str(run_dir)),
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert built.mainline[-1] in driver.calls("teardowns")
    assert f"tearing down {built.mainline[-1][:12]}" in result.stdout
    journal = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    assert journal[-1]["type"] == "cleaned"
    # Nothing is left: a second cleanup finds nothing to do.
    again = subprocess.run(bisector_argv("cleanup", "--run-dir", str(run_dir)),
                           capture_output=True, text=True, check=False)  # fmt: skip
    assert again.returncode == 0 and "nothing left up" in again.stdout


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (
            ["--backend", "local"],
            "no --config FILE given: key `backends.local.launch` is missing; expected a "
            "string; configs/local-example.toml sets it: pass a config like it with --config FILE",
        ),
        # The sim backend with nothing runs (a 5m warmup, issue 29): the next test.
    ],
)
def test_forgetting_config_says_so_and_names_an_example(
    tmp_path: Path, flags: list[str], needle: str
) -> None:
    """Issue 22, point 1: run from bisector's checkout, as the README's examples are."""
    built = build_repo(tmp_path / "repo", _values(4, 2))
    argv = bisector_argv(
        "run", "--repo", str(built.path), "--good", built.mainline[0],
        "--bad", built.mainline[-1], *flags,
    )  # fmt: skip
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=root)
    _assert_one_line_exit_2(result, needle)


def test_the_sim_default_on_a_repository_without_a_profile_says_to_pass_config(
    tmp_path: Path,
) -> None:
    built = build_repo(tmp_path / "repo", _values(4, 2))
    result = _cli(
        "run", "--repo", str(built.path), "--good", built.mainline[0],
        "--bad", built.mainline[-1], "--warmup", "1s",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith("bisector: error: the good endpoint")
    assert "the sim backend (the default without --config)" in last
    assert "pass --config FILE naming a backend" in last
    assert "local-example.toml is one" in result.stderr


def test_what_doctor_finds_missing_run_refuses_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 30 item 3: under `ulimit -n 256` doctor said MISSING, and `bisector run` with
    # the same config gave no answer in 7.5 minutes. Now: doctor's line, exit 2, no run
    # directory, no build.
    from tests.helpers.procs_backend import fake_env, make_world

    world = make_world(tmp_path)
    lines = ["[run]", 'backend = "procs"', 'metric = "conflicts"', 'warmup = "2s"',
             "[backends.procs]"]  # fmt: skip
    data = world.data(watchers=200, hollow_nodes=5)
    lines += [f"{k} = {json.dumps(v)}" for k, v in data.items()]
    config = tmp_path / "procs.toml"
    config.write_text("\n".join(lines) + "\n")
    args = ["run", "--repo", str(world.repo.path), "--config", str(config), "--good",
            world.repo.mainline[0], "--bad", world.repo.mainline[-1], "--run-dir",
            str(world.run_dir)]  # fmt: skip
    with fake_env(monkeypatch, world):
        result = subprocess.run(
            ["bash", "-c", 'ulimit -n 256 && exec "$@"', "bash", *bisector_argv(*args)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    _assert_one_line_exit_2(
        result,
        "MISSING open files (ulimit -n): hard limit 256, 200 watches (`watchers`) and 5 "
        "hollow nodes (`hollow_nodes`) need 1225",
    )
    assert not world.run_dir.exists() and not (world.root / "go-calls").exists()


def test_a_local_command_doctor_cannot_find_is_refused_before_a_build(tmp_path: Path) -> None:
    # The same rule on the local backend (bisector/backends/local_doctor.py): a launch
    # command that is on no PATH would skip every candidate; run says doctor's line.
    built = build_repo(tmp_path / "repo", _values(4, 2))
    driver = write_local_config(tmp_path)
    text = driver.config.read_text()
    driver.config.write_text(
        re.sub(r"(?m)^launch = .*$", 'launch = "bisector-no-such-tool up"', text)
    )
    result = _cli(*_args(built, driver, "--run-dir", str(tmp_path / "run")))
    _assert_one_line_exit_2(
        result, "MISSING [backends.local] launch: bisector-no-such-tool: not found on PATH"
    )
    assert driver.calls("built") == [] and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("ready_timeout", "0s", "ready_timeout` must be at least 10s"),
        ("hollow_nodes", 1_000_000_000, "hollow_nodes` must be at most 27,766"),
        ("watchers", 1_000_000_000, "watchers` must be at most 1,048,576"),
        ("tmpdir", "/nonexistent/bisector-tmp", "tmpdir` = '/nonexistent/bisector-tmp' is not an"),
    ],
)
def test_a_bad_procs_key_is_refused_before_a_build_or_a_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, value: object, says: str
) -> None:
    # Issue 30 item 2, end to end: each launched a cluster (or hung) before; now one line
    # naming the key, exit 2, no run directory, nothing built, the tmpdir not created.
    from tests.helpers.procs_backend import fake_env, make_world

    world = make_world(tmp_path)
    lines = ["[run]", 'backend = "procs"', 'metric = "conflicts"', 'warmup = "2s"',
             "[backends.procs]"]  # fmt: skip
    lines += [f"{k} = {json.dumps(v)}" for k, v in world.data(**{key: value}).items()]
    config = tmp_path / "procs.toml"
    config.write_text("\n".join(lines) + "\n")
    args = ["run", "--repo", str(world.repo.path), "--config", str(config), "--good",
            world.repo.mainline[0], "--bad", world.repo.mainline[-1], "--run-dir",
            str(world.run_dir)]  # fmt: skip
    with fake_env(monkeypatch, world):
        result = _cli(*args)
    _assert_one_line_exit_2(result, f"{config}: key `backends.procs.{says}")
    assert not world.run_dir.exists() and not (world.root / "go-calls").exists()
    assert not Path("/nonexistent").exists()


def test_runs_preflight_asks_the_backend_about_the_runs_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """procs reads which Go a tree needs from the checkout; the preflight asked about the
    current directory, so a run with --repo from elsewhere was judged by the wrong tree."""
    from bisector.backends.registry import BackendInfo
    from bisector.commands.run import preflight
    from bisector.config import load_config
    from bisector.settings import RunSettings

    asked: list[Path | None] = []

    def doctor(self: BackendInfo, section: object, tree: Path | None = None) -> list[object]:
        asked.append(tree)
        return []

    monkeypatch.setattr(BackendInfo, "doctor", doctor)
    config = tmp_path / "c.toml"
    config.write_text('[run]\nbackend = "local"\n[backends.local]\nlaunch = "true"\n')
    checkout = tmp_path / "kubernetes"
    settings = RunSettings.from_config(load_config(config), good="A", bad="B", repo=checkout)
    preflight(settings)
    assert asked == [checkout]
