"""A log left by an earlier evaluation is that evaluation's, however recent (issue 30, item 1).

The clock allowance (LAUNCH_CLOCK_ALLOWANCE_S) is for skew between machines: a log that
overlaps an earlier evaluation's log window, or begins with the same lines, cannot be
this launch's, even when it began only seconds before this launch.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bisector.measure.measurement import Measurement
from bisector.measure.provenance import LogSeen, WindowRule, log_head, window_problem
from tests.helpers.local_backend import CONFLICT, WRITE, bisector_argv, quote, toml
from tests.helpers.repo import build_repo

N = 8
CULPRIT = 6  # right of the first midpoint: a stale bad log there sends the search left

# An apiserver on this machine writing to the one path `collect` copies from (as a
# systemd unit's /var/log/kube-apiserver.log would): launch starts its log, collect
# appends the run's requests, stamped with the wall clock. The third launch's commit
# crashes at start (then and at every later launch): it writes nothing, and the path
# still holds the previous candidate's log, a second or two old.
_STAMP = 'stamp() { date -u +"%m%d %H:%M:%S.%6N"; }\n'
_LAUNCH = """echo "$BISECTOR_COMMIT" >> "$T/launches.txt"
if [ "$(wc -l < "$T/launches.txt")" -eq 3 ]; then echo "$BISECTOR_COMMIT" >> "$T/crashing.txt"; fi
if grep -qx "$BISECTOR_COMMIT" "$T/crashing.txt" 2>/dev/null; then exit 0; fi
echo "I$(stamp)       7 server.go:105] Version: $BISECTOR_COMMIT" > "$T/apiserver.log"
"""
_COLLECT = """if ! grep -qx "$BISECTOR_COMMIT" "$T/crashing.txt" 2>/dev/null; then
  s=$(stamp); n=$(cat value)
  {{ yes "I$s       7 {conflict}" | head -n "$n"; yes "I$s       7 {write}" | head -n 3; }} \\
    >> "$T/apiserver.log"
fi
cp "$T/apiserver.log" "$BISECTOR_LOG"
"""


def _text(line: str) -> str:
    return line.split("       7 ", 1)[1]  # the glog line without its time


def _config(directory: Path) -> Path:
    tools = directory / "tools"
    tools.mkdir(parents=True)
    scripts = {"launch": _LAUNCH, "collect": _COLLECT.format(conflict=_text(CONFLICT),
                                                            write=_text(WRITE))}  # fmt: skip
    lines = ["[run]", 'backend = "local"', 'metric = "conflicts"', 'warmup = "2s"']
    lines += ["", "[backends.local]"]
    for step, body in scripts.items():
        script = tools / f"{step}.sh"
        script.write_text(f"set -eu\nT={quote(str(tools))}\n{_STAMP}{body}")
        lines.append(f"{step} = {toml(f'bash {quote(str(script))}')}")
    config = directory / "bisector.toml"
    config.write_text("\n".join(lines) + "\n")
    return tools


@pytest.mark.slow
def test_a_crashed_apiservers_leftover_log_is_a_stale_skip_end_to_end(tmp_path: Path) -> None:
    """The local backend, end to end: the crashed commit's evaluations read the previous
    candidate's log (its own times, begun a second or two before this launch: inside the
    clock allowance). Each must be a skip saying "stale log", and the true culprit is
    named and confirmed; before the fix the crashed commit was judged from its
    neighbour's log."""
    built = build_repo(tmp_path / "repo", [2] * CULPRIT + [40] * (N - CULPRIT))
    tools = _config(tmp_path)
    run_dir = tmp_path / "run"
    argv = bisector_argv(
        "run", "--repo", str(built.path), "--config", str(tmp_path / "bisector.toml"),
        "--good", built.mainline[0], "--bad", built.mainline[-1], "--run-dir", str(run_dir),
    )  # fmt: skip
    result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600)
    assert "Traceback" not in result.stderr
    (crashed,) = set((tools / "crashing.txt").read_text().split())
    records = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    runs = [r["measurement"] for r in records if r.get("type") == "measurement"]
    of_crashed = [m for m in runs if m["commit"] == crashed]
    assert of_crashed
    for m in of_crashed:
        assert m["value"] is None, m
        assert "stale log" in (m["reason"] or ""), m["reason"]
    assert result.returncode == 0, result.stderr
    assert f"culprit: {built.mainline[CULPRIT]}" in result.stdout
    report = json.loads((run_dir / "report.json").read_text())
    assert report["culprit"]["confirmed"] is True


def _measured(launched_at: float, start: float, end: float, head: str = "") -> Measurement:
    m = Measurement("c" * 40, "t", "bisect", launched_at=launched_at, head=head)
    m.window = {"start": start, "end": end, "span_s": end - start}
    return m


def _rule(*earlier: LogSeen) -> WindowRule:
    return WindowRule(real_time=True, earlier=lambda: earlier)


def test_a_log_begun_inside_an_ended_evaluations_log_is_stale() -> None:
    """Begun 5 s before this launch (inside the clock allowance) but 3 s before the end of
    the log of an evaluation that ended 1 s before this launch began: that evaluation's
    (its log appended to, or a later part of it; the very same file is its head's)."""
    now = 1_800_000_000.0
    previous = LogSeen(ended_at=now - 1, start=now - 5, end=now - 2, head="other")
    m = _measured(now, now - 5, now - 2)
    assert "stale log" in (window_problem(m, _rule(previous)) or "")
    assert window_problem(m, _rule()) is None  # the allowance alone let it through


def test_an_evaluation_alongside_this_one_does_not_make_its_log_stale() -> None:
    """Another slot's evaluation that ended after this launch began ran at the same time:
    its log overlapping this one's says nothing."""
    now = 1_800_000_000.0
    alongside = LogSeen(ended_at=now + 30, start=now - 5, end=now + 20, head="other")
    m = _measured(now, now + 1, now + 40)
    assert window_problem(m, _rule(alongside)) is None


def test_a_log_that_begins_as_an_earlier_ones_did_is_stale() -> None:
    """The same first lines (the same file copied again), whatever its times say."""
    now = 1_800_000_000.0
    previous = LogSeen(ended_at=now - 30, head="abc")
    m = _measured(now, now + 1, now + 40, head="abc")
    assert "same lines" in (window_problem(m, _rule(previous)) or "")
    # Ended within a stamp's resolution of this launch: whole-second stamps may match.
    just_before = LogSeen(ended_at=now - 0.2, head="abc")
    assert window_problem(m, _rule(just_before)) is None


def test_log_head_is_the_same_for_the_same_first_bytes_only(tmp_path: Path) -> None:
    one, two, three = tmp_path / "1.log", tmp_path / "2.log", tmp_path / "3.log"
    one.write_text("I1204 17:00:00.000001 a\n" * 400)
    two.write_text("I1204 17:00:00.000001 a\n" * 400 + "more\n")
    three.write_text("I1204 17:00:00.000002 a\n" * 400)
    assert log_head([str(one)]) == log_head([str(two)])
    assert log_head([str(one)]) != log_head([str(three)])


def test_a_replayed_earlier_log_reaching_past_its_evaluation_does_not_make_this_one_stale() -> None:
    """A fake cluster whose logs span 30 minutes written in a moment (times past the
    evaluation's end: a replay's timeline): the next launch's log starts after that
    evaluation ended, so it is its own."""
    now = 1_800_000_000.0
    previous = LogSeen(ended_at=now - 0.5, start=now - 1, end=now + 1799, head="other")
    m = _measured(now, now, now + 1800)
    assert window_problem(m, _rule(previous)) is None
