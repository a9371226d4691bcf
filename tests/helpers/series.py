"""Per-run metric series shaped like a ClusterLoader2 job's, for change-point tests and benchmarks.

A CL2 API-call latency (e.g. PATCH nodes/status Perc99) of a scale job is tens of ms
with relative noise run to run: `cl2_series` draws a level of `base` that steps by the
given factors, times log-normal noise of deviation `sigma` (0.12: +-12 % per run), and
leaves `gaps` of the runs without data (builds that uploaded no artifacts), never the
run at or just before a step, so the planted index stays the first run at its level.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

SIGMA = 0.12


def cl2_series(
    rng: np.random.Generator,
    n: int,
    steps: Sequence[tuple[int, float]],
    *,
    base: float = 40.0,
    sigma: float = SIGMA,
    gaps: float = 0.05,
) -> list[float | None]:
    level = [base] * n
    for at, factor in steps:
        for i in range(at, n):
            level[i] *= factor
    noise = rng.lognormal(0.0, sigma, n)
    values: list[float | None] = [float(v * e) for v, e in zip(level, noise, strict=True)]
    keep = {i for at, _ in steps for i in (at - 1, at)}
    for i in range(n):
        if i not in keep and rng.random() < gaps:
            values[i] = None
    return values
