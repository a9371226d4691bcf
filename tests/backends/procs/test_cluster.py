"""Where a cluster lives (bisector/backends/procs/cluster.py): daemons started in batches,
ports outside the ephemeral range."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from bisector.backends.procs import cluster as pc
from tests.helpers.procs_backend import cluster_layout


def test_hollow_nodes_start_in_batches_each_with_its_own_pid_exit_and_environment(
    tmp_path: Path,
) -> None:
    """One bash starts a batch (a bash per node cost 0.1-0.2 s each on a busy machine):
    the pids come back in order, each daemon gets its own environment, and each one's exit
    status lands beside its own log, as `daemon_step` does for one."""
    layout = cluster_layout(tmp_path, False)
    daemons = [
        pc.Daemon(
            ["bash", "-c", f'echo "$WHO"; exit {i}'], tmp_path / f"d{i}.log", (("WHO", f"d{i}"),)
        )
        for i in range(3)
    ]
    done = subprocess.run(list(pc.daemons_step(daemons, layout).cmd), capture_output=True,
                          text=True, check=True, timeout=30)  # fmt: skip
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 3
    for i, d in enumerate(daemons):
        assert int(d.log.with_suffix(".pid").read_text()) == pids[i]
        exit_file = pc.exit_file(d.log)
        deadline = time.monotonic() + 10  # a bound against a hang, not a timing
        while not exit_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert exit_file.read_text().strip() == str(i)
        assert d.log.read_text() == f"d{i}\n"


def test_ports_are_free_distinct_and_outside_the_ephemeral_range(tmp_path: Path) -> None:
    # The load generator's 16,000 connections take ephemeral ports: a kubelet port picked
    # there was taken before the hollow node bound it.
    low, high = pc.ephemeral_range()
    ports = pc.Ports.pick(50)
    every = [ports.etcd_client, ports.etcd_peer, ports.apiserver]
    every += [p for pair in ports.kubelets for p in pair]
    assert len(set(every)) == len(every) == 103
    assert all(pc.MIN_PORT <= p <= 65535 and not low <= p <= high for p in every)
    ranges = tmp_path / "range"
    ranges.write_text("1024\t65000\n")
    assert pc.ephemeral_range(ranges) == (1024, 65000)
    narrow = pc.Ports.pick(1, ephemeral=(10000, 65000))
    assert all(p > 65000 for p in (narrow.etcd_client, narrow.apiserver, *narrow.kubelets[0]))
