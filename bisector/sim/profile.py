"""The code-level parameters of the simulated apiserver node path, as a tree builds them.

A candidate's tree carries them in a small TOML file (by default
`hack/kubemark-sim.toml`): whether the node Cacher indexes watches by
`metadata.name` (its trigger function), what dispatching an event costs, and the
channel and buffer sizes. A tree whose profile is missing or invalid "does not
build": the backend turns `ProfileError` into a skip.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from bisector.config import Section, read_toml
from bisector.errors import ConfigError


class ProfileError(Exception):
    """The profile is missing or holds something the model cannot run."""


@dataclass(frozen=True)
class SimProfile:
    # With the trigger function an event is offered to the node's own kubelet and
    # the 5 other node watchers; without it, to every watcher (N kubelets + 5).
    trigger_index: bool = True
    incoming_capacity: int = 100  # the cacher's incoming channel
    # Cost of dispatching one event: a fixed part plus a part per watcher offered to.
    # 5005 watchers x 1.6us + 0.2ms = 8.2ms per event, ~120 events/s: below the
    # ~167/s a 5000-node cluster writes even when every kubelet patch conflicts.
    dispatch_base_us: float = 200.0
    dispatch_per_watcher_us: float = 1.6
    kubelet_watcher_buffer: int = 10
    watcher_buffer: int = 1000
    # How fast a watcher's goroutine drains its buffer, events/s; a watcher whose
    # buffer stays full longer than `watcher_block_timeout_s` is force-closed.
    kubelet_watcher_drain_per_s: float = 2000.0
    watcher_drain_per_s: float = 5000.0
    watcher_block_timeout_s: float = 5.0
    # Status tries per round (pkg/kubelet/kubelet.go nodeStatusUpdateRetry = 5, 7043372):
    # a round gives up after this many 409s.
    kubelet_retries: int = 5
    status_period_s: float = 10.0  # kubelet --node-status-update-frequency
    npd_period_s: float = 30.0  # node-problem-detector condition updates

    def describe(self) -> str:
        index = "on" if self.trigger_index else "OFF"
        return (
            f"trigger index {index}, dispatch {self.dispatch_base_us:g}us + "
            f"{self.dispatch_per_watcher_us:g}us/watcher, incoming channel "
            f"{self.incoming_capacity}, watcher buffers {self.kubelet_watcher_buffer}/"
            f"{self.watcher_buffer}"
        )


_POSITIVE = {
    "incoming_capacity",
    "kubelet_watcher_buffer",
    "watcher_buffer",
    "kubelet_watcher_drain_per_s",
    "watcher_drain_per_s",
    "watcher_block_timeout_s",
    "status_period_s",
    "kubelet_retries",
    "npd_period_s",
}


def parse_profile(section: Section) -> SimProfile:
    """A profile from a TOML table; `ConfigError` names the file and key on error."""
    defaults = SimProfile()
    section.check_keys(f.name for f in fields(SimProfile))
    values: dict[str, object] = {}
    for f in fields(SimProfile):
        default = getattr(defaults, f.name)
        value: object
        if isinstance(default, bool):
            value = section.get_bool(f.name, default)
        elif isinstance(default, int):
            value = section.get_int(f.name, default)
        else:
            value = section.get_float(f.name, default)
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if numeric and (value < 0 or (f.name in _POSITIVE and value == 0)):
            bound = "positive" if f.name in _POSITIVE else "zero or more"
            raise ConfigError(f"{section.file}: key `{f.name}` must be {bound}, got {value}")
        values[f.name] = value
    return SimProfile(**values)  # type: ignore[arg-type]


def load_profile(path: Path) -> SimProfile:
    """Read and validate the profile at `path`; `ProfileError` says what is wrong."""
    try:
        data = read_toml(path, "simulator profile")
        return parse_profile(Section(data, str(path)))
    except ConfigError as exc:
        raise ProfileError(str(exc)) from None


def render_profile(profile: SimProfile) -> str:
    """The TOML text of `profile` (used to write the demo repository's trees)."""
    lines = ["# kubemark-sim profile: the apiserver node path as this tree builds it"]
    for f in fields(SimProfile):
        value = getattr(profile, f.name)
        text = ("true" if value else "false") if isinstance(value, bool) else repr(value)
        lines.append(f"{f.name} = {text}")
    return "\n".join(lines) + "\n"
