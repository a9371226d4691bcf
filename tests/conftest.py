"""Fixtures shared by the whole suite; reusable builders live in tests/helpers/."""

from __future__ import annotations
