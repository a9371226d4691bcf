"""`bisector history` over runs whose started.json/finished.json are garbage (issue 12 item 7).

Every run is still listed and scored; a run whose metadata cannot be used has an
unknown date (`-`) and a note saying what was ignored; there is no traceback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bisector.entry import main
from tests.helpers.ci_history import CiRun, write_job_history

BUCKET = "bad-metadata-ci-logs"
JOB = "ci-kubernetes-kubemark-garbage"
DEEP = b"[" * 100_000 + b"]" * 100_000

# run -> (started.json bytes, what the note about it says)
GARBAGE: dict[int, tuple[bytes, str]] = {
    501: (b'{"timestamp": NaN}', "started.json: timestamp 'NaN' is not a number"),
    502: (b'{"timestamp": Infinity}', "started.json: timestamp 'Infinity' is not a number"),
    503: (b'{"timestamp": "yesterday"}', "started.json: timestamp 'yesterday' is not a number"),
    504: (b'{"timestamp": -5}', "started.json: timestamp -5 is not a plausible date"),
    505: (b'{"timestamp": 1e300}', "started.json: timestamp 1e+300 is not a plausible date"),
    506: (
        b'{"timestamp": [1, {"a": null}]}',
        "started.json: timestamp [1, {'a': None}] is not a number",
    ),
    507: (b'{"timestamp": 14952', "started.json is not JSON (truncated or nested too deeply)"),
    508: (DEEP, "started.json is not JSON (truncated or nested too deeply)"),
    509: (b'"just a string"', "started.json is not a JSON object"),
    510: (b'{"metadata": 7, "repos": [1], "version": {"x": 1}, "timestamp": 1495259460000}', ""),
}


@pytest.fixture(scope="module")
def garbage_history(gcs_client: Any) -> None:
    runs = []
    for run, (started, _) in GARBAGE.items():
        finished = b'{"timestamp": NaN, "result": ["SUCCESS"], "passed": "yes"}'
        extra = {"started.json": started, "finished.json": finished if run == 501 else b""}
        if run != 501:
            del extra["finished.json"]
        runs.append(CiRun(run, f"{run:040x}", conflicts=run - 500, extra=extra))
    write_job_history(gcs_client, BUCKET, JOB, runs)


@pytest.mark.slow
@pytest.mark.usefixtures("garbage_history")
def test_history_lists_every_run_and_says_what_was_ignored(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["history", "--job", JOB, "--bucket", BUCKET, "--cache-dir", str(tmp_path)]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_info.value.code in (0, None), err
    assert "Traceback" not in out + err
    rows = {
        int(m.group(1)): m.group(2)
        for line in out.splitlines()
        if (m := re.match(r"^\s*(\d{3})  (.*)$", line))
    }
    assert sorted(rows) == sorted(GARBAGE)
    for run, (_, note) in GARBAGE.items():
        if run == 510:  # milliseconds: read as such; wrong-typed fields ignored
            assert rows[run].startswith("2017-05-20 05:51"), rows[run]
            continue
        assert rows[run].startswith("-  "), rows[run]
        assert f"run {run}: {note}" in out, out
    assert "run 501: finished.json: result ['SUCCESS'] is not a result; ignored" in out
    assert "run 501: finished.json: timestamp 'NaN' is not a number; ignored" in out
