"""ToE's rule-based aggregation against values worked out by hand (spec 7, paper §III-D)."""

from __future__ import annotations

import math
import random

import pytest

from verity.errors import BadInputError
from verity.methods.toe.aggregate import Scored, rule_aggregate, rule_parts

HAND = [Scored(w=0.6, v=0.2, r=0.9), Scored(w=0.4, v=0.1, r=0.8)]


def test_spec_hand_check_pins_the_weighted_population_sd() -> None:
    # Worked by hand, term by term, for w = (0.6, 0.4), v = (0.2, 0.1), r = (0.9, 0.8).
    v = (0.6 * 0.9 * 0.2 + 0.4 * 0.8 * 0.1) / (0.6 * 0.9 + 0.4 * 0.8)
    rbar = (0.6 * 0.9 + 0.4 * 0.8) / (0.6 + 0.4)
    mean_w = 0.6 * 0.2 + 0.4 * 0.1
    sd_w = math.sqrt(0.6 * (0.2 - mean_w) ** 2 + 0.4 * (0.1 - mean_w) ** 2)
    kappa = 1 - 2 * sd_w
    r = rbar * kappa * 1.0

    parts = rule_parts(HAND, children=2, own=(0.5, 0.3))
    assert parts.v == pytest.approx(v, abs=1e-12)
    assert parts.rbar == pytest.approx(rbar, abs=1e-12)
    assert parts.sd_w == pytest.approx(sd_w, abs=1e-12)
    assert parts.kappa == pytest.approx(kappa, abs=1e-12)
    assert parts.eta == 1.0
    assert parts.r == pytest.approx(r, abs=1e-12)
    # The spec's printed values, to its precision.
    assert (round(parts.v, 5), round(parts.rbar, 2)) == (0.16279, 0.86)
    assert (round(parts.sd_w, 5), round(parts.kappa, 5)) == (0.04899, 0.90202)
    assert rule_aggregate(HAND, 2, (0.5, 0.3)) == (parts.v, parts.r)
    assert round(parts.r, 4) == 0.7757


def test_other_sd_readings_give_other_values_and_are_rejected() -> None:
    unweighted = math.sqrt(((0.2 - 0.15) ** 2 + (0.1 - 0.15) ** 2) / 2)  # population
    sample = math.sqrt(((0.2 - 0.15) ** 2 + (0.1 - 0.15) ** 2) / 1)
    assert round(0.86 * (1 - 2 * unweighted), 4) == 0.7740
    assert round(0.86 * (1 - 2 * sample), 4) == 0.7384
    _, r = rule_aggregate(HAND, 2, (0.5, 0.3))
    assert round(r, 4) not in (0.7740, 0.7384)


def test_coverage_scales_reliability_by_evaluated_over_children() -> None:
    full = rule_parts(HAND, children=2, own=(0.5, 0.3))
    half = rule_parts(HAND, children=4, own=(0.5, 0.3))
    assert half.eta == 0.5
    assert half.v == full.v  # coverage leaves veracity alone
    assert half.r == pytest.approx(full.r / 2, abs=1e-12)
    one = rule_parts(HAND[:1], children=3, own=(0.5, 0.3))
    # One child: v is its own, sd 0, r = its r times one third.
    assert (one.v, one.sd_w, one.kappa) == (0.2, 0.0, 1.0)
    assert one.r == pytest.approx(0.9 / 3, abs=1e-12)


def test_a_node_without_evaluated_children_keeps_its_own_scores() -> None:
    assert rule_aggregate([], children=3, own=(0.42, 0.17)) == (0.42, 0.17)
    assert rule_aggregate([], children=0, own=(0.9, 0.8)) == (0.9, 0.8)
    assert rule_aggregate([], children=2, own=(0.42, 0.17), self_weight=1.0) == (0.42, 0.17)


