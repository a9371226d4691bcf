"""What must never leave the machine: credentials, recognised by name and by content.

`--upload` and nightly's `upload` copy a run directory to a bucket teams often
make readable. A run directory can hold cluster-admin credentials (the gce
backend's `base-N.kubeconfig`, kind's kubeconfigs) and whatever a user's
`local` scripts wrote. `withheld(path)` says why a file must not be uploaded,
or None: by name (kubeconfigs, keys, tokens), by kind (only what a reader
needs: logs, journal, reports, command logs, scores) and by content (PEM
private keys, a kubeconfig's client-key-data or user token, bearer tokens).
Gzip files are checked inflated; one that cannot be inflated (truncated, an
invalid deflate block, a bad CRC) is withheld, as is any file that cannot be read:
what cannot be checked is never sent.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import IO

# By name, case-insensitive: credentials whatever they hold.
SECRET_NAMES = (
    "*.kubeconfig",
    "kubeconfig*",
    "*.pem",
    "*.key",
    "token*",
    "*.token",
    "*.p12",
    "*.pfx",
    "*.jks",
    "id_rsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*credentials*",
    "*.netrc",
    ".netrc",
    "*service-account*.json",
)
# What a reader needs: logs (and their rotations), the journal, reports, scores, plots.
_READABLE = re.compile(
    r"\.(?:log|txt|md|html|json|jsonl|svg|png|csv)(?:\.\d+)?(?:\.gz)?$"
    r"|\.log-\d{8}(?:-\d+)?(?:\.gz)?$",
    re.IGNORECASE,
)
# By content. A certificate alone is public; its key is not.
_SECRET_TEXT = (
    (re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"), "a PEM private key"),
    (re.compile(rb"client-key-data:\s*\S"), "a kubeconfig client key"),
    (re.compile(rb"\bauth-provider:|\bclient-secret:\s*\S"), "kubeconfig auth settings"),
    (re.compile(rb"(?i)\bbearer\s+[a-z0-9._~+/=-]{20,}"), "a bearer token"),
    (re.compile(rb"\"private_key\"\s*:\s*\"-----BEGIN"), "a service account key"),
)
# `token: <value>` is a secret in a kubeconfig (a file with `users:` / `user:`).
_TOKEN = re.compile(rb"(?m)^\s*(?:token|password):\s*\S")
_KUBECONFIG = re.compile(rb"(?m)^\s*(?:users|contexts|clusters):\s*$|^kind:\s*Config\s*$")
_CHUNK = 8 << 20
_OVERLAP = 4096  # a secret cut by a chunk boundary is still seen whole


def withheld_by_name(name: str) -> str | None:
    """Why a file called `name` must not be uploaded whatever it holds, or None."""
    base = name.lower()
    for pattern in SECRET_NAMES:
        if fnmatch.fnmatchcase(base, pattern):
            return f"its name matches {pattern}"
    if not _READABLE.search(base):
        return "not a log, journal, report or score file"
    return None


def withheld(path: Path) -> str | None:
    """Why `path` must not be uploaded (one short phrase), or None when it may be.

    Checks the name, then reads the file; one that cannot be read is withheld too.
    """
    if why := withheld_by_name(path.name):
        return why
    try:
        with _open(path) as stream:
            return _scan(stream)
    except Exception as exc:  # fail closed: what cannot be read is not sent
        # Not only OSError: a truncated gzip is an EOFError, an invalid deflate block
        # isal's IsalError (an Exception, no OSError), a bad header a BadGzipFile.
        return f"cannot be checked for credentials ({type(exc).__name__}: {exc})"


def _open(path: Path) -> IO[bytes]:
    with path.open("rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    if gzipped:
        from isal import igzip

        stream: IO[bytes] = igzip.open(path, "rb")  # type: ignore[no-untyped-call]
        return stream
    return path.open("rb")


def _scan(stream: IO[bytes]) -> str | None:
    tail = b""
    token = kubeconfig = False
    while chunk := stream.read(_CHUNK):
        text = tail + chunk
        for pattern, what in _SECRET_TEXT:
            if pattern.search(text):
                return f"it holds {what}"
        token = token or bool(_TOKEN.search(text))
        kubeconfig = kubeconfig or bool(_KUBECONFIG.search(text))
        if token and kubeconfig:
            return "it holds a kubeconfig token"
        tail = text[-_OVERLAP:]
    return None
