"""What grew between the parent's profiles and the culprit's: Go's own `go tool pprof
-diff_base`, read into rows.

The profiles are any `*.pprof` files under an evaluation's directory (the procs backend
writes `profiles/cpu.pprof` and `profiles/heap.pprof` for the culprit's and its
parent's confirmation runs; a local or gce collect step may leave its own), paired by
their path under the directory. The Go that diffs them is the one the apiserver was
built with (`profiles/go.txt`, written by the procs backend), else `go` on the PATH.
`-top -filefunctions` prints one row per function with its file
(go1.19.8 and go1.23.9 print the same columns: flat flat% sum% cum cum% name file,
checked on their real output, tests/data/pprof); a heap profile is read twice, as the
memory in use at the end and as all that was allocated.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bisector import proc
from bisector.report.model import ProfileDiff, ProfileRow

GO_FILE = "go.txt"
TOP_ROWS = 12  # the functions that grew most, per profile
CULPRIT_ROWS = 5  # and the culprit's own files' functions that grew, past those
PPROF_TIMEOUT_S = 300.0
_ROW = re.compile(
    r"^\s*(?P<flat>-?[\d.]+[a-zA-Zµ]*)\s+(?P<flat_pct>-?[\d.]+)%\s+-?[\d.]+%\s+"
    r"(?P<cum>-?[\d.]+[a-zA-Zµ]*)\s+(?P<cum_pct>-?[\d.]+)%\s+(?P<name>\S+)"
    r"(?:\s+(?P<file>[^\s(][^\s]*))?(?:\s+\(inline\))?\s*$"
)
_UNITS = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0,
    "B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "": 1.0,
}  # fmt: skip
# How a heap profile is read: (what it is called, pprof's sample index).
HEAP_VIEWS = (("heap in use", "inuse_space"), ("heap allocated", "alloc_space"))


def amount(text: str) -> float:
    """`1.20s`, `-70ms`, `314.02MB`, `0`: in seconds or bytes (or a count)."""
    match = re.fullmatch(r"(-?[\d.]+)([a-zA-Zµ]*)", text)
    if match is None:
        return 0.0
    return float(match.group(1)) * _UNITS.get(match.group(2), 1.0)


@dataclass(frozen=True)
class Pair:
    """The same profile of the culprit and of its parent."""

    name: str  # its path under the evaluation directory
    culprit: Path
    parent: Path


def profiles_of(eval_dir: Path) -> dict[str, Path]:
    """The `*.pprof` files under an evaluation's directory, by their path under it."""
    if not eval_dir.is_dir():
        return {}
    return {str(p.relative_to(eval_dir)): p for p in sorted(eval_dir.rglob("*.pprof"))}


def pairs(culprit_dir: Path, parent_dir: Path) -> list[Pair]:
    mine, theirs = profiles_of(culprit_dir), profiles_of(parent_dir)
    return [Pair(name, mine[name], theirs[name]) for name in mine if name in theirs]


def go_for(eval_dir: Path) -> str | None:
    """The Go that built the evaluation's apiserver (procs writes it), else `go` on PATH."""
    for said in eval_dir.rglob(GO_FILE):
        go = said.read_text(encoding="utf-8").strip()
        if go and (Path(go).is_file() or shutil.which(go)):
            return go
    return shutil.which("go")


def is_heap(name: str) -> bool:
    return "heap" in Path(name).name.lower()


def diff_command(go: str, pair: Pair, sample_index: str | None) -> list[str]:
    index = [f"-sample_index={sample_index}"] if sample_index else []
    # -symbolize=none: the profiles an apiserver serves carry their function names and
    # files already; nothing is looked up (no binary, no network).
    return [
        go, "tool", "pprof", "-top", "-filefunctions", "-nodecount=0", "-nodefraction=0",
        "-symbolize=none",
        *index, f"-diff_base={pair.parent}", str(pair.culprit),
    ]  # fmt: skip


