"""A fault-injecting `local` backend, for the fault suite (tests/faults/).

`write_fault_config` writes `tools/cluster.py` and a config whose four commands
(build, launch, collect, teardown) call it. It models a cluster as bisector sees
one from the outside:

- launch "creates a cluster": a marker file `tools/up/<commit>`; teardown removes
  it (and stops the daemon a daemonising launch started). Markers left at the end
  are leaked clusters.
- collect writes the apiserver log to $BISECTOR_LOG: glog lines stamped with the
  wall clock, spread over the last `SPAN_S` seconds (a 10-minute run: the tests
  keep `warmup` at 0 so they are fast; the window the log should cover comes from
  the endpoints' logs), with the candidate's `value` node-PATCH 409s plus a few 200s,
  after a line naming the launch that started its apiserver (launch keeps
  $BISECTOR_LAUNCH_ID as the slot's apiserver's): a log so backdated starts before
  its launch, and shows it is that launch's by naming it.
- every step appends to `tools/events.txt` ("start STEP COMMIT" / "end STEP COMMIT")
  and to `tools/<calls>.txt` (built, launches, collected, teardowns), and keeps a
  pid file `tools/pids/<step>-<pid>` while it runs (a step still alive after
  bisector is gone is an orphan).

A fault is a file `tools/faults/<name>` whose lines select where it strikes:
`all`, a full commit hash, `call:N` (the N-th call of the step, from 1) or
`calls:A-B`. Every fault that struck is appended to `tools/injected.txt`
("NAME COMMIT LOGPATH"). Faults (step: name):

    build:    hang-build       sleeps a minute (to signal or kill it meanwhile)
              nospace-build    the disk is full: "No space left on device", exit 1
    launch:   hang-launch      creates the cluster, then sleeps a minute
              flaky            creates (half) the cluster, then fails: exit 1
              daemon           leaves a background child holding stdout/stderr
    collect:  hang-collect     sleeps a minute
              crash            apiserver crashed 30 s into the run: the log ends then
              restart          apiserver restarted: the log holds its last 40 s,
                               its last line cut in the middle (`kubectl logs`
                               prints the current container only; the old one needs
                               `--previous`: hyperhq/kubernetes 7043372,
                               pkg/kubectl/cmd/logs.go:113)
              stale            the file left by the previous candidate (as it would
                               be after a 35-minute evaluation): its value, its time
              leftover         the previous candidate's file as it was left, seconds
                               ago (its apiserver never started: the path still holds
                               the last one's log)
              tree-speed       a workload run to its end: the log spans `value` / 40
                               of SPAN_S (a good tree, value 2, finishes 20x sooner)
              garbled          random bytes, no line of a log
              badtime          the 409 lines carry impossible timestamps (month 13)
              empty            an empty file
              missing          collect exits 0 without writing the log
    teardown: hang-teardown    sleeps a minute (longer than the `timeout` a test sets)
              slow-teardown    takes 1.5 s, then tears down (to signal it meanwhile)
              fail-teardown    prints an error and exits 1, the cluster stays up
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.local_backend import bisector_argv, quote, toml

__all__ = ["FaultDriver", "bisector_argv", "write_fault_config"]

SPAN_S = 600.0

_CLUSTER = r'''
import json, os, random, signal, subprocess, sys, time
from pathlib import Path

T = Path(sys.argv[1])
STEP = sys.argv[2]
COMMIT = os.environ["BISECTOR_COMMIT"]
SLOT = os.environ.get("BISECTOR_SLOT", "0")
LOG = os.environ.get("BISECTOR_LOG", "")
SPAN = __SPAN__
CALLS = {"build": "built", "launch": "launches", "collect": "collected", "teardown": "teardowns"}
CONFLICT = ("PATCH /api/v1/nodes/hollow-node-1/status: (3.1ms) 409 "
            "[[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.240.0.5:34862]")
WRITE = ("PATCH /api/v1/nodes/hollow-node-2/status: (2.0ms) 200 "
         "[[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.240.0.6:34863]")


def append(name, line):
    with open(T / name, "a") as f:
        f.write(line + "\n")


def count(name):
    path = T / name
    return len(path.read_text().split("\n")) - 1 if path.exists() else 0


def struck(name, call):
    path = T / "faults" / name
    if not path.exists():
        return False
    for sel in path.read_text().split():
        if sel in ("all", COMMIT) or sel == f"call:{call}":
            return True
        if sel.startswith("calls:"):
            low, high = sel[6:].split("-")
            if int(low) <= call <= int(high):
                return True
    return False


def inject(name):
    append("injected.txt", f"{name} {COMMIT} {LOG}")


def hang(seconds):
    (T / f"in-{STEP}").write_text(f"{os.getpid()}\n")
    time.sleep(seconds)


def stamp(t):
    tm = time.gmtime(t)
    return time.strftime("%m%d %H:%M:%S", tm) + f".{int(t % 1 * 1e6):06d}"


def glog(t, text):
    return f"I{stamp(t)}       7 wrap.go:42] {text}"


def log_lines(conflicts, start, end, launch_id=None):
    texts = [CONFLICT] * conflicts + [WRITE] * 3
    step = (end - start) / max(1, len(texts) - 1)
    lines = [glog(start + i * step, text) for i, text in enumerate(texts)]
    named = launch_id if launch_id is not None else apiserver_launch()
    return [glog(start, f"bisector-launch-id={named}")] + lines


def apiserver_launch():
    """The launch id of the apiserver running in this slot (launch writes it)."""
    path = T / f"apiserver-{SLOT}"
    return path.read_text().strip() if path.exists() else "none"


def value():
    second = Path("value2")  # a second regression's file (tests.helpers.repo, second=)
    extra = int(second.read_text()) if second.is_file() else 0
    return int(Path("value").read_text()) + extra


def write_log(lines, tail=""):
    Path(LOG).write_text("".join(line + "\n" for line in lines) + tail)


def orphans():
    """Step processes of an earlier (killed) run still alive while this one builds."""
    found = []
    for pid_file in (T / "pids").iterdir():
        pid = int(pid_file.name.rsplit("-", 1)[1])
        if pid != os.getpid() and alive(pid):
            found.append(pid_file.name)
    return found


def alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def build():
    for name in orphans():
        append("orphans-seen.txt", f"{COMMIT} {name}")
    if struck("hang-build", CALL):
        hang(60)
    if struck("nospace-build", CALL):
        inject("nospace-build")
        print("cp: error writing '_output/release-tars/kubernetes-server-linux-amd64.tar.gz': "
              "No space left on device", file=sys.stderr)
        sys.exit(1)
    if Path("BROKEN").exists():
        print("make: *** [quick-release] Error 2", file=sys.stderr)
        sys.exit(1)


def launch():
    marker = T / "up" / COMMIT
    marker.write_text(json.dumps({"slot": SLOT, "at": time.time()}))
    (T / f"apiserver-{SLOT}").write_text(os.environ.get("BISECTOR_LAUNCH_ID", "") + "\n")
    if struck("hang-launch", CALL):
        hang(60)
    if struck("flaky", CALL):
        inject("flaky")
        print("cluster did not come up: hollow nodes not ready after 5m", file=sys.stderr)
        sys.exit(1)
    if struck("daemon", CALL):
        inject("daemon")
        child = subprocess.Popen(["sleep", "120"])  # inherits our stdout and stderr
        (T / "daemons" / str(child.pid)).write_text(COMMIT + "\n")
        marker.write_text(json.dumps({"slot": SLOT, "at": time.time(), "daemon": child.pid}))
        print(f"apiserver started in the background (pid {child.pid})", flush=True)


def collect():
    if struck("hang-collect", CALL):
        hang(60)
    now = time.time()
    v = value()
    for fault in ("crash", "restart", "stale", "leftover", "garbled", "badtime", "empty",
                  "missing"):
        if struck(fault, CALL):
            inject(fault)
            break
    else:
        fault = None
    if fault == "missing":
        return
    if fault == "empty":
        Path(LOG).write_text("")
    elif fault == "garbled":
        Path(LOG).write_bytes(random.Random(COMMIT).randbytes(64 * 1024))
    elif fault == "crash":  # up for 30 s of the run: the 409s of those 30 s
        write_log(log_lines(int(v * 30 / SPAN), now - SPAN, now - SPAN + 30))
    elif fault == "restart":  # `kubectl logs` after a restart: the new container's 40 s
        write_log(log_lines(int(v * 40 / SPAN), now - 40, now), tail=glog(now, WRITE)[:37])
    elif fault == "stale":
        previous = json.loads((T / f"node-{SLOT}.json").read_text())
        end = now - 35 * 60
        write_log(log_lines(previous["value"], end - SPAN, end, previous["launch"]))
    elif fault == "leftover":
        Path(LOG).write_text((T / f"last-log-{SLOT}").read_text())
    elif fault == "badtime":
        good = log_lines(0, now - SPAN, now)
        bad = [f"I1399 99:99:99.999999       7 wrap.go:42] {CONFLICT}"] * v
        write_log([good[0], *bad, *good[1:]])
    elif struck("tree-speed", CALL):
        write_log(log_lines(v, now - SPAN * v / 40, now))
    else:
        write_log(log_lines(v, now - SPAN, now))
    (T / f"node-{SLOT}.json").write_text(json.dumps({"value": v, "launch": apiserver_launch()}))
    (T / f"last-log-{SLOT}").write_text(Path(LOG).read_text(errors="replace"))


def teardown():
    marker = T / "up" / COMMIT
    if struck("hang-teardown", CALL):
        inject("hang-teardown")
        hang(60)
    if struck("slow-teardown", CALL):
        inject("slow-teardown")
        hang(1.5)
    if struck("fail-teardown", CALL):
        inject("fail-teardown")
        print("ERROR: (gcloud.compute.instances.delete) Could not fetch resource", file=sys.stderr)
        sys.exit(1)
    if marker.exists():
        daemon = json.loads(marker.read_text()).get("daemon")
        if daemon:
            try:
                os.kill(daemon, signal.SIGKILL)
            except ProcessLookupError:
                pass
        marker.unlink()


pid_file = T / "pids" / f"{STEP}-{os.getpid()}"
pid_file.write_text(COMMIT + "\n")
append(CALLS[STEP] + ".txt", COMMIT)
CALL = count(CALLS[STEP] + ".txt")
append("events.txt", f"start {STEP} {COMMIT}")
{"build": build, "launch": launch, "collect": collect, "teardown": teardown}[STEP]()
append("events.txt", f"end {STEP} {COMMIT}")
pid_file.unlink()
'''


@dataclass(frozen=True)
class FaultDriver:
    config: Path
    tools: Path

    def inject(self, fault: str, *selectors: str) -> None:
        """Make `fault` strike where `selectors` say (default: everywhere)."""
        (self.tools / "faults" / fault).write_text("\n".join(selectors or ("all",)) + "\n")

    def clear(self, fault: str) -> None:
        (self.tools / "faults" / fault).unlink(missing_ok=True)

    def calls(self, step: str) -> list[str]:
        """Commits `step` (built, launches, collected, teardowns) ran for, in order."""
        path = self.tools / f"{step}.txt"
        return path.read_text().split() if path.exists() else []

    def events(self) -> list[tuple[str, str, str]]:
        """("start"|"end", step, commit) of every step, in order."""
        path = self.tools / "events.txt"
        lines = path.read_text().splitlines() if path.exists() else []
        return [(w[0], w[1], w[2]) for w in (line.split() for line in lines)]

    def injected(self) -> list[tuple[str, str, str]]:
        """(fault, commit, log path) of every fault that struck."""
        path = self.tools / "injected.txt"
        lines = path.read_text().splitlines() if path.exists() else []
        return [(w[0], w[1], w[2] if len(w) > 2 else "") for w in (ln.split() for ln in lines)]

    def up(self) -> list[str]:
        """Clusters launched and not torn down (leaked, once bisector has exited)."""
        return sorted(p.name for p in (self.tools / "up").iterdir())

    def live_steps(self) -> list[str]:
        """Step processes still running (`<step>-<pid>`)."""
        return sorted(p.name for p in (self.tools / "pids").iterdir() if _alive(_pid(p.name)))

    def live_daemons(self) -> list[int]:
        return [int(p.name) for p in (self.tools / "daemons").iterdir() if _alive(int(p.name))]

    def orphans_seen(self) -> list[str]:
        """Steps of an earlier run found alive while a build ran."""
        path = self.tools / "orphans-seen.txt"
        return path.read_text().splitlines() if path.exists() else []

    def entered(self, step: str) -> bool:
        """A hanging or slow `step` has started its wait."""
        return (self.tools / f"in-{step}").exists()

    def kill_leftovers(self) -> None:
        """Stop what the tests' own runs left running (their process groups, by id)."""
        pids = [_pid(p.name) for p in (self.tools / "pids").iterdir()]
        pids += [int(p.name) for p in (self.tools / "daemons").iterdir()]
        for pid in pids:
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)


