"""Searching a range for the first bad commit.

    base.py       SearchRange, Found, Job, the Search interface
    plain.py      GitBisectSearch: plain git bisect verdicts (the repeats rule)
    noisy.py      PosteriorSearch: probabilistic bisection (posterior.py, likelihood.py)
    decide.py     the repeats rule and the threshold calibration
    strategy.py   which commits a plain round measures
    ahead.py      the builds worth prefetching
    progress.py   what a run tells its progress display (Progress, PhaseStarted, Reading)

Measuring commits is bisector.measure (it speaks base.py, decide.py and progress.py);
the run pipeline that puts these together is bisector.bisection; the progress lines
are printed by bisector.ui.progress_lines.
"""
