"""Talking to a `procs` cluster over HTTP: GETs against its apiserver (plain, or HTTPS
with the generated CA and token), a component's /healthz, and reading their answers."""

from __future__ import annotations

import contextlib
import json
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from bisector.backends.procs.cluster import HOLLOW_PREFIX

HTTP_TIMEOUT_S = 10.0


def component_healthy(port: int, timeout: float = HTTP_TIMEOUT_S) -> bool:
    """/healthz of a component on its secure port says ok. Its serving certificate is
    self-signed at start (no --tls-cert-file): not verified, loopback only."""
    tls = ssl.create_default_context()
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE
    with contextlib.suppress(OSError, urllib.error.URLError, ValueError):
        url = f"https://127.0.0.1:{port}/healthz"
        with urllib.request.urlopen(url, timeout=timeout, context=tls) as answer:
            return bool(answer.read(64).strip() == b"ok")
    return False


@dataclass
class Api:
    """GETs against the cluster's apiserver (plain HTTP, or HTTPS with the generated CA)."""

    base: str
    ca: Path | None = None
    token: str | None = None
    _tls: ssl.SSLContext | None = field(default=None, init=False)

    def get(self, path: str, timeout: float = HTTP_TIMEOUT_S) -> bytes:
        request = urllib.request.Request(self.base + path)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        if self.ca is not None and self._tls is None:
            self._tls = ssl.create_default_context(cafile=str(self.ca))
        # urlopen's timeout bounds each socket read, not the answer: an apiserver that
        # trickles its body (out of file descriptors, starved) would hold a launch wait
        # past ready_timeout. The whole answer gets `timeout`.
        deadline = time.monotonic() + timeout
        body = bytearray()
        with urllib.request.urlopen(request, timeout=timeout, context=self._tls) as answer:
            while chunk := answer.read1(1 << 16):
                body += chunk
                if time.monotonic() > deadline:
                    raise TimeoutError(f"GET {path}: no whole answer in {timeout:g}s")
        return bytes(body)

    def try_get(self, path: str, timeout: float = HTTP_TIMEOUT_S) -> bytes | None:
        with contextlib.suppress(OSError, urllib.error.URLError, ValueError):
            return self.get(path, timeout)
        return None


def ready_hollow_nodes(nodes_json: bytes) -> int:
    """How many hollow-node-* nodes say Ready=True in a node list."""
    try:
        items = json.loads(nodes_json).get("items") or []
    except (ValueError, AttributeError):
        return 0
    ready = 0
    for node in items:
        try:
            name = node["metadata"]["name"]
            conditions = node["status"]["conditions"]
        except (KeyError, TypeError):
            continue
        if name.startswith(HOLLOW_PREFIX) and any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
        ):
            ready += 1
    return ready


def served_commit(version_json: bytes) -> str | None:
    try:
        commit = json.loads(version_json).get("gitCommit")
    except (ValueError, AttributeError):
        return None
    return commit if isinstance(commit, str) and commit else None  # "" says no commit
