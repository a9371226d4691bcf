"""A `local` backend with a `peek` command whose log grows look by look (early verdicts).

For the early verdict fault tests, through `bisector run` itself. Cluster time is the
number of looks, not the wall clock, so the tests do not depend on load: the k-th
`peek` of an evaluation writes the log of the first k "minutes" of the run (minute k
stamped T0 + 60 k, a 2017 clock), and `collect` writes the log of as many minutes as
were looked at (the warmup ended there), or of all `MINUTES` when nobody looked (a
warmup run whole: the endpoints' or the confirmation's). A commit's `value` shapes
its log: n < 100 is n/10 conflicts a minute (good), BAD (400) 40 a minute (past the
threshold, 100, at minute 3), LATE (300) 2 a minute for 7 minutes then 150.

Faults, as in tests/helpers/faults.py (a file `tools/faults/<name>` listing `all`, a
commit hash, `call:N` or `calls:A-B` of the step; what struck goes to `injected.txt`):

    peek:     peek-stale     the peek returns the previous evaluation's final log
              peek-garbage   random bytes
              peek-fail      exits 1
              peek-hang      sleeps a minute (to interrupt it)
    collect:  hang-collect   sleeps a minute
              restart        the apiserver restarted after the last look: the log
                             holds only the minute since (the old container's lines
                             are gone)
              short          a log of one minute fewer than the looks said
              stale          the previous evaluation's final log
    launch:   hang-launch    sleeps a minute; flaky: exits 1 (a launch to retry)
    build:    hang-build     sleeps a minute
    teardown: hang-teardown  sleeps a minute, then tears down

The other helpers (markers of clusters up, pid files of running steps, events) are the
fault helper's: `FaultDriver` reads them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.helpers.faults import FaultDriver
from tests.helpers.local_backend import quote, toml

BAD, LATE = 400, 300
MINUTES = 10
THRESHOLD = 100.0

_SHAPED = r"""
import json, os, random, sys, time
from pathlib import Path

T = Path(sys.argv[1])
STEP = sys.argv[2]
COMMIT = os.environ["BISECTOR_COMMIT"]
LOG = Path(os.environ.get("BISECTOR_LOG", "/dev/null"))
T0 = 1496382660.0
MINUTES = __MINUTES__
CALLS = {"build": "built", "launch": "launches", "peek": "peeks", "collect": "collected",
         "teardown": "teardowns"}


def append(name, line):
    with open(T / name, "a") as f:
        f.write(line + "\n")


def count(name):
    path = T / name
    return len(path.read_text().split("\n")) - 1 if path.exists() else 0


def withdrawn():
    journal = Path(os.environ["BISECTOR_RUN_DIR"]) / "journal.jsonl"
    return journal.exists() and '"early_good_withdrawn"' in journal.read_text()


def struck(name, call):
    path = T / "faults" / name
    if not path.exists():
        return False
    for sel in path.read_text().split():
        if sel == "withdrawn" and withdrawn():
            return True
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


def line(when, status):
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(when))
    return (f"I{stamp}.000001       7 wrap.go:42] PATCH /api/v1/nodes/hollow-node-1/status: "
            f"(3.1ms) {status} [[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.0.0.5:3]\n")


def per_minute(value, minute):
    if value == __LATE__:
        return 2 if minute <= 7 else 150
    return value // 10


def text(value, first, last):
    # The launch's line: on a 2017 clock the log shows it is this launch's by naming it.
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(T0 + 60 * (first - 1)))
    launch = os.environ.get("BISECTOR_LAUNCH_ID", "")
    out = [f"I{stamp}.000000       7 server.go:105] bisector-launch-id={launch}\n"]
    out += [line(T0 + 60 * (first - 1), 200)]
    for k in range(first, last + 1):
        out += [line(T0 + 60 * k, 409)] * per_minute(value, k) + [line(T0 + 60 * k, 200)]
    return "".join(out)


def value():
    return int(Path("value").read_text())


def eval_dir():
    return LOG.parent.parent  # <eval>/peek/<log> and <eval>/logs/<log> alike


