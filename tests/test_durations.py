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
