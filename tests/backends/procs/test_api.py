"""Talking to an apiserver (bisector/backends/procs/api.py): every answer has a bound."""

from __future__ import annotations

import time

import pytest

from bisector.backends.procs import api as pa


def test_an_apiserver_that_trickles_its_answer_is_given_up_on() -> None:
    # urlopen's timeout bounds each socket read (CPython Lib/socket.py settimeout, per
    # operation), so a body sent a byte at a time never timed out: a launch wait could
    # then outlast ready_timeout (issue 30 item 3: no launch phase waits without a bound).
    import http.server
    import threading

    class Trickle(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "40")
            self.end_headers()
            for _ in range(40):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.1)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        api = pa.Api(f"http://127.0.0.1:{server.server_address[1]}")
        with pytest.raises(TimeoutError, match="no whole answer"):
            api.get("/readyz", timeout=0.5)
        assert api.try_get("/readyz", timeout=0.5) is None
    finally:
        server.shutdown()
        server.server_close()
