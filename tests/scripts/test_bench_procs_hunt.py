"""scripts/bench_procs_hunt.py: the phase table is read from what the run journaled (the
Measurement records bisector.measure.journal writes), not from a format of its own."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from bisector.measure.measurement import Measurement

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_procs_hunt", ROOT / "scripts" / "bench_procs_hunt.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _run_dir(tmp_path: Path) -> Path:
    good = Measurement("a" * 40, "t1", "endpoint", value=2.0, duration_s=200.0)
    good.phase_s = {"build": 90.0, "launch": 20.0, "warmup": 80.0, "teardown": 10.0}
    mid = Measurement("b" * 40, "t2", "bisect", value=900.0, duration_s=60.0)
    mid.phase_s = {"build": 1.0, "launch": 19.0, "warmup": 30.0, "teardown": 10.0}
    mid.prefetched_build, mid.stopped_early, mid.early_verdict = True, "bad after 30 s", "bad"
    skipped = Measurement("c" * 40, "t3", "bisect", reason="launch: no", duration_s=5.0)
    lines = [{"type": "start"}] + [
        {"type": "measurement", "fingerprint": "f", "measurement": m.to_dict()}
        for m in (good, mid, skipped)
    ]
    lines.append({"type": "verdict", "commit": "a" * 40, "verdict": "good"})
    (tmp_path / "journal.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    culprit = {"commit": "f93a270edcefc3780247ae89eea02cd13b81237b", "confirmed": True}
    (tmp_path / "report.json").write_text(json.dumps({"culprit": culprit}))
    return tmp_path


def test_reads_each_evaluations_phases_and_verdict(tmp_path: Path) -> None:
    hunt = _script().read_hunt(_run_dir(tmp_path))
    assert [(r.phase, r.verdict, r.ahead) for r in hunt.rows] == [
        ("endpoint", "good", False),
        ("bisect", "bad", True),
        ("bisect", "skip", False),
    ]
    assert hunt.rows[0].phase_s["build"] == 90.0
    assert hunt.rows[1].accounted_s == 60.0
    assert (hunt.culprit, hunt.confirmed) == ("f93a270edcef", True)


def test_table_prints_totals_and_the_ratio_to_the_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script()
    hunt = script.read_hunt(_run_dir(tmp_path))
    hunt.wall_s = script.BASELINE_WALL_S / 2
    script.print_table(hunt)
    out = capsys.readouterr().out
    assert "  91.0 " in out  # build seconds over the three evaluations
    assert "wall" in out and " 0.50" in out.split("wall", 1)[1].splitlines()[0]
    assert "culprit f93a270edcef confirmed True" in out
