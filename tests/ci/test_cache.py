from __future__ import annotations

import re
from pathlib import Path

import pytest

from bisector.ci.cache import ScoreCache, default_cache_dir, settings_fingerprint
from bisector.ci.runs import LogObject, LogSet
from bisector.logs import RequestMetric, Scores

LOGS = LogSet("m", (LogObject("logs/j/1/artifacts/m/kube-apiserver.log", 7, 100),))


def test_entries_round_trip_and_survive_a_new_instance(tmp_path: Path) -> None:
    key = ScoreCache.key("b", LOGS, settings_fingerprint(None, None, None))
    scores = Scores({"conflicts": 3, "window": {"seconds": 1.5}, "dispatch_lag_s": None}, ("x",))
    ScoreCache(tmp_path).put(key, scores)
    assert ScoreCache(tmp_path).get(key) == scores
    assert ScoreCache(None).get(key) is None  # disabled
    assert not list(tmp_path.rglob("*.tmp"))


def test_key_changes_with_generation_bucket_and_settings() -> None:
    base = ScoreCache.key("b", LOGS, settings_fingerprint(None, None, None))
    rewritten = LogSet("m", (LogObject(LOGS.objects[0].name, 8, 100),))
    metric = RequestMetric("binds", re.compile("bindings"), frozenset({"POST"}), None)
    others = {
        ScoreCache.key("b", rewritten, settings_fingerprint(None, None, None)),
        ScoreCache.key("c", LOGS, settings_fingerprint(None, None, None)),
        ScoreCache.key("b", LOGS, settings_fingerprint(60.0, None, None)),
        ScoreCache.key("b", LOGS, settings_fingerprint(None, None, {"binds": metric})),
    }
    assert base not in others
    assert len(others) == 4


def test_unreadable_entry_is_a_miss_and_an_unwritable_cache_is_harmless(tmp_path: Path) -> None:
    cache = ScoreCache(tmp_path)
    key = ScoreCache.key("b", LOGS, "")
    cache.put(key, Scores({"conflicts": 1}))
    entry = next(tmp_path.rglob("*.json"))
    entry.write_text("{not json")
    assert cache.get(key) is None
    blocked = tmp_path / "file"
    blocked.write_text("")
    ScoreCache(blocked).put(key, Scores({"conflicts": 1}))  # a file where the dir should be
    assert ScoreCache(blocked).get(key) is None


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BISECTOR_CACHE_DIR", str(tmp_path / "explicit"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("BISECTOR_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "bisector" / "history"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / ".cache" / "bisector" / "history"
