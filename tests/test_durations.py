from __future__ import annotations

import pytest

from bisector.durations import format_duration, parse_duration
from bisector.errors import BisectorError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        ("90s", 90.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("250ms", 0.25),
        (42, 42.0),
        (2.5, 2.5),
    ],
)
def test_parse(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5 minutes", "m5", "5m3", "-3", "1x"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(BisectorError, match=r"duration|negative"):
        parse_duration(text)


def test_format() -> None:
    assert format_duration(45) == "45s"
    assert format_duration(725) == "12m05s"
    assert format_duration(7380) == "2h03m"


@pytest.mark.parametrize(
    "value",
    ["nan", "NaN", "inf", "-inf", "infinity", "1e308", "1e400", "9" * 400, "721h", "43201m",
     float("nan"), float("inf"), 1e308, 30 * 86400 + 1],
)  # fmt: skip
def test_parse_rejects_what_no_clock_can_wait(value: str | float) -> None:
    """nan compares false with everything and 1e308 overflows every deadline: before,
    both launched a cluster and then failed inside the wait (exit 70)."""
    with pytest.raises(BisectorError, match=r"finite|30 days|negative"):
        parse_duration(value, what="--warmup")


def test_thirty_days_is_the_longest() -> None:
    assert parse_duration("720h") == 30 * 86400.0
