"""An endless input is read only up to its bound (issue 30, item 11).

`--metrics-after /dev/zero`, or a FIFO whose writer never stops, read without end: a
snapshot (or a CL2 summary) is now read as a stream up to its size limit, and past it
is no value with one line; a FIFO that ends (`<(curl .../metrics)`) still reads.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bisector.entry import main
from bisector.metrics import prometheus
from tests.helpers.evidence import counter, snapshot

LIMIT = 1 << 20  # the test's bound: the real one is 256 MiB of zeros to allocate


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(["score", *args])
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else 0), out, err


@pytest.fixture
def bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus, "MAX_SNAPSHOT_BYTES", LIMIT)


def _page(watchers: float) -> str:
    series = [({"resource": "nodes"}, watchers)]
    return snapshot(counter("apiserver_terminated_watchers_total", series))


@pytest.fixture
def before(tmp_path: Path) -> Path:
    path = tmp_path / "before.prom"
    path.write_text(_page(2))
    return path


def _writer(fifo: Path, data: bytes | None) -> Iterator[threading.Thread]:
    """Writes `data` into `fifo` once, or zeros until the reader goes away (None)."""

    def write() -> None:
        with fifo.open("wb", buffering=0) as fh:  # unbuffered: closing flushes nothing
            try:
                if data is not None:
                    fh.write(data)
                    return
                block = bytes(1 << 16)
                while True:
                    fh.write(block)
            except (BrokenPipeError, OSError):
                return  # the reader stopped reading: what a bound is for

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    yield thread
    # A writer still waiting in its open needs a reader to come: open one that does not
    # itself wait for a writer. A blocking open here waited forever when the writer
    # ended between is_alive() and the open (a loaded machine: the test's 300 s timeout).
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    thread.join(timeout=30)
    assert not thread.is_alive(), "the FIFO's writer never ended"


@pytest.fixture
def endless_fifo(tmp_path: Path) -> Iterator[Path]:
    fifo = tmp_path / "endless.prom"
    os.mkfifo(fifo)
    for _ in _writer(fifo, None):
        yield fifo


@pytest.mark.usefixtures("bounded")
def test_metrics_after_dev_zero_is_no_value_in_one_line(
    capsys: pytest.CaptureFixture[str], before: Path
) -> None:
    args = ("--metrics-before", str(before), "--metrics-after", "/dev/zero")
    code, out, err = _run(capsys, *args, "--metric", "terminated_watchers", "--threshold", "5")
    assert code == 125, (out, err)  # git bisect run's skip: never good, never bad
    said = out + err
    assert "/dev/zero holds more than 1 MiB" in said
    assert "Traceback" not in said


@pytest.mark.usefixtures("bounded")
def test_an_endless_fifo_is_no_value_in_one_line(
    capsys: pytest.CaptureFixture[str], before: Path, endless_fifo: Path
) -> None:
    args = ("--metrics-before", str(before), "--metrics-after", str(endless_fifo))
    code, out, err = _run(capsys, *args, "--metric", "terminated_watchers", "--threshold", "5")
    assert code == 125, (out, err)
    assert f"{endless_fifo} holds more than 1 MiB" in out + err


@pytest.mark.usefixtures("bounded")
def test_a_fifo_that_ends_is_read_as_a_snapshot(
    capsys: pytest.CaptureFixture[str], before: Path, tmp_path: Path
) -> None:
    """`--metrics-after <(curl -s .../metrics)`: a pipe with a page in it, then its end."""
    fifo = tmp_path / "after.prom"
    os.mkfifo(fifo)
    for _ in _writer(fifo, _page(9).encode()):
        args = ("--metrics-before", str(before), "--metrics-after", str(fifo))
        code, out, err = _run(capsys, *args, "--metric", "terminated_watchers", "--threshold", "5")
        assert code == 1, (out, err)  # 2 -> 9: 7 watchers terminated, at or above 5
