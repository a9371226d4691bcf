from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from bisector.dirs import private_file, write_private
from bisector.errors import BisectorError


@pytest.fixture(autouse=True)
def _permissive_umask() -> object:
    previous = os.umask(0o000)  # the worst case: files would be world-writable
    yield
    os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_private_is_0600_and_replaces_atomically(tmp_path: Path) -> None:
    path = tmp_path / "gce" / "base-1.kubeconfig"
    write_private(path, "users: []\n")
    assert _mode(path) == 0o600
    path.chmod(0o644)  # an old file left readable
    write_private(path, b"users: [admin]\n")
    assert path.read_text() == "users: [admin]\n"
    assert _mode(path) == 0o600
    assert list(path.parent.iterdir()) == [path]  # no temp file left


def test_private_file_creates_or_tightens(tmp_path: Path) -> None:
    fresh = private_file(tmp_path / "kind" / "kubeconfig-slot0")
    assert fresh.read_text() == ""
    assert _mode(fresh) == 0o600
    old = tmp_path / "old.kubeconfig"
    old.write_text("token: x\n")
    old.chmod(0o666)
    assert private_file(old).read_text() == "token: x\n"
    assert _mode(old) == 0o600


def test_unwritable_places_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(BisectorError, match="cannot write the private file"):
        write_private(tmp_path / "file" / "k", "x")
    with pytest.raises(BisectorError, match="cannot create the private file"):
        private_file(tmp_path / "file" / "k")
