"""The numbers ToE's networks read: claim features, the retrieval state, evidence rows.

    vec = claim_vector(features)                       # 12 numbers (evaluation network)
    row = evidence_row(item)                           # 8 numbers per evidence item
    rows = evidence_rows(items, "snippet")             # a row per kept statement
    s = retrieval_state(features, episode, belief_r)   # 29 numbers (retrieval policy)
    f = node_row(...)                                  # 16 numbers (aggregation network)

The paper names each vector's size and, loosely, its parts (§III-B, §III-C, §III-D); the
exact layouts are verity's reading, written down in docs/toe.md and pinned index by index
in tests/methods/toe/test_toe_features.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from pydantic import BaseModel

# §III-B: recent event, historical fact, factual statement, opinion, prediction.
FLAGS = ("recent_event", "historical_fact", "factual_statement", "opinion", "prediction")

# §III-B lists "historical, scientific, or political" as examples; Fig. 5 has six rows,
# which are taken as the full set (the paper never lists it).
Category = Literal["political", "scientific", "health", "historical", "celebrity", "other"]
# §III-B: the claim's "geographic scope"; the values are silent, these are verity's.
Locale = Literal["local", "national", "international"]
CATEGORIES: tuple[str, ...] = get_args(Category)
LOCALES: tuple[str, ...] = get_args(Locale)
StanceName = Literal["support", "refute", "neutral"]

# The 8 tools of §III-B in the paper's order; "counter" is the counter-evidence web search.
ACTIONS = ("web", "counter", "arxiv", "wiki", "social", "factcheck", "reddit", "stop")
STOP = ACTIONS.index("stop")
# Source groups of an evidence row (five source names of Fig. 5's prose): the counter
# search is web, Reddit is social.
GROUPS = ("web", "academic", "encyclopedia", "factcheck", "social")
GROUP_OF = {
    "web": "web",
    "counter": "web",
    "arxiv": "academic",
    "wiki": "encyclopedia",
    "factcheck": "factcheck",
    "social": "social",
    "reddit": "social",
}

# Caps that scale counts into [0, 1]: 5 search steps (Tab. I), 10 documents per node
# (§IV-A), 20 evidence slots (§III-C), 4 sub-claims at most (§III-D), depth 5 (§IV-A).
STEP_CAP = 5
DOC_CAP = 10
SLOT_CAP = 20
CHILD_CAP = 4
DEPTH_CAP = 5

CLAIM_DIM = 12
STATE_DIM = 29
EVIDENCE_DIM = 8
NODE_DIM = 16


class ClaimFeatures(BaseModel):
    """What the analysis step reads off a claim (§III-B): category, scope and five flags."""

    category: Category = "other"
    locale: Locale = "national"
    recent_event: bool = False
    historical_fact: bool = False
    factual_statement: bool = True
    opinion: bool = False
    prediction: bool = False


@dataclass(frozen=True)
class EvidenceItem:
    """One analysed document (§III-C's E_i): its stance and quality as the analysis read them."""

    ref: str
    tool: str
    stance: StanceName
    authoritative: bool
    primary: bool
    relevance: float
    credibility: float
    statements: tuple[str, ...] = ()
    explanation: str = ""


@dataclass
class Episode:
    """A node's retrieval so far: searches per tool and the evidence they brought."""

    searches: dict[str, int] = field(default_factory=dict)
    items: list[EvidenceItem] = field(default_factory=list)

    @property
    def steps(self) -> int:
        """Searches done (the stop action is not a search)."""
        return sum(self.searches.values())


def _one_hot(value: str, values: Sequence[str]) -> list[float]:
    return [1.0 if value == v else 0.0 for v in values]


def _flags(features: ClaimFeatures, names: Sequence[str]) -> list[float]:
    return [1.0 if getattr(features, name) else 0.0 for name in names]


def claim_vector(features: ClaimFeatures) -> list[float]:
    """The evaluation network's 12 claim numbers (§III-C): category 6, scope 3, three flags."""
    vec = (
        _one_hot(features.category, CATEGORIES)
        + _one_hot(features.locale, LOCALES)
        + _flags(features, FLAGS[:3])  # recent, historical, factual (§III-C)
    )
    assert len(vec) == CLAIM_DIM
    return vec


def stance_counts(items: Sequence[EvidenceItem]) -> tuple[int, int, int]:
    """How many items support, refute, and neither."""
    stances = [item.stance for item in items]
    return stances.count("support"), stances.count("refute"), stances.count("neutral")


def retrieval_state(
    features: ClaimFeatures, episode: Episode, belief_r: float, max_steps: int = STEP_CAP
) -> list[float]:
    """The policy's 29 numbers (§III-B): layout in the module docstring of docs/toe.md.

    0-5 category, 6-8 scope, 9-13 the five flags, 14 searches / 5, 15 searches / this
    run's step budget, 16 evidence / 10, 17-19 support, refute, neutral counts / 10,
    20-26 searches per tool / 5, 27 an authoritative source found, 28 the node's current
    reliability (the belief b_t of §III-A: the one number the paper's list leaves over).
    """
    support, refute, neutral = stance_counts(episode.items)
    steps = episode.steps
    state = (
        _one_hot(features.category, CATEGORIES)
        + _one_hot(features.locale, LOCALES)
        + _flags(features, FLAGS)
        + [steps / STEP_CAP, steps / max(1, max_steps), len(episode.items) / DOC_CAP]
        + [support / DOC_CAP, refute / DOC_CAP, neutral / DOC_CAP]
        + [episode.searches.get(tool, 0) / STEP_CAP for tool in ACTIONS[:STOP]]
        + [1.0 if any(i.authoritative for i in episode.items) else 0.0, belief_r]
    )
    assert len(state) == STATE_DIM
    return state


def evidence_row(item: EvidenceItem) -> list[float]:
    """An item's 8 numbers (§III-C): stance -1/0/1, source group 5, relevance, credibility."""
    stance = {"support": 1.0, "refute": -1.0, "neutral": 0.0}[item.stance]
    return [stance, *_one_hot(GROUP_OF[item.tool], GROUPS), item.relevance, item.credibility]


# How the 20 slots of §III-C are filled: a row per document (the analysis LLM's E_i, the
# default) or a row per statement the cleaning step kept, each with its document's
# attributes (spec 6: the 20 slots against at most 10 documents suggest snippets).
SlotMode = Literal["document", "snippet"]


def evidence_rows(items: Sequence[EvidenceItem], slots: SlotMode = "document") -> list[list[float]]:
    """The evaluation network's rows for a node's evidence, one per document or per snippet.

    A document with no kept statement is one row in either mode.
    """
    if slots == "document":
        return [evidence_row(item) for item in items]
    return [evidence_row(item) for item in items for _ in range(max(1, len(item.statements)))]


def node_row(
    *,
    v: float,
    r: float,
    weight: float,
    depth: int,
    children: int,
    evaluated: int,
    items: Sequence[EvidenceItem],
    searches: int,
    is_root: bool,
    expanded: bool,
) -> list[float]:
    """The aggregation network's 16 numbers per node (§III-D; layout in docs/toe.md).

    ``v`` and ``r`` are the node's self scores when it is the parent, and its aggregated
    scores when it enters its parent as a child. The rule's own outputs are left out:
    they are the imitation targets (Eq. 8), which an input would let the net copy.
    """
    n = len(items)
    support, refute, neutral = stance_counts(items)
    share = (lambda k: k / n) if n else (lambda k: 0.0)
    row = [
        v,
        r,
        weight,
        depth / DEPTH_CAP,
        children / CHILD_CAP,
        evaluated / CHILD_CAP,
        n / SLOT_CAP,
        share(support),
        share(refute),
        share(neutral),
        share(sum(i.authoritative for i in items)),
        sum(i.credibility for i in items) / n if n else 0.0,
        sum(i.relevance for i in items) / n if n else 0.0,
        searches / STEP_CAP,
        1.0 if is_root else 0.0,
        1.0 if expanded else 0.0,
    ]
    assert len(row) == NODE_DIM
    return row
