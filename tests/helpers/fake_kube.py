"""Fake `go`, `etcd`, `kube-apiserver` and `kubemark` programs for the procs backend's tests.

CI has no Go, no etcd and no Kubernetes checkout: these small Python programs stand in
for them, run for real through the one process door, so the backend's commands, daemons,
ports, readiness checks, log and teardown are exercised as they are with the real ones.

- `go version` prints go1.19.8 (or $FAKE_GO_VERSION); `go build -ldflags ... -o OUT
  ./cmd/NAME` writes OUT: the
  fake apiserver (for kube-apiserver) or the fake hollow node (for kubemark), with the
  -X gitCommit value and the tree's `value` file baked in (a file `BROKEN` in the tree
  fails the build, like a compile error; a file `NEEDS` lists files the build needs,
  each missing one fails it with Go 1.19's `cannot find package` message); a package
  named `*-gen` builds a generator writing `$GOPATH/src/<-p>/<-O>.go`.
- the fake etcd serves GET /health and /metrics on its --listen-client-urls port (the
  families real etcd 3.4.23 and 3.5.1 print, under their names: the watcher gauge
  `etcd_debugging_mvcc_watcher_total`, the range counters `etcd_mvcc_range_total` and
  `etcd_debugging_mvcc_range_total`, `go_goroutines`, `process_start_time_seconds`),
  and /fake/watch?delta=N, /fake/range for the fake apiserver to count its etcd use.
- the fake apiserver serves on --insecure-port (2017), or with --secure-port on TLS
  with the --tls-cert-file/--tls-private-key-file pair and the bearer token of
  --token-auth-file required (a module-era apiserver). A watch without a resourceVersion
  on a bad tree (`value` > 0) opens an etcd watch of its own, as kubernetes #121688's
  cacher bypass does (one etcd watcher more while it is open), and every list is an
  etcd range.
- the fake apiserver serves /healthz, /version (the baked commit), /metrics, node
  PATCH/GET/list and node watches (chunked, a MODIFIED event per status write) on
  its --insecure-port, and writes v1.7 glog request lines to stderr: at start, `value`
  node PATCHes answered 409 (so the scored conflicts are the tree's value), then one
  line per request.
- the fake hollow node PATCHes its node's status every HOLLOW_NODE_STATUS_PERIOD.

Faults, from the environment the test sets (daemons inherit it): FAKE_ETCD_EXIT,
FAKE_ETCD_NO_SPACE (etcd cannot create its WAL on a full disk),
FAKE_APISERVER_EXIT_AFTER=<s>, FAKE_APISERVER_COMMIT=<commit served>,
FAKE_APISERVER_NO_COMMIT (/version without gitCommit), FAKE_NO_REQUEST_COUNT (/metrics
without apiserver_request_count),
FAKE_NO_METRICS_FILE=<path> (/metrics fails while it exists), FAKE_WATCH_EXPIRE_ONCE (the
first watch of each name from a resource version ends with an ERROR event), FAKE_KUBEMARK_EXIT,
FAKE_KUBEMARK_EXIT_FILE=<path> (hollow nodes exit while it exists),
FAKE_KUBEMARK_DELAY=<s> (before the first status), FAKE_GO_DELAY=<s> (a slow apiserver
build), FAKE_IGNORE_TERM (ignore SIGTERM: the teardown must SIGKILL). FAKE_GO_CALLS=<path>
logs every `go` call.
Every fake daemon appends its pid to $FAKE_PIDS, for the tests' leftover checks.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

_COMMON = r"""
import json, os, re, select, signal, sys, threading, time, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

def _record_pid():
    path = os.environ.get("FAKE_PIDS")
    if path:
        with open(path, "a") as out:
            out.write(f"{os.getpid()}\n")

