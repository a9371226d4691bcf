"""A spec `bisector evaluate` cannot use is bad input (exit 2, one line naming the field)
before any fetch or build: never a bug's 70, never a skip handed back for a garbled
spec, never a measurement thrown away after the work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bisector.errors import ConfigError
from bisector.executors.spec import SPEC_ENV, SPEC_VERSION, EvaluationSpec

_GOOD: dict[str, Any] = {
    "version": SPEC_VERSION,
    "commit": "0123456789abcdef0123456789abcdef01234567",
    "tree": "",
    "git_url": "file:///nowhere",
    "config": {"run": {"backend": "sim"}},
}


def test_a_whole_spec_reads_back() -> None:
    spec = EvaluationSpec.from_json(json.dumps(_GOOD))
    assert EvaluationSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("commit", 5, "`commit` is 5, not a string"),
        ("commit", "", "`commit` is empty"),
        ("git_url", None, "`git_url` is None, not a string"),
        ("config", [], "`config` is [], not a table"),
        ("fetch_depth", "x", "`fetch_depth` is 'x', not a whole number"),
        ("launch_attempts", True, "`launch_attempts` is True, not a whole number"),
        ("retry_wait_s", "5s", "`retry_wait_s` is '5s', not a number"),
        ("revisions", [1], "not a list of strings"),
        ("artifacts", "nope", "'nope' is not gs://BUCKET/PREFIX"),
    ],
)
def test_a_field_of_the_wrong_kind_is_one_line_naming_it(
    field: str, value: Any, words: str
) -> None:
    with pytest.raises(ConfigError, match="not an evaluation spec") as caught:
        EvaluationSpec.from_json(json.dumps({**_GOOD, field: value}))
    assert words in str(caught.value)


@pytest.mark.slow
def test_evaluate_on_a_garbled_spec_exits_2_before_fetching(tmp_path: Path) -> None:
    """Before: `"commit": 5` ended in 70 (a bug) and `"artifacts": "nope"` fetched first."""
    for field, value in (("commit", 5), ("artifacts", "nope"), ("config", [])):
        work = tmp_path / field
        done = subprocess.run(
            [sys.executable, "-m", "bisector", "evaluate", "--work", str(work)],
            env={SPEC_ENV: json.dumps({**_GOOD, field: value}), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2, (field, done.stderr)
        assert done.stderr.startswith("bisector: error: not an evaluation spec: `" + field), (
            done.stderr
        )
        assert "Traceback" not in done.stderr
        assert "fetching" not in done.stdout and "bisector-handback" not in done.stdout
