"""A short `bisector run` whose phases take visible time, for watching the progress line.

The local backend (tests/helpers/local_backend.py) with sleeping build, launch and
teardown commands, a warmup of a few seconds watched by early verdicts (`peek` writes
the log so far with the collect script: a bad commit passes the threshold at the first
look), on a repository of `values` (tests/helpers/repo.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.helpers.local_backend import bisector_argv, quote, write_local_config
from tests.helpers.repo import build_repo


@dataclass(frozen=True)
class LiveRun:
    argv: list[str]
    run_dir: Path


def sleeping_run(
    directory: Path,
    values: list[int],
    *,
    warmup: str = "4s",
    check_every: str | None = "1s",
    step_s: float = 1.0,
) -> LiveRun:
    """`bisector run` argv (threshold 5) over a fresh repository of `values`."""
    built = build_repo(directory / "repo", values)
    driver = write_local_config(directory / "cfg")
    for step in ("build", "launch", "teardown"):
        script = driver.tools / f"{step}.sh"
        script.write_text(script.read_text() + f"sleep {step_s:g}\n")
    text = driver.config.read_text().replace('warmup = "0s"', f'warmup = "{warmup}"')
    if check_every is not None:
        text = text.replace("[run]\n", f'[run]\ncheck_every = "{check_every}"\n', 1)
        # [backends.local] is the file's last table: the peek command joins it.
        peek = f"bash {quote(str(driver.tools / 'collect.sh'))}"
        text += f'peek = "{peek}"\n'
    driver.config.write_text(text)
    run_dir = directory / "run"
    argv = bisector_argv(
        "run",
        "--repo",
        str(built.path),
        "--good",
        built.mainline[0],
        "--bad",
        built.mainline[-1],
        "--config",
        str(driver.config),
        "--threshold",
        "5",
        "--run-dir",
        str(run_dir),
    )
    return LiveRun(argv, run_dir)
