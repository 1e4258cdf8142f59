"""Tree management by hand: thresholds at their boundaries, priority, pruning, stops."""

from __future__ import annotations

import pytest

from verity.methods.toe.tree import (
    Node,
    Thresholds,
    Tree,
    converged,
    decisive,
    needs_expansion,
    priority,
    verdict_band,
)

TH = Thresholds()


def test_thresholds_are_the_papers() -> None:
    # §III-D and §IV-A, written out here independently of the code's defaults.
    assert (TH.expand_r, TH.decisive_r, TH.decisive_v_high, TH.decisive_v_low) == (
        0.7,
        0.7,
        0.7,
        0.3,
    )
    assert (TH.converge_range, TH.window, TH.false_below, TH.true_above) == (0.1, 3, 0.4, 0.6)


@pytest.mark.parametrize(
    ("v", "band"),
    [
        (0.0, "false"),
        (0.3999, "false"),
        (0.4, "uncertain"),
        (0.5, "uncertain"),
        (0.6, "uncertain"),
        (0.6001, "true"),
        (1.0, "true"),
    ],
)
def test_label_bands(v: float, band: str) -> None:
    assert verdict_band(v, TH) == band


def _node(r_self: float | None, parent: Node | None = None, w: float = 1.0) -> Node:
    return Node(id=1, text="x", depth=2, parent=parent, r_self=r_self, weight=w)


def test_expansion_is_strictly_below_070_and_always_for_the_root() -> None:
    root = Node(id=0, text="claim", depth=1, r_self=0.99)
    assert needs_expansion(root, TH)
    assert needs_expansion(_node(0.6999, root), TH)
    assert not needs_expansion(_node(0.7, root), TH)


@pytest.mark.parametrize(
    ("v", "r", "expected"),
    [
        (0.2, 0.71, True),
        (0.2, 0.7, False),
        (0.3, 0.9, False),
        (0.2999, 0.9, True),
        (0.7, 0.9, False),
        (0.7001, 0.9, True),
        (0.5, 0.95, False),
        (None, 0.9, False),
    ],
)
def test_decisive_band_is_closed(v: float | None, r: float, expected: bool) -> None:
    assert decisive(v, r, TH) is expected


def test_convergence_needs_three_values_a_range_below_01_and_r_above_07() -> None:
    assert not converged([(0.2, 0.9), (0.21, 0.9)], TH)
    assert converged([(0.9, 0.1), (0.2, 0.9), (0.25, 0.9), (0.29, 0.71)], TH)
    assert not converged([(0.0, 0.9), (0.05, 0.9), (0.1, 0.9)], TH)  # range 0.1 is not < 0.1
    assert not converged([(0.2, 0.9), (0.25, 0.9), (0.29, 0.7)], TH)  # r must exceed 0.7
    # The reliability bound is τ_r^exp: moving τ_r^dec alone changes nothing.
    moved = Thresholds(decisive_r=0.95)
    assert converged([(0.2, 0.9), (0.25, 0.9), (0.29, 0.8)], moved)
    assert not converged([(0.2, 0.9), (0.25, 0.9), (0.29, 0.8)], Thresholds(expand_r=0.85))


def test_priority_is_half_parent_uncertainty_half_weight() -> None:
    root = Node(id=0, text="claim", depth=1, r=0.6)
    assert priority(root) == 1.0
    child = _node(None, root, w=0.3)
    assert priority(child) == pytest.approx(0.5 * (1 - 0.6) + 0.5 * 0.3)  # 0.35


def test_pop_takes_the_highest_priority_and_the_earliest_on_a_tie() -> None:
    tree = Tree("claim")
    root = tree.pop()
    assert root is tree.root and tree.pop() is None
    root.r = 0.5
    a, b, c = tree.add_children(
        root,
        [
            ("a", "core event", 0.25),
            ("b", "entity identity", 0.5),
            ("c", "causal relationship", 0.25),
        ],
    )
    assert root.expanded and [n.depth for n in (a, b, c)] == [2, 2, 2]
    assert tree.pop() is b
    assert tree.pop() is a  # a and c tie: the earlier one
    assert tree.pop() is c


def test_prune_removes_pending_descendants_of_decisive_nodes_and_keeps_them() -> None:
    tree = Tree("claim")
    root = tree.pop()
    assert root is not None
    root.status, root.v, root.r = "evaluated", 0.5, 0.5
    a, b = tree.add_children(root, [("a", "core event", 0.5), ("b", "entity identity", 0.5)])
    tree.queue.remove(a)
    a.status, a.v, a.r = "evaluated", 0.1, 0.9  # decisive
    a1, a2 = tree.add_children(a, [("a1", "core event", 0.5), ("a2", "quantitative accuracy", 0.5)])
    pruned = tree.prune(TH)
    assert pruned == [a1, a2] and {n.status for n in (a1, a2)} == {"pruned"}
    assert tree.queue == [b] and b.status == "pending"
    assert a1 in a.children  # still in the tree, for the trace
    # A node in the undecided band keeps its pending children.
    b.status, b.v, b.r = "evaluated", 0.5, 0.9
    tree.queue.remove(b)
    (b1,) = tree.add_children(b, [("b1", "core event", 1.0)])
    assert tree.prune(TH) == [] and tree.queue == [b1]
