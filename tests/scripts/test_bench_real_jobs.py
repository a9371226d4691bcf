"""scripts/bench_real_jobs.py: both hunts side by side in one run, each from caches of its
own that start empty, and the ratio printed; never a recorded figure standing in for the
baseline."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.helpers.scripts import load_script

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