def _maybe_ignore_term():
    if os.environ.get("FAKE_IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

def _flag(name, default=None):
    for arg in sys.argv[1:]:
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    if f"--{name}" in sys.argv:
        i = sys.argv.index(f"--{name}")
        return sys.argv[i + 1]
    return default

def glog(line, level="I"):
    now = time.time()
    t = time.localtime(now)
    stamp = time.strftime("%m%d %H:%M:%S", t) + f".{int(now % 1 * 1e6):06d}"
    sys.stderr.write(f"{level}{stamp} {os.getpid():7d} {line}\n")
    sys.stderr.flush()
"""

_GO = r"""
import os, re, sys, time
if os.environ.get("FAKE_GO_CALLS"):
    with open(os.environ["FAKE_GO_CALLS"], "a") as calls:
        calls.write(" ".join(sys.argv[1:]) + " @ " + os.environ.get("PWD", "") + "\n")
if sys.argv[1:2] == ["version"]:
    print(f"go version {os.environ.get('FAKE_GO_VERSION', 'go1.19.8')} linux/amd64")
    sys.exit(0)
if sys.argv[1:2] != ["build"]:
    sys.exit(f"fake go: cannot {sys.argv[1:]}")
args = sys.argv[2:]
out = args[args.index("-o") + 1]
package = args[-1]
ldflags = args[args.index("-ldflags") + 1] if "-ldflags" in args else ""
commit = re.search(r"pkg/version\.gitCommit=(\S+)", ldflags)
tree = os.environ.get("PWD", os.getcwd())
if os.path.exists(os.path.join(tree, "BROKEN")):
    sys.exit("cmd/kube-apiserver/app/server.go:1:1: syntax error: fake compile error")
name = package.rstrip("/").rsplit("/", 1)[-1]
if not name.endswith("-gen") and os.path.exists(os.path.join(tree, "NEEDS")):
    # Go 1.19's own GOPATH-mode message for a package that is not there (an import of a
    # file the tree generates and does not commit), run for real: the error line first.
    gopath = os.environ.get("GOPATH", "")
    for needed in open(os.path.join(tree, "NEEDS")).read().split():
        if not os.path.exists(os.path.join(tree, needed)):
            imported = "k8s.io/kubernetes/" + os.path.dirname(needed)
            sys.exit(
                "cmd/kube-apiserver/app/server.go:30:2: "
                f'cannot find package "{imported}" in any of:\n'
                f"\t{tree}/vendor/{imported} (vendor tree)\n"
                f"\t/usr/lib/go-1.19/src/{imported} (from $GOROOT)\n"
                f"\t{gopath}/src/{imported} (from $GOPATH)"
            )
if name == "kube-apiserver" and os.environ.get("FAKE_GO_DELAY"):
    time.sleep(float(os.environ["FAKE_GO_DELAY"]))
templates = os.environ["FAKE_TEMPLATES"]
def read(name, default):
    path = os.path.join(tree, name)
    return open(path).read().strip() if os.path.exists(path) else default
value = read("value", "0")
fixed = os.path.exists(os.path.join(tree, "FIXED"))
harness = read("HARNESS", "")
goenv = {k: os.environ.get(k, "") for k in ("GO111MODULE", "GOPATH", "GOCACHE", "GOFLAGS",
                                            "CGO_ENABLED")}
if name == "kube-apiserver":
    body = open(os.path.join(templates, "apiserver.py")).read()
elif name == "kubemark":
    body = open(os.path.join(templates, "kubemark.py")).read()
elif name in ("kube-controller-manager", "kube-scheduler"):
    body = open(os.path.join(templates, "component.py")).read()
elif name.endswith("-gen"):
    body = open(os.path.join(templates, "generator.py")).read()
else:
    body = "import sys\nsys.exit(0)\n"
header = (f"#!{sys.executable}\nCOMMIT = {commit.group(1) if commit else ''!r}\n"
          f"VALUE = {int(value)}\nFIXED = {fixed}\nHARNESS = {harness!r}\n"
          f"GOENV = {goenv!r}\n")
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
with open(out, "w") as f:
    f.write(header + body)
os.chmod(out, 0o755)
"""

# A code generator built by the fake go (a package whose name ends in -gen): writes
# $GOPATH/src/<-p>/<-O>.go listing the -i packages, as gengo's generators write theirs.
_GENERATOR = r"""
args = sys.argv[1:]
out_pkg, base, inputs = (args[args.index(f) + 1] for f in ("-p", "-O", "-i"))
path = os.path.join(os.environ["GOPATH"], "src", out_pkg, base + ".go")
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "w") as out:
    out.write("package openapi\n// inputs: " + inputs + "\n")
"""

_ETCD = r"""
if sys.argv[1:] == ["--version"]:
    # etcd's own lines (etcd server/etcdmain/config.go, `if cfg.printVersion`), which
    # `bisector doctor` and run's preflight read.
    print("etcd Version: 3.5.9\nGit SHA: fake\nGo Version: go1.19.8\nGo OS/Arch: linux/amd64")
    sys.exit(0)
