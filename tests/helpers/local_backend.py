"""A `local` backend driver for repositories made by `build_repo`.

`write_local_config` writes scripts and a config whose commands read the
candidate's `value` file: build fails where `BROKEN` exists; collect writes
`value` node PATCH 409 lines plus a few 200s (so a good commit still has data),
after the line naming the launch (LAUNCH_LINE).
Every step appends the commit to a file under `tools/` so tests can count calls.
Switches (files under `tools/` a test may create at any time):
    flaky         the first launch of each commit fails
    hang-<sha>    launch of that commit sleeps for a minute (to interrupt it)
    down-<sha>    every launch of that commit fails (the machine's failure, not the tree's)
    nodata        collect writes an empty log
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

CONFLICT = (
    "I0602 05:51:10.000001       7 wrap.go:42] PATCH /api/v1/nodes/hollow-node-1/status: "
    "(3.1ms) 409 [[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.240.0.5:34862]"
)
WRITE = (
    "I0602 05:51:11.000002       7 wrap.go:42] PATCH /api/v1/nodes/hollow-node-2/status: "
    "(2.0ms) 200 [[kubelet/v1.7.0 (linux/amd64) kubernetes/7043372] 10.240.0.6:34863]"
)

# The line a launch writes into its apiserver's log to show the log is its own (the
# helpers' logs are on a 2017 clock, which cannot: bisector.measure.provenance.WindowRule).
# Unset under a bisector from before launch ids (scripts/bench_noise_cli.py before:REV).
LAUNCH_LINE = (
    "I0602 05:51:09.000000       7 server.go:105] bisector-launch-id=${BISECTOR_LAUNCH_ID:-}"
)

_BUILD = 'echo "$BISECTOR_COMMIT" >> "$T/built.txt"; test ! -e BROKEN\n'
_LAUNCH = """echo "$BISECTOR_COMMIT" >> "$T/launches.txt"
if [ -e "$T/hang-$BISECTOR_COMMIT" ]; then echo started > "$T/hanging"; sleep 60; fi
if [ -e "$T/down-$BISECTOR_COMMIT" ]; then echo "cluster did not come up" >&2; exit 1; fi
if [ -e "$T/flaky" ] && ! grep -qx "$BISECTOR_COMMIT" "$T/launched-once.txt" 2>/dev/null; then
  echo "$BISECTOR_COMMIT" >> "$T/launched-once.txt"; echo "cluster did not come up" >&2; exit 1
fi
"""
_COLLECT = """echo "$BISECTOR_COMMIT" >> "$T/collected.txt"
if [ -e "$T/nodata" ]; then : > "$BISECTOR_LOG"; exit 0; fi
n=$(( $(cat value) + $(cat value2 2>/dev/null || echo 0) ))
{{ echo "{launch}"; yes '{conflict}' | head -n "$n"; yes '{write}' | head -n 3; }} > "$BISECTOR_LOG"
"""
_TEARDOWN = 'echo "$BISECTOR_COMMIT" >> "$T/teardowns.txt"\n'


@dataclass(frozen=True)
class LocalDriver:
    config: Path
    tools: Path

    def calls(self, step: str) -> list[str]:
        """Commits `step` (built, launches, collected, teardowns) ran for, in order."""
        path = self.tools / f"{step}.txt"
        return path.read_text().split() if path.exists() else []

    def switch(self, name: str) -> None:
        (self.tools / name).write_text("on\n")


def write_local_config(
    directory: Path, *, run: dict[str, object] | None = None, teardown: bool = True
) -> LocalDriver:
    """Scripts plus `bisector.toml` for the local backend, in `directory`."""
    tools = directory / "tools"
    tools.mkdir(parents=True, exist_ok=True)
    scripts = {
        "build": _BUILD,
        "launch": _LAUNCH,
        "collect": _COLLECT.format(conflict=CONFLICT, write=WRITE, launch=LAUNCH_LINE),
        "teardown": _TEARDOWN,
    }
    lines = ["[run]", 'backend = "local"', 'metric = "conflicts"', 'warmup = "0s"']
    lines += [f"{key} = {toml(value)}" for key, value in (run or {}).items()]
    lines += ["", "[backends.local]"]
    for step, body in scripts.items():
        if step == "teardown" and not teardown:
            continue
        script = tools / f"{step}.sh"
        script.write_text(f"set -eu\nT={quote(str(tools))}\n{body}")
        lines.append(f"{step} = {toml(f'bash {quote(str(script))}')}")
    config = directory / "bisector.toml"
    config.write_text("\n".join(lines) + "\n")
    return LocalDriver(config, tools)


def quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    raise TypeError(value)


def bisector_argv(*args: str) -> list[str]:
    """argv running the CLI in a subprocess (the environment carries PYTHONPATH)."""
    return [sys.executable, "-m", "bisector", *args]
