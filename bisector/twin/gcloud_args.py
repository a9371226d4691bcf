"""gcloud's command line as Cloud SDK 528.0.0 parses it, from the twin's flag table.

What real gcloud does before it touches credentials or the network (measured
with the SDK 528 installed here, offline and without an account; every message
below is compared with the real one in tests/twin/test_gcloud_strict.py):

* the command path is read word by word (`gcloud beta compute networks subnets
  create`); a flag before the command is complete is checked against that
  group (gcloud-wide flags only): `gcloud compute --zones z instances list` is
  `ERROR: (gcloud.compute) unrecognized arguments: --zones`;
* a flag the command does not have is `unrecognized arguments: --mode=auto (did
  you mean '--subnet-mode'?)`, the suggestion being the closest flag name by
  text distance (difflib, as calliope's TextChoiceSuggester), one per line
  when there are several, then the hint to `gcloud help`; exit 2 (the word after
  an unknown flag is listed too: the twin does not know how many positional
  arguments a command takes and assumes they are all given);
* a flag that takes a value and has none: `argument --zone: expected one
  argument`; a value outside a flag's choices: `argument --subnet-mode: Invalid
  choice: 'bogus'.` with the valid ones; `--flag=value` on a boolean flag:
  `ignored explicit argument 'value'`; `--metadata` twice: `"metadata"
  argument cannot be specified multiple times`; all exit 2;
* boolean flags also take their `--no-` form; `-q` is `--quiet`, `-h` is
  `--help`, `-r` is `--regexp` where the command has `--regexp`;
* `gcloud config get-value` is a hidden alias of `gcloud config get`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from bisector.twin import sdk_table

EXIT_USAGE = 2
_HELP_HINT = "To search the help text of gcloud commands, run:\n  gcloud help -- SEARCH_TERMS"
_ALIASES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("config", "get-value"): ("config", "get")
}  # hidden in the completion tree
_SHORT = {"-q": "--quiet", "-h": "--help", "-r": "--regexp"}
# Flags gcloud declares with StoreOnceAction (googlecloudsdk/api_lib/compute/metadata_utils.py
# AddMetadataArgs, read for this rule).
_STORE_ONCE = frozenset({"--metadata", "--metadata-from-file"})


class UsageError(Exception):
    """What gcloud prints for a command line it refuses, before doing anything: exit 2."""

    def __init__(self, command: str, message: str) -> None:
        super().__init__(f"ERROR: ({command}) {message}")
        self.command = command
        self.code = EXIT_USAGE


@dataclass
class Parsed:
    path: tuple[str, ...]  # e.g. ("beta", "compute", "networks", "create")
    words: list[str] = field(default_factory=list)  # positional arguments
    flags: dict[str, list[str]] = field(default_factory=dict)
    passthrough: list[str] = field(default_factory=list)  # after `--`

    @property
    def command(self) -> tuple[str, ...]:
        """The path without its release track."""
        return self.path[1:] if self.path[:1] in (("beta",), ("alpha",)) else self.path

    @property
    def name(self) -> str:
        """`gcloud.compute.networks.create`, as gcloud names the command in its errors."""
        return ".".join(("gcloud", *self.path))

    def get(self, name: str, default: str | None = None) -> str | None:
        values = self.flags.get(name)
        return values[-1] if values else default

    def has(self, name: str) -> bool:
        return name in self.flags


@dataclass(frozen=True)
class _Table:
    release: str
    global_flags: dict[str, Any]
    commands: dict[str, dict[str, Any]]
    prefixes: frozenset[str]


@cache
def table() -> _Table:
    data = sdk_table.load()
    commands: dict[str, dict[str, Any]] = data["commands"]
    prefixes = {" ".join(k.split()[:i]) for k in commands for i in range(1, len(k.split()))}
    return _Table(data["release"], data["global"], commands, frozenset(prefixes))


def _kind(flags: dict[str, Any], name: str) -> Any:
    if name in flags:
        return flags[name]
    if name.startswith("--no-") and flags.get("--" + name[5:]) == "bool":
        return "bool"
    return None


def parse(argv: list[str]) -> Parsed:
    """`argv` (after `gcloud`) as gcloud 528 reads it, or UsageError with its message."""
    t = table()
    path: list[str] = []
    leaf = False
    parsed = Parsed(())
    unknown: list[tuple[str, dict[str, Any]]] = []
    unknown_at = ""
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if token == "--":
            parsed.passthrough = argv[i:]
            break
        flags = {**t.global_flags, **(t.commands[" ".join(path)] if leaf else {})}
        if token.startswith("-") and token != "-":
            name, eq, value = token.partition("=")
            name = _SHORT.get(name, name) if (name != "-r" or "--regexp" in flags) else name
            kind = _kind(flags, name)
            where = ".".join(("gcloud", *path))
            if kind is None:
                unknown_at = unknown_at or where
                unknown.append((token, flags))
                if not eq and i < len(argv) and not argv[i].startswith("-"):
                    # Measured: before the command, gcloud's group parser swallows the word
                    # after an unknown flag; after it, the word is listed as unrecognized
                    # too (when the command's positionals are already given, the case of
                    # every call we make).
                    if leaf:
                        unknown.append((argv[i], {}))
                    i += 1
                continue
            if kind == "bool":
                if eq:
                    raise UsageError(where, f"argument {name}: ignored explicit argument '{value}'")
                parsed.flags.setdefault(name, []).append("true")
                continue
            if not eq:
                if i >= len(argv) or (argv[i].startswith("-") and argv[i] != "-"):
                    raise UsageError(where, f"argument {name}: expected one argument")
                value = argv[i]
                i += 1
            if isinstance(kind, list) and value not in kind:
                raise UsageError(
                    where,
                    f"argument {name}: Invalid choice: '{value}'.\n\n"
                    f"Valid choices are [{', '.join(kind)}].",
                )
            if name in _STORE_ONCE and name in parsed.flags:
                raise UsageError(
                    where,
                    f'argument {name}: "{name[2:]}" argument cannot be specified multiple times',
                )
            parsed.flags.setdefault(name, []).append(value)
            continue
        if leaf:
            parsed.words.append(token)
            continue
        candidate = " ".join([*path, token])
        alias = _ALIASES.get((*path, token))
        if alias is not None and len(path) + 1 == len(alias):
            path, leaf = list(alias), True
        elif candidate in t.commands:
            path, leaf = [*path, token], True
        elif candidate in t.prefixes:
            path.append(token)
        else:
            where = ".".join(("gcloud", *path))
            raise UsageError(where, f"Invalid choice: '{token}'.")
    parsed.path = tuple(path)
    if unknown:
        raise UsageError(unknown_at, _unrecognized(unknown))
    if not leaf:
        raise UsageError(parsed.name, "command or group expected (the twin's table has none here)")
    return parsed


def _unrecognized(unknown: list[tuple[str, dict[str, Any]]]) -> str:
    messages: list[str] = []
    for token, flags in unknown:
        name, _, value = token.partition("=")
        suggestion = None
        if name.startswith("--") or value:
            choices = [*flags, *(s for s, long in _SHORT.items() if long in flags)]
            close = difflib.get_close_matches(name.lower(), choices, 1)
            suggestion = close[0] if close else None
        message = f"{token} (did you mean '{suggestion}'?)" if suggestion else token
        if message not in messages:
            messages.append(message)
    if len(messages) > 1:
        return "unrecognized arguments:\n  " + "\n  ".join([*messages, _HELP_HINT])
    return f"unrecognized arguments: {messages[0]} \n\n{_HELP_HINT}"
