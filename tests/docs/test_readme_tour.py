"""README's tour runs as written after `make demo` (issue 29: `bisector run ... --good 1444d25`
in the checkout said `unknown revision`; nothing said it needs a kubernetes checkout).

The commands are read from README.md's tour block, so the test follows the README: each
runs from a directory laid out as the checkout (bisector/, scripts/, configs/), in order,
after what the Makefile's `demo` target runs. A command passes when it exits 0 (`doctor`
of a backend whose tools this machine lacks: 1, its "problems, each printed") and prints
no traceback.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bisector.exitcodes import DoctorExit

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def tour_commands(readme: str) -> list[list[str]]:
    """The argv of each command of the tour's sh block: continuations joined, comments cut."""
    section = readme[readme.index("## A tour") :]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "the tour has a ```sh block"
    text = block[1].replace("\\\n", " ")
    return [argv for line in text.splitlines() if (argv := shlex.split(line, comments=True))]


def make_target(name: str) -> list[str]:
    """The recipe of a Makefile target with one command, e.g. demo: `$(BIN)/bisector demo`."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(rf"^{name}:.*\n\t(.+)$", makefile, re.M)
    assert recipe is not None, f"Makefile has a {name} target"
    return shlex.split(recipe[1].replace("$(BIN)/", ""))


def _argv(argv: list[str]) -> list[str]:
    if argv[0] == "bisector":
        return [sys.executable, "-m", "bisector", *argv[1:]]
    if argv[0].startswith("scripts/"):
        return [sys.executable, *argv]
    raise AssertionError(f"the tour runs {argv[0]!r}: teach this test how, or drop it")


def test_tour_is_read_from_the_readme() -> None:
    commands = tour_commands((ROOT / "README.md").read_text())
    assert commands[0] == ["make", "demo"]
    assert make_target("demo") == ["bisector", "demo"]
    runs = [c for c in commands if c[:2] == ["bisector", "run"]]
    assert runs and all("--repo" in c for c in runs)  # never the checkout's own history


def test_every_tour_command_runs_as_written(tmp_path: Path) -> None:
    for name in ("bisector", "scripts", "configs"):
        (tmp_path / name).symlink_to(ROOT / name)
    commands = tour_commands((ROOT / "README.md").read_text())
    assert commands[0] == ["make", "demo"]
    outputs, plans = [], []
    for argv in [make_target("demo"), *commands[1:]]:
        if argv[0] == "scripts/screenshot_report.py" and shutil.which("chromium") is None:
            continue  # the README says it needs chromium
        result = subprocess.run(
            _argv(argv), cwd=tmp_path, capture_output=True, text=True, check=False, timeout=600
        )
        said = f"{shlex.join(argv)} -> {result.returncode}\n{result.stdout}\n{result.stderr}"
        allowed = {0, DoctorExit.PROBLEMS} if argv[:2] == ["bisector", "doctor"] else {0}
        assert result.returncode in allowed, said
        assert "Traceback" not in result.stderr, said
        outputs.append(result.stdout + result.stderr)
        plans += [result.stdout] if "--dry-run" in argv else []
    demo = outputs[0]
    assert "this is the commit the demo planted" in demo
    # An evaluation's line says its duration before the reason ("... after 40s of 2m00s in
    # 0.62s" read as one clause, issue 29).
    measured = [
        ln for ln in demo.splitlines() if ln.startswith("bisector: ") and "stopped early" in ln
    ]
    assert measured and all(re.match(r"bisector: [0-9a-f]{12} (good|bad): .+, in \S+ \[\w+\]; ",
                                     line) for line in measured), measured  # fmt: skip
    # The tour's dry run plans the demo's own run: its run directory, and its time.
    assert len(plans) == 1
    plan = plans[0]
    assert "estimated wall time: unknown" not in plan
    assert re.search(r"^estimated wall time: \S+$", plan, re.M), plan
    assert re.search(r"^run directory: .*bisector-demo/run$", plan, re.M), plan
