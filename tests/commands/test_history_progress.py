"""`bisector history` says what it is doing while it scores (issue 14 item 5)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bisector.entry import main
from tests.helpers.ci_history import CiRun, write_job_history

BUCKET = "progress-ci-logs"
JOB = "ci-kubernetes-kubemark-progress"


@pytest.mark.slow
def test_one_line_per_run_as_it_finishes(
    gcs_client: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    runs = [CiRun(700 + i, f"{i + 1:040x}", conflicts=3) for i in range(3)]
    runs.append(CiRun(703, f"{4:040x}", logs=False))
    write_job_history(gcs_client, BUCKET, JOB, runs)
    argv = ["history", "--job", JOB, "--bucket", BUCKET, "--cache-dir", str(tmp_path)]
    for again, state in ((False, "scored"), (True, "cached")):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code in (0, None)
        err = capsys.readouterr().err.splitlines()
        assert err[0] == f"scoring 4 runs of gs://{BUCKET}/logs/{JOB}/ (4 at a time)", again
        assert sorted(re.sub(r"\[\d/4\] ", "", line) for line in err[1:]) == sorted(
            [f"  run {r}: {state}" for r in (700, 701, 702)] + ["  run 703: no logs"]
        )
        assert sorted(re.findall(r"\[(\d)/4\]", "\n".join(err))) == ["1", "2", "3", "4"]
