"""Exact counts for every log generation, behind a CRI prefix or not, and the traps."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector.logs import metric_value, score_logs
from bisector.logs import reader as reader_mod
from tests.helpers.log_lines import FORMATS, MIX_CONFLICTS, MIX_WRITES, cri, header, mix_log, text


def _write(tmp_path: Path, data: bytes, name: str = "kube-apiserver.log") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("wrapped", [False, True], ids=["bare", "cri"])
def test_every_format_counts_exactly(tmp_path: Path, fmt: str, wrapped: bool) -> None:
    lines = mix_log(fmt)
    if wrapped:
        lines = cri(lines)
    scores = score_logs([_write(tmp_path, text(lines))])
    assert scores.metrics["conflicts"] == MIX_CONFLICTS
    assert scores.metrics["node_writes"] == MIX_WRITES
    assert scores.metrics["lines"] == len(lines)
    window = scores.metrics["window"]
    assert isinstance(window, dict)
    # CRI lines carry the runtime's clock (one stamp per line here); bare lines their own.
    assert window["seconds"] == pytest.approx(0.0 if wrapped else 12.0)


def test_naive_grep_overcounts_the_trap_but_we_do_not(tmp_path: Path) -> None:
    data = text(mix_log("wrap42"))
    naive = sum(
        1
        for line in data.splitlines()
        if b"v1/nodes" in line and b"PATCH" in line and b" 409 " in line
    )
    assert naive > MIX_CONFLICTS + 1  # the stack trace and error-output lines fool grep
    assert score_logs([_write(tmp_path, data)]).metrics["conflicts"] == MIX_CONFLICTS


@pytest.mark.parametrize("fmt", ["wrap42", "v119"])
def test_crlf_and_non_utf8_change_nothing(tmp_path: Path, fmt: str) -> None:
    lines = mix_log(fmt)
    data = text(lines, "\r\n").replace(b"linux/amd64", b"linux/\xff\xfe\xc3amd64")
    scores = score_logs([_write(tmp_path, data)])
    assert scores.metrics["conflicts"] == MIX_CONFLICTS
    assert scores.metrics["node_writes"] == MIX_WRITES
    assert scores.metrics["lines"] == len(lines)


def test_truncated_last_line_is_a_line_but_not_a_request(tmp_path: Path) -> None:
    full = text(mix_log("wrap42"))
    for cut in (b"(3.1ms) 40", b"(3.1ms) 409", b"PATCH /api/v1/nodes/hollow-node-9/st"):
        tail = (
            header(99).encode()
            + b"PATCH /api/v1/nodes/hollow-node-9/status: "
            + cut.split(b": ")[-1]
        )
        if not cut.startswith(b"("):
            tail = header(99).encode() + cut
        scores = score_logs([_write(tmp_path, full + tail)])
        assert scores.metrics["conflicts"] == MIX_CONFLICTS
        assert scores.metrics["lines"] == len(mix_log("wrap42")) + 1


@pytest.mark.parametrize("fmt", ["wrap42", "v122", "json"])
@pytest.mark.parametrize("chunk_size", [7, 64, 333, 4096])
def test_lines_straddling_chunk_boundaries(tmp_path: Path, fmt: str, chunk_size: int) -> None:
    path = _write(tmp_path, text(mix_log(fmt) * 3))
    scores = score_logs([path], chunk_size=chunk_size, workers=1)
    assert scores.metrics["conflicts"] == 3 * MIX_CONFLICTS
    assert scores.metrics["node_writes"] == 3 * MIX_WRITES


@pytest.mark.parametrize("fmt", ["wrap42", "v119"])
def test_parallel_byte_ranges_match_one_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    lines = []
    for k in range(40):
        lines += mix_log(fmt, start=k * 20)
    lines += [
        header(900, "E", "cacher.go:610") + f"AAA: dispatching event nr {n}" for n in (5, 100)
    ]
    path = _write(tmp_path, text(lines))
    single = score_logs([path], workers=1, chunk_size=1000)
    monkeypatch.setattr(reader_mod, "PARALLEL_MIN_BYTES", 0)
    parallel = score_logs([path], workers=2, chunk_size=1000)
    assert parallel.metrics == single.metrics
    assert parallel.metrics["conflicts"] == 40 * MIX_CONFLICTS
    assert parallel.metrics["dispatch_lag_s"] is not None


def test_v2_log_without_request_lines_has_no_data(tmp_path: Path) -> None:
    lines = [header(i) + "Starting watch for /api/v1/nodes, rv=1 labels= fields=" for i in range(5)]
    scores = score_logs([_write(tmp_path, text(lines))])
    assert scores.metrics["conflicts"] is None
    assert metric_value(scores, "conflicts") is None
    assert metric_value(scores, "node_writes") is None
    assert metric_value(scores, "lines") == 5


def test_empty_log_has_no_data_for_anything(tmp_path: Path) -> None:
    scores = score_logs([_write(tmp_path, b"")])
    for name in (
        "conflicts",
        "cacher_hwm",
        "dispatch_lag_s",
        "lines",
        "window",
        "forced_watcher_closes",
    ):
        assert metric_value(scores, name) is None, name


def test_parallel_workers_end_quietly_inside_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # The run loop turns SIGTERM into KeyboardInterrupt; forked scorer workers must not
    # inherit that (the pool ends them with SIGTERM) and print a traceback each.
    from bisector.signals import sigterm_as_interrupt

    path = _write(tmp_path, text(mix_log("wrap42") * 20))
    monkeypatch.setattr(reader_mod, "PARALLEL_MIN_BYTES", 0)
    with sigterm_as_interrupt():
        scores = score_logs([path], workers=2, chunk_size=1000)
    assert scores.metrics["conflicts"] == 20 * MIX_CONFLICTS
    assert "Traceback" not in capfd.readouterr().err
