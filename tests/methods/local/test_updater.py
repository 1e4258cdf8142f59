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


def test_a_tie_is_false_as_in_algorithm_1() -> None:
    # Algorithm 1: "if #POS > #NEG then return True else return False".
    # it1: v=T one accept -> POS 1; it2 fails (counts nothing); it3: v=T none accept ->
    # NEG 1. Tie 1:1 -> False, confidence max(1, 1) / (1 + 1) = 0.5.
    updater, _ = run([(True, True, False), "fail", (True, False, False)])
    assert (updater.pos, updater.neg) == (1, 1)
    assert updater.result() == (False, 0.5)
    # Two counted iterations of a four-iteration budget can tie too: POS 2, NEG 2.
    updater, _ = run(
        [(True, True, False), (False, False, False), (False, True, False), (False, True, False)],
        max_iterations=4,
    )
    assert (updater.pos, updater.neg) == (2, 2)
    assert updater.result() == (False, 0.5)


def test_a_failed_iteration_keeps_the_counts_earned() -> None:
    # it1: v=F one accept -> NEG 1; it2 fails; it3: v=F one accept -> NEG 2 -> False, 2/2.
    updater, records = run([(False, True, False), "fail", (False, False, True)])
    assert [r if r == "fail" else (r.pos, r.neg) for r in records] == [(0, 1), "fail", (0, 2)]
    assert updater.iterations == 3 and updater.done
    assert updater.result() == (False, 1.0)


def test_no_counted_solution_has_no_verdict() -> None:
    updater, _ = run(["fail", "fail", "fail"])
    with pytest.raises(ValueError, match="no iteration produced an evaluated solution"):
        updater.result()


def test_without_evaluators_every_solution_counts_its_own_v_for_all_iterations() -> None:
    # 5.2: the ablations ran "up to 3 iterations" like LoCal itself. Without evaluators
    # nothing is ever final: three solutions, v = T, F, T -> POS 2, NEG 1 -> True, 2/3.
    updater, records = run(
        [(True, None, None), (False, None, None), (True, None, None)],
        logical=False,
        counterfactual=False,
    )
    assert [(r.counted, r.final) for r in records] == [(True, False), (False, False), (True, False)]
    assert updater.done and updater.iterations == 3
    label, confidence = updater.result()
    assert label is True and confidence == pytest.approx(2 / 3)
    # A 1:1 split (one failed iteration) is a tie: False.
    updater, _ = run([(True, None, None), "fail", (False, None, None)], logical=False,
                     counterfactual=False)  # fmt: skip
    assert updater.result() == (False, 0.5)


def test_the_paper_budget_is_three_iterations() -> None:
    # 4.3: "The maximum number of iterations is set to 3."
    assert ConfidenceUpdater().max_iterations == 3
    updater, records = run([(True, False, False)] * 3)
    assert updater.done and len(records) == 3


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
