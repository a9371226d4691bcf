"""The live phases on a real terminal and in a pipe (issue 29.1), with a real `bisector
run` of the local backend whose commands sleep (tests/helpers/live_run.py).

On a pseudo-terminal (tmux, `script`): the rich line names each phase with its elapsed
time, which moves while the phase runs, and during a watched warmup the early look's
reading. In a pipe (nohup, CI): one line at each phase change, and (in-process, with the
ticker's interval made short) a line during a long phase; `--json` keeps its document.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from bisector.bisection.pipeline import run_bisection
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.live_run import LiveRun, sleeping_run
from tests.helpers.settings import settings_for

pytestmark = pytest.mark.slow

# `<commit> <phase> <elapsed>` as the progress line shows a slot (bisector.ui.progress_lines).
_SLOT = re.compile(r"\b([0-9a-f]{12}) (build|launch|warmup|collect|teardown) ([0-9.hms]+)")


def _env() -> dict[str, str]:
    root = Path(__file__).resolve().parents[2]
    return {**os.environ, "PYTHONPATH": str(root), "TERM": "xterm-256color"}


def _run_in_tmux(run: LiveRun, tmp_path: Path) -> list[str]:
    """Captures of the pane every 0.2 s until the run has ended."""
    session = f"bisector-live-{uuid.uuid4().hex[:8]}"
    done = tmp_path / "exit-code"
    command = f"{shlex.join(run.argv)}; echo $? > {shlex.quote(str(done))}; sleep 60"
    env = _env()
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "150", "-y", "40", command],
        check=True,
        env=env,
    )
    captures: list[str] = []
    try:
        deadline = time.monotonic() + 240  # a bound against a hang, not a timing
        while not done.exists():
            assert time.monotonic() < deadline, captures[-1:] or "no capture"
            captured = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session],
                capture_output=True,
                text=True,
                check=True,
            )
            captures.append(captured.stdout)
            time.sleep(0.2)
        captures.append(
            subprocess.run(
                ["tmux", "capture-pane", "-p", "-S", "-200", "-t", session],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    assert done.read_text().strip() == "0", captures[-1]
    return captures


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_on_a_terminal_the_phase_its_time_and_the_reading_show_and_move(
    tmp_path: Path,
) -> None:
    run = sleeping_run(tmp_path, [1, 1, 9, 9])
    captures = _run_in_tmux(run, tmp_path)
    seen = [set(_SLOT.findall(c)) for c in captures[:-1]]
    phases = {phase for found in seen for _commit, phase, _took in found}
    assert {"build", "launch", "warmup", "teardown"} <= phases, captures
    # The line moves while a phase runs: one phase of one commit, two elapsed times.
    times: dict[tuple[str, str], set[str]] = {}
    for found in seen:
        for commit, phase, took in found:
            times.setdefault((commit, phase), set()).add(took)
    assert any(len(took) > 1 for took in times.values()), times
    text = "\n".join(captures)
    # A watched search run's warmup: the early look's reading, in the verdict's words.
    assert re.search(r"warmup [0-9.ms]+ of ~[0-9.ms]+: conflicts \d+ (>= 5: bad|< 5) after", text)
    assert "ETA" in text
    assert re.search(r"time: predicted \S+ when the search began", captures[-1]), captures[-1]


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script (util-linux)")
def test_under_script_a_pty_gets_the_live_line(tmp_path: Path) -> None:
    run = sleeping_run(tmp_path, [1, 9], check_every=None)
    typescript = tmp_path / "typescript"
    subprocess.run(
        ["script", "-q", "-e", "-c", shlex.join(run.argv), str(typescript)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        env=_env(),
        check=True,
        timeout=240,
    )
    raw = typescript.read_text(errors="replace")
    assert "\x1b[" in raw  # rich drew on a terminal (cursor moves), not plain lines
    assert not re.search(r"^bisector: [0-9a-f]{12} build", raw, re.M)  # not the plain form
    phases = {phase for _c, phase, _t in _SLOT.findall(raw)}
    assert {"launch", "warmup"} <= phases, raw[-2000:]
    # The same run, as plain lines in its run directory: what a nohup log would hold,
    # each line with its UTC time, for the commits the terminal showed.
    plain = (run.run_dir / "progress.log").read_text()
    changes = re.findall(
        r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ bisector: ([0-9a-f]{12}) (\w+) begins", plain, re.M
    )
    assert {"build", "launch", "warmup", "teardown"} <= {p for _c, p in changes}, plain
    assert {c for c, _p in changes} <= {c for c, _p, _t in _SLOT.findall(raw)}, plain
    assert "\x1b[" not in plain


def test_in_a_pipe_with_v_a_line_at_each_phase_change_and_json_keeps_its_document(
    tmp_path: Path,
) -> None:
    run = sleeping_run(tmp_path, [1, 9], step_s=0.2, warmup="1s")
    done = subprocess.run(
        [*run.argv, "--json", "-v"],
        check=False,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # one JSON document, nothing else on stdout
    assert document["report"]["eta"]["actual_s"] > 0  # predicted vs actual there too
    first = re.search(r"bisector: ([0-9a-f]{12}) build", done.stderr)
    assert first is not None, done.stderr
    commit = first.group(1)
    said = [
        m.group(1)
        for m in re.finditer(rf"^bisector: {commit} (\w+)", done.stderr, re.M)
        if m.group(1) != "is"
    ]
    # The good endpoint, measured alone first, then its confirmation.
    assert said[:6] == ["build", "launch", "ready", "warmup", "collect", "teardown"], said


def test_in_a_pipe_a_long_phase_says_where_it_is_at_each_tick(tmp_path: Path) -> None:
    run = sleeping_run(tmp_path, [1, 1, 9, 9], warmup="3s", check_every="0.5s")
    cfg = tmp_path / "cfg" / "bisector.toml"
    argv = run.argv
    settings = settings_for(
        cfg,
        good=argv[argv.index("--good") + 1],
        bad=argv[argv.index("--bad") + 1],
        repo=Path(argv[argv.index("--repo") + 1]),
        threshold=5.0,
    )
    out = io.StringIO()
    progress = PlainProgress(out, tick_s=0.5)  # once a minute in a run; short here
    try:
        report = run_bisection(settings, progress=progress)
    finally:
        progress.stop()
    assert report.culprit is not None
    lines = out.getvalue().splitlines()
    # A tick mid-warmup: the elapsed time past the phase change, the expected time and,
    # in a watched search run, the early look's reading.
    ticks = [ln for ln in lines if re.search(r" warmup (?!0\.00s)[0-9.ms]+ of ~", ln)]
    assert ticks, lines
    assert any(re.search(r"conflicts \d+ < 5 after", ln) for ln in ticks), ticks
