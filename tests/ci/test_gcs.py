from __future__ import annotations

import pytest
import requests
from google.api_core import exceptions as gexc

from bisector.ci import gcs
from bisector.errors import BisectorError


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gcs, "BACKOFF_S", 0.0)


def _wrapped(exc: BaseException) -> BisectorError:
    """What the log scorer raises: a BisectorError `from None` while handling `exc`."""
    try:
        raise exc
    except BaseException:
        try:
            raise BisectorError("cannot read gs://b/o") from None
        except BisectorError as wrapped:
            return wrapped


def test_transient_classification() -> None:
    assert gcs.is_transient(gexc.ServiceUnavailable("x"))  # type: ignore[no-untyped-call]
    assert gcs.is_transient(gexc.TooManyRequests("x"))  # type: ignore[no-untyped-call]
    assert gcs.is_transient(gexc.InternalServerError("x"))  # type: ignore[no-untyped-call]
    assert gcs.is_transient(requests.ConnectionError("reset"))
    assert gcs.is_transient(_wrapped(gexc.GatewayTimeout("x")))  # type: ignore[no-untyped-call]
    assert not gcs.is_transient(gexc.NotFound("x"))  # type: ignore[no-untyped-call]
    assert not gcs.is_transient(gexc.Forbidden("x"))  # type: ignore[no-untyped-call]
    assert not gcs.is_transient(_wrapped(ValueError("bad gzip")))
    assert not gcs.is_transient(BisectorError("plain"))


def test_retrying_retries_transient_errors_up_to_the_limit() -> None:
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise gexc.ServiceUnavailable("503")  # type: ignore[no-untyped-call]
        return "ok"

    assert gcs.retrying(flaky) == "ok"
    assert len(calls) == 3

    calls.clear()

    def down() -> None:
        calls.append(1)
        raise requests.ConnectionError("reset")

    with pytest.raises(requests.ConnectionError):
        gcs.retrying(down)
    assert len(calls) == gcs.ATTEMPTS

    calls.clear()

    def missing() -> None:
        calls.append(1)
        raise gexc.NotFound("gone")  # type: ignore[no-untyped-call]

    with pytest.raises(gexc.NotFound):
        gcs.retrying(missing)
    assert len(calls) == 1


def test_access_errors_say_what_to_do() -> None:
    nf = gcs.access_error(gexc.NotFound("x"), "bucket gs://b")  # type: ignore[no-untyped-call]
    assert str(nf) == "bucket gs://b does not exist; check the --bucket name"
    denied = gcs.access_error(gexc.Forbidden("x"), "gs://b/o")  # type: ignore[no-untyped-call]
    assert "gcloud auth application-default login" in str(denied)
    assert nf.exit_code == 2
