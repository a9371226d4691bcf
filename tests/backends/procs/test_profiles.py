"""Profiles of a candidate's apiserver: taken at the warmup's end, never the run's failure."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from bisector.backends.base import Candidate
from bisector.backends.procs.api import Api
from bisector.backends.procs.profiles import CPU, ERRORS, GO, HEAP, Profiles

# Real profiles the Go runtime wrote (tests/data/pprof/README.md).
DATA = Path(__file__).parents[2] / "data" / "pprof"


class _Pprof(http.server.BaseHTTPRequestHandler):
    """The two routes as net/http/pprof serves them; `fail` answers 404 (profiling off)."""

    fail = False
    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).asked.append(self.path)
        kind = "cpu" if self.path.startswith("/debug/pprof/profile") else "heap"
        if self.fail:
            self.send_error(404)
            return
        body = (DATA / f"culprit-{kind}.pprof").read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    _Pprof.asked = []
    _Pprof.fail = False
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pprof)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _candidate(tmp_path: Path, profile: bool = True) -> Candidate:
    return Candidate("c" * 40, tmp_path / "wt", tmp_path / "eval", 0, "id", profile=profile)


def test_the_cpu_profile_covers_the_warmups_end() -> None:
    # 60 s warmup, 30 s profile: from 25 s to 55 s, ending before collect.
    assert Profiles(30, 60).window() == (25.0, 30)
    # A warmup shorter than the profile: what fits, at least a second.
    assert Profiles(30, 20).window() == (0.0, 15)
    assert Profiles(30, 2).window() == (0.0, 1)


def test_cpu_and_heap_are_taken_with_the_go_that_built_it(
    tmp_path: Path, server: http.server.ThreadingHTTPServer
) -> None:
    api = Api(f"http://127.0.0.1:{server.server_address[1]}")
    profiles = Profiles(1, 6)  # delay 0 s, 1 s of CPU profile
    candidate = _candidate(tmp_path)
    profiles.start(candidate, api)
    profiles.finish(candidate, api, "/usr/lib/go-1.19/bin/go")
    out = candidate.profile_dir
    assert (out / CPU).read_bytes() == (DATA / "culprit-cpu.pprof").read_bytes()
    assert (out / HEAP).read_bytes() == (DATA / "culprit-heap.pprof").read_bytes()
    assert (out / GO).read_text() == "/usr/lib/go-1.19/bin/go\n"
    assert _Pprof.asked == ["/debug/pprof/profile?seconds=1", "/debug/pprof/heap"]
    assert not (out / ERRORS).exists()


def test_a_profile_that_cannot_be_taken_is_written_down_not_raised(
    tmp_path: Path, server: http.server.ThreadingHTTPServer
) -> None:
    _Pprof.fail = True
    api = Api(f"http://127.0.0.1:{server.server_address[1]}")
    profiles = Profiles(1, 6)
    candidate = _candidate(tmp_path)
    profiles.start(candidate, api)
    profiles.finish(candidate, api, None)
    errors = (candidate.profile_dir / ERRORS).read_text()
    assert "GET /debug/pprof/profile?seconds=1: HTTPError" in errors
    assert "GET /debug/pprof/heap: HTTPError" in errors
    assert not list(candidate.profile_dir.glob("*.pprof"))


def test_only_asked_candidates_are_profiled_and_teardown_cancels(
    tmp_path: Path, server: http.server.ThreadingHTTPServer
) -> None:
    api = Api(f"http://127.0.0.1:{server.server_address[1]}")
    profiles = Profiles(1, 60)  # the CPU profile would begin 54 s in
    plain = _candidate(tmp_path / "plain", profile=False)
    profiles.start(plain, api)
    profiles.finish(plain, api, None)
    asked = _candidate(tmp_path / "asked")
    profiles.start(asked, api)
    profiles.stop(asked.slot)  # torn down before the profile began
    profiles.finish(asked, api, None)
    assert _Pprof.asked == []
    assert not (plain.eval_dir / "profiles").exists()


def test_a_warmup_that_ended_early_ends_a_profile_not_yet_begun(
    tmp_path: Path, server: http.server.ThreadingHTTPServer
) -> None:
    # Collect came before the CPU profile's delay (an early verdict): the waiting thread
    # is ended, not left to GET the port after teardown, when another slot's apiserver
    # may hold it. The heap, read while the cluster is up, is still taken.
    api = Api(f"http://127.0.0.1:{server.server_address[1]}")
    profiles = Profiles(1, 60)  # the CPU profile would begin 54 s in
    asked = _candidate(tmp_path)
    profiles.start(asked, api)
    profiles.finish(asked, api, None)
    assert _Pprof.asked == ["/debug/pprof/heap"]
    profiles.stop(asked.slot)
    assert not (asked.profile_dir / CPU).exists()
    assert all(t.name != "profile" for t in threading.enumerate())
