"""RunSettings for tests: a config file or Section, the range, and flags by keyword."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from bisector.config import Section, load_config
from bisector.settings import RUN_FLAGS, RunFlags, RunSettings


def settings_for(
    config: Section | Path | str,
    *,
    good: str,
    bad: str,
    repo: Path = Path(),
    run_dir: Path | None = None,
    measure_ahead: bool = True,
    **flags: Any,
) -> RunSettings:
    """`flags` are `bisector run`'s flags (threshold=10.0, parallel=4, paths=["value"], ...)."""
    section = config if isinstance(config, Section) else load_config(config)
    # `[run]` keys that are no CLI flag (seed, ...) go into the config's run table.
    extra = {k: flags.pop(k) for k in list(flags) if k not in RUN_FLAGS}
    if extra:
        data = dict(section.data)
        data["run"] = {**dict(section.table("run").data), **extra}
        section = Section(data, section.file, section.path)
    settings = RunSettings.from_config(
        section,
        good=good,
        bad=bad,
        repo=repo,
        run_dir=run_dir,
        flags=RunFlags(**flags),
    )
    if not measure_ahead:
        search = dataclasses.replace(settings.search, measure_ahead=False)
        settings = dataclasses.replace(settings, search=search)
    return settings
