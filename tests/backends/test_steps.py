"""Transient-failure classification, retries and the resource record's robustness."""

from __future__ import annotations

from pathlib import Path

import pytest

from bisector import proc
from bisector.backends.resources import ResourceRecord
from bisector.backends.steps import (
    RetryPolicy,
    is_transient,
    run_with_retries,
    start_with_retries,
    step,
    tail,
)
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


def test_every_attempt_is_a_block_in_the_log(tmp_path: Path) -> None:
    log = tmp_path / "launch.log"
    flaky = step("bash", "-c", "echo \"Quota 'CPUS' exceeded (attempt)\" >&2; exit 1")
    with pytest.raises(proc.CommandError):
        run_with_retries(flaky, RetryPolicy(3, 0, 0), lambda _s: None, log=log)
    text = log.read_text()
    assert text.count("Quota 'CPUS' exceeded (attempt)\n") == 3
    assert text.count("===== exited with code 1 after") == 3


def test_start_with_retries_logs_the_undo_between_attempts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    FakeProc.install(monkeypatch).on("kind create", code=1, stderr="Error 503", times=1)
    log = tmp_path / "launch.log"
    start_with_retries(
        step("kind", "create", "cluster"),
        step("kind", "delete", "cluster"),
        RetryPolicy(3, 0, 0),
        lambda _s: None,
        log=log,
    )
    headers = [line for line in log.read_text().splitlines() if line.startswith("===== 20")]
    assert [h.split("$ ")[1] for h in headers] == [
        "kind create cluster",
        "kind delete cluster",
        "kind create cluster",
    ]


def test_tail_is_the_last_lines_not_a_cut_through_them() -> None:
    err = _err("compiling\n" + "warning: x\n" * 10 + "fatal: bad object 1444d25\n")
    assert tail(err) == "warning: x | warning: x | fatal: bad object 1444d25"
    assert tail(_err("")) == "exited with code 1"
    assert tail(proc.CommandError(["x"], 2, "stdout only\n", "")) == "stdout only"
