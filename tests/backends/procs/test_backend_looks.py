"""The looks a run asks of the procs backend (`[run] check_every`), judged when the
backend is built from the run's context (bisector/backends/procs/load_check.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bisector.backends.procs.backend import ProcsBackend
from bisector.bisection.layout import RunLayout
from bisector.bisection.start import backend_context
from bisector.config import load_config
from bisector.errors import ConfigError
from bisector.settings import RunSettings


def _run_settings(path: Path, run: dict[str, object], procs: dict[str, object]) -> RunSettings:
    lines = ["[run]", 'backend = "procs"', 'metric = "conflicts"']
    lines += [f"{k} = {json.dumps(v)}" for k, v in run.items()]
    lines += ["[backends.procs]", *(f"{k} = {json.dumps(v)}" for k, v in procs.items())]
    path.write_text("\n".join(lines) + "\n")
    return RunSettings.from_config(load_config(path), good="a", bad="b")


@pytest.mark.parametrize(
    ("run", "procs", "says"),
    [
        # A look each 1 ms at a 1 s status period: any early bad verdict before 1.25 s was
        # a skip ("the load cannot be judged"), each paid for with a cluster.
        (
            {"warmup": "20s", "check_every": "1ms"},
            {"node_status_period": "1s"},
            "shorter than one node status period (1s, 1.25s with its jitter)",
        ),
        # RV-less pod watches closed by the server every 10 s: a cycle is 11 s.
        (
            {"warmup": "1m", "check_every": "10s"},
            {"node_status_period": "2s", "watchers": 200, "watch_load": "pods-without-rv"},
            "shorter than one pod watch cycle (11s, 13.75s with its jitter)",
        ),
        (
            {"warmup": "1m", "check_every": "2m"},
            {},
            "is not shorter than the warmup (1m00s): no look would come",
        ),
    ],
)
def test_a_check_every_the_backend_cannot_judge_is_refused_before_anything_starts(
    tmp_path: Path, run: dict[str, object], procs: dict[str, object], says: str
) -> None:
    # The adversarial pass of 4 December 2026: these were accepted, and found out (if at
    # all) at each evaluation's collect, after a cluster ran. The run's settings reach the
    # backend through its context (bisector.bisection.start.backend_context).
    settings = _run_settings(tmp_path / "c.toml", run, procs)
    context = backend_context(settings, RunLayout(tmp_path / "run"))
    with pytest.raises(ConfigError) as caught:
        ProcsBackend(context)
    line = str(caught.value)
    assert line.startswith(f"{tmp_path / 'c.toml'}: key `run.check_every`"), line
    assert says in line and "\n" not in line, line


def test_the_shipped_looks_are_accepted(tmp_path: Path) -> None:
    config = load_config(Path(__file__).parents[3] / "configs" / "procs-2017.toml")
    settings = RunSettings.from_config(config, good="a", bad="b")
    context = backend_context(settings, RunLayout(tmp_path / "run"))
    assert context.check_every_s == 10.0
    ProcsBackend(context)  # 10 s looks at a 1 s status period in a 1-minute warmup
