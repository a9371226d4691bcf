"""Transient-failure classification, retries and the resource record's robustness."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector import proc
from bisector.backends.resources import ResourceRecord
from bisector.backends.steps import RetryPolicy, is_transient, run_with_retries, step
from bisector.errors import BisectorError
from tests.helpers.fake_proc import FakeProc


def _err(stderr: str, code: int | None = 1, why: str = "") -> proc.CommandError:
    return proc.CommandError(["x"], code, "", stderr, why)


@pytest.mark.parametrize(
    "stderr",
    [
        "ERROR: (gcloud.compute.instances.create) Quota 'CPUS' exceeded. Limit: 24.0",
        "ERROR: (gcloud.compute.scp) [/usr/bin/scp] exited with return code [255].",
        "ssh: connect to host 35.1.2.3 port 22: Connection refused",
        "googleapiclient.errors.HttpError: <HttpError 503 ... backendError>",
        "Error 502 (Server Error)",
        "rateLimitExceeded",
        "toomanyrequests: You have reached your pull rate limit",
    ],
)
def test_transient_failures_are_recognised(stderr: str) -> None:
    assert is_transient(_err(stderr))


@pytest.mark.parametrize(
    "exc",
    [
        _err("line 502: PROJECT: unbound variable"),
        _err("make: *** [quick-release] Error 2"),
        _err("Quota exceeded", code=None, why="timed out after 60s"),  # a timeout is not retried
        _err("", code=None, why="could not start: No such file"),
    ],
)
def test_other_failures_are_not(exc: proc.CommandError) -> None:
    assert not is_transient(exc)


def test_retries_back_off_exponentially_then_give_up(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProc.install(monkeypatch).on("gcloud", code=1, stderr="Quota exceeded")
    sleeps: list[float] = []
    with pytest.raises(proc.CommandError):
        run_with_retries(step("gcloud", "x"), RetryPolicy(4, 10, 25), sleeps.append)
    assert len(fake.calls) == 4
    assert sleeps == [10, 20, 25]


def test_corrupt_record_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "resources.json").write_text('{"resources": [{"id": 1}]}')
    with pytest.raises(BisectorError, match="is not a resource record"):
        ResourceRecord(tmp_path).load()
    (tmp_path / "resources.json").write_text("{trunc")
    with pytest.raises(BisectorError, match="cannot be read"):
        ResourceRecord(tmp_path).load()
