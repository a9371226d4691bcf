"""scripts/bench_real_jobs.py: both hunts side by side in one run, each from caches of its
own that start empty, and the ratio printed; never a recorded figure standing in for the
baseline."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.scripts import ROOT, load_script

bench = load_script("bench_real_jobs")


def _report(run_dir: Path, *, wall_s: float, confirmed: bool = True, parallel: int = 1) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    report = {
        "culprit": {"commit": "b7113909cf0b" + "0" * 28, "confirmed": confirmed},
        "cost": {"measured": {"evaluations": 7, "cluster_s": wall_s * 0.9}},
        "search": {"parallel": parallel},
        "eta": {"actual_s": wall_s},
    }
    (run_dir / "report.json").write_text(json.dumps(report), encoding="utf-8")


def test_two_finished_runs_print_both_and_the_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _report(tmp_path / "jobs", wall_s=600.0, parallel=2)
    _report(tmp_path / "modern", wall_s=1200.0)
    code = bench.main(["--jobs", str(tmp_path / "jobs"), "--modern", str(tmp_path / "modern")])
    out = capsys.readouterr().out
    assert code == 0
    assert "ratio real-jobs / real-modern, bisector run: 0.50" in out
    assert "10m00.0s" in out and "20m00.0s" in out


def test_a_hunt_not_confirmed_fails_the_benchmark(tmp_path: Path) -> None:
    _report(tmp_path / "jobs", wall_s=600.0, confirmed=False)
    _report(tmp_path / "modern", wall_s=1200.0)
    assert bench.main(["--jobs", str(tmp_path / "jobs"), "--modern", str(tmp_path / "modern")]) == 1


def test_no_recorded_figure_stands_in_for_a_baseline_not_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _report(tmp_path / "jobs", wall_s=600.0)
    assert bench.main(["--jobs", str(tmp_path / "jobs")]) == 2
    assert "--modern" in capsys.readouterr().err


def test_a_work_dir_with_something_in_it_is_refused_before_any_hunt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "cache-from-before").mkdir()
    assert bench.main(["--kube", str(tmp_path), "--work", str(tmp_path / "work")]) == 2
    assert "not empty" in capsys.readouterr().err


def _fake_make(bin_dir: Path, calls: Path) -> None:
    """A `make` that records its arguments and environment and writes the run's report.json
    where the real targets write theirs (JOBS_RUN / MODERN_RUN)."""
    bin_dir.mkdir()
    script = bin_dir / "make"
    script.write_text(
        f"""#!/usr/bin/env python3
import json, os, sys
from pathlib import Path
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
target = [a for a in sys.argv[1:] if "=" not in a and not a.startswith("-")][-1]
with open({str(calls)!r}, "a") as f:
    f.write(json.dumps({{"target": target, "args": args,
                         "xdg": os.environ.get("XDG_CACHE_HOME")}}) + "\\n")
run = Path(args.get("JOBS_RUN") or args["MODERN_RUN"])
run.mkdir(parents=True)
wall = 300.0 if target == "real-jobs" else 900.0
(run / "report.json").write_text(json.dumps({{
    "culprit": {{"commit": "ab" * 20, "confirmed": True}},
    "cost": {{"measured": {{"evaluations": 8, "cluster_s": wall}}}},
    "search": {{"parallel": 2 if target == "real-jobs" else 1}},
    "eta": {{"actual_s": wall}}}}))