_record_pid()
_maybe_ignore_term()
if os.environ.get("FAKE_ETCD_NO_SPACE"):
    # etcd 3.x on a full disk: capnslog's `C | etcdserver: create wal error: ...`
    # (etcdserver/raft.go: plog.Fatalf("create wal error: %v", err)), then, as observed
    # with Debian's etcd (issue 30), a goroutine stack trace at the tail.
    now = time.strftime("%Y-%m-%d %H:%M:%S") + ".000000"
    print(f"{now} I | etcdmain: etcd Version: 3.4.23", file=sys.stderr)
    print(f"{now} C | etcdserver: create wal error: no space left on device", file=sys.stderr)
    print("goroutine 1 [running]:", file=sys.stderr)
    print("go.etcd.io/etcd/etcdmain.Main()", file=sys.stderr)
    print("\tgo.etcd.io/etcd/etcdmain/main.go:46 +0x19e", file=sys.stderr)
    print("main.main()", file=sys.stderr)
    sys.exit(1)
if os.environ.get("FAKE_ETCD_EXIT"):
    print("etcdmain: listen tcp: address already in use (fake)", file=sys.stderr)
    sys.exit(1)
url = _flag("listen-client-urls")
port = int(url.rsplit(":", 1)[1])
os.makedirs(_flag("data-dir"), exist_ok=True)
state = {"watchers": 7, "ranges": 0}  # 7: the watchers an apiserver's caches open at start
lock = threading.Lock()
started = time.time()
def metrics_page():
    with lock:
        watchers, ranges = state["watchers"], state["ranges"]
    return (
        "# HELP etcd_debugging_mvcc_watcher_total Total number of watchers.\n"
        "# TYPE etcd_debugging_mvcc_watcher_total gauge\n"
        f"etcd_debugging_mvcc_watcher_total {watchers}\n"
        "# HELP etcd_debugging_mvcc_range_total Total number of ranges seen by this member.\n"
        "# TYPE etcd_debugging_mvcc_range_total counter\n"
        f"etcd_debugging_mvcc_range_total {ranges}\n"
        "# HELP etcd_mvcc_range_total Total number of ranges seen by this member.\n"
        "# TYPE etcd_mvcc_range_total counter\n"
        f"etcd_mvcc_range_total {ranges}\n"
        "# TYPE etcd_server_version gauge\n"
        'etcd_server_version{server_version="3.5.9"} 1\n'
        "# TYPE go_goroutines gauge\n"
        f"go_goroutines {threading.active_count() + 40}\n"
        "# TYPE process_start_time_seconds gauge\n"
        f"process_start_time_seconds {started:.2f}\n"
        "# TYPE process_cpu_seconds_total counter\n"
        f"process_cpu_seconds_total {time.process_time():.6f}\n"
        "# TYPE fake_uptime_seconds gauge\n"
        f"fake_uptime_seconds {time.time() - started:.3f}\n"
    ).encode()
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"health":"true"}'
        if self.path == "/metrics":
            body = metrics_page()
        elif self.path.startswith("/fake/watch?delta="):
            with lock:
                state["watchers"] += int(self.path.split("=", 1)[1])
        elif self.path == "/fake/range":
            with lock:
                state["ranges"] += 1
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
print(f"fake etcd serving {url}", file=sys.stderr, flush=True)
ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
"""

_APISERVER = r"""
_record_pid()
_maybe_ignore_term()
secure = int(_flag("secure-port", "0")) > 0
port = int(_flag("secure-port") if secure else _flag("insecure-port"))
token = None
if secure:  # --token-auth-file's CSV: token,user,uid,groups
    token = open(_flag("token-auth-file")).read().split(",", 1)[0].strip()
etcd = _flag("etcd-servers")
def etcd_call(path):
    try:
        urllib.request.urlopen(etcd + path, timeout=5).read()
    except OSError:
        pass
nodes = {}
expired = set()
lock = threading.Lock()
started = time.time()
patches = [0]  # node status PATCHes answered 200, for apiserver_request_count
ua = "[[kubemark/v0.0.0 (linux/amd64) kubernetes/$Format] 127.0.0.1:40000]"
if FIXED:
    glog("fake-apiserver.go:1] built with the build fix")
for _ in range(VALUE):
    glog(f"wrap.go:42] PATCH /api/v1/nodes/hollow-node-0/status: (1.1ms) 409 {ua}")
