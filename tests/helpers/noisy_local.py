"""A `local` backend whose runs flip their verdict with a fixed probability.

For repositories made by `build_repo` with no PRs: the file `serial` is a commit's
mainline position and `value` what a clean run of it scores. `collect` writes a log
with that many node PATCH 409 lines, except that a run flips to the other side
(good <-> bad) when a hash of (seed, position, nth run of that position) falls
under the flip probability. The same seed meets the same noise in every process
and every version of bisector, so a trial can be replayed (before/after a change).
Every run appends `position nth flipped conflicts` to `tools/runs.txt`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.local_backend import CONFLICT, LAUNCH_LINE, WRITE

GOOD_VALUE, BAD_VALUE = 100, 1000
_SCALE = 2**32  # the hash's first 8 hex digits, read as a number below this

# sha256sum of "seed:position:nth" (no newline), first 8 hex digits: `flips` below
# computes the same number, so tests can pick a seed whose noise they know.
_COLLECT = """pos=$(cat serial)
n=$(( $(cat "$T/runs/$pos" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$T/runs/$pos"
h=$(printf '%s' "$SEED:$pos:$n" | sha256sum | cut -c1-8)
value=$(cat value); flipped=0
if [ $(( 16#$h )) -lt "$CUT" ]; then
  flipped=1
  if [ "$value" -ge {bad} ]; then value={good}; else value={bad}; fi
fi
echo "$pos $n $flipped $value" >> "$T/runs.txt"
{{ echo "{launch}"; yes '{conflict}' | head -n "$value"; yes '{write}' | head -n 3; }} \
  > "$BISECTOR_LOG"
"""


def flips(seed: int, position: int, nth: int, p: float) -> bool:
    """Whether the nth run (from 1) of the commit at `position` flips: as `collect` does."""
    digest = hashlib.sha256(f"{seed}:{position}:{nth}".encode()).hexdigest()
    return int(digest[:8], 16) < _cut(p)


def _cut(p: float) -> int:
    return round(p * _SCALE)


@dataclass(frozen=True)
class Run:
    position: int
    nth: int
    flipped: bool
    value: int


@dataclass(frozen=True)
class NoisyDriver:
    config: Path
    tools: Path

    def runs(self) -> list[Run]:
        """Every run collected, in order."""
        path = self.tools / "runs.txt"
        lines = path.read_text().splitlines() if path.exists() else []
        return [Run(int(a), int(b), c == "1", int(d)) for a, b, c, d in (x.split() for x in lines)]


def write_noisy_config(
    directory: Path, *, seed: int, p: float, search: dict[str, int] | None = None
) -> NoisyDriver:
    """Scripts plus `bisector.toml` (local backend, metric conflicts) in `directory`."""
    tools = directory / "tools"
    (tools / "runs").mkdir(parents=True, exist_ok=True)
    collect = _COLLECT.format(
        conflict=CONFLICT, write=WRITE, good=GOOD_VALUE, bad=BAD_VALUE, launch=LAUNCH_LINE
    )
    scripts = {"build": ":\n", "launch": ":\n", "collect": collect, "teardown": ":\n"}
    lines = ["[run]", 'backend = "local"', 'metric = "conflicts"', 'warmup = "0s"', ""]
    if search:
        lines += ["[search]", *(f"{key} = {value}" for key, value in search.items()), ""]
    lines.append("[backends.local]")
    for step, body in scripts.items():
        script = tools / f"{step}.sh"
        head = f"set -eu\nT='{tools}'\nSEED={seed}\nCUT={_cut(p)}\n"
        script.write_text(head + body)
        lines.append(f"{step} = \"bash '{script}'\"")
    config = directory / "bisector.toml"
    config.write_text("\n".join(lines) + "\n")
    return NoisyDriver(config, tools)
