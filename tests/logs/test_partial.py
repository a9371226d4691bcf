"""Write times keep their order and index; undated runs cost a count, not 8 bytes a write."""

from __future__ import annotations

import math
import pickle
from array import array

import pytest

from bisector.logs.partial import WriteTimes


def test_write_times_index_across_dated_and_undated_runs() -> None:
    first, later = WriteTimes(), WriteTimes()
    first.add(array("d", [1.0, 2.0]))
    first.add_undated(3)
    first.add_undated(2)
    later.add(array("d", [10.0]))
    later.add(array("d", [11.0]))
    later.add_undated(1)
    first.extend(pickle.loads(pickle.dumps(later)))  # partials come back from workers
    assert len(first) == 2 + 5 + 2 + 1
    assert [first[i] for i in (0, 1, 7, 8)] == [1.0, 2.0, 10.0, 11.0]
    assert all(math.isnan(first[i]) for i in (2, 3, 4, 5, 6, 9))
    with pytest.raises(IndexError):
        first[10]


def test_undated_writes_do_not_grow_memory() -> None:
    times = WriteTimes()
    for _ in range(1000):
        times.add_undated(100_000)
    assert len(times) == 100_000_000
    assert len(pickle.dumps(times)) < 1000
