"""The measurement record: what a skip says (the failed step, whether the infrastructure
caused it) and journals written before a field existed, read back into it."""

from __future__ import annotations

import pytest

from bisector.measure.measurement import Measurement


@pytest.mark.parametrize(
    ("reason", "infra"),
    [
        ("launch: launch failed (exited with code 1): quota exceeded", True),
        ("collect: collect did not write the log to $BISECTOR_LOG", True),
        ("log covers 30s of 10m00s: apiserver restarted or log cut short", True),
        ("checkout: git worktree add failed: fatal: bad object", True),
        ("teardown: gcloud compute instances delete failed", True),
        ("build: build failed (exited with code 2): make: *** [quick-release] Error 2", False),
        ("build: instrument patch does not apply: error: patch failed", False),
        ("build: undefined: wait.PollImmediateTimeout", False),
        ("build: build failed (exited with code 1): cp: No space left on device", True),
        ("build: build failed (timed out after 3600s)", True),
        ("build: build failed (was killed by SIGKILL)", True),
    ],
)
def test_an_infrastructure_skip_is_told_from_a_tree_that_does_not_build(
    reason: str, infra: bool
) -> None:
    """As a journal from before `skipped_at` holds them (the step only in the reason)."""
    old = {"commit": "c", "tree": "t", "phase": "bisect", "reason": reason}
    assert Measurement.from_dict(old).infra_skip is infra
    assert not Measurement.from_dict({**old, "value": 3.0}).infra_skip


def test_the_failed_step_is_a_field_not_the_reason_text() -> None:
    """A launch failure whose message happens to begin `build:` is the infrastructure's
    (it was read as the tree's while the step was the reason's first word)."""
    launch = Measurement("c", "t", "bisect", reason="build: x", skipped_at="launch")
    assert launch.infra_skip
    assert not Measurement("c", "t", "bisect", reason="it broke", skipped_at="build").infra_skip
    written = Measurement.from_dict(launch.to_dict())  # a new journal keeps the field
    assert written.skipped_at == "launch" and written.infra_skip


def test_a_journal_line_from_before_phase_times_still_reads() -> None:
    old = {"commit": "c" * 40, "tree": "t", "phase": "bisect", "value": 3.0, "duration_s": 9.0}
    m = Measurement.from_dict(old)
    assert m.phase_s == {} and m.value == 3.0


def test_an_old_journal_line_stopped_early_was_a_bad_stop() -> None:
    m = Measurement.from_dict(
        {"commit": "c", "tree": "t", "phase": "bisect", "value": 300.0, "stopped_early": "x"}
    )
    assert m.early_verdict == "bad"
