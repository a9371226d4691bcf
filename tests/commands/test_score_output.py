"""`bisector score` (and the listing commands) when output cannot be written.

The verdict is the exit code; what is printed is a view of it. A pipe whose reader is
gone, a full disk, a closed stream: none may change the code `git bisect run` reads
(0 good, 125 skip, 1-127 bad, 128+ stop). Before, click turned EPIPE into exit 1 (a
good commit read as *bad*), ENOSPC became 128 "bad input", and a closed stdin with
`-` was an AttributeError (129). The in-process table drives every verdict through
every way a stream can fail; the subprocess tests close and fill real descriptors.
"""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bisector.entry import main
from bisector.exitcodes import RunsExit, ScoreExit, StatusExit
from tests.helpers.local_backend import bisector_argv

LINE = (
    "I0602 05:51:10.000001       7 wrap.go:42] PATCH /api/v1/nodes/hollow-node-1/status: "
    "(3.1ms) 409 [[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.240.0.5:34862]\n"
)


class _Broken(io.TextIOBase):
    """A stream that fails as a real one does: at the write, or only at the flush (a
    buffered pipe takes the bytes and fails when they go out)."""

    def __init__(self, error: Exception, at: str) -> None:
        super().__init__()
        self.error, self.at = error, at

    def write(self, text: str) -> int:
        if self.at == "write":
            raise self.error
        return len(text)

    def flush(self) -> None:
        if self.at == "flush":
            raise self.error

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


FAILURES = {
    "epipe": BrokenPipeError(errno.EPIPE, "Broken pipe"),
    "enospc": OSError(errno.ENOSPC, "No space left on device"),
    "eio": OSError(errno.EIO, "Input/output error"),  # the terminal that was closed
    "closed": ValueError("I/O operation on closed file."),
}

# case: (arguments, code whatever the output does, code when stdout failed)
CASES: dict[str, tuple[list[str], int, int]] = {
    "good": (["--metric", "conflicts", "--threshold", "4"], ScoreExit.GOOD, ScoreExit.GOOD),
    "bad": (["--metric", "conflicts", "--threshold", "3"], ScoreExit.BAD, ScoreExit.BAD),
    "skip": (["--metric", "dispatch_lag_s", "--threshold", "1"], 125, 125),
    "json": (["--metric", "conflicts", "--threshold", "4", "--json"], 0, 0),
    "scores": ([], ScoreExit.GOOD, ScoreExit.OUTPUT_FAILED),  # no threshold: output is all
    "usage": (["--metric", "nope"], ScoreExit.USAGE, ScoreExit.USAGE),
}


WAYS = [
    (stream, failure, at)
    for stream in ("stdout", "stderr")
    for failure in sorted(FAILURES)
    for at in ("write", "flush")
]


@pytest.mark.parametrize("way", WAYS, ids=["-".join(w) for w in WAYS])
@pytest.mark.parametrize("case", sorted(CASES))
def test_no_output_failure_changes_a_verdict(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, case: str, way: tuple[str, str, str]
) -> None:
    stream, failure, at = way
    args, code, code_without_stdout = CASES[case]
    log = tmp_path / "kube-apiserver.log"
    log.write_text(LINE * 3)
    monkeypatch.setattr(sys, stream, _Broken(FAILURES[failure], at))
    with pytest.raises(SystemExit) as info:
        main(["score", str(log), *args])
    assert info.value.code == (code_without_stdout if stream == "stdout" else code)


def _score(tmp_path: Path, *args: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    log = tmp_path / "kube-apiserver.log"
    log.write_text(LINE * 3)
    argv = [*bisector_argv("score"), *args]
    return subprocess.run(argv, cwd=tmp_path, check=False, **kwargs)  # type: ignore[call-overload,no-any-return]


def _closing(fd: int) -> object:
    return lambda: os.close(fd)


def test_a_closed_stdin_is_no_verdict_not_a_bug(tmp_path: Path) -> None:
    """`bisector score - <&-`: was 129 with "AttributeError: 'NoneType' object has no
    attribute 'buffer'"; there is no log to read, which is a skip (125)."""
    args = ["-", "--metric", "conflicts", "--threshold", "4"]
    done = _score(tmp_path, *args, preexec_fn=_closing(0), capture_output=True)
    assert done.returncode == ScoreExit.NO_VERDICT, done.stderr
    assert b"stdin (-) is closed" in done.stderr
    assert b"Traceback" not in done.stderr and b"AttributeError" not in done.stderr


@pytest.mark.parametrize("how", ["closed", "full", "epipe"])
def test_real_descriptors_scores_without_threshold_say_they_were_not_written(
    tmp_path: Path, how: str
) -> None:
    """No --threshold: the scores are the product; a lost stdout is 131, never 0 (a
    script would read an empty file as scores) and never 1 (bad)."""
    kwargs: dict[str, object] = {"stderr": subprocess.PIPE}
    if how == "closed":
        kwargs["preexec_fn"] = _closing(1)
    elif how == "full":
        kwargs["stdout"] = os.open("/dev/full", os.O_WRONLY)
    else:
        read, write = os.pipe()
        os.close(read)
        kwargs["stdout"] = write
    done = _score(tmp_path, "kube-apiserver.log", "--json", **kwargs)
    assert done.returncode == ScoreExit.OUTPUT_FAILED, done.stderr
    assert b"Traceback" not in done.stderr
    # With a threshold the same stdout leaves the verdict alone: good is 0.
    if how == "full":
        kwargs["stdout"] = os.open("/dev/full", os.O_WRONLY)
    good = _score(tmp_path, "kube-apiserver.log", "--metric", "conflicts", "--threshold", "4",
                  **kwargs)  # fmt: skip
    assert good.returncode == ScoreExit.GOOD, good.stderr


def test_every_stream_closed_at_once_still_gives_the_verdict(tmp_path: Path) -> None:
    """`>&- 2>&- <&-`: the log file bisector opens first takes descriptor 0, 1 or 2 unless
    they are made valid first; the verdict still arrives as the code."""

    def close_all() -> None:
        for fd in (0, 1, 2):
            os.close(fd)

    args = ["kube-apiserver.log", "--metric", "conflicts", "--threshold"]
    assert _score(tmp_path, *args, "3", preexec_fn=close_all).returncode == ScoreExit.BAD
    assert _score(tmp_path, *args, "4", preexec_fn=close_all).returncode == ScoreExit.GOOD


def test_listing_commands_say_when_their_listing_was_not_written(tmp_path: Path) -> None:
    """`status`/`runs` print a listing and nothing else: a full stdout is 74, not 0
    (and not 2, "bad input", as the OSError was before)."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for command, table in (("status", StatusExit), ("runs", RunsExit)):
        done = subprocess.run(
            bisector_argv(command, "--repo", str(repo)),
            stdout=os.open("/dev/full", os.O_WRONLY),
            stderr=subprocess.PIPE,
            check=False,
        )
        assert done.returncode == table.OUTPUT_FAILED, (command, done.stderr)
        assert b"Traceback" not in done.stderr
