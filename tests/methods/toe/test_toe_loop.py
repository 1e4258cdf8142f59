"""The lines of ToE's loops that only a loop shows: one node's episode, a deep tree's
aggregation, the rule targets the aggregation network imitates, and Theorem 1's bound.

The episode runs on stubs named as such (a scripted chooser, scorer and evidence
analyst, a list source): what is checked is what the loop does with their answers, each
reward worked out by hand from Eq. 5 and Table I.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_toe_method import ListSource

from verity.domain import Claim, Evidence
from verity.llm.calllog import CallLog
from verity.methods.base import run_sync
from verity.methods.toe.combine import aggregate_tree, tree_rows
from verity.methods.toe.features import ClaimFeatures, EvidenceItem
from verity.methods.toe.retrieval import RetrievalAgent
from verity.methods.toe.reward import Belief, RewardWeights, step_reward
from verity.methods.toe.tree import Node, Tree

WEB, STOP = 0, 7


class StubAnalyst:
    """Stands in for the evidence agent: support, and authoritative for the listed refs."""

    def __init__(self, authoritative: set[str]) -> None:
        self.authoritative = authoritative

    async def assess(self, claim: str, ev: Evidence, *, tool: str, log: CallLog) -> EvidenceItem:
        ref = ev.ref or ev.text
        return EvidenceItem(
            ref=ref,
            tool=tool,
            stance="support",
            authoritative=ref in self.authoritative,
            primary=True,
            relevance=0.5,
            credibility=0.5,
        )


def _episode(beliefs: dict[int, Belief], actions: Sequence[int], authoritative: set[str]):  # type: ignore[no-untyped-def]
    """Run one node's episode; the states the chooser saw, and the node."""
    seen: list[list[float]] = []
    plan = list(actions)

    def chooser(node, state, allowed, belief_r):  # type: ignore[no-untyped-def]
        seen.append(state)
        return plan.pop(0), 0.0

    def scorer(features: ClaimFeatures, items: Sequence[EvidenceItem]) -> Belief:
        return beliefs[len(items)]  # the stub scores by the number of items held

    agent = RetrievalAgent(
        tools={"web": [ListSource("news")]},
        usable=["web"],
        evidence=StubAnalyst(authoritative),  # type: ignore[arg-type]
        chooser=chooser,
        scorer=scorer,
        query_model=None,  # type: ignore[arg-type]  # per-node queries ask no model
        max_steps=5,
    )
    node = Node(id=0, text="The bridge opened in 1932.", depth=1, features=ClaimFeatures())
    _docs, records = run_sync(agent.run(node, Claim(text=node.text), CallLog()))
    return seen, node, records


# The stub's beliefs by items held: r reaches τ_h = 0.8 (Tab. I) after the first search and
# stays above it after the second and third.
BELIEFS = {0: Belief(0.5, 0.5), 3: Belief(0.6, 0.85), 6: Belief(0.6, 0.9), 9: Belief(0.6, 0.95)}


def test_the_episode_pays_eq5_with_each_bonus_where_it_belongs() -> None:
    # The first document ListSource serves is "https://news.example/1": authoritative.
    _, node, records = _episode(BELIEFS, [WEB, WEB, WEB, STOP], {"https://news.example/1"})
    rewards = [r.reward for r in records]
    # Eq. 5, Tab. I: w_r 1.0, w_v 0.5, w_e 0.05, δ_step 0.01, b_auth 0.1, b_rel 0.2.
    first = 1.0 * (0.85 - 0.5) + 0.5 * abs(0.6 - 0.5) + 0.05 * 3 + 0.1 + 0.2 - 0.01  # 0.84
    # Still above τ_h, but b_rel is paid once; the authoritative document is old news.
    second = 1.0 * (0.9 - 0.85) + 0.5 * 0.0 + 0.05 * 3 - 0.01  # 0.19
    third = 1.0 * (0.95 - 0.9) + 0.05 * 3 - 0.01  # 0.19
    assert rewards == pytest.approx([first, second, third, 0.0], abs=1e-12)
    assert [a.tool for a in node.actions] == ["web", "web", "web", "stop"]


def test_state_slot_28_is_the_nodes_reliability_before_each_choice() -> None:
    seen, _, _ = _episode(BELIEFS, [WEB, WEB, WEB, STOP], set())
    # §III-A's belief b_t: r before the first search, then after each one.
    assert [state[28] for state in seen] == [0.5, 0.85, 0.9, 0.95]


def test_a_step_that_brings_no_authoritative_document_earns_no_authority_bonus() -> None:
    # Authoritative evidence arrives at the second search only (documents 4-6 of the source).
    _, _, records = _episode(BELIEFS, [WEB, WEB, WEB, STOP], {"https://news.example/5"})
    first = 1.0 * 0.35 + 0.5 * 0.1 + 0.05 * 3 + 0.2 - 0.01  # 0.74: b_rel, no b_auth
    second = 1.0 * 0.05 + 0.05 * 3 + 0.1 - 0.01  # 0.29: b_auth for document 5
    third = 1.0 * 0.05 + 0.05 * 3 - 0.01  # 0.19: document 5 was the step before's
    assert [r.reward for r in records] == pytest.approx([first, second, third, 0.0], abs=1e-12)