def diff_profiles(
    culprit_dir: Path, parent_dir: Path, changed: Sequence[str], out_dir: Path
) -> list[ProfileDiff]:
    """Every pair of profiles diffed: the rows that grew most, those in `changed` (the
    culprit's files) marked; the full `-top` text is kept in `out_dir`."""
    found = pairs(culprit_dir, parent_dir)
    if not found:
        return []
    go = go_for(culprit_dir)
    out: list[ProfileDiff] = []
    for pair in found:
        views: Sequence[tuple[str, str | None]] = (
            HEAP_VIEWS if is_heap(pair.name) else (("cpu", None),)
        )
        out += [_diff(go, pair, view, changed, out_dir) for view in views]
    return out


def _diff(
    go: str | None,
    pair: Pair,
    view: tuple[str, str | None],
    changed: Sequence[str],
    out_dir: Path,
) -> ProfileDiff:
    kind, index = view
    base = ProfileDiff(kind, str(pair.culprit), str(pair.parent), "", go or "", [], "")
    if go is None:
        return replace(base, error="no Go to diff the profiles with (`go` is not on the PATH)")
    cmd = diff_command(go, pair, index)
    try:
        done = proc.run(cmd, timeout=PPROF_TIMEOUT_S)
    except proc.CommandError as exc:
        return replace(base, command=proc.short_command(cmd), error=f"{exc.why}: {exc}")
    out_dir.mkdir(parents=True, exist_ok=True)
    saved = out_dir / f"{Path(pair.name).stem}-{kind.replace(' ', '-')}-diff.txt"
    saved.write_text(done.stdout, encoding="utf-8")
    rows = grown(parse_top(done.stdout, changed))
    total = next((line.strip() for line in done.stdout.splitlines() if "total" in line), "")
    return replace(base, command=" ".join(cmd), rows=rows, total=total, text=str(saved))


def parse_top(text: str, changed: Sequence[str] = ()) -> list[ProfileRow]:
    """The rows of `go tool pprof -top -filefunctions` output, in its order."""
    rows = []
    for line in text.splitlines():
        match = _ROW.match(line)
        if match is None or match["name"] in ("flat",):
            continue
        file = match["file"] or ""
        rows.append(
            ProfileRow(
                flat=match["flat"],
                flat_value=amount(match["flat"]),
                cum=match["cum"],
                cum_value=amount(match["cum"]),
                function=match["name"],
                file=file,
                in_culprit=bool(file) and in_files(file, changed),
            )
        )
    return rows


def grown(rows: Sequence[ProfileRow]) -> list[ProfileRow]:
    """The functions whose own time (or memory) grew most, then the culprit's files'
    functions that grew most counting their callees, not among those."""
    up = sorted((r for r in rows if r.flat_value > 0), key=lambda r: -r.flat_value)[:TOP_ROWS]
    shown = {r.function for r in up}
    mine = sorted(
        (r for r in rows if r.in_culprit and r.cum_value > 0 and r.function not in shown),
        key=lambda r: -r.cum_value,
    )[:CULPRIT_ROWS]
    return [*up, *mine]


def in_files(profile_file: str, changed: Sequence[str]) -> bool:
    """Whether a profile's source file is one of `changed` (repository paths).

    A profile names files as the build saw them: a GOPATH path (.../src/k8s.io/
    kubernetes/pkg/...), a vendored staging package (.../vendor/k8s.io/apiserver/...,
    a link to staging/src/k8s.io/apiserver), or a module checkout's absolute path.
    Inside a vendor directory only the import path after it counts, so a vendored
    library's pkg/util/x.go is never the tree's own pkg/util/x.go.
    """
    vendored = "/vendor/" in profile_file
    imported = profile_file.rsplit("/vendor/", 1)[-1]
    for path in changed:
        bare = path.removeprefix("vendor/").removeprefix("staging/src/")
        if vendored:
            if imported == bare:
                return True
        elif profile_file == path or profile_file.endswith(("/" + path, "/" + bare)):
            return True
    return False
