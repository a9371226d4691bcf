"""`bisector score -` on an endless pipe ends, with one line and git bisect's skip (issue 30).

`yes | bisector score - --threshold 5` read forever: stdin has no size, and a stream of
short garbled lines never fills a block bound. An unsized source (stdin, a URL) now gives
at most MAX_HEAD_WITHOUT_TIME before its first line with a readable time (else it is no
log) and MAX_STREAM_BYTES in all (else it is no one run's log: `tail -f`); past either,
`score` exits 125 (no verdict, git bisect skips) like any log that cannot give one, never
1-127 (bad). A real `yes` feeds a real bisector process; `timeout` guards the test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bisector.exitcodes import ScoreExit

GUARD_S = 300  # a run that hangs fails here, and the pipe's writer is killed
# Lines of one log, as the 2017 apiserver writes them (glog: bisector/data's sample log).
LINE = "I0601 10:00:00.000000   12345 wrap.go:42] PATCH /api/v1/nodes/n-1/status: (1ms) 409"


def _score_stdin(
    writer: list[str], *args: str, bounds: dict[str, int] | None = None
) -> tuple[int, str]:
    """Exit code and output of a `bisector score -` whose stdin is `writer`'s stdout."""
    patch = "".join(f"reader.{k} = {v}; " for k, v in (bounds or {}).items())
    code = (
        "import sys; from bisector.logs import reader; "
        f"{patch}from bisector.entry import main; main(sys.argv[1:])"
    )
    with subprocess.Popen(writer, stdout=subprocess.PIPE) as feed:
        try:
            done = subprocess.run(
                [sys.executable, "-c", code, "score", "-", *args],
                stdin=feed.stdout,
                capture_output=True,
                text=True,
                timeout=GUARD_S,
                check=False,
            )
        finally:
            feed.kill()
    return done.returncode, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("window", [(), ("--since", "1m")])  # the stdin window reads its own way
def test_yes_into_score_is_no_log_in_one_line(window: tuple[str, ...]) -> None:
    code, said = _score_stdin(["yes"], "--threshold", "5", *window)
    assert code == ScoreExit.NO_VERDICT, said
    assert "stdin (-) gave more than 1,000,000 lines without one log line with a readable " in said
    assert "time: not a kube-apiserver log" in said
    assert "Traceback" not in said
    assert said.strip().count("\n") <= 1, said


def test_zeros_into_score_are_no_log_in_one_line() -> None:
    """`bisector score - < /dev/zero`: no newline ever, so no line is counted; the bytes are."""
    bounds = {"MAX_HEAD_WITHOUT_TIME": 8 << 20}
    code, said = _score_stdin(["cat", "/dev/zero"], "--threshold", "5", bounds=bounds)
    assert code == ScoreExit.NO_VERDICT, said
    assert "stdin (-) gave more than 8 MiB without one log line with a readable time" in said


def test_an_endless_log_is_refused_past_the_stream_bound() -> None:
    """`tail -f kube-apiserver.log | bisector score -`: real lines that never end."""
    bounds = {"MAX_STREAM_BYTES": 8 << 20}
    code, said = _score_stdin(["yes", LINE], "--threshold", "5", bounds=bounds)
    assert code == ScoreExit.NO_VERDICT, said
    assert "stdin (-) gave more than 8 MiB: more than any one run's apiserver log" in said
    assert "Traceback" not in said


def test_a_pipe_that_ends_still_scores(tmp_path: Path) -> None:
    """The bounds stop endless input only: a log piped whole is judged (409s at threshold)."""
    bounds = {"MAX_STREAM_BYTES": 8 << 20, "MAX_HEAD_WITHOUT_TIME": 1 << 20}
    log = tmp_path / "kube-apiserver.log"
    log.write_text(f"{LINE}\n" * 10)
    code, said = _score_stdin(["cat", str(log)], "--threshold", "5", bounds=bounds)
    assert code == ScoreExit.BAD, said
