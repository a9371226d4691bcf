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
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from difflib import get_close_matches
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from bisector.durations import parse_duration
from bisector.errors import BisectorError, ConfigError
from bisector.inputs import open_input

T = TypeVar("T")
_MISSING: object = object()
DEFAULTS = "<defaults>"  # the file of a Section read from no file: no --config was given
# The shipped example configs, in a checkout (and an editable install); absent in a wheel.
EXAMPLES = Path(__file__).resolve().parents[1] / "configs"
MAX_CONFIG_BYTES = 16 << 20  # far past any config (the largest shipped one is a few kB)


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
        _no_nul(value, self._where(key))
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

    def check_tables(self, allowed: Iterable[str]) -> None:
        """Reject a table nobody reads (`[serch]`, `[backend.sim]`), naming the nearest known
        one: its keys would be silently unused and the defaults run instead."""
        known = sorted(set(allowed))
        for key in self.data:
            if key not in known:
                close = get_close_matches(key, known, n=1)
                hint = f"did you mean [{self._dotted(close[0])}]? " if close else ""
                place = "no --config FILE" if self.file == DEFAULTS else self.file
                # A key outside the known tables (`warmup = "1m"` above `[run]`) is no table.
                what = (
                    f"`[{self._dotted(key)}]` is not a known table"
                    if isinstance(self.data[key], dict)
                    else f"key `{self._dotted(key)}` is in no known table"
                )
                raise ConfigError(
                    f"{place}: {what}; {hint}known tables here: "
                    + ", ".join(self._dotted(k) for k in known)
                )

    def _dotted(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def with_overrides(self, overrides: Mapping[str, object]) -> Section:
        """A copy where the non-None `overrides` (CLI flags) replace file values."""
        given = {k: v for k, v in overrides.items() if v is not None}
        merged = {**self.data, **given}
        return Section(merged, self.file, self.path, self.from_flags | frozenset(given))

    def fingerprint(self) -> str:
        """Stable hash of the contents, for caching verdicts per configuration."""
        blob = json.dumps(self.data, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def _no_nul(value: object, where: str) -> None:
    """A NUL in a string (TOML's "\\u0000") is no command, path or name: the OS refuses it
    in an argument, and `subprocess` raised ValueError from doctor (a traceback)."""
    texts = value if isinstance(value, list) else [value]
    if any(isinstance(t, str) and "\0" in t for t in texts):
        raise ConfigError(f"{where}: a string holds a NUL character (\\u0000); remove it")


def read_toml(path: Path | str, what: str = "config file") -> dict[str, object]:
    """The parsed TOML file at `path`; `ConfigError` says what is wrong with it."""
    file = Path(path)
    try:
        # Bounded: `--config /dev/zero` would read until the kernel's OOM killer ends
        # bisector (exit 137, the machine's memory gone meanwhile). A FIFO (`<(...)`) still works.
        with open_input(file) as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        if not data and not file.is_file():  # a FIFO nobody writes to: not the defaults
            raise ConfigError(f"{what} {file} gave nothing to read; pass the TOML file")
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"{what} {file} holds more than {MAX_CONFIG_BYTES >> 20} MiB: no config is that "
                "large (an endless input such as /dev/zero?); pass the TOML file"
            )
        text = data.decode("utf-8")
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


# Declared settings: one `setting(...)` per key, as a dataclass field, from which the
# table's known keys (`keys_of`), the typed values, the range checks and their error
# lines all come (`read_settings`). A key is written once: its field's name.
# "path": a directory bisector creates when absent (a cache), so never an existing file;
# "dir": one that must exist; "file": an existing regular file.
Kind = Literal[
    "str", "int", "float", "bool", "duration", "str_list", "path", "dir", "file", "table"
]
REQUIRED: object = _MISSING  # a key the file must set
_SPEC = "bisector.setting"
S = TypeVar("S")


@dataclass(frozen=True)
class Flag:
    """A key that a command line can also set (`bisector run`'s flags): `--name-of-key`, or
    the command's positional arguments; its help is the key's doc."""

    metavar: str = ""  # the value's name in the help (N, DURATION); "" for a switch
    positional: bool = False  # the command's arguments (`-- PATH...`), not an option


@dataclass(frozen=True)
class Key:
    """One setting: its type, default (in the file's own form: "5m", 100), bounds and doc."""

    kind: Kind
    default: object
    doc: str
    low: float | None = None  # at least
    high: float | None = None  # at most
    above: float | None = None  # more than (a timeout of 0 fails every command at once)
    below: float | None = None  # less than
    choices: tuple[str, ...] = ()
    why: str = ""  # why the bound holds, said with it (memory, ports, open files ...)
    # A key read its own way (a patch name resolved to a file, tables of build fixes): the
    # function gets the section and the key's name and returns the field's value.
    reader: Callable[[Section, str], object] | None = None
    automatic: int | None = None  # the value that means "bisector decides" (read as None)
    flag: Flag | None = None  # also a command-line flag (None: the file only)

    def read(self, s: Section, name: str) -> object:
        """The key's value from `s` (or its default), checked against its bounds."""
        if self.reader is not None:
            return self.reader(s, name)
        if self.default is None and name not in s:
            return None
        default = self.default
        if self.kind in ("path", "dir", "file"):
            text = s.get_str(name) if default is REQUIRED or name in s else None
            if text is None:
                return default() if callable(default) else default
            if not text.strip():  # Path("") is the current directory: a cache or tmpdir there
                raise ConfigError(
                    f"{s.where(name)} is empty; write a path or leave the key out for the default"
                )
            path = Path(text).expanduser().absolute()
            if self.kind == "dir" and not path.is_dir():
                raise ConfigError(
                    f"{s.where(name)} = {text!r} is not an existing directory; create it "
                    "or leave the key out for the default (bisector creates nothing there)"
                )
            if self.kind == "path" and path.exists() and not path.is_dir():
                # Found only at the first build otherwise (`mkdir` or Go's GOCACHE failing
                # on a file), after the endpoints' clusters had been planned.
                raise ConfigError(
                    f"{s.where(name)} = {text!r} exists and is not a directory; name a "
                    "directory (bisector creates it when absent) or leave the key out"
                )
            if self.kind == "file" and not path.is_file():
                raise ConfigError(
                    f"{s.where(name)} = {text!r} is not an existing regular file; "
                    "name the file or leave the key out"
                )
            return path
        value: object
        if self.kind == "duration":
            value = s.get_duration(name, default)
        elif self.kind == "int":
            value = s.get_int(name, default)
        elif self.kind == "float":
            value = s.get_float(name, default)
        elif self.kind == "bool":
            value = s.get_bool(name, default)
        elif self.kind == "str_list":
            fallback = list(default) if isinstance(default, tuple) else default
            value = tuple(s.get_str_list(name, fallback))
        elif self.kind == "table":
            value = s.table(name)
        else:
            value = s.get_str(name, default)
        self._not_blank(s, name, value)
        self.check(s, name, value)
        return None if self.automatic is not None and value == self.automatic else value

    def _not_blank(self, s: Section, name: str, value: object) -> None:
        """An empty name, command or bucket (`bucket = ""`), or an empty item of a list, is
        refused here, not found after a launch or never: kube-apiserver ignores an empty
        argument (`apiserver_args = [""]`: 2017's flag.InitFlags leaves it an unread
        positional, v1.32's cobra Args skips len(arg) == 0), so the flag the user meant
        to pass (a template that expanded to nothing) silently is not there. A key whose
        default is "" declares that empty means something (no selector)."""
        blank = isinstance(value, str) and not value.strip()
        if self.kind == "str" and self.default != "" and blank:
            raise ConfigError(
                f"{s.where(name)} is empty ({value!r}); write a value or leave the key "
                "out for the default"
            )
        if self.kind == "str_list" and isinstance(value, tuple):
            for i, item in enumerate(value):
                if not item.strip():
                    raise ConfigError(
                        f"{s.where(name)}: item {i + 1} of {list(value)!r} is empty; "
                        "remove it (an empty argument is no flag: the program ignores it)"
                    )

    def check(self, s: Section, name: str, value: object) -> None:
        """One line naming the file, the table path, the key, the value and the bound."""
        if self.choices and value not in self.choices:
            because = f" ({self.why})" if self.why else ""
            raise ConfigError(
                f"{s.where(name)} must be one of {', '.join(self.choices)}{because}, got {value!r}"
            )
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return
        shown = _shown_value(s, name, value)
        unit = "s" if self.kind == "duration" else ""
        # `why` explains the upper bound when there is one (a count's lower bound of 1
        # needs none), else the lower one.
        upper = self.high is not None or self.below is not None
        broken = (
            (self.above is not None and value <= self.above, "more than", self.above, not upper),
            (self.low is not None and value < self.low, "at least", self.low, not upper),
            (self.high is not None and value > self.high, "at most", self.high, True),
            (self.below is not None and value >= self.below, "less than", self.below, True),
        )
        for wrong, word, bound, explained in broken:
            if wrong and bound is not None:
                because = f" ({self.why})" if self.why and explained else ""
                raise ConfigError(
                    f"{s.where(name)} must be {word} {_number(bound)}{unit}{because}, got {shown}"
                )


def _number(bound: float) -> str:
    """1,048,576 and 0.5: a bound as a reader counts it."""
    return f"{int(bound):,}" if float(bound).is_integer() else f"{bound:g}"


def _shown_value(s: Section, name: str, value: object) -> str:
    """The value as the user wrote it ("0s"), else as read."""
    written = s.data.get(name, value)
    return repr(written) if isinstance(written, str) else f"{written}"


def setting(
    kind: Kind,
    default: object = REQUIRED,
    doc: str = "",
    *,
    low: float | None = None,
    high: float | None = None,
    above: float | None = None,
    below: float | None = None,
    choices: tuple[str, ...] = (),
    why: str = "",
    reader: Callable[[Section, str], object] | None = None,
    automatic: int | None = None,
    flag: Flag | None = None,
) -> Any:
    """A dataclass field that is also a config key (see `Key`); `default` may be a function
    of no arguments for a default computed when read (a cache directory)."""
    key = Key(kind, default, doc, low, high, above, below, choices, why, reader, automatic, flag)
    metadata = {_SPEC: key}
    if default is REQUIRED or reader is not None or callable(default):
        return field(metadata=metadata)
    if automatic is not None and default == automatic:
        return field(default=None, metadata=metadata)
    if kind == "duration" and isinstance(default, (str, int, float)):
        # Seconds as a float, as the file's value is read: the default is the same value.
        return field(default=parse_duration(default), metadata=metadata)
    if kind == "str_list":
        return field(default=tuple(cast("Iterable[str]", default)), metadata=metadata)
    if kind in ("path", "dir", "file") and isinstance(default, str):
        return field(default=Path(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def key_specs(cls: type) -> dict[str, Key]:
    """The declared keys of a settings dataclass, in declaration order."""
    return {f.name: f.metadata[_SPEC] for f in fields(cls) if _SPEC in f.metadata}


def keys_of(cls: type) -> tuple[str, ...]:
    """The table's known keys: the names of `cls`'s declared settings."""
    return tuple(key_specs(cls))


def read_settings(cls: type[S], s: Section, **given: object) -> S:
    """`cls` from the section `s`: unknown keys refused, every key read and checked as
    declared; `given` fills the fields that are not keys (a run directory)."""
    s.check_keys(keys_of(cls))
    values = {name: key.read(s, name) for name, key in key_specs(cls).items()}
    return cast("Callable[..., S]", cls)(**values, **given)
