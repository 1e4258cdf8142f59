"""The 12-, 29-, 8- and 16-number layouts, index by index."""

from __future__ import annotations

from verity.methods.toe import evalnet, policy
from verity.methods.toe.features import (
    ACTIONS,
    ClaimFeatures,
    Episode,
    EvidenceItem,
    claim_vector,
    evidence_row,
    node_row,
    retrieval_state,
)

FEATURES = ClaimFeatures(
    category="health",
    locale="international",
    recent_event=True,
    historical_fact=False,
    factual_statement=True,
    opinion=True,
    prediction=False,
)


def _item(stance: str, tool: str, auth: bool = False) -> EvidenceItem:
    return EvidenceItem(
        ref=f"{stance}-{tool}",
        tool=tool,
        stance=stance,  # type: ignore[arg-type]
        authoritative=auth,
        primary=True,
        relevance=0.8,
        credibility=0.6,
    )


def test_the_networks_agree_on_sizes_and_actions() -> None:
    assert policy.ACTIONS == ACTIONS
    assert ACTIONS == ("web", "counter", "arxiv", "wiki", "social", "factcheck", "reddit", "stop")
    assert (evalnet.CLAIM_DIM, evalnet.EVIDENCE_DIM, evalnet.SLOTS) == (12, 8, 20)


def test_claim_vector_is_category_scope_and_three_flags() -> None:
    vec = claim_vector(FEATURES)
    # health; international; recent, not historical, factual
    assert vec == [0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 1]


def test_retrieval_state_layout() -> None:
    ep = Episode(
        searches={"web": 2, "factcheck": 1},
        items=[
            _item("support", "web"),
            _item("refute", "factcheck", auth=True),
            _item("neutral", "web"),
            _item("support", "web"),
        ],
    )
    s = retrieval_state(FEATURES, ep, belief_r=0.42, max_steps=4)
    assert len(s) == 29
    assert s[0:6] == [0, 0, 1, 0, 0, 0]  # health
    assert s[6:9] == [0, 0, 1]  # international
    assert s[9:14] == [1, 0, 1, 1, 0]  # recent, historical, factual, opinion, prediction
    assert s[14] == 3 / 5 and s[15] == 3 / 4  # searches over Tab. I's 5, and over this budget
    assert s[16] == 4 / 10
    assert s[17:20] == [2 / 10, 1 / 10, 1 / 10]
    # per tool, in §III-B's order: web, counter, arxiv, wiki, social, factcheck, reddit
    assert s[20:27] == [2 / 5, 0, 0, 0, 0, 1 / 5, 0]
    assert s[27] == 1.0 and s[28] == 0.42


def test_evidence_row() -> None:
    assert evidence_row(_item("refute", "reddit")) == [-1, 0, 0, 0, 0, 1, 0.8, 0.6]
    assert evidence_row(_item("support", "counter")) == [1, 1, 0, 0, 0, 0, 0.8, 0.6]
    assert evidence_row(_item("neutral", "wiki"))[:6] == [0, 0, 0, 1, 0, 0]


def test_node_row() -> None:
    items = [_item("support", "web", auth=True), _item("refute", "arxiv")]
    row = node_row(
        v=0.3,
        r=0.6,
        weight=0.4,
        depth=2,
        children=3,
        evaluated=1,
        items=items,
        searches=2,
        is_root=False,
        expanded=True,
    )
    assert row == [
        0.3,
        0.6,
        0.4,
        2 / 5,
        3 / 4,
        1 / 4,
        2 / 20,
        0.5,
        0.5,
        0.0,
        0.5,
        0.6,
        0.8,
        2 / 5,
        0.0,
        1.0,
    ]
    empty = node_row(
        v=0.5,
        r=0.0,
        weight=1.0,
        depth=1,
        children=0,
        evaluated=0,
        items=[],
        searches=0,
        is_root=True,
        expanded=False,
    )
    assert len(empty) == 16 and empty[14] == 1.0 and empty[6:13] == [0.0] * 7
