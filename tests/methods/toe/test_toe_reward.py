"""Eq. 5 by hand, with Table I's weights written out here."""

from __future__ import annotations

import pytest

from verity.methods.toe.reward import Belief, RewardWeights, step_reward


def test_table_one_weights() -> None:
    w = RewardWeights()
    assert (w.w_r, w.w_v, w.w_e, w.step_cost, w.tau_h, w.b_auth, w.b_rel) == (
        1.0,
        0.5,
        0.05,
        0.01,
        0.8,
        0.1,
        0.2,
    )


def test_spec_hand_check_054() -> None:
    # r 0.5 -> 0.7, v 0.5 -> 0.3, 3 new items, authoritative, r stays below tau_h:
    # 1.0*0.2 + 0.5*0.2 + 0.05*3 + 0.1 - 0.01 = 0.54
    got = step_reward(
        Belief(0.5, 0.5), Belief(0.3, 0.7), new_items=3, authoritative=True, first_high=False
    )
    assert got == pytest.approx(0.2 + 0.1 + 0.15 + 0.1 - 0.01)
    assert got == pytest.approx(0.54)


def test_new_items_are_capped_at_four_and_bonuses_add() -> None:
    base = step_reward(
        Belief(0.5, 0.5), Belief(0.5, 0.5), new_items=9, authoritative=False, first_high=False
    )
    assert base == pytest.approx(0.05 * 4 - 0.01)
    high = step_reward(
        Belief(0.5, 0.7), Belief(0.5, 0.85), new_items=0, authoritative=False, first_high=True
    )
    assert high == pytest.approx(0.15 + 0.2 - 0.01)


def test_veracity_shift_counts_either_way_and_reliability_loss_costs() -> None:
    up = step_reward(
        Belief(0.4, 0.6), Belief(0.6, 0.5), new_items=0, authoritative=False, first_high=False
    )
    assert up == pytest.approx(-0.1 + 0.5 * 0.2 - 0.01)
