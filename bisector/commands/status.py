"""`bisector status`: progress of the runs of a repository (or of one run directory)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer

from bisector.gitrepo import GitRepo
from bisector.search.journal import read_lines


def describe(run_dir: Path) -> list[str]:
    records = list(read_lines(run_dir / "journal.jsonl"))
    start = next((r for r in records if r.get("type") == "start"), {})
    verdicts = Counter(r["verdict"] for r in records if r.get("type") == "verdict")
    measured = sum(r.get("type") == "measurement" for r in records)
    last = records[-1]["type"] if records else "nothing yet"
    state = {"done": "finished", "interrupted": "interrupted"}.get(last, "running or killed")
    threshold = next((r for r in reversed(records) if r.get("type") == "threshold"), None)
    lines = [
        f"{run_dir}",
        f"  range {str(start.get('good', '?'))[:12]}..{str(start.get('bad', '?'))[:12]}: {state}",
        f"  measurements: {measured}; verdicts: "
        + (", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())) or "none"),
    ]
    if threshold:
        lines.append(f"  threshold {threshold['value']:g} ({threshold['how']})")
    done = next((r for r in reversed(records) if r.get("type") == "done"), None)
    if done:
        lines.append(f"  culprit: {done.get('culprit') or 'none (inconclusive)'}")
    if start.get("command"):
        lines.append(f"  command: {start['command']}")
    return lines


def status(repo: Path, run_dir: Path | None) -> int:
    if run_dir is not None:
        dirs = [run_dir]
    else:
        runs = GitRepo(repo).common_dir / "bisector" / "runs"
        dirs = sorted(runs.iterdir(), key=lambda p: p.stat().st_mtime) if runs.is_dir() else []
    if not dirs:
        typer.echo("no bisector runs in this repository")
        return 0
    for directory in dirs:
        for line in describe(directory):
            typer.echo(line)
    return 0
