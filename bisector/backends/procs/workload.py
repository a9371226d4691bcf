"""The `procs` backend's `workload`: a user's command run against the cluster during the warmup.

`[backends.procs] workload = "..."` is bash, run in the candidate's worktree once the
warmup starts (after the first /metrics snapshots), as a daemon of the cluster: through
the one process door (`daemon_step`), tagged with the cluster's BISECTOR_PROCS_CLUSTER,
so the teardown and `bisector cleanup` stop it and whatever it started with the tags
(bisector.backends.procs.stop). Its output (the first WORKLOAD_LOG_BYTES) goes to
`<eval>/cluster/workload.log`, kept in the evaluation's log directory by `collect`.

Its environment, as the kind and local backends' workloads get theirs: KUBECONFIG (the
cluster's, with the CA and token when it serves securely), BISECTOR_APISERVER (its URL),
BISECTOR_ETCD (etcd's client URL), BISECTOR_CA_FILE and BISECTOR_TOKEN_FILE (secure
serving only), BISECTOR_COMMIT, BISECTOR_WORKTREE, BISECTOR_EVAL_DIR, BISECTOR_LOG_DIR
and BISECTOR_REPORT_DIR (`<log dir>/cl2`, for a ClusterLoader2 report).

A workload that exits non-zero is a skip saying its exit and its log's first error line;
one that exits 0 ends the warmup there when `workload_ends_warmup` is set (at `[run]
warmup` at the latest), else the warmup runs on; one still running when the warmup ends
is stopped (SIGTERM to its process group, SIGKILL after `stop_grace`): the window
measured is the warmup's, whatever the workload had left to do.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from bisector.backends.base import Candidate
from bisector.backends.procs import cluster as pc
from bisector.backends.procs import processes as pp
from bisector.backends.steps import Step
from bisector.collected import CL2_REPORT_DIR

LOG = "workload.log"
# What of the workload's output is kept: as much as `first_error` reads (processes.py
# _SCAN_BYTES). A workload that floods its output (`yes`: ~180 MB/s here) filled
# workload.log for the whole warmup and collect copied it again: gigabytes per evaluation.
WORKLOAD_LOG_BYTES = 16 << 20
# The user's command runs as `bash -c "$1"` (no quoting of it), its output through `head`
# (unbuffered, `stdbuf -o0`: GNU head writes through stdio, and a workload stopped at the
# warmup's end would lose what it said); the rest is read and counted, never written, so
# the workload neither blocks nor gets a SIGPIPE; pipefail keeps its exit status.
_CAPPED = (
    'set -o pipefail; bash -c "$1" 2>&1 | {{ stdbuf -o0 head -c {limit}; n=$(wc -c); '
    'if [ "$n" -gt 0 ]; then echo; echo "[bisector: about $n more bytes of output dropped: the '
    "workload's log keeps its first {limit} bytes]\"; fi; }}"
)


def log_of(layout: pc.Layout) -> Path:
    return layout.files.directory / LOG


def environment(layout: pc.Layout, candidate: Candidate) -> dict[str, str]:
    """What the workload is told about the cluster and the run."""
    env = {
        "KUBECONFIG": str(layout.files.kubeconfig),
        "BISECTOR_APISERVER": layout.server,
        "BISECTOR_ETCD": f"http://127.0.0.1:{layout.ports.etcd_client}",
        "BISECTOR_COMMIT": candidate.commit,
        "BISECTOR_WORKTREE": str(candidate.worktree),
        "BISECTOR_EVAL_DIR": str(candidate.eval_dir),
        "BISECTOR_LOG_DIR": str(candidate.log_dir),
        "BISECTOR_REPORT_DIR": str(candidate.log_dir / CL2_REPORT_DIR),
    }
    if layout.secure:
        c = layout.credentials
        env["BISECTOR_CA_FILE"] = str(c.ca)
        env["BISECTOR_TOKEN_FILE"] = str(c.client_token)
    return env


def workload_step(command: str, layout: pc.Layout, candidate: Candidate) -> Step:
    """The workload as a cluster daemon (its pid printed), in the candidate's worktree, its
    output capped at WORKLOAD_LOG_BYTES."""
    capped = _CAPPED.format(limit=WORKLOAD_LOG_BYTES)
    started = pc.daemon_step(
        ["bash", "-c", capped, "workload", command],
        log_of(layout),
        layout,
        environment(layout, candidate),
    )
    return dataclasses.replace(started, cwd=str(candidate.worktree))


@dataclass(frozen=True)
class Ended:
    """How a workload ended: its exit status as bash's `wait` gives it."""

    status: int

    @property
    def ok(self) -> bool:
        return self.status == 0


def ended(layout: pc.Layout) -> Ended | None:
    """None while the workload runs (no exit status written yet)."""
    with contextlib.suppress(OSError, ValueError):
        text = pc.exit_file(log_of(layout)).read_text().strip()
        if text:
            return Ended(int(text))
    return None


def failure(layout: pc.Layout, how: Ended) -> str:
    """A skip's reason: how it ended and what its log says went wrong."""
    log = log_of(layout)
    return (
        f"the workload failed ({pp.describe_status(how.status)}); its log {log}: "
        f"{pp.first_error(log)}"
    )


def stop(pid: int, grace_s: float, poll_s: float = 0.1) -> None:
    """SIGTERM to the workload's process group (it and what it started), SIGKILL after
    `grace_s`. The group is the one its start step made (bisector.proc starts each command
    in a session of its own), never another daemon's."""
    try:
        group = os.getpgid(pid)
    except ProcessLookupError:
        return
    if group == os.getpgid(0):  # never our own group
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if pp.cpu_seconds(pid) is None:
            return
        time.sleep(poll_s)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
