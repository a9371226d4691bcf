"""Cacher high-water marks, saturation, forced closes, dispatch lag, windows, user metrics."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from bisector.config import Section
from bisector.errors import BisectorError, ConfigError
from bisector.logs import METRIC_NAMES, load_metric_definitions, metric_value, score_logs
from tests.helpers.log_lines import cri, header, mix_log, request, text


def _score(tmp_path: Path, lines: list[str], **kwargs: object) -> object:
    path = tmp_path / "kube-apiserver.log"
    path.write_bytes(text(lines))
    return score_logs([path], **kwargs)  # type: ignore[arg-type]


def _cacher(t: float, kind: str, n: int, where: str = "cacher.go:566") -> str:
    return header(t, where=where) + f"cacher ({kind}): {n} objects queued in incoming channel."


def test_cacher_high_water_marks_and_saturation(tmp_path: Path) -> None:
    lines = [
        request("wrap42", 0, "GET", "/healthz", 200),
        _cacher(1, "*api.Pod", 12),
        _cacher(30, "*api.Node", 57),
        _cacher(120, "*api.Node", 100),
        _cacher(200, "*api.Pod", 73),
        'logging error output: "cacher (*api.Pod): 100 objects queued in incoming channel."',
        header(300) + "done",
    ]
    scores = _score(tmp_path, lines)
    m = scores.metrics  # type: ignore[attr-defined]
    assert m["cacher_hwm"] == {"*api.Node": 100, "*api.Pod": 73}
    assert m["cacher_saturated_after_s"] == {"*api.Node": 120.0, "*api.Pod": None}
    assert metric_value(scores, "cacher_hwm") == 100  # type: ignore[arg-type]
    assert metric_value(scores, "cacher_saturated_after_s") == 180.0  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["*core.Node", "nodes"])
def test_later_cacher_names_and_cri(tmp_path: Path, kind: str) -> None:
    lines = cri([request("v122", 0, "GET", "/healthz", 200), _cacher(5, kind, 42)])
    scores = _score(tmp_path, lines)
    assert scores.metrics["cacher_hwm"] == {kind: 42}  # type: ignore[attr-defined]
    assert metric_value(scores, "cacher_hwm") == 42  # type: ignore[arg-type]
    assert metric_value(scores, "cacher_saturated_after_s") == 0.0  # type: ignore[arg-type]


def test_forced_watcher_closes_every_generation(tmp_path: Path) -> None:
    lines = [
        header(1, where="cacher.go:300")
        + "Forcing watcher close due to unresponsiveness: *api.Node",
        header(2, where="cacher.go:300")
        + "Forcing watcher close due to unresponsiveness: *api.Pod",
        header(3, where="cacher.go:1000")
        + 'Forcing nodes watcher close due to unresponsiveness: key: "/minions", '
        "len(c.input) = 10, len(c.result) = 10",
        header(4, where="cache_watcher.go:120")
        + 'Forcing nodes watcher close due to unresponsiveness: key: "/minions", '
        "len(c.input) = 10, len(c.result) = 10, graceful = false",
    ]
    scores = _score(tmp_path, lines)
    assert scores.metrics["forced_watcher_closes"] == {  # type: ignore[attr-defined]
        "*api.Node": 1,
        "*api.Pod": 1,
        "nodes": 2,
    }
    assert metric_value(scores, "forced_watcher_closes") == 1  # type: ignore[arg-type]


def test_no_forced_closes_is_zero_not_missing(tmp_path: Path) -> None:
    scores = _score(tmp_path, mix_log("wrap42"))
    assert scores.metrics["forced_watcher_closes"] == {}  # type: ignore[attr-defined]
    assert metric_value(scores, "forced_watcher_closes") == 0.0  # type: ignore[arg-type]


def test_dispatch_lag_pairs_nth_write_with_nth_dispatch(tmp_path: Path) -> None:
    lines = []
    for i in range(10):  # successful node writes at t = 0..9 s, one 409 in between
        lines.append(request("wrap42", i, "PATCH", f"/api/v1/nodes/n{i}/status", 200))
        lines.append(request("wrap42", i + 0.5, "PATCH", f"/api/v1/nodes/n{i}/status", 409))
    aaa = header(5, "E", "cacher.go:610") + "AAA: dispatching event nr 2"
    clean = header(12, "I", "cacher.go:700") + "bisector: dispatched node event nr 4"
    quoted = (
        'logging error output: "E0602 05:51:30.000000 7 cacher.go:610] AAA: dispatching event nr 9"'
    )
    scores = _score(tmp_path, [*lines[:10], aaa, *lines[10:], clean, quoted])
    assert scores.metrics["dispatch_lag_s"] == {"max": 9.0, "last": 9.0}  # type: ignore[attr-defined]
    assert metric_value(scores, "dispatch_lag_s") == 9.0  # type: ignore[arg-type]
    assert scores.metrics["node_writes"] == 10  # type: ignore[attr-defined]


def test_no_dispatch_lines_means_no_lag_data(tmp_path: Path) -> None:
    scores = _score(tmp_path, mix_log("wrap42"))
    assert scores.metrics["dispatch_lag_s"] is None  # type: ignore[attr-defined]
    assert metric_value(scores, "dispatch_lag_s") is None  # type: ignore[arg-type]


def test_since_until_window(tmp_path: Path) -> None:
    lines = [request("wrap42", i, "PATCH", "/api/v1/nodes/n/status", 409) for i in range(60)]
    scores = _score(tmp_path, lines, since=10.0, until=40.0)
    m = scores.metrics  # type: ignore[attr-defined]
    assert m["conflicts"] == 30
    assert m["window"]["seconds"] == 30.0
    assert m["conflicts_per_min"] == 60.0


def test_user_defined_request_metrics(tmp_path: Path) -> None:
    section = Section(
        {
            "pod_conflicts": {
                "verb": "PATCH",
                "path": "^/api/v1/namespaces/[^/]+/pods/",
                "statuses": [409],
            },
            "node_reads": {"verb": ["GET", "LIST"], "path": "^/api/v1/nodes"},
        },
        "bisector.toml",
        "metrics",
    )
    defs = load_metric_definitions(section)
    for fmt in ("wrap42", "v119"):
        scores = _score(tmp_path, mix_log(fmt), extra_metrics=defs)
        assert scores.metrics["pod_conflicts"] == 1  # type: ignore[attr-defined]
        assert scores.metrics["node_reads"] == 1  # type: ignore[attr-defined]
        assert metric_value(scores, "pod_conflicts") == 1.0  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"x": {"path": "("}}, "bad regex"),
        ({"x": {"path": "a", "statuses": ["409"]}}, "statuses"),
        ({"x": {"path": "a", "colour": "red"}}, "colour"),
        ({"x": {"verb": "GET"}}, "path"),
        ({"conflicts": {"path": "a"}}, "built-in"),
    ],
)
def test_bad_metric_definitions_name_file_and_key(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        load_metric_definitions(Section(table, "bisector.toml", "metrics"))
    assert "bisector.toml" in str(info.value)


def test_unknown_metric_name_is_an_error(tmp_path: Path) -> None:
    scores = _score(tmp_path, mix_log("wrap42"))
    with pytest.raises(BisectorError, match="unknown metric 'conflictz'"):
        metric_value(scores, "conflictz")  # type: ignore[arg-type]
    assert "conflicts" in METRIC_NAMES


def test_dispatch_lag_reads_what_the_instrumentation_patch_logs(tmp_path: Path) -> None:
    # The message comes from the shipped patch itself, so the two cannot drift apart.
    patch = Path("bisector/data/instrument/cacher-dispatch-progress-2017.patch").read_text()
    fmt = re.search(r'glog\.Infof\("([^"]+)", c\.objectType\.String\(\), dispatched\)', patch)
    assert fmt is not None
    message = fmt.group(1).replace("%v", "*api.Node").replace("%d", "3")
    writes = [request("wrap42", i, "PATCH", f"/api/v1/nodes/n{i}/status", 200) for i in range(10)]
    dispatch = header(20, "I", "cacher.go:585") + message
    scores = _score(tmp_path, [*writes, dispatch])
    assert scores.metrics["dispatch_lag_s"] == {"max": 18.0, "last": 18.0}  # type: ignore[attr-defined]


@pytest.mark.parametrize("compiled", [True, False])
def test_dispatch_lag_is_the_same_however_the_log_is_cut(
    tmp_path: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes in line order, as the log wrote them. A write stamped late (glog stamps
    before the lock; real 2017 logs had lines 1.0-1.6 s behind the line above) was sorted
    by time within its chunk only, so the Nth write, and the lag paired with it, changed
    with where the chunks were cut (review of 5 December 2026: `last` 128.29 s with 4 KiB
    chunks, 135.14 s with 1 MiB, on one log). Here write 50 (the 51st) is stamped 20 s
    late and dispatch nr 51 comes at 55 s: 25 s after it, whatever the chunks."""
    from bisector.logs import IncrementalScore, glogscan

    if not compiled:
        monkeypatch.setattr(glogscan, "_compiled", None)
    lines = [
        request("wrap42", i - 20 * (i == 50), "PATCH", f"/api/v1/nodes/n{i}/status", 200)
        for i in range(100)
    ]
    lines.insert(56, header(55, "E", "cacher.go:610") + "AAA: dispatching event nr 51")
    path = tmp_path / "kube-apiserver.log"
    path.write_text("".join(line + "\n" for line in lines))
    lags = [
        score_logs([path], workers=1, chunk_size=size).metrics["dispatch_lag_s"]
        for size in (1 << 10, 1 << 12, 1 << 20)
    ]
    assert lags == [{"max": 25.0, "last": 25.0}] * 3
    inc = IncrementalScore()
    data = path.read_bytes()
    cuts = sorted(random.Random(5).sample(range(1, len(data)), 9))
    for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
        inc.update(data[start:end])
    assert inc.scores().metrics["dispatch_lag_s"] == lags[0]
