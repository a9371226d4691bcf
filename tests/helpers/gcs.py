"""A real local GCS (the `gcp-storage-emulator` package), reached through STORAGE_EMULATOR_HOST.

`gcs_emulator()` starts the emulator in-process on a free loopback port with
in-memory storage, points STORAGE_EMULATOR_HOST at it and yields an anonymous
google-cloud-storage client; `upload_gzip_encoded` stores an object the way
`gsutil cp -z` does (gzip bytes, Content-Encoding: gzip, no .gz suffix).
"""

from __future__ import annotations

import gzip
import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from gcp_storage_emulator.server import create_server
from google.cloud import storage  # type: ignore[import-untyped]


def _free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def gcs_emulator_at(address: str) -> Iterator[tuple[str, Any]]:
    """A gcp-storage-emulator (in memory) listening on `address`, STORAGE_EMULATOR_HOST
    pointing at it while it runs: its URL and an anonymous client."""
    logging.getLogger("gcp_storage_emulator").setLevel(logging.WARNING)
    port = _free_port(address)
    server = create_server(address, port, in_memory=True)
    server.start()
    url = f"http://{address}:{port}"
    previous = os.environ.get("STORAGE_EMULATOR_HOST")
    os.environ["STORAGE_EMULATOR_HOST"] = url
    try:
        yield url, storage.Client.create_anonymous_client()
    finally:
        if previous is None:
            os.environ.pop("STORAGE_EMULATOR_HOST", None)
        else:
            os.environ["STORAGE_EMULATOR_HOST"] = previous
        server.stop()


@contextmanager
def gcs_emulator() -> Iterator[Any]:
    with gcs_emulator_at("127.0.0.1") as (_url, client):
        yield client


def upload_gzip_encoded(client: Any, bucket: str, name: str, text: bytes) -> None:
    """Store `text` as `gsutil cp -z` does: gzip bytes with Content-Encoding: gzip."""
    blob = client.bucket(bucket).blob(name)
    blob.content_encoding = "gzip"
    blob.upload_from_string(gzip.compress(text), content_type="text/plain")


def ensure_bucket(client: Any, name: str) -> Any:
    bucket = client.bucket(name)
    if not bucket.exists():
        bucket = client.create_bucket(name)
    return bucket


@contextmanager
def refused_endpoint() -> Iterator[str]:
    """An http:// address on loopback where nothing listens: connecting is refused at once."""
    yield f"http://127.0.0.1:{_free_port()}"


@contextmanager
def blackhole_endpoint() -> Iterator[str]:
    """An http:// address whose listener never accepts and whose queue is full.

    New connections hang in SYN, as behind a firewall that drops packets: only a
    connect timeout ends them.
    """
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(4):  # Linux queues backlog + 1 connections; the rest wait in SYN
        filler = socket.socket()
        filler.setblocking(False)
        with suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for filler in fillers:
            filler.close()
        server.close()
