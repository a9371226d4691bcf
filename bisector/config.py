"""TOML config files, read through typed getters that name the file and key on error.

Each consumer (the run loop, each backend, the metric registry) takes the
`Section` it owns and asks for typed values; a wrong type or an unknown key
becomes one `ConfigError` line: which file, which key, what was expected.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from bisector.durations import parse_duration
from bisector.errors import BisectorError, ConfigError

T = TypeVar("T")
_MISSING: object = object()
DEFAULTS = "<defaults>"  # the file of a Section read from no file: no --config was given
# The shipped example configs, in a checkout (and an editable install); absent in a wheel.
EXAMPLES = Path(__file__).resolve().parents[1] / "configs"


@dataclass(frozen=True)
class Section:
    """One TOML table and where it came from (for error messages)."""

    data: Mapping[str, object] = field(default_factory=dict)
    file: str = DEFAULTS
    path: str = ""
    # Keys whose value came from a command-line flag (`with_overrides`): an error about
    # one names the flag the user typed, not a file that does not hold it.
    from_flags: frozenset[str] = frozenset()

    def where(self, key: str) -> str:
        """`file: key `table.key`` (or `--flag` for a value given as one), for errors."""
        return self._where(key)

    def _where(self, key: str) -> str:
        if key in self.from_flags:
            return "--" + key.replace("_", "-")
        dotted = f"{self.path}.{key}" if self.path else key
        if self.file == DEFAULTS:
            return f"no --config FILE given: key `{dotted}`"
        return f"{self.file}: key `{dotted}`"

    def missing(self, key: str, expected: str) -> ConfigError:
        """`key` is needed and absent: say which file was read and which example sets it."""
        return ConfigError(f"{self._where(key)} is missing; expected {expected}" + self.hint(key))

    def hint(self, key: str) -> str:
        """`; configs/X.toml sets it, ...`: where to see `key` set (empty if no example has it)."""
        dotted = f"{self.path}.{key}" if self.path else key
        example = example_setting(dotted)
        if example is None:
            return "" if self.file != DEFAULTS else "; write a config file and pass --config FILE"
        if self.file == DEFAULTS:
            return f"; {example} sets it: pass a config like it with --config FILE"
        return f"; {example} sets it"

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def _get(
        self, key: str, kinds: type | tuple[type, ...], expected: str, default: object
    ) -> object:
        if key not in self.data:
            if default is _MISSING:
                raise self.missing(key, expected)
            return default
        value = self.data[key]
        if isinstance(value, bool) and bool not in (
            kinds if isinstance(kinds, tuple) else (kinds,)
        ):
            raise ConfigError(f"{self._where(key)}: expected {expected}, got {value!r}")
        if not isinstance(value, kinds):
            raise ConfigError(f"{self._where(key)}: expected {expected}, got {value!r}")
        return value

    def get_str(self, key: str, default: object = _MISSING) -> str:
        return self._get(key, str, "a string", default)  # type: ignore[return-value]

    def opt_str(self, key: str) -> str | None:
        return self._get(key, str, "a string", None)  # type: ignore[return-value]

    def get_int(
        self,
        key: str,
        default: object = _MISSING,
        *,
        low: int | None = None,
        high: int | None = None,
    ) -> int:
        """A whole number; with `low`/`high`, one in that range (a count of clusters,
        runs or attempts far past any real need is a typo that would launch them)."""
        value: int = self._get(key, int, "a whole number", default)  # type: ignore[assignment]
        if low is not None and value < low:
            raise ConfigError(f"{self._where(key)} must be at least {low}, got {value}")
        if high is not None and value > high:
            raise ConfigError(f"{self._where(key)} must be at most {high}, got {value}")
        return value

    def get_float(self, key: str, default: object = _MISSING) -> float:
        number = self.opt_float(key)
        if number is None:  # absent: the default, or "missing"
            return float(self._get(key, (int, float), "a number", default))  # type: ignore[arg-type]
        return number

    def opt_float(self, key: str) -> float | None:
        """A finite number or None: TOML has `nan` and `inf`, and nan compares false with
        every value (a threshold of nan scores every run good)."""
        value = self._get(key, (int, float), "a number", None)
        if value is None:
            return None
        try:
            number = float(value)  # type: ignore[arg-type]
        except OverflowError:  # a whole number past any float (TOML's ints are unbounded here)
            number = math.inf
        if not math.isfinite(number):
            raise ConfigError(f"{self._where(key)} must be a finite number, got {value}")
        return number

    def get_bool(self, key: str, default: object = _MISSING) -> bool:
        return self._get(key, bool, "true or false", default)  # type: ignore[return-value]

    def get_str_list(self, key: str, default: object = _MISSING) -> list[str]:
        value = self._get(key, list, "a list of strings", default)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{self._where(key)}: expected a list of strings, got {value!r}")
        return list(value)

    def get_duration(
        self, key: str, default: object = _MISSING, *, positive: bool = False
    ) -> float:
        """Seconds (bisector.durations: finite, 0 to 30 days); `positive` for a timeout or
        an interval, where 0 would fail every command at once or spin."""
        value = self._get(key, (str, int, float), "a duration such as 90s, 5m or 1h", default)
        try:
            seconds = parse_duration(value, what=self._where(key))  # type: ignore[arg-type]
        except BisectorError as exc:
            raise ConfigError(str(exc)) from None
        if positive and seconds <= 0:
            raise ConfigError(f"{self._where(key)} must be longer than 0, got {value!r}")
        return seconds

    def table(self, key: str) -> Section:
        """The sub-table `key`, empty if absent."""
        value = self._get(key, dict, "a table", {})
        sub = f"{self.path}.{key}" if self.path else key
        return Section(value, self.file, sub)  # type: ignore[arg-type]

    def check_keys(self, allowed: Iterable[str]) -> None:
        """Reject keys nobody reads: a typo must not silently fall back to a default."""
        known = set(allowed)
        for key in self.data:
            if key not in known:
                raise ConfigError(
                    f"{self._where(key)} is not a known setting; expected one of: "
                    + ", ".join(sorted(known))
                )

    def with_overrides(self, overrides: Mapping[str, object]) -> Section:
        """A copy where the non-None `overrides` (CLI flags) replace file values."""
        given = {k: v for k, v in overrides.items() if v is not None}
        merged = {**self.data, **given}
        return Section(merged, self.file, self.path, self.from_flags | frozenset(given))

    def fingerprint(self) -> str:
        """Stable hash of the contents, for caching verdicts per configuration."""
        blob = json.dumps(self.data, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def read_toml(path: Path | str, what: str = "config file") -> dict[str, object]:
    """The parsed TOML file at `path`; `ConfigError` says what is wrong with it."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} {file} does not exist; pass an existing file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{what} {file} cannot be read: {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} {file} is not valid TOML ({exc}); fix the file") from None


def example_setting(dotted: str, examples: Path = EXAMPLES) -> str | None:
    """`configs/NAME.toml` of the first shipped example that sets `dotted` (`run.warmup`,
    `backends.local.launch`; `nightly.jobs[0].run.backend` looks in the first job)."""
    if not examples.is_dir():
        return None
    parts = [part.split("[", 1)[0] for part in dotted.split(".")]
    # The general example before its variants: nightly.toml before nightly-cl2.toml.
    for file in sorted(examples.glob("*.toml"), key=lambda f: (len(f.stem), f.name)):
        try:
            node: object = tomllib.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        for part in parts:
            if isinstance(node, list):
                node = node[0] if node else None
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return _shown(file)
    return None


def _shown(file: Path) -> str:
    """`configs/x.toml` from bisector's checkout, else the whole path."""
    try:
        return str(file.relative_to(Path.cwd()))
    except ValueError:
        return str(file)


def load_config(path: Path | str) -> Section:
    """Parse a TOML config file into its root `Section`."""
    return Section(read_toml(path), str(path))
