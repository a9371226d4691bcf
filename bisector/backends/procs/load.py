"""The watch load generator: many node watches, the way kubelets watch their own node.

`python -m bisector.backends.procs.load --server URL --watchers W --live N --status FILE`
opens W watches `GET /api/v1/watch/nodes?fieldSelector=metadata.name=<name>` (what each
kubelet of a W-node cluster keeps open, one per node name), at most `--open-rate` new
ones a second and `--max-opening` awaiting the server's answer at once. The names are
`hollow-node-0 .. hollow-node-(W-1)`: the first N are the real hollow nodes (their
watches receive every status update), the others name nodes that do not exist here, so
they cost the apiserver what a quiet kubelet's watch costs: with the watch cache's name
index (good), nothing per event; without it (kubernetes #46851, bad), one filter call per
event per watch.

Like a kubelet's reflector, each watch starts from a resource version the apiserver's
cache has just listed (`GET /api/v1/nodes?resourceVersion=0`, refreshed twice a second),
not from nothing: a watch without one replays every current node to its filter first,
which 16,000 opens turn into a burst no kubelet causes. A watch the server closes, or
ends with an ERROR event (a resource version too old), is opened again after a second
with a fresh one, and counted.

On the live names it measures the watch delay once every watch is open (the steady
state, when the warmup runs): when an event arrives, minus the newest
`lastHeartbeatTime` of the node's conditions (set by the kubelet just before its PATCH;
one-second resolution, so the delay reads 0-1 s high).

Every second it replaces FILE (JSON): watches opened and open now, reopened, failed
opens, events, delay percentiles. `opened == watchers` means the load is in place.
SIGTERM or SIGINT ends it. Plain HTTP, or HTTPS with --ca-file and --token-file (a
bearer token) for servers without an insecure port.

`--pods-without-rv` watches pods instead, the way kubernetes #121688 was found: W watches
`GET /api/v1/pods?watch=1&labelSelector=app%3D<name>` with NO resourceVersion (a client
that wants "from now"), each closed by the server after `--timeout-seconds` and opened
again a second later, so the cost of opening one is paid all through the warmup.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import re
import resource
import signal
import ssl
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

REOPEN_AFTER_S = 1.0
RV_EVERY_S = 0.5
_ERROR_EVENT = re.compile(rb'^\s*\{\s*"type"\s*:\s*"ERROR"')
STATUS_EVERY_S = 1.0
MAX_DELAYS = 200_000  # the newest delays kept for the percentiles


@dataclass
class Counters:
    watchers: int
    opened: int = 0  # first opens that succeeded
    open_now: int = 0
    reopened: int = 0
    failed: int = 0
    expired: int = 0  # watches the server ended with an ERROR event (e.g. 410 Gone)
    steady_since: float | None = None  # when the last first open succeeded
    events: int = 0
    delays: list[float] = field(default_factory=list)
    last_error: str = ""
    started: float = field(default_factory=time.time)

    def summary(self) -> dict[str, object]:
        ordered = sorted(self.delays)

        def pct(q: float) -> float | None:
            if not ordered:
                return None
            return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)

        return {
            "watchers": self.watchers,
            "opened": self.opened,
            "open": self.open_now,
            "reopened": self.reopened,
            "failed": self.failed,
            "expired": self.expired,
            "steady_since": self.steady_since,
            "events": self.events,
            "delay_s": {
                "count": len(ordered),
                "p50": pct(0.5),
                "p90": pct(0.9),
                "p99": pct(0.99),
                "max": ordered[-1] if ordered else None,
            },
            "last_error": self.last_error,
            "started": self.started,
            "updated": time.time(),
        }


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    tls: ssl.SSLContext | None
    token: str | None

    @classmethod
    def parse(cls, server: str, ca_file: str | None, token_file: str | None) -> Target:
        url = urlsplit(server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise SystemExit(f"--server {server!r}: expected http://HOST:PORT or https://HOST:PORT")
        tls = None
        if url.scheme == "https":
            tls = ssl.create_default_context(cafile=ca_file)
        token = Path(token_file).read_text().strip() if token_file else None
        port = url.port or (443 if tls else 80)
        return cls(url.hostname, port, tls, token)

    def request(self, name: str, resource_version: str | None = None) -> bytes:
        selector = quote(f"metadata.name={name}", safe="")
        since = f"&resourceVersion={quote(resource_version)}" if resource_version else ""
        return self._get(f"/api/v1/watch/nodes?fieldSelector={selector}{since}")

    def pod_request(self, name: str, timeout_s: int) -> bytes:
        """A pod watch without resourceVersion (the query kubernetes #121688 reported)."""
        selector = quote(f"app={name}", safe="")
        until = f"&timeoutSeconds={timeout_s}" if timeout_s > 0 else ""
        return self._get(f"/api/v1/pods?watch=1&labelSelector={selector}{until}")

    def _get(self, path: str) -> bytes:
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "User-Agent: bisector-watch-load",
            "Accept: application/json",
        ]
        if self.token:
            lines.append(f"Authorization: Bearer {self.token}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()


def heartbeat_delay(event: bytes, now: float) -> float | None:
    """now - the newest lastHeartbeatTime of the node in a MODIFIED watch event line."""
    try:
        parsed = json.loads(event)
        if parsed.get("type") != "MODIFIED":
            return None  # ADDED: the watch's initial state, heartbeats of any age
        obj = parsed["object"]
        conditions = obj["status"]["conditions"]
        times = [c["lastHeartbeatTime"] for c in conditions if c.get("lastHeartbeatTime")]
    except (ValueError, KeyError, TypeError):
        return None
    if not times:
        return None
    newest = max(dt.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() for t in times)
    return now - newest


async def _read_chunks(reader: asyncio.StreamReader) -> Sequence[bytes]:
    """The next chunk of a chunked HTTP body, as lines; [] at the end of the body."""
    size_line = await reader.readline()
    if not size_line:
        return []
    size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
    if size == 0:
        return []
    data = await reader.readexactly(size + 2)  # the chunk and its CRLF
    return data[:-2].split(b"\n")


def list_resource_version(target: Target, timeout: float = 10.0) -> str | None:
    """The resource version of the apiserver's node list (from its watch cache)."""
    scheme = "https" if target.tls else "http"
    request = urllib.request.Request(
        f"{scheme}://{target.host}:{target.port}/api/v1/nodes?resourceVersion=0"
    )
    if target.token:
        request.add_header("Authorization", f"Bearer {target.token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=target.tls) as answer:
            version = json.loads(answer.read())["metadata"]["resourceVersion"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return version if isinstance(version, str) and version else None


@dataclass
class Versions:
    """The newest listed resource version, refreshed in the background."""

    latest: str | None = None

    async def refresh(self, target: Target, every_s: float = RV_EVERY_S) -> None:
        while True:
            found = await asyncio.to_thread(list_resource_version, target)
            if found is not None:
                self.latest = found
            await asyncio.sleep(every_s)


async def watch(
    name: str,
    live: bool,
    target: Target,
    c: Counters,
    *,
    versions: Versions,
    opening: asyncio.Semaphore,
    pods_timeout_s: int | None = None,
) -> None:
    """One watch, opened again whenever it ends; `pods_timeout_s` set: a pod watch
    without resourceVersion (`--pods-without-rv`), else a node watch."""
    first = True
    while True:
        writer = None
        try:
            async with opening:  # until the server answers: the watch is registered
                reader, writer = await asyncio.open_connection(
                    target.host, target.port, ssl=target.tls
                )
                if pods_timeout_s is None:
                    writer.write(target.request(name, versions.latest))
                else:
                    writer.write(target.pod_request(name, pods_timeout_s))
                await writer.drain()
                status = await reader.readline()
                if b" 200 " not in status:
                    raise ConnectionError(status.decode(errors="replace").strip() or "no answer")
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass  # the headers: the body is chunked JSON, one event a line
            if first:
                c.opened += 1
                first = False
                if c.opened == c.watchers:
                    c.steady_since = time.time()
            else:
                c.reopened += 1
            c.open_now += 1
            try:
                pending = b""
                ended = False
                while not ended and (lines := await _read_chunks(reader)):
                    now = time.time()
                    lines = list(lines)
                    lines[0] = pending + lines[0]
                    pending = lines.pop()
                    for line in lines:
                        if not line.strip():
                            continue
                        if _ERROR_EVENT.search(line):
                            c.expired += 1  # the server ends this watch: open it again
                            ended = True
                            break
                        c.events += 1
                        if not live or c.steady_since is None:
                            continue
                        if (delay := heartbeat_delay(line, now)) is not None:
                            c.delays.append(delay)
                            if len(c.delays) > MAX_DELAYS:
                                del c.delays[: MAX_DELAYS // 10]
            finally:
                c.open_now -= 1
        except (OSError, ValueError, ConnectionError, asyncio.IncompleteReadError) as exc:
            c.failed += 1
            c.last_error = f"{name}: {type(exc).__name__}: {exc}"[:300]
        finally:
            if writer is not None:
                writer.close()
        await asyncio.sleep(REOPEN_AFTER_S)


def write_status(path: Path, c: Counters) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(c.summary()) + "\n")
    tmp.replace(path)


async def run(args: argparse.Namespace) -> None:
    target = Target.parse(args.server, args.ca_file, args.token_file)
    c = Counters(args.watchers)
    status = Path(args.status)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    tasks: list[asyncio.Task[None]] = []

    async def report() -> None:
        while True:
            write_status(status, c)
            await asyncio.sleep(STATUS_EVERY_S)

    reporter = asyncio.create_task(report())
    versions = Versions()
    opening = asyncio.Semaphore(args.max_opening)
    refresher = asyncio.create_task(versions.refresh(target))
    pods_timeout_s = args.timeout_seconds if args.pods_without_rv else None
    # The first version, before any watch opens (at most ~10 s); pod watches take none.
    for _ in range(100 if pods_timeout_s is None else 0):
        if versions.latest is not None:
            break
        await asyncio.sleep(0.1)
    every = 1.0 / args.open_rate
    start = time.monotonic()
    for i in range(args.watchers):
        if stop.is_set():
            break
        name = f"{args.prefix}{i}"
        watcher = watch(
            name,
            i < args.live,
            target,
            c,
            versions=versions,
            opening=opening,
            pods_timeout_s=pods_timeout_s,
        )
        tasks.append(asyncio.create_task(watcher))
        delay = start + (i + 1) * every - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
    await stop.wait()
    reporter.cancel()
    refresher.cancel()
    for task in tasks:
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*tasks, reporter, refresher, return_exceptions=True)
    write_status(status, c)


def raise_file_limit() -> None:
    """One socket per watch: the soft open-file limit goes up to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bisector.backends.procs.load")
    parser.add_argument("--server", required=True, help="http://127.0.0.1:PORT or https://...")
    parser.add_argument("--watchers", type=int, required=True)
    parser.add_argument("--live", type=int, default=0, help="how many names are real nodes")
    parser.add_argument("--prefix", default="hollow-node-")
    parser.add_argument("--open-rate", type=float, default=2000.0, help="new watches a second")
    parser.add_argument(
        "--max-opening", type=int, default=100, help="watches awaiting the server's answer at once"
    )
    parser.add_argument("--status", required=True, help="JSON file replaced every second")
    parser.add_argument(
        "--pods-without-rv", action="store_true", help="pod watches, no resourceVersion"
    )
    parser.add_argument(
        "--timeout-seconds", type=int, default=0, help="pod watches: the server closes them after"
    )
    parser.add_argument("--ca-file")
    parser.add_argument("--token-file")
    args = parser.parse_args(argv)
    if args.watchers < 0 or args.open_rate <= 0:
        parser.error("--watchers must be >= 0 and --open-rate > 0")
    raise_file_limit()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