exit_after = os.environ.get("FAKE_APISERVER_EXIT_AFTER")
if exit_after:
    def die():
        time.sleep(float(exit_after))
        glog("fake-apiserver.go:2] fatal: the fake apiserver crashes as asked", "F")
        os._exit(255)
    threading.Thread(target=die, daemon=True).start()

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def _send(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        glog(f"wrap.go:42] {self.command} {self.path}: (0.5ms) {code} {ua}")
    def _authorized(self):
        if token is None or self.headers.get("Authorization") == f"Bearer {token}":
            return True
        self._send(401, b'{"kind":"Status","code":401}')
        return False
    def do_GET(self):
        if not self._authorized():
            return
        if self.path == "/healthz":
            return self._send(200, b"ok", "text/plain")
        if self.path == "/version":
            commit = os.environ.get("FAKE_APISERVER_COMMIT", COMMIT)
            version = {"major": "1", "minor": "7", "gitCommit": commit}
            if os.environ.get("FAKE_APISERVER_NO_COMMIT"):
                del version["gitCommit"]  # as a binary built without the -X stamp
            return self._send(200, json.dumps(version).encode())
        if self.path == "/metrics":
            off = os.environ.get("FAKE_NO_METRICS_FILE")
            if off and os.path.exists(off):
                return self._send(500, b"no metrics", "text/plain")
            # The 1.7 families: apiserver_request_count's labels are verb, resource,
            # subresource, client, contentType, code (apiserver endpoints/metrics/metrics.go).
            with lock:
                page = (
                    f"apiserver_nodes {len(nodes)}\n"
                    "# TYPE go_goroutines gauge\n"
                    f"go_goroutines {threading.active_count() + 100}\n"
                    "# TYPE process_start_time_seconds gauge\n"
                    f"process_start_time_seconds {started:.2f}\n"
                    "# TYPE fake_uptime_seconds gauge\n"
                    f"fake_uptime_seconds {time.time() - started:.3f}\n"
                )
                if not os.environ.get("FAKE_NO_REQUEST_COUNT"):
                    page += (
                        "# TYPE apiserver_request_count counter\n"
                        'apiserver_request_count{verb="PATCH",resource="nodes",'
                        'subresource="status",client="kubemark",contentType="application/json",'
                        f'code="200"}} {patches[0]}\n'
                    )
            return self._send(200, page.encode(), "text/plain")
        if self.path.startswith("/api/v1/watch/nodes?fieldSelector=metadata.name"):
            return self._watch()
        if "/watch/" in self.path or "watch=1" in self.path:
            return self._quiet_watch()
        if self.path.startswith("/api/v1/nodes"):
            with lock:
                items = [self._node(n) for n in sorted(nodes)]
            listed = {"kind": "NodeList", "metadata": {"resourceVersion": str(len(items) + 7)},
                      "items": items}
            return self._send(200, json.dumps(listed).encode())
        if self.path.startswith("/api/") or self.path.startswith("/apis/"):
            etcd_call("/fake/range")  # a list read from etcd
            listed = {"kind": "List", "metadata": {"resourceVersion": "7"}, "items": []}
            return self._send(200, json.dumps(listed).encode())
        return self._send(404, b"{}")
    def _quiet_watch(self):
        # Any other watch: no events. Without a resourceVersion on a bad tree, the cacher
        # is bypassed: an etcd watch of its own while it is open (kubernetes #121688).
        bypass = VALUE > 0 and "resourceVersion=" not in self.path
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        glog(f"wrap.go:42] GET {self.path}: (0.1ms) 200 {ua}")
        if bypass:
            etcd_call("/fake/watch?delta=1")
        try:
            while True:  # until the client closes it (readable at its end of stream)
                ready, _, _ = select.select([self.connection], [], [], 0.5)
                if ready and not self.connection.recv(1):
                    break
        except OSError:
            pass
        finally:
            if bypass:
                etcd_call("/fake/watch?delta=-1")
    def _node(self, name):
        beat = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(nodes.get(name, time.time())))
        return {"metadata": {"name": name}, "status": {"conditions": [
            {"type": "Ready", "status": "True", "lastHeartbeatTime": beat}]}}
    def do_PATCH(self):
        if not self._authorized():
            return
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        name = self.path.split("/")[4]
        with lock:
            nodes[name] = time.time()
            patches[0] += 1
        return self._send(200, b"{}")
    def _watch(self):
        name = re.search(r"metadata.name%3D([^&]+)", self.path).group(1)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        glog(f"wrap.go:42] GET {self.path}: (0.1ms) 200 {ua}")
        with lock:
            first = name not in expired
            expired.add(name)
        if first and os.environ.get("FAKE_WATCH_EXPIRE_ONCE") and "resourceVersion=" in self.path:
            gone = json.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410}})
            data = (gone + "\n").encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
            return
        sent = None
        try:
            while True:
                with lock:
                    beat = nodes.get(name)
                if beat is not None and beat != sent:  # one event per status write
                    sent = beat
                    event = json.dumps({"type": "MODIFIED", "object": self._node(name)}) + "\n"
                    data = event.encode()
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                time.sleep(0.05)
        except OSError:
            return

