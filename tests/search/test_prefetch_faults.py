"""Prefetched builds when the infrastructure fails: a build ahead is a guess, so whatever
goes wrong with it is journaled and said, never a traceback, never a verdict, and the
prefetch worktrees it used stay usable."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest

from bisector.bisection.pipeline import run_bisection
from bisector.search.journal import Measured, Prefetch, read_journal
from bisector.search.progress import PlainProgress
from tests.helpers.local_backend import write_local_config
from tests.helpers.repo import build_repo
from tests.helpers.settings import settings_for
from tests.search.test_prefetch import PrefetchingBackend

MISSING = range(2, 7)  # mainline commits whose checkout fails: objects missing


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=repo, input=stdin, check=True, capture_output=True)
    return done.stdout.decode().strip()


def _lose_objects(repo: Path, commits: list[str]) -> None:
    """Delete the blob only each of `commits` has (its `serial`), as a damaged repository
    or a mirror lacking objects would (tests/test_gitrepo.py: such a checkout is a skip)."""
    objects = repo / ".git" / "objects"
    for pack in list((objects / "pack").glob("*.pack")):
        data = pack.read_bytes()
        pack.unlink()
        pack.with_suffix(".idx").unlink()
        _git(repo, "unpack-objects", "-q", stdin=data)
    for commit in commits:
        blob = _git(repo, "rev-parse", f"{commit}:serial")
        (objects / blob[:2] / blob[2:]).unlink()


def test_a_prefetch_whose_checkout_fails_is_journaled_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    built = build_repo(tmp_path / "repo", [1] * 9 + [40] * 8)  # serials 2-6: no value
    lost = [built.mainline[i] for i in MISSING]
    _lose_objects(built.path, lost)
    backend = PrefetchingBackend()
    settings = settings_for(
        write_local_config(tmp_path / "cfg").config,
        good=built.mainline[0],
        bad=built.mainline[-1],
        repo=built.path,
        threshold=10.0,
        prefetch_builds=2,
    )
    out = io.StringIO()
    report = run_bisection(settings, backend=backend, progress=PlainProgress(out))
    assert report.culprit is not None and report.culprit.commit == built.mainline[9]
    assert report.confirmed
    journal = read_journal(Path(report.run_dir) / "journal.jsonl")
    failed = [r for r in journal if isinstance(r, Prefetch) and r.error]
    assert failed, "no prefetch of a commit with missing objects was tried: scenario broken"
    assert {r.commit for r in failed} <= set(lost)
    assert all("objects are missing" in (r.error or "") for r in failed)
    for f in failed:
        assert f"prefetched build of {f.commit[:12]} failed" in out.getvalue()
    for record in journal:
        if isinstance(record, Measured) and record.measurement.commit in lost:
            m = record.measurement
            assert m.value is None and m.reason is not None
    assert "Traceback" not in capsys.readouterr().err
    # The prefetch worktrees were given back: later prefetches found one free.
    ok = [r for r in journal if isinstance(r, Prefetch) and r.error is None]
    later = [r for r in journal[journal.index(failed[0]) :] if r in ok]
    assert later, "no prefetch succeeded after the failed one"
