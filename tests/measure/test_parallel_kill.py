"""The interrupt's kill of running commands spares teardowns (`proc.protected`) and kills
the others, however their starts and the kill interleave."""

from __future__ import annotations

import threading
import time

from bisector import proc
from bisector.measure.parallel import kill_running_commands


def test_the_kill_spares_a_teardown_and_stops_a_build() -> None:
    outcome: dict[str, object] = {}

    def build() -> None:
        try:
            proc.run(["sleep", "30"])
            outcome["build"] = "finished"
        except proc.CommandError as exc:
            outcome["build"] = exc.why

    def teardown() -> None:
        with proc.protected():
            outcome["teardown"] = proc.run(["sh", "-c", "sleep 1; echo deleted"]).stdout.strip()

    threads = [threading.Thread(target=build), threading.Thread(target=teardown)]
    for thread in threads:
        thread.start()
    time.sleep(0.3)  # both running
    started = time.monotonic()
    kill_running_commands()
    for thread in threads:
        thread.join(20)
    assert time.monotonic() - started < 10
    assert outcome["build"] == "was killed by SIGKILL"
    assert outcome["teardown"] == "deleted"  # ran to its end
