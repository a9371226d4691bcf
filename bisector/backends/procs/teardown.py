"""Stopping a slot's cluster: every process carrying its tag, then its temporary root
(`python -m bisector.backends.procs.stop`, the step resources.json records at launch for
`bisector cleanup`). A failure keeps the record and raises."""

from __future__ import annotations

import logging

from bisector import proc
from bisector.backends.procs import build as pb
from bisector.backends.procs import cluster as pc
from bisector.backends.procs.launch import slot_prefix
from bisector.backends.procs.running import Clusters
from bisector.backends.resources import ResourceRecord
from bisector.backends.steps import Step, run_step, tail
from bisector.errors import InfraError

log = logging.getLogger("bisector.procs")


def stop_slot(
    slot: int, clusters: Clusters, record: ResourceRecord, stop_grace: float, mark: str
) -> None:
    """Stop the slot's cluster and drop its record.

    With no cluster in memory (a launch that failed early, a backend object made
    anew), the slot's clusters recorded in resources.json are stopped by their
    recorded steps. When no cluster runs any more, this run's builds ahead (`mark`) go
    at full speed again."""
    running = clusters.pop(slot)
    stops: list[tuple[str, tuple[Step, ...]]]
    if running is not None:
        stops = [(running.resource_id, (pc.stop_step(running.layout, stop_grace),))]
    else:
        # `procs/slot-N`: the one id per slot that run directories recorded before a
        # launch had an id of its own.
        prefix, legacy = slot_prefix(slot), f"procs/slot-{slot}"
        stops = [
            (r.id, r.teardown) for r in record.load() if r.id.startswith(prefix) or r.id == legacy
        ]
    for resource_id, steps in stops:
        for s in steps:
            try:
                run_step(s)
            except proc.CommandError as exc:
                log.warning(
                    "stopping the local cluster failed (%s); run `bisector cleanup`", tail(exc)
                )
                raise InfraError(
                    f"the local cluster of slot {slot} was not stopped: "
                    f"{tail(exc)}; run `bisector cleanup`"
                ) from None
        record.remove(resource_id)
    if clusters.idle():  # no cluster to disturb: builds ahead go at full speed (needs CAP_SYS_NICE)
        pb.reprioritize(0, mark)