def _pid(name: str) -> int:
    return int(name.rsplit("-", 1)[1])


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def write_fault_config(
    directory: Path, *, run: dict[str, object] | None = None, timeout: str = "60s"
) -> FaultDriver:
    """`tools/cluster.py` plus `bisector.toml` for the local backend, in `directory`."""
    tools = directory / "tools"
    for sub in ("faults", "up", "pids", "daemons"):
        (tools / sub).mkdir(parents=True, exist_ok=True)
    script = tools / "cluster.py"
    script.write_text(_CLUSTER.replace("__SPAN__", repr(SPAN_S)))
    settings: dict[str, object] = {
        "backend": "local",
        "metric": "conflicts",
        "warmup": "0s",
        "launch_attempts": 3,
        "retry_wait": "0s",
        **(run or {}),
    }
    lines = ["[run]", *(f"{k} = {toml(v)}" for k, v in settings.items()), "", "[backends.local]"]
    python = quote(sys.executable)
    for step in ("build", "launch", "collect", "teardown"):
        command = f"{python} -I -S {quote(str(script))} {quote(str(tools))} {step}"
        lines.append(f"{step} = {toml(command)}")
    lines.append(f"timeout = {toml(timeout)}")
    config = directory / "bisector.toml"
    config.write_text("\n".join(lines) + "\n")
    return FaultDriver(config, tools)


