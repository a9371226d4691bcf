"""The twin's state directory: what exists in the fake project, and every call made.

`<home>/state.json` holds the resources (instances, disks, addresses, firewall
rules, networks, instance templates, managed instance groups, buckets and
objects, images, the base clusters' kubemark objects); `<home>/calls.jsonl` has
one line per call of any shim (argv, cwd, exit code). Calls of parallel scripts
(kube-up.sh runs several gcloud commands in the background) are serialised by a
lock on `<home>/lock`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = (
    "instances",
    "disks",
    "addresses",
    "firewall-rules",
    "networks",
    "routes",
    "instance-templates",
    "instance-groups",
    "buckets",
    "images",
    "clusters",
    "repositories",
)

Resources = dict[str, dict[str, Any]]


class Unmodelled(Exception):
    """A call the twin does not model: the shim exits non-zero saying so."""


class Refused(Exception):
    """A call the real tool refuses: its message on stderr and its exit code (1, the code of
    gcloud's and gsutil's API errors, unless said otherwise; ssh passes on its 255)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class TwinState:
    resources: dict[str, Resources] = field(default_factory=lambda: {k: {} for k in KINDS})
    settings: dict[str, Any] = field(default_factory=dict)
    counter: int = 0
    fired: dict[str, int] = field(default_factory=dict)  # injected faults: times each fired

    def kind(self, kind: str) -> Resources:
        return self.resources.setdefault(kind, {})

    def next_ip(self) -> str:
        self.counter += 1
        return f"203.0.113.{self.counter % 250 + 1}"

    def leftovers(self) -> dict[str, list[str]]:
        """Everything that would still cost money (buckets and images are storage)."""
        billable = ("instances", "disks", "addresses", "firewall-rules", "networks", "routes",
                    "instance-templates", "instance-groups")  # fmt: skip
        return {k: sorted(self.kind(k)) for k in billable if self.kind(k)}


class Home:
    """The twin's directory: bin/ (the shims), state.json, calls.jsonl, settings.json."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path).absolute()

    @property
    def bin(self) -> Path:
        return self.path / "bin"

    @property
    def state_file(self) -> Path:
        return self.path / "state.json"

    @property
    def calls_file(self) -> Path:
        return self.path / "calls.jsonl"

    @property
    def scheduling_file(self) -> Path:
        """One line per hollow-node ReplicationController the base clusters scheduled."""
        return self.path / "scheduling.jsonl"

    def scheduling(self) -> list[dict[str, Any]]:
        try:
            text = self.scheduling_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    @property
    def settings_file(self) -> Path:
        return self.path / "settings.json"

    def settings(self) -> dict[str, Any]:
        try:
            data = json.loads(self.settings_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        assert isinstance(data, dict)
        return data

    def load(self) -> TwinState:
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return TwinState(settings=self.settings())
        state = TwinState(
            data["resources"], self.settings(), data.get("counter", 0), data.get("fired", {})
        )
        for kind in KINDS:
            state.resources.setdefault(kind, {})
        return state

    def save(self, state: TwinState) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {"resources": state.resources, "counter": state.counter, "fired": state.fired},
                indent=1,
            ),
            encoding="utf-8",
        )
        tmp.replace(self.state_file)

    @contextlib.contextmanager
    def locked(self) -> Iterator[TwinState]:
        """The state, loaded under the lock and saved when the block ends without error.

        A refused call changes nothing in the project (as a refused API request), but the
        injected faults it fired are counted (their `times`)."""
        self.path.mkdir(parents=True, exist_ok=True)
        with (self.path / "lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                state = self.load()
                try:
                    yield state
                except Refused:
                    if state.fired:
                        kept = self.load()
                        kept.fired = state.fired
                        self.save(kept)
                    raise
                self.save(state)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def record(self, tool: str, argv: list[str], code: int, note: str = "") -> None:
        line = {"tool": tool, "argv": argv, "cwd": str(Path.cwd()), "code": code}
        if note:
            line["note"] = note
        with self.calls_file.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")

    def calls(self) -> list[dict[str, Any]]:
        try:
            text = self.calls_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]