def test_consistency_reaches_zero_for_an_even_split() -> None:
    # v = (1, 0) with equal weight: mean 0.5, sd 0.5, so kappa = 0 and r = 0 whatever r̄ is.
    split = [Scored(w=0.5, v=1.0, r=1.0), Scored(w=0.5, v=0.0, r=1.0)]
    parts = rule_parts(split, 2, (0.5, 0.5))
    assert (parts.sd_w, parts.kappa, parts.r) == (0.5, 0.0, 0.0)
    # Scores in [0, 1] bound sd_w by 0.5, so the clip at 0 can only meet rounding:
    # kappa stays in [0, 1] over random pools, and equals 1 - 2 sd_w.
    rng = random.Random(7)
    for _ in range(2000):
        pool = [
            Scored(w=rng.random(), v=rng.choice((0.0, 1.0, rng.random())), r=rng.random())
            for _ in range(rng.randint(1, 5))
        ]
        parts = rule_parts(pool, len(pool), (0.5, 0.5))
        assert 0.0 <= parts.kappa <= 1.0
        assert parts.kappa == pytest.approx(max(0.0, 1 - 2 * parts.sd_w), abs=1e-12)


def test_all_children_unreliable_keeps_own_veracity_with_zero_reliability() -> None:
    dead = [Scored(w=0.5, v=0.9, r=0.0), Scored(w=0.5, v=0.8, r=0.0)]
    assert rule_aggregate(dead, 2, (0.3, 0.6)) == (0.3, 0.0)
    # The same as the limit of a tiny self weight (the documented reason).
    v, _ = rule_aggregate(dead, 2, (0.3, 0.6), self_weight=1e-9)
    assert v == pytest.approx(0.3, abs=1e-12)


def test_all_zero_weights_weigh_children_equally() -> None:
    zero = [Scored(w=0.0, v=0.2, r=0.9), Scored(w=0.0, v=0.1, r=0.8)]
    v, r = rule_aggregate(zero, 2, (0.5, 0.5))
    assert v == pytest.approx((0.9 * 0.2 + 0.8 * 0.1) / 1.7, abs=1e-12)
    assert r == pytest.approx(0.85 * (1 - 2 * 0.05), abs=1e-12)


def test_self_weight_joins_the_pool_but_not_the_coverage() -> None:
    # Own (0.5, 0.3) with weight 1 next to w = (0.6, 0.4): total weight 2.
    parts = rule_parts(HAND, children=4, own=(0.5, 0.3), self_weight=1.0)
    wr = 0.6 * 0.9 + 0.4 * 0.8 + 1.0 * 0.3
    assert parts.v == pytest.approx((0.6 * 0.9 * 0.2 + 0.4 * 0.8 * 0.1 + 0.3 * 0.5) / wr)
    assert parts.rbar == pytest.approx(wr / 2.0)
    mean_w = (0.6 * 0.2 + 0.4 * 0.1 + 0.5) / 2.0
    sd = math.sqrt(
        (0.6 * (0.2 - mean_w) ** 2 + 0.4 * (0.1 - mean_w) ** 2 + (0.5 - mean_w) ** 2) / 2
    )
    assert parts.sd_w == pytest.approx(sd)
    assert parts.eta == 0.5
    assert parts.r == pytest.approx(wr / 2.0 * max(0.0, 1 - 2 * sd) * 0.5)
    assert rule_aggregate(HAND, 4, (0.5, 0.3), self_weight=0.0) != (parts.v, parts.r)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: Scored(w=-0.1, v=0.5, r=0.5), "importance weight"),
        (lambda: Scored(w=float("nan"), v=0.5, r=0.5), "importance weight"),
        (lambda: Scored(w=0.5, v=1.5, r=0.5), "veracity"),
        (lambda: Scored(w=0.5, v=0.5, r=float("inf")), "reliability"),
        (lambda: rule_aggregate(HAND, 1, (0.5, 0.5)), "do not fit"),
        (lambda: rule_aggregate(HAND, 2, (0.5, -0.1)), "reliability"),
        (lambda: rule_aggregate(HAND, 2, (0.5, 0.5), self_weight=-1.0), "self_weight"),
        (lambda: rule_aggregate([Scored(1e308, 0.5, 0.5)] * 2, 2, (0.5, 0.5)), "too large"),
    ],
)
def test_bad_input_is_a_clear_error(call, message) -> None:
    with pytest.raises(BadInputError, match=message):
        call()