# -- aggregation over a tree three levels deep ---------------------------------------------


def _scored(node: Node, v: float, r: float) -> None:
    node.status, node.v_self, node.r_self = "evaluated", v, r


def _deep_tree() -> Tree:
    """Root -> (A, B); A -> (a1, a2). A's own scores disagree with its children's."""
    tree = Tree("claim")
    _scored(tree.root, 0.5, 0.5)
    a, b = tree.add_children(tree.root, [("A", "core event", 0.5), ("B", "entity identity", 0.5)])
    a1, a2 = tree.add_children(a, [("a1", "core event", 0.6), ("a2", "quantitative accuracy", 0.4)])
    _scored(a, 0.9, 0.3)
    _scored(b, 0.3, 0.6)
    _scored(a1, 0.2, 0.9)
    _scored(a2, 0.1, 0.8)
    return tree


def test_a_child_enters_its_parent_with_the_aggregate_of_its_subtree() -> None:
    tree = _deep_tree()
    aggregate_tree(tree)
    a = tree.root.children[0]
    # A from a1, a2: the spec's hand check, v 0.16279, r 0.7757 (docs/toe.md).
    assert (a.v, a.r) == pytest.approx((0.1627907, 0.7757376), abs=1e-6)
    # The root from A's aggregate (0.16279, 0.77574), not A's self (0.9, 0.3), and B's:
    # v = (0.5·0.77574·0.16279 + 0.5·0.6·0.3) / (0.5·0.77574 + 0.5·0.6) = 0.22263;
    # r̄ = 0.68787, sd_w = |0.16279 − 0.3| / 2 = 0.06860, κ = 0.86279, η = 1 → r = 0.59349.
    assert (tree.root.v, tree.root.r) == pytest.approx((0.2226317, 0.5934868), abs=1e-6)


def test_the_imitation_target_is_the_rule_the_tree_used_self_weight_included() -> None:
    tree = _deep_tree()
    aggregate_tree(tree, self_weight=1.0)
    rows, index = tree_rows(tree, self_weight=1.0)
    targets = {index[i].text: row.rule for i, row in enumerate(rows) if row.rule is not None}
    assert set(targets) == {"claim", "A"}
    for node in (tree.root, tree.root.children[0]):
        assert targets[node.text] == pytest.approx((node.v, node.r), abs=1e-12)
    # A with its own (0.9, 0.3) as one more child of weight 1, by hand:
    # Σwr = 0.54 + 0.32 + 0.3 = 1.16; v = (0.108 + 0.032 + 0.27) / 1.16 = 0.35345;
    # r̄ = 1.16 / 2 = 0.58; weighted mean (0.12 + 0.04 + 0.9) / 2 = 0.53;
    # sd_w² = (0.6·0.33² + 0.4·0.43² + 1·0.37²) / 2 = 0.13810 → sd_w 0.37162,
    # κ = 1 − 2·0.37162 = 0.25676, η = 2/2 → r = 0.58 · 0.25676 = 0.14892.
    assert targets["A"] == pytest.approx((0.3534483, 0.1489230), abs=1e-6)


# -- Theorem 1 (§III-A, Eq. 3) ---------------------------------------------------------------


RELIABILITY_ONLY = RewardWeights(w_v=0.0, w_e=0.0, step_cost=0.0, b_auth=0.0, b_rel=0.0)


@given(
    ideal=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=12),
    eps=st.floats(0.0, 0.2),
    noise=st.lists(st.floats(-1.0, 1.0), min_size=12, max_size=12),
)
def test_theorem_1_the_reliability_reward_is_within_two_epsilon_of_the_ideal_gain(
    ideal: list[float], eps: float, noise: list[float]
) -> None:
    # r_t = r̃_t + e_t with |e_t| ≤ ε; the ideal gain I_t is Δr̃_t (the proof's
    # approximation taken as exact). The reward of a step, its reliability term alone
    # (the Δr_t of §III-A), is then within 2ε of I_t at every t, and so on average.
    seen = [min(1.0, max(0.0, r + eps * e)) for r, e in zip(ideal, noise, strict=False)]
    gaps = []
    for t in range(1, len(ideal)):
        reward = step_reward(
            Belief(0.5, seen[t - 1]),
            Belief(0.5, seen[t]),
            new_items=0,
            authoritative=False,
            first_high=False,
            weights=RELIABILITY_ONLY,
        )
        gaps.append(abs(reward - (ideal[t] - ideal[t - 1])))
    assert max(gaps) <= 2 * eps + 1e-12
    assert sum(gaps) / len(gaps) <= 2 * eps + 1e-12


def test_theorem_1_does_not_cover_the_reward_eq5_trains_on() -> None:
    # With a perfect network (ε = 0) the full Eq. 5 still differs from Δr_t: the step
    # penalty alone is 0.01 (Tab. I) away, so the 2ε bound (0 here) fails.
    reward = step_reward(
        Belief(0.5, 0.4), Belief(0.5, 0.4), new_items=0, authoritative=False, first_high=False
    )
    assert reward == pytest.approx(-0.01, abs=1e-12)
