"""The posterior over the culprit's position and the per-run likelihoods."""

from __future__ import annotations

import math

import pytest

from bisector.search.likelihood import MetricLikelihood, VerdictLikelihood
from bisector.search.posterior import Posterior


def _post(n: int) -> Posterior:
    return Posterior([f"c{i}" for i in range(n)])


def test_first_pick_is_the_median_and_an_observation_moves_the_mass() -> None:
    post = _post(9)  # position 8 is the known-bad end
    assert post.picks(1) == [3] or post.picks(1) == [4]
    bad = VerdictLikelihood(0.1, 10.0)(50.0)
    post.observe(4, *bad)
    cdf = post.cdf()
    assert cdf[4] == pytest.approx(0.9 * 5 / (0.9 * 5 + 0.1 * 4))
    assert post.picks(1)[0] < 4


def test_picks_take_the_nearer_neighbour_of_the_quantile() -> None:
    # Mass piled on position 5: rounding the median up would query 5 forever
    # (an observation there cannot split it); the neighbour below is nearer.
    post = Posterior([f"c{i}" for i in range(10)], [1, 1, 1, 1, 1, 60, 1, 1, 1, 1])
    cdf = post.cdf()
    assert cdf[4] < 0.5 < cdf[5]
    (pick,) = post.picks(1)
    assert pick == (4 if abs(cdf[4] - 0.5) < abs(cdf[5] - 0.5) else 5)
    post2 = Posterior([f"c{i}" for i in range(10)], [1, 1, 1, 1, 1, 1, 1, 1, 60, 1])
    assert post2.picks(1) == [7]  # the mode's lower neighbour, not the mode itself


def test_k_picks_sit_at_the_quantiles() -> None:
    post = _post(101)
    assert post.picks(4) == [19, 39, 60, 80]  # cdf[i] = (i + 1) / 101, nearest to j / 5


def test_skipped_positions_group_with_the_next_measurable_one_and_are_never_picked() -> None:
    post = _post(6)
    post.skip(2)
    post.skip(3)
    groups = [(g.first, g.last) for g in post.groups()]
    assert groups == [(0, 0), (1, 1), (2, 4), (5, 5)]
    assert not {2, 3} & set(post.picks(4))
    likelihood = VerdictLikelihood(0.01, 1.0)
    post.observe(1, *likelihood(0.0))  # 1 is good
    post.observe(4, *likelihood(2.0))  # 4 is bad
    best = post.best()
    assert (best.first, best.last) == (2, 4) and best.mass > 0.97
    assert post.decided(0.95) == {1: "good", 4: "bad", 2: "skip", 3: "skip"}


def test_smallest_range_holding_the_mass() -> None:
    post = Posterior([f"c{i}" for i in range(8)], [1, 1, 10, 30, 40, 10, 1, 1])
    lo, hi, mass = post.smallest_range(0.9)
    assert (lo, hi) == (2, 5)
    assert mass == pytest.approx(90 / 94)


def test_verdict_likelihood_odds() -> None:
    bad, good = VerdictLikelihood(0.2, 10.0)(10.0)
    assert bad - good == pytest.approx(math.log(4))
    bad, good = VerdictLikelihood(0.2, 10.0)(9.0)
    assert good - bad == pytest.approx(math.log(4))


def test_metric_likelihood_is_monotone_and_clamped_while_the_sides_overlap() -> None:
    model = MetricLikelihood.fit([100, 130, 80], [160, 200, 130])
    assert model.clamp == 99.0  # overlapping sides: never more than 99:1 per run
    ratios = [model(v)[0] - model(v)[1] for v in (0, 90, 120, 150, 300, 100_000)]
    assert ratios == sorted(ratios)
    assert ratios[-1] == pytest.approx(math.log(99))
    assert ratios[0] == pytest.approx(-math.log(99))


def test_metric_likelihood_of_separated_sides_is_decisive() -> None:
    model = MetricLikelihood.fit([100, 100, 100], [10_000, 10_000, 10_000])
    assert model.separation > 50
    bad, good = model(10_000)
    assert bad - good == pytest.approx(math.log(1e6))
