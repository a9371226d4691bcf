"""Evaluations and wall time of `bisector run` vs plain `git bisect run`, side by side.

Same repository (N linear commits, no noise, culprit at a random position), same
cheap per-commit check. Plain git bisect run gets the threshold for free and does
no endpoint checks or confirmation; bisector measures both endpoints, calibrates,
bisects and confirms. Usage: PYTHONPATH=. python scripts/bench_run.py [N] [TRIALS]
"""

from __future__ import annotations

import io
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bisector.bisection.pipeline import run_bisection
from bisector.config import load_config
from bisector.settings import RunSettings
from bisector.ui.progress_lines import PlainProgress
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import build_repo


def plain_git_bisect_run(path: Path, good: str, bad: str, counter: Path) -> tuple[str, int]:
    script = f'echo x >> {counter}; test "$(cat value)" -lt 9'
    subprocess.run(["git", "bisect", "start", bad, good], cwd=path, check=True, capture_output=True)
    out = subprocess.run(
        ["git", "bisect", "run", "sh", "-c", script],
        cwd=path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    subprocess.run(["git", "bisect", "reset"], cwd=path, check=True, capture_output=True)
    culprit = next(
        line.split()[0] for line in out.splitlines() if "is the first bad commit" in line
    )
    return culprit, len(counter.read_text().splitlines())


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    trials = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    rng = random.Random(1)
    rows = []
    for trial in range(trials):
        at = rng.randrange(1, n + 1)
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            built = build_repo(root / "repo", [2] * at + [40] * (n + 1 - at))
            good, bad = built.mainline[0], built.mainline[-1]
            start = time.monotonic()
            git_culprit, git_evals = plain_git_bisect_run(built.path, good, bad, root / "count")
            git_s = time.monotonic() - start
            driver = write_local_config(root / "cfg", teardown=False)
            settings = RunSettings.from_config(
                load_config(driver.config), good=good, bad=bad, repo=built.path
            )
            start = time.monotonic()
            report = run_bisection(settings, progress=PlainProgress(io.StringIO()))
            ours_s = time.monotonic() - start
            assert report.culprit is not None
            ours = report.culprit.commit
            assert ours == git_culprit == built.mainline[at], (trial, at)
            rows.append((git_evals, len(report.evaluations), git_s, ours_s))
    bound = math.ceil(math.log2(n))
    print(f"N={n} linear commits, no noise, {trials} trials (culprit found by both every time)")
    print(f"{'':28}{'git bisect run':>16}{'bisector run':>14}{'ratio':>8}")
    for label, i in (("evaluations (median)", 0), ("evaluations (max)", 1)):
        pick = statistics.median if i == 0 else max
        a, b = pick(r[0] for r in rows), pick(r[1] for r in rows)
        print(f"{label:28}{a:>16}{b:>14}{b / a:>8.2f}")
    a, b = statistics.median(r[2] for r in rows), statistics.median(r[3] for r in rows)
    print(f"{'wall time s (median)':28}{a:>16.2f}{b:>14.2f}{b / a:>8.2f}")
    print(f"bound ceil(log2 N) + 2 endpoints + 2 confirmation = {bound + 4}")


if __name__ == "__main__":
    main()
