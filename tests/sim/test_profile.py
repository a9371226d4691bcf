from __future__ import annotations

from pathlib import Path

import pytest

from bisector.sim import ProfileError, SimProfile, load_profile, render_profile


def test_rendered_profile_loads_back(tmp_path: Path) -> None:
    profile = SimProfile(trigger_index=False, dispatch_per_watcher_us=2.5, watcher_buffer=64)
    path = tmp_path / "p.toml"
    path.write_text(render_profile(profile))
    assert load_profile(path) == profile


def test_partial_profile_takes_defaults(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("trigger_index = false\n")
    assert load_profile(path) == SimProfile(trigger_index=False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("trigger_index = yes please\n", "not valid TOML"),
        ("trigger_index = 1\n", "trigger_index"),
        ("trigger_indx = true\n", "not a known setting"),
        ("incoming_capacity = 0\n", "must be positive"),
        ("dispatch_base_us = -1\n", "must be zero or more"),
        ("kubelet_retries = 1.5\n", "kubelet_retries"),
    ],
)
def test_invalid_profile_is_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(text)
    with pytest.raises(ProfileError, match=message):
        load_profile(path)


def test_missing_profile_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="does not exist"):
        load_profile(tmp_path / "nope.toml")