def journal(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "journal.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def measurements(run_dir: Path) -> list[dict[str, Any]]:
    return [r["measurement"] for r in journal(run_dir) if r["type"] == "measurement"]


def measured_twice(run_dir: Path) -> dict[tuple[str, str], int]:
    """(commit, phase) measured more than once: a resumed run repeating finished work."""
    per = Counter((m["commit"], m["phase"]) for m in measurements(run_dir))
    return {key: n for key, n in per.items() if n > 1}


def run_args(repo: Path, good: str, bad: str, driver: FaultDriver, run_dir: Path) -> list[str]:
    """argv of `bisector run` over good..bad with the fault backend and its own run dir."""
    return bisector_argv(
        "run", "--repo", str(repo), "--config", str(driver.config),
        "--good", good, "--bad", bad, "--run-dir", str(run_dir),
    )  # fmt: skip


def report(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "report.json").read_text())
    return data


def struck_measurements(driver: FaultDriver, run_dir: Path) -> list[dict[str, Any]]:
    """The journaled measurements of the evaluations a fault struck."""
    dirs = {str(Path(log).parent.parent) for _, _, log in driver.injected() if log}
    return [m for m in measurements(run_dir) if m["eval_dir"] in dirs]


def cached_ids(repo: Path) -> set[str]:
    """Ids of the measurements in the repository's cache (reused by later runs)."""
    path = repo / ".git" / "bisector" / "measurements.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    found = (json.loads(line) for line in lines if line.strip())
    return {r["measurement"]["id"] for r in found if isinstance(r.get("measurement"), dict)}


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what or predicate}")
