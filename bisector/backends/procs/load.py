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

Other loads are `--watch SPEC` (JSON of a `WatchSpec`, repeatable; the config's
`[[backends.procs.watches]]` tables): COUNT watches of any resource (`pods`, or
`GROUP/VERSION/RESOURCE` for any API group and CRDs), in a namespace or across all, with
label and field selectors (`{i}` is the watch's number: `app=w{i}` gives each its own),
from a listed resource version, from none (every watch then starts with the current
state: kubernetes #121688's load, where a cacher bypass opens one etcd watch each) or
from "0", optionally closed by the server after `timeout_seconds` (then opened again a
second later, so opening one is paid all through the warmup). They are opened after the
node watches, each spec at its own rate, and count in the same figures. They ask
`GET <list path>?watch=1&...` (how clients watch since 1.x; the node watches keep 2017's
`/api/v1/watch/nodes` form so the 2017 load is the same request: both reach the same
handler, staging/src/k8s.io/apiserver/pkg/endpoints/installer.go, "LIST" with watch=true
and "WATCHLIST").
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
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from urllib.parse import quote, urlsplit

from bisector.config import Section, read_settings, setting
from bisector.errors import ConfigError

REOPEN_AFTER_S = 1.0
RV_EVERY_S = 0.5
_ERROR_EVENT = re.compile(rb'^\s*\{\s*"type"\s*:\s*"ERROR"')
STATUS_EVERY_S = 1.0
MAX_DELAYS = 200_000  # the newest delays kept for the percentiles
# The load generator holds one socket per watch in one process, and Linux caps a process's
# open files at fs.nr_open (1,048,576 unless raised: the kernel's
# Documentation/admin-guide/sysctl/fs.rst, "nr_open").
MAX_WATCHERS = 1 << 20
NR_OPEN_WHY = "one socket each in one process, and fs.nr_open caps a process at 1,048,576 files"
RESOURCE_VERSIONS = ("listed", "none", "0")
_NAME = r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?"
_RESOURCE = re.compile(rf"^{_NAME}(/{_NAME}/{_NAME})?$")


def _resource(s: Section, key: str) -> str:
    value = s.get_str(key, "nodes")
    if not _RESOURCE.match(value):
        raise ConfigError(
            f"{s.where(key)}: write a core resource (pods, configmaps) or GROUP/VERSION/RESOURCE "
            f"(apps/v1/deployments, a CRD's stable.example.com/v1/crontabs), got {value!r}"
        )
    return value


def _namespace(s: Section, key: str) -> str:
    value = s.get_str(key, "")
    if value and not re.match(rf"^{_NAME}$", value):
        raise ConfigError(f"{s.where(key)}: not a namespace name: {value!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class WatchSpec:
    """One kind of watch the generator holds, `count` of them: one `[[watches]]` table."""

    resource: str = setting("str", doc="pods, or GROUP/VERSION/RESOURCE", reader=_resource)
    namespace: str = setting("str", doc="one namespace; absent: all", reader=_namespace)
    label_selector: str = setting("str", "", "labelSelector; {i}: the watch's number")
    field_selector: str = setting("str", "", "fieldSelector; {i}: the watch's number")
    resource_version: str = setting(
        "str", "listed", "where each watch starts", choices=RESOURCE_VERSIONS
    )
    count: int = setting("int", doc="how many", low=1, high=MAX_WATCHERS, why=NR_OPEN_WHY)
    open_rate: float = setting("float", 2000.0, "new watches a second", above=0)
    timeout_seconds: int = setting(
        "int", 0, "the server closes each after (0: never)", low=0, high=86400, why="a day"
    )
    live: int = 0  # not a key: the first `live` (real hollow nodes) measure the watch delay
    kubelet_form: bool = False  # not a key: the node watches' 2017 `/watch/` request

    @classmethod
    def from_section(cls, s: Section) -> WatchSpec:
        return read_settings(cls, s)

    @classmethod
    def nodes(cls, count: int, live: int, prefix: str, open_rate: float) -> WatchSpec:
        """The node watches a kubelet keeps, one per node name (the default load)."""
        return cls(
            resource="nodes",
            namespace="",
            field_selector=f"metadata.name={prefix}{{i}}",
            count=count,
            open_rate=open_rate,
            live=live,
            kubelet_form=True,
        )

    @classmethod
    def pods_without_rv(
        cls, count: int, prefix: str, open_rate: float, timeout_s: int
    ) -> WatchSpec:
        """kubernetes #121688's load as it was reported: pod watches, a label each, no
        resourceVersion (`--pods-without-rv`)."""
        return cls(
            resource="pods",
            namespace="",
            label_selector=f"app={prefix}{{i}}",
            resource_version="none",
            count=count,
            open_rate=open_rate,
            timeout_seconds=timeout_s,
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> WatchSpec:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a watch spec is a JSON object")
        return cls(**data)

    def _prefix(self) -> tuple[str, str]:
        parts = self.resource.split("/")
        base = "/api/v1" if len(parts) == 1 else f"/apis/{parts[0]}/{parts[1]}"
        inside = f"namespaces/{self.namespace}/" if self.namespace else ""
        return base, f"{inside}{parts[-1]}"

    def list_path(self) -> str:
        base, rest = self._prefix()
        return f"{base}/{rest}"

    def watch_path(self, i: int, resource_version: str | None) -> str:
        """The request of watch number `i`: selectors first, then where it starts. The
        node watches (`nodes`) keep 2017's `/watch/` form; every other spec `?watch=1`."""
        base, rest = self._prefix()
        legacy = self.kubelet_form
        query = [] if legacy else ["watch=1"]
        if self.field_selector:
            query.append("fieldSelector=" + quote(self.field_selector.replace("{i}", str(i)), ""))
        if self.label_selector:
            query.append("labelSelector=" + quote(self.label_selector.replace("{i}", str(i)), ""))
        since = {"listed": resource_version, "none": None, "0": "0"}[self.resource_version]
        if since:
            query.append(f"resourceVersion={quote(since)}")
        if self.timeout_seconds:
            query.append(f"timeoutSeconds={self.timeout_seconds}")
        path = f"{base}/watch/{rest}" if legacy else f"{base}/{rest}"
        return path + ("?" + "&".join(query) if query else "")


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
        """The watch a kubelet keeps on its own node `name`."""
        spec = replace(WatchSpec.nodes(1, 0, "", 1.0), field_selector=f"metadata.name={name}")
        return self.request_path(spec.watch_path(0, resource_version))

    def pod_request(self, name: str, timeout_s: int) -> bytes:
        """A pod watch without resourceVersion, labelled `app=name`."""
        spec = replace(
            WatchSpec.pods_without_rv(1, "", 1.0, timeout_s), label_selector=f"app={name}"
        )
        return self.request_path(spec.watch_path(0, None))

    def request_path(self, path: str) -> bytes:
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


def list_resource_version(
    target: Target, timeout: float = 10.0, path: str = "/api/v1/nodes"
) -> str | None:
    """The resource version of a list at `path` (from the apiserver's watch cache)."""
    scheme = "https" if target.tls else "http"
    request = urllib.request.Request(
        f"{scheme}://{target.host}:{target.port}{path}?resourceVersion=0"
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

    async def refresh(
        self, target: Target, every_s: float = RV_EVERY_S, path: str = "/api/v1/nodes"
    ) -> None:
        while True:
            found = await asyncio.to_thread(list_resource_version, target, 10.0, path)
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
    path: Callable[[str | None], str] | None = None,
) -> None:
    """One watch, opened again whenever it ends: `path(listed version)` is its request
    (the node `name`'s own watch when not given)."""
    first = True
    while True:
        writer = None
        try:
            async with opening:  # until the server answers: the watch is registered
                reader, writer = await asyncio.open_connection(
                    target.host, target.port, ssl=target.tls
                )
                if path is None:
                    writer.write(target.request(name, versions.latest))
                else:
                    writer.write(target.request_path(path(versions.latest)))
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


def specs_of(args: argparse.Namespace) -> list[WatchSpec]:
    """The node watches of --watchers (or pod watches, --pods-without-rv), then each --watch
    spec."""
    specs = []
    if args.watchers and args.pods_without_rv:
        pods = WatchSpec.pods_without_rv(
            args.watchers, args.prefix, args.open_rate, args.timeout_seconds
        )
        specs.append(pods)
    elif args.watchers:
        specs.append(WatchSpec.nodes(args.watchers, args.live, args.prefix, args.open_rate))
    return specs + list(args.watch)


async def run(args: argparse.Namespace) -> None:
    target = Target.parse(args.server, args.ca_file, args.token_file)
    specs = specs_of(args)
    c = Counters(sum(spec.count for spec in specs))
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
    opening = asyncio.Semaphore(args.max_opening)
    lists = {spec.list_path() for spec in specs if spec.resource_version == "listed"}
    versions = {path: Versions() for path in lists}
    refreshers = [asyncio.create_task(versions[p].refresh(target, path=p)) for p in lists]
    for _ in range(100):  # the first versions, before any watch opens (at most ~10 s)
        if all(v.latest is not None for v in versions.values()):
            break
        await asyncio.sleep(0.1)
    none = Versions()
    for spec in specs:
        every = 1.0 / spec.open_rate
        start = time.monotonic()
        listed = versions.get(spec.list_path(), none)
        for i in range(spec.count):
            if stop.is_set():
                break
            selector = spec.field_selector.replace("{i}", str(i))
            name = selector.split("=", 1)[-1] if selector else f"{spec.resource}[{i}]"

            def path(version: str | None, i: int = i, spec: WatchSpec = spec) -> str:
                return spec.watch_path(i, version)

            watcher = watch(
                name, i < spec.live, target, c, versions=listed, opening=opening, path=path
            )
            tasks.append(asyncio.create_task(watcher))
            delay = start + (i + 1) * every - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
    await stop.wait()
    reporter.cancel()
    for refresher in refreshers:
        refresher.cancel()
    for task in tasks:
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*tasks, reporter, *refreshers, return_exceptions=True)
    write_status(status, c)


def raise_file_limit() -> None:
    """One socket per watch: the soft open-file limit goes up to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _spec(text: str) -> WatchSpec:
    try:
        return WatchSpec.from_json(text)
    except (ValueError, TypeError) as exc:
        raise argparse.ArgumentTypeError(f"not a watch spec ({exc}): {text}") from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bisector.backends.procs.load")
    parser.add_argument("--server", required=True, help="http://127.0.0.1:PORT or https://...")
    parser.add_argument("--watchers", type=int, default=0, help="node watches, one per name")
    parser.add_argument("--live", type=int, default=0, help="how many names are real nodes")
    parser.add_argument("--prefix", default="hollow-node-")
    parser.add_argument("--open-rate", type=float, default=2000.0, help="new watches a second")
    parser.add_argument(
        "--max-opening", type=int, default=100, help="watches awaiting the server's answer at once"
    )
    parser.add_argument("--status", required=True, help="JSON file replaced every second")
    parser.add_argument(
        "--pods-without-rv", action="store_true", help="--watchers are pod watches, no RV"
    )
    parser.add_argument(
        "--timeout-seconds", type=int, default=0, help="pod watches: the server closes them after"
    )
    parser.add_argument(
        "--watch",
        type=_spec,
        action="append",
        default=[],
        help="a WatchSpec as JSON: more watches (repeatable)",
    )
    parser.add_argument("--ca-file")
    parser.add_argument("--token-file")
    args = parser.parse_args(argv)
    if args.watchers < 0 or args.open_rate <= 0:
        parser.error("--watchers must be >= 0 and --open-rate > 0")
    if not args.watchers and not args.watch:
        parser.error("nothing to watch: give --watchers N or --watch SPEC")
    raise_file_limit()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
