"""bisector/settings.py: each key declared once (its flag, its config key, its field), and
one road from the settings to a backend."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.core import TyperGroup

from bisector.cli import app
from bisector.config import Section
from bisector.errors import ConfigError
from bisector.settings import RUN_FLAGS, RunFlags, RunSettings

PACKAGE = Path(__file__).resolve().parents[1] / "bisector"


def _calls_of(name: str) -> list[str]:
    """`module:line` of every call of `name` in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = node.func if isinstance(node, ast.Call) else None
            if isinstance(called, ast.Name) and called.id == name:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{called.lineno}")
    return found


def test_every_backend_context_is_built_by_run_settings() -> None:
    # The run, its preflight, doctor, a nightly job's load and the gce rehearsal each
    # built their own, and doctor's had no warmup and no looks: a backend's check of
    # them passed there and failed in the run.
    calls = _calls_of("BackendContext")
    assert [c for c in calls if not c.startswith("bisector/settings.py:")] == []
    assert len(calls) == 1, calls  # RunSettings.backend_context


# A key's declaration changed in one place, before anything reads it: the launch attempts'
# default (the only flag declared as an int of 3) becomes 5.
_CHANGED_DECLARATION = """
import bisector.config as config

declared = config.setting


def setting(kind, default=config.REQUIRED, doc="", **options):
    if kind == "int" and default == 3 and options.get("flag") is not None:
        default = 5
    return declared(kind, default, doc, **options)


config.setting = setting

import bisector.commands.run as run_command
from bisector.config import Section, key_specs
from bisector.entry import main
from bisector.settings import RunSettings, RunTable

assert key_specs(RunTable)["launch_attempts"].default == 5, "the change missed the key"
flags = []
run_command.run = lambda settings, **_: flags.append(settings.launch_attempts) or 0
for given in ([], ["--launch-attempts", "2"]):
    try:
        main(["run", "--good", "a", "--bad", "b", *given])
    except SystemExit as exc:
        assert exc.code == 0, exc.code
config_file = RunSettings.from_config(Section(), good="a", bad="b").launch_attempts
print(RunSettings("a", "b").launch_attempts, config_file, *flags)
"""


def test_a_default_is_declared_once_for_the_field_the_file_and_the_flag() -> None:
    # launch_attempts' 3 was written in the [run] table's declaration, RunSettings' field
    # and MeasureSettings': a changed declaration left the field's default at 3.
    done = subprocess.run(
        [sys.executable, "-c", _CHANGED_DECLARATION],
        capture_output=True,
        text=True,
        check=False,
        cwd=PACKAGE.parent,
    )
    assert done.returncode == 0, done.stderr
    # RunSettings' field, no config file, `bisector run` without and with the flag.
    assert done.stdout.split() == ["5", "5", "5", "2"]


def test_every_flag_of_run_is_a_declared_key_with_its_doc_as_help() -> None:
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    params = {p.name: p for p in group.commands["run"].params}
    own = {"good", "bad", "config", "repo", "run_dir", "dry_run", "fresh", "as_json", "help"}
    own.add("verbose")  # -v: the progress detail, not a key of the config
    assert set(params) - own == set(RUN_FLAGS)
    for name, flag in RUN_FLAGS.items():
        param = params[name]
        assert getattr(param, "help", None) == flag.key.doc, name
        assert param.default is None, name  # not given: the file, else the declared default
        if flag.flag.positional:
            assert param.param_type_name == "argument" and param.metavar == flag.flag.metavar
        else:
            assert param.opts == ["--" + name.replace("_", "-")], name
            assert param.metavar == (flag.flag.metavar or None), name
    assert getattr(params["first_parent"], "is_flag", False)  # `--first-parent`, no value


def test_a_flag_given_is_read_as_the_key_and_named_as_the_flag() -> None:
    settings = RunSettings.from_config(
        Section({"run": {"launch_attempts": 4, "repeats": 3}}),
        good="a",
        bad="b",
        flags=RunFlags(launch_attempts=2, parallel=None, paths=["pkg"]),
    )
    assert (settings.launch_attempts, settings.repeats, settings.paths) == (2, 3, ("pkg",))
    assert settings.search.parallel == 1  # not given: the declared default
    with pytest.raises(ConfigError, match=r"^--launch-attempts must be at least 1, got 0$"):
        RunSettings.from_config(Section(), good="a", bad="b", flags=RunFlags(launch_attempts=0))
    with pytest.raises(TypeError, match="no flag of bisector run sets seed"):
        RunFlags(seed=1)
