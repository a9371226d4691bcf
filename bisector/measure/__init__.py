"""Measuring commits: one evaluation, early verdicts, prefetches, the journal, parallel slots."""