""",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_both_hunts_run_in_one_benchmark_each_from_caches_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = tmp_path / "calls.jsonl"
    _fake_make(tmp_path / "bin", calls)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    work = tmp_path / "work"
    code = bench.main(["--kube", str(tmp_path / "k132"), "--work", str(work), "--parallel", "2"])
    out = capsys.readouterr().out
    assert code == 0
    made = [json.loads(line) for line in calls.read_text().splitlines()]
    assert [m["target"] for m in made] == ["real-jobs", "real-modern"]
    jobs, modern = made
    assert jobs["args"]["JOBS_CACHE"] == str(work.resolve() / "jobs" / "cache")
    assert jobs["args"]["JOBS_PARALLEL"] == "2"
    assert jobs["xdg"] is None  # the pods' caches are JOBS_CACHE; the driver's are its own
    assert modern["xdg"] == str(work.resolve() / "modern" / "xdg")
    assert jobs["args"]["JOBS_CACHE"] != modern["xdg"]
    assert "ratio real-jobs / real-modern, bisector run: 0.33" in out
    assert "ratio real-jobs / real-modern, make target:" in out


def _failing_make(bin_dir: Path, calls: Path, *, code: int) -> None:
    """A `make` that writes a confirmed report.json, as a hunt that got that far does, and
    then exits `code` (a check after the hunt failed, the cluster's teardown failed)."""
    _fake_make(bin_dir, calls)
    script = bin_dir / "make"
    script.write_text(script.read_text(encoding="utf-8") + f"sys.exit({code})\n", encoding="utf-8")


def test_a_make_that_fails_prints_no_ratio_and_fails_the_benchmark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = tmp_path / "calls.jsonl"
    _failing_make(tmp_path / "bin", calls, code=2)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    work = tmp_path / "work"
    code = bench.main(["--kube", str(tmp_path / "k132"), "--work", str(work)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "ratio" not in out
    assert "make real-jobs exited 2" in err and str(work.resolve() / "jobs" / "make.log") in err
    # The hour of the other hunt is not spent on a benchmark that has failed.
    assert [json.loads(line)["target"] for line in calls.read_text().splitlines()] == ["real-jobs"]


@pytest.mark.parametrize(
    "report",
    [
        [],  # not a table
        {"culprit": "b7113909cf0b", "eta": {"actual_s": 600.0}},
        {"culprit": None, "eta": "600"},
        {"culprit": None, "cost": {"measured": [7]}, "eta": {"actual_s": 600.0}},
        {"culprit": None, "eta": {"actual_s": "ten minutes"}},
        {"culprit": None, "eta": {"actual_s": 0}},  # a ratio by zero
        {"culprit": None, "eta": {"actual_s": -5.0}},
        {"culprit": None, "eta": {"actual_s": float("nan")}},
        {"cost": {"measured": {"cluster_s": float("inf")}}, "eta": {"actual_s": 9}},
    ],
)
def test_a_report_that_is_not_a_finished_runs_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], report: object
) -> None:
    _report(tmp_path / "jobs", wall_s=600.0)
    (tmp_path / "modern").mkdir()
    (tmp_path / "modern" / "report.json").write_text(json.dumps(report), encoding="utf-8")
    code = bench.main(["--jobs", str(tmp_path / "jobs"), "--modern", str(tmp_path / "modern")])
    out, err = capsys.readouterr()
    assert code == 2
    assert "ratio" not in out
    assert err.startswith("bench-real-jobs: cannot read a run: ") and err.count("\n") == 1


def test_a_garbled_timing_file_leaves_the_table_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _report(tmp_path / "jobs", wall_s=600.0)
    _report(tmp_path / "modern", wall_s=1200.0)
    bench.timing_of(tmp_path / "jobs").write_text("[1, 2", encoding="utf-8")
    code = bench.main(["--jobs", str(tmp_path / "jobs"), "--modern", str(tmp_path / "modern")])
    assert code == 0
    assert "ratio real-jobs / real-modern, bisector run: 0.50" in capsys.readouterr().out


@pytest.mark.parametrize("args", [["--parallel", "0"], ["--parallel", "-2"]])
def test_bad_arguments_are_refused_before_any_make(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    args: list[str],
) -> None:  # fmt: skip
    calls = tmp_path / "calls.jsonl"
    _failing_make(tmp_path / "bin", calls, code=3)  # never the real one, should it be run
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    code = bench.main(["--kube", str(tmp_path), "--work", str(tmp_path / "work"), *args])
    assert code == 2
    assert "--parallel" in capsys.readouterr().err
    assert not calls.exists()


def test_a_work_path_that_is_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "work").write_text("", encoding="utf-8")
    assert bench.main(["--kube", str(tmp_path), "--work", str(tmp_path / "work")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_ctrl_c_during_a_make_waits_for_its_teardown_and_prints_no_ratio(tmp_path: Path) -> None:
    """Ctrl-C reaches the benchmark and its make alike (one process group, as a terminal's):
    the make tears down what it brought up (its cluster) and is waited for, never killed;
    the benchmark says it was interrupted, no traceback, no ratio, exit 130."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    started, torn_down = tmp_path / "started", tmp_path / "torn-down"
    (bin_dir / "make").write_text(
        f"""#!/usr/bin/env python3
import signal, sys, time
from pathlib import Path
def stop(_sig, _frame):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    time.sleep(0.5)  # the cluster's teardown
    Path({str(torn_down)!r}).write_text("yes")
    sys.exit(2)
signal.signal(signal.SIGINT, stop)
Path({str(started)!r}).write_text("yes")
time.sleep(60)
""",
        encoding="utf-8",
    )
    (bin_dir / "make").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "bench_real_jobs.py"),
         "--kube", str(tmp_path / "k132"), "--work", str(tmp_path / "work")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "the make never started"
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        out, err = proc.communicate(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert torn_down.exists(), "the make was killed during its teardown"
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupted" in err
    assert "ratio" not in out
