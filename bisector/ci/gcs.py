"""GCS access for CI history: the client, bounded retries, timeouts, clear errors.

The client (`client()`) uses the user's credentials
when present, anonymous otherwise: the CI buckets are public). Every request
made here goes through `retrying()`: tenacity with exponential backoff on the
errors a retry can fix (429, 500, 502, 503, 504, dropped connections). The log
scorer wraps GCS errors in a BisectorError `from None`; the original error is
still its `__context__`, which `is_transient` looks at, so a scoring pass that
died on a 503 is retried too.

Offline, fail fast: every request is made with `TIMEOUT` (a connect timeout of
a few seconds) and `retry=None`, so the library's own retry loop (two minutes
per request by default) never runs under ours. A host that cannot be reached at
all (connection refused, no route, no DNS, connect timeout) gets
`UNREACHABLE_ATTEMPTS` tries, then `retrying` raises `Unreachable`: one line,
not retried again by an outer `retrying`. Under the library's own retries,
`history --runs 427..430` offline takes 8 min 39 s to say so (scripts/offline_gcs.py
measures it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import requests
import tenacity
import urllib3
from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exceptions

from bisector.errors import BisectorError

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
# Tries for a host that does not answer at all: offline, a retry rarely helps.
UNREACHABLE_ATTEMPTS = 2
# (connect, read) seconds for every request. Reads stay long: a big log object
# streams in chunks and a busy server may pause; connecting is quick or never.
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 60.0
TIMEOUT = (CONNECT_TIMEOUT_S, READ_TIMEOUT_S)

# Low-level causes meaning "could not connect" (refused, no route, DNS, connect timeout).
_CONNECT_FAILURES: tuple[type[BaseException], ...] = (
    urllib3.exceptions.NewConnectionError,  # includes NameResolutionError
    urllib3.exceptions.ConnectTimeoutError,
    requests.ConnectTimeout,
    ConnectionRefusedError,
)
_REASONS = (
    (re.compile(r"refused", re.I), "connection refused"),
    (re.compile(r"name resolution|not known|resolve|getaddrinfo", re.I), "name lookup failed"),
    (re.compile(r"unreachable|no route", re.I), "network unreachable"),
    (re.compile(r"timed out|timeout", re.I), "connection timed out"),
)


class Unreachable(BisectorError):
    """GCS (or the emulator) cannot be reached at all; retrying further will not help."""


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """`exc`, its causes/contexts, the exceptions in its args and `.reason`s (bounded)."""
    todo, seen = [exc], 0
    while todo and seen < 20:
        item = todo.pop()
        if item is None:
            continue
        seen += 1
        yield item
        todo += [item.__cause__, item.__context__, getattr(item, "reason", None)]
        todo += [a for a in item.args if isinstance(a, BaseException)]


def is_transient(exc: BaseException | None) -> bool:
    """A retry may fix it: the error itself, or what a BisectorError wrapped."""
    if isinstance(exc, Unreachable):
        return False  # already retried: its own attempts are spent
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, TRANSIENT):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def is_unreachable(exc: BaseException | None) -> bool:
    """The request never reached a server: refused, no route, no DNS, connect timeout."""
    return any(
        isinstance(e, _CONNECT_FAILURES)
        or (isinstance(e, auth_exceptions.TransportError) and "connect" in str(e).lower())
        for e in _chain(exc)
    )


def endpoint() -> str:
    """The host requests go to: the emulator's when STORAGE_EMULATOR_HOST is set."""
    return os.environ.get("STORAGE_EMULATOR_HOST") or "storage.googleapis.com"


def unreachable_error(exc: BaseException) -> Unreachable:
    text = " ".join(str(e) for e in _chain(exc))
    reason = next((why for pattern, why in _REASONS if pattern.search(text)), "no connection")
    return Unreachable(
        f"cannot reach {endpoint()} ({reason}); check the network connection"
        " (or STORAGE_EMULATOR_HOST) and try again"
    )


def _stop(state: tenacity.RetryCallState) -> bool:
    if state.attempt_number >= ATTEMPTS:
        return True
    failed = state.outcome is not None and state.outcome.failed
    error = state.outcome.exception() if failed and state.outcome else None
    return state.attempt_number >= UNREACHABLE_ATTEMPTS and is_unreachable(error)


def retrying(call: Callable[[], T]) -> T:
    """`call()`, retried with backoff while it fails transiently; other errors pass through.

    A host that cannot be reached raises `Unreachable` (a BisectorError) after
    `UNREACHABLE_ATTEMPTS` tries.
    """
    retryer = tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_transient),
        stop=_stop,
        wait=tenacity.wait_exponential(multiplier=BACKOFF_S, max=30.0),
        reraise=True,
    )
    try:
        return retryer(call)
    except Exception as exc:
        if is_unreachable(exc) and not isinstance(exc, Unreachable):
            raise unreachable_error(exc) from exc
        raise


def client() -> Any:
    """A storage client: the user's credentials when present, else anonymous (public buckets).

    With STORAGE_EMULATOR_HOST set (a local emulator) no credential lookup happens at all,
    so tests never reach Google's metadata server.
    """
    from google.auth.exceptions import DefaultCredentialsError
    from google.cloud import storage  # type: ignore[import-untyped]

    if os.environ.get("STORAGE_EMULATOR_HOST"):
        return storage.Client.create_anonymous_client()
    try:
        return storage.Client()
    except (DefaultCredentialsError, OSError):
        return storage.Client.create_anonymous_client()


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