glog(f"fake-apiserver.go:3] serving on 127.0.0.1:{port}")
server = ThreadingHTTPServer(("127.0.0.1", port), H)
server.daemon_threads = True
if secure:
    import ssl
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(_flag("tls-cert-file"), _flag("tls-private-key-file"))
    server.socket = tls.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"""

_KUBEMARK = r"""
_record_pid()
_maybe_ignore_term()
name = _flag("name")
exit_file = os.environ.get("FAKE_KUBEMARK_EXIT_FILE")
if os.environ.get("FAKE_KUBEMARK_EXIT") or (exit_file and os.path.exists(exit_file)):
    glog(f"hollow_kubelet.go:1] {name}: failed to start (fake)", "F")
    sys.exit(255)
config = open(_flag("kubeconfig")).read()
server = re.search(r'server: "([^"]+)"', config).group(1)
ca = re.search(r'certificate-authority: "([^"]+)"', config)
bearer = re.search(r'token: "([^"]+)"', config)
tls = None
if ca:
    import ssl
    tls = ssl.create_default_context(cafile=ca.group(1))
period = float(os.environ.get("HOLLOW_NODE_STATUS_PERIOD", "10s").rstrip("s"))
root = os.environ.get("TMPDIR", "/tmp")
open(os.path.join(root, "dockershim.sock"), "w").close()
glog(f"hollow_kubelet.go:2] {name} harness={HARNESS} root={root} period={period}")
time.sleep(float(os.environ.get("FAKE_KUBEMARK_DELAY", "0")))
while True:
    url = f"{server}/api/v1/nodes/{name}/status"
    request = urllib.request.Request(url, data=b"{}", method="PATCH")
    if bearer:
        request.add_header("Authorization", f"Bearer {bearer.group(1)}")
    try:
        urllib.request.urlopen(request, timeout=5, context=tls).read()
    except OSError as exc:
        glog(f"kubelet_node_status.go:1] {name}: {exc}", "E")
    time.sleep(period)
"""


# kube-controller-manager / kube-scheduler: /healthz on --secure-port over HTTPS with a
# certificate it makes at start (as the real ones do without --tls-cert-file), after
# checking that its kubeconfig exists; FAKE_COMPONENT_EXIT=<name> makes that one exit.
_COMPONENT = r"""
import datetime, ssl, tempfile
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
_record_pid()
_maybe_ignore_term()
me = os.path.basename(sys.argv[0])
if os.environ.get("FAKE_COMPONENT_EXIT") == me:
    glog(f"server.go:1] {me}: fake failure", "E")
    sys.exit(1)
if not os.path.exists(_flag("kubeconfig", "/nonexistent")):
    glog("server.go:1] invalid configuration: no kubeconfig", "E")
    sys.exit(1)
key = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost@fake")])
now = datetime.datetime.now(datetime.timezone.utc)
cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(1)
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
d = tempfile.mkdtemp()
with open(os.path.join(d, "c.pem"), "wb") as f:
    f.write(cert.public_bytes(serialization.Encoding.PEM))
    f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"ok" if self.path == "/healthz" else b"not found"
        self.send_response(200 if self.path == "/healthz" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer((_flag("bind-address"), int(_flag("secure-port"))), H)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(os.path.join(d, "c.pem"))
server.socket = tls.wrap_socket(server.socket, server_side=True)
glog(f"serving.go:1] {me} serving securely on {_flag('bind-address')}:{_flag('secure-port')}")
server.serve_forever()
"""


@dataclass(frozen=True)
class FakeKube:
    """Where the fake programs are, and the environment they need."""

    bin: Path
    pids: Path  # every fake daemon's pid, one a line

    @property
    def go(self) -> Path:
        return self.bin / "go"

    @property
    def etcd(self) -> Path:
        return self.bin / "etcd"

    def env(self) -> dict[str, str]:
        return {"FAKE_TEMPLATES": str(self.bin / "templates"), "FAKE_PIDS": str(self.pids)}


def install(directory: Path) -> FakeKube:
    """Write the fakes into `directory`; set `env()` in the test's environment."""
    templates = directory / "templates"
    templates.mkdir(parents=True, exist_ok=True)
    (templates / "apiserver.py").write_text(_COMMON + _APISERVER)
    (templates / "kubemark.py").write_text(_COMMON + _KUBEMARK)
    (templates / "component.py").write_text(_COMMON + _COMPONENT)
    (templates / "generator.py").write_text(_COMMON + _GENERATOR)
    for name, body in (("go", _GO), ("etcd", _COMMON + _ETCD)):
        path = directory / name
        path.write_text(f"#!{sys.executable}\n{body}")
        path.chmod(0o755)
    return FakeKube(directory, directory / "pids")
