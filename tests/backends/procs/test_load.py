"""The load generator's parsing and requests (bisector/backends/procs/load.py)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from bisector.backends.procs import load as procs_load


def test_watch_delay_is_arrival_minus_the_newest_heartbeat() -> None:
    beat = dt.datetime(2026, 12, 1, 16, 0, 0, tzinfo=dt.UTC)
    event = {"type": "MODIFIED", "object": {"status": {"conditions": [
        {"type": "Ready", "lastHeartbeatTime": "2026-12-01T15:59:58Z"},
        {"type": "OutOfDisk", "lastHeartbeatTime": "2026-12-01T16:00:00Z"}]}}}  # fmt: skip
    line = json.dumps(event).encode()
    assert procs_load.heartbeat_delay(line, beat.timestamp() + 2.5) == pytest.approx(2.5)
    added = json.dumps({**event, "type": "ADDED"}).encode()
    assert procs_load.heartbeat_delay(added, beat.timestamp()) is None
    assert procs_load.heartbeat_delay(b"{garbled", 0.0) is None


def test_the_load_generator_asks_for_one_node_by_name() -> None:
    target = procs_load.Target("127.0.0.1", 8080, None, "tok")
    request = target.request("hollow-node-7", "1234").decode()
    assert request.startswith(
        "GET /api/v1/watch/nodes?fieldSelector=metadata.name%3Dhollow-node-7"
        "&resourceVersion=1234 HTTP/1.1\r\n"
    )
    assert "Authorization: Bearer tok\r\n" in request and request.endswith("\r\n\r\n")
