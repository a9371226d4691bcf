"""GCS access for CI history: the client, retries on transient errors, clear errors.

The client comes from `bisector.logs.sources.gcs_client` (the user's credentials
when present, anonymous otherwise: the CI buckets are public). Every request
made here goes through `retrying()`: tenacity with exponential backoff on the
errors a retry can fix (429, 500, 502, 503, 504, dropped connections). The log
scorer wraps GCS errors in a BisectorError `from None`; the original error is
still its `__context__`, which `is_transient` looks at, so a scoring pass that
died on a 503 is retried too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import requests
import tenacity
from google.api_core import exceptions as gexc

from bisector.errors import BisectorError
from bisector.logs.sources import gcs_client

T = TypeVar("T")

TRANSIENT: tuple[type[BaseException], ...] = (
    gexc.TooManyRequests,
    gexc.InternalServerError,
    gexc.BadGateway,
    gexc.ServiceUnavailable,
    gexc.GatewayTimeout,
    requests.ConnectionError,
    requests.Timeout,
    ConnectionError,
    TimeoutError,
)
ATTEMPTS = 5
# Backoff between attempts, seconds: 1, 2, 4, 8 (capped at 30). Tests set it to 0.
BACKOFF_S = 1.0


def is_transient(exc: BaseException | None) -> bool:
    """A retry may fix it: the error itself, or what a BisectorError wrapped."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, TRANSIENT):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def retrying(call: Callable[[], T]) -> T:
    """`call()`, retried with backoff while it fails transiently; other errors pass through."""
    retryer = tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_transient),
        stop=tenacity.stop_after_attempt(ATTEMPTS),
        wait=tenacity.wait_exponential(multiplier=BACKOFF_S, max=30.0),
        reraise=True,
    )
    return retryer(call)


def client() -> Any:
    return gcs_client()


def access_error(exc: gexc.GoogleAPIError, what: str) -> BisectorError:
    """One line for a request that failed for good."""
    if isinstance(exc, gexc.NotFound):
        return BisectorError(f"{what} does not exist; check the --bucket name")
    if isinstance(exc, gexc.Forbidden | gexc.Unauthorized):
        return BisectorError(
            f"access to {what} denied; for a private bucket run "
            "`gcloud auth application-default login`"
        )
    return BisectorError(f"cannot read {what}: {exc}; try again later")
