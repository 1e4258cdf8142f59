"""The confidence updater, branch by branch, against sequences worked out by hand."""

from __future__ import annotations

import pytest

from verity.methods.local.updater import ConfidenceUpdater


def run(steps, **kw):
    updater = ConfidenceUpdater(**kw)
    records = []
    for step in steps:
        if step == "fail":
            updater.failed()
            records.append("fail")
        else:
            v, p_l, p_c = step
            records.append(updater.update(v=v, p_l=p_l, p_c=p_c))
    return updater, records


def test_two_acceptances_at_once_is_final_with_confidence_one() -> None:
    updater, (step,) = run([(False, True, True)])
    assert step.final and step.accepted == 2 and step.counted is None
    assert updater.done and updater.result() == (False, 1.0)


def test_one_acceptance_counts_v_and_iterates() -> None:
    # it1: v=T, one accepts -> POS=1; it2: v=T, both accept -> final T, confidence 1.
    updater, (first, second) = run([(True, True, False), (True, True, True)])
    assert (first.counted, first.pos, first.neg, first.final) == (True, 1, 0, False)
    assert second.final and updater.result() == (True, 1.0)


def test_no_acceptance_counts_not_v() -> None:
    updater, (step,) = run([(True, False, False)], max_iterations=3)
    assert (step.counted, step.pos, step.neg) == (False, 0, 1)
    assert not updater.done


def test_budget_spent_larger_count_wins() -> None:
    # it1: v=T, one accepts  -> POS 1
    # it2: v=T, none accepts -> NEG 1 (not v)
    # it3: v=F, none accepts -> POS 2 (not v = T)
    # -> SUPPORTED with confidence 2 / (2 + 1)
    updater, records = run([(True, False, True), (True, False, False), (False, False, False)])
    assert [(r.pos, r.neg) for r in records] == [(1, 0), (1, 1), (2, 1)]
    assert updater.done
    label, confidence = updater.result()
    assert label is True and confidence == pytest.approx(2 / 3)


def test_all_three_refuting() -> None:
    # v=F with one acceptance, three times -> NEG 3 -> REFUTED, 3/3.
    updater, _ = run([(False, True, False)] * 3)
    assert updater.result() == (False, 1.0)
    assert (updater.pos, updater.neg) == (0, 3)


def test_failed_iteration_counts_nothing_and_a_tie_goes_to_the_last_solution() -> None:
    # it1: v=T one accept -> POS 1; it2 fails; it3: v=T none accept -> NEG 1. Tie 1:1 ->
    # the last solution's v (True) with confidence 0.5.
    updater, _ = run([(True, True, False), "fail", (True, False, False)])
    assert (updater.pos, updater.neg) == (1, 1)
    assert updater.result() == (True, 0.5)


def test_no_solution_at_all_has_no_verdict() -> None:
    updater, _ = run(["fail", "fail", "fail"])
    with pytest.raises(ValueError, match="no iteration produced a solution"):
        updater.result()


def test_without_both_evaluators_the_first_solution_stands_without_confidence() -> None:
    updater, (step,) = run([(True, None, None)], logical=False, counterfactual=False)
    assert step.final and updater.result() == (True, None)


def test_one_evaluator_ablated() -> None:
    # Without L-Eval, C alone decides: accept -> final; reject -> count not v.
    updater, (step,) = run([(False, None, True)], logical=False)
    assert step.final and updater.result() == (False, 1.0)
    updater, records = run([(False, None, False)] * 3, logical=False)
    assert [(r.pos, r.neg) for r in records] == [(1, 0), (2, 0), (3, 0)]
    assert updater.result() == (True, 1.0)
    # Without C-Eval, L alone.
    updater, records = run([(True, False, None), (True, True, None)], counterfactual=False)
    assert records[0].counted is False and records[1].final
    assert updater.result() == (True, 1.0)


def test_no_update_after_done() -> None:
    updater, _ = run([(True, True, True)])
    with pytest.raises(ValueError, match="done"):
        updater.update(v=True, p_l=True, p_c=True)
    with pytest.raises(ValueError, match="done"):
        updater.failed()
