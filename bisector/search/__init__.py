"""Searching a range for the first bad commit, and measuring commits for it.

    base.py       SearchRange, Found, Job, the Search interface
    plain.py      GitBisectSearch: plain git bisect verdicts (the repeats rule)
    noisy.py      PosteriorSearch: probabilistic bisection (posterior.py, likelihood.py)
    evaluator.py  Evaluator: measures commits (journal first), nothing else
    measure.py    one evaluation: build, launch, warmup, collect, score, teardown
    journal.py    the run's journal (typed records) and the measurement cache
    decide.py     the repeats rule and the threshold calibration
    strategy.py   which commits a plain round measures
    parallel.py   K slots at once
    progress.py   the progress line

The run pipeline that puts these together is bisector.bisection.
"""