def previous_final():
    path = T / "last-final.log"
    return path.read_text() if path.exists() else text(value(), 1, MINUTES)


def build():
    if struck("hang-build", CALL):
        hang(60)
    if Path("BROKEN").exists():
        sys.exit(1)


def launch():
    (T / "up" / COMMIT).write_text("{}")
    if struck("hang-launch", CALL):
        hang(60)
    if struck("flaky", CALL):
        inject("flaky")
        print("cluster did not come up", file=sys.stderr)
        sys.exit(1)


def peek():
    looks = eval_dir() / "looks"
    k = int(looks.read_text()) + 1 if looks.exists() else 1
    looks.write_text(str(k))
    if struck("peek-hang", CALL):
        hang(60)
    if struck("peek-fail", CALL):
        inject("peek-fail")
        sys.exit(1)
    if struck("peek-stale", CALL):
        inject("peek-stale")
        LOG.write_text(previous_final())
    elif struck("peek-garbage", CALL):
        inject("peek-garbage")
        LOG.write_bytes(random.Random(CALL).randbytes(4096))
    else:
        LOG.write_text(text(value(), 1, min(k, MINUTES)))


def collect():
    looks = eval_dir() / "looks"
    k = min(int(looks.read_text()), MINUTES) if looks.exists() else MINUTES
    if struck("hang-collect", CALL):
        hang(60)
    v = value()
    if struck("restart", CALL):
        inject("restart")
        LOG.write_text(text(v, k, k))
    elif struck("short", CALL):
        inject("short")
        LOG.write_text(text(v, 1, max(1, k - 2)))
    elif struck("stale", CALL):
        inject("stale")
        LOG.write_text(previous_final())
    else:
        LOG.write_text(text(v, 1, k))
    (T / "last-final.log").write_text(LOG.read_text())


def teardown():
    if struck("hang-teardown", CALL):
        hang(60)
    (T / "up" / COMMIT).unlink(missing_ok=True)


pid_file = T / "pids" / f"{STEP}-{os.getpid()}"
pid_file.write_text(COMMIT + "\n")
append(CALLS[STEP] + ".txt", COMMIT)
CALL = count(CALLS[STEP] + ".txt")
append("events.txt", f"start {STEP} {COMMIT}")
{"build": build, "launch": launch, "peek": peek, "collect": collect, "teardown": teardown}[STEP]()
append("events.txt", f"end {STEP} {COMMIT}")
pid_file.unlink()
"""


def write_shaped_config(
    directory: Path,
    *,
    run: dict[str, object] | None = None,
    warmup_s: float = 1.0,
    timeout: str = "60s",
) -> FaultDriver:
    """`tools/shaped.py` plus `bisector.toml`: a `MINUTES`-look warmup of `warmup_s`."""
    tools = directory / "tools"
    for sub in ("faults", "up", "pids", "daemons"):
        (tools / sub).mkdir(parents=True, exist_ok=True)
    script = tools / "shaped.py"
    script.write_text(_SHAPED.replace("__MINUTES__", str(MINUTES)).replace("__LATE__", str(LATE)))
    settings: dict[str, object] = {
        "backend": "local",
        "metric": "conflicts",
        "warmup": f"{warmup_s:g}s",
        "check_every": f"{warmup_s / MINUTES:g}s",
        "early_good": True,
        "threshold": THRESHOLD,
        "launch_attempts": 3,
        "retry_wait": "0s",
        **(run or {}),
    }
    lines = ["[run]", *(f"{k} = {toml(v)}" for k, v in settings.items()), "", "[backends.local]"]
    python = quote(sys.executable)
    for step in ("build", "launch", "peek", "collect", "teardown"):
        command = f"{python} -I -S {quote(str(script))} {quote(str(tools))} {step}"
        lines.append(f"{step} = {toml(command)}")
    lines.append(f"timeout = {toml(timeout)}")
    config = directory / "bisector.toml"
    config.write_text("\n".join(lines) + "\n")
    return FaultDriver(config, tools)
