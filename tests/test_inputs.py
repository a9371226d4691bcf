"""Opening the files a user names (bisector/inputs.py): a FIFO nobody writes to ends."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from bisector import inputs
from bisector.config import load_config
from bisector.entry import main
from bisector.errors import ConfigError
from bisector.exitcodes import ScoreExit

SAMPLE = Path(__file__).resolve().parents[1] / "bisector" / "data" / "sample-kube-apiserver.log"


@pytest.fixture
def fifo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(inputs, "WRITER_WAIT_S", 0.5)
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.timeout(60)
def test_a_fifo_nobody_writes_to_reads_as_empty(fifo: Path) -> None:
    """open() of a FIFO with no writer blocks for ever (POSIX open(), O_RDONLY without
    O_NONBLOCK): `score --metrics-before F --metrics-after F` hung until killed."""
    with inputs.open_input(fifo) as handle:
        assert handle.read() == b""


@pytest.mark.timeout(60)
def test_a_fifo_whose_writer_comes_late_is_read_to_its_end(fifo: Path) -> None:
    def write() -> None:
        time.sleep(0.2)
        with fifo.open("wb") as fh:
            fh.write(b"late\n")

    writer = threading.Thread(target=write)
    writer.start()
    with inputs.open_input(fifo, writer_wait_s=30) as handle:
        assert handle.read() == b"late\n"
    writer.join()


@pytest.mark.timeout(60)
def test_a_config_fifo_with_no_writer_is_one_line_not_a_hang_nor_the_defaults(
    fifo: Path,
) -> None:
    with pytest.raises(ConfigError, match="gave nothing to read"):
        load_config(fifo)


@pytest.mark.timeout(60)
def test_score_with_snapshot_fifos_nobody_writes_is_no_verdict(
    fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["score", str(SAMPLE), "--metric", "terminated_watchers", "--threshold", "1"]
    with pytest.raises(SystemExit) as info:
        main([*args, "--metrics-before", str(fifo), "--metrics-after", str(fifo)])
    assert info.value.code == ScoreExit.NO_VERDICT, capsys.readouterr().err
