"""Scan workers keep the memory they free (glibc mallopt), and only where glibc is."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

from bisector.logs import reader


class _FakeLibc:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return 1


def test_glibc_gets_both_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    libc = _FakeLibc()
    monkeypatch.setattr(os, "confstr", lambda name: "glibc 2.36")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: libc)
    assert reader.keep_freed_memory()
    # M_MMAP_THRESHOLD (-3) and M_TRIM_THRESHOLD (-1), as glibc's malloc.h numbers them.
    assert libc.calls == [(-3, 32 << 20), (-1, 256 << 20)]


@pytest.mark.parametrize("libc_version", ["", None])
def test_other_c_libraries_are_left_alone(
    monkeypatch: pytest.MonkeyPatch, libc_version: str | None
) -> None:
    libc = _FakeLibc()
    monkeypatch.setattr(os, "confstr", lambda name: libc_version)
    monkeypatch.setattr(ctypes, "CDLL", lambda name: libc)
    assert not reader.keep_freed_memory()
    assert libc.calls == []


def test_real_glibc_accepts_the_settings() -> None:
    """In a process of its own: the test process's allocator is not changed."""
    if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
        pytest.skip("not glibc")
    code = "from bisector.logs.reader import keep_freed_memory; print(keep_freed_memory())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
