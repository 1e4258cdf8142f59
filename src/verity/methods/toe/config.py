"""ToE's settings, its variants, and the weights a run loads.

The defaults are the paper's where it gives a value (§IV-A, Tab. I); docs/toe.md lists
every reading of what it leaves open.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from verity.methods.base import MethodConfig
from verity.methods.settings import OperatorPath

# Table III's tool ablations (the paper's), and verity's component variants, which are
# not ablations of the paper and are reported as such.
PAPER_VARIANTS: dict[str, dict[str, Any]] = {
    "no-arxiv": {"remove_tools": ("arxiv",)},
    "no-refute": {"remove_tools": ("refute",)},
    "no-factcheck": {"remove_tools": ("factcheck",)},
    "no-social": {"remove_tools": ("social",)},
}
COMPONENT_VARIANTS: dict[str, dict[str, Any]] = {
    "heuristic-policy": {"policy": "heuristic"},
    "rule-agg": {"aggregation": "rule"},
    "llm-eval": {"evaluator": "llm-judge"},
    "root-only": {"max_depth": 1},
    # The evaluation network's 20 slots a statement each rather than a document each.
    "snippet-slots": {"evidence_slots": "snippet"},
    # A small preset for the embedded model: three iterations, four documents per node
    # from two searches (so that two tools are tried), no cleaning pass, one level of
    # sub-claims.
    "lite": {"max_iterations": 3, "max_docs": 4, "max_steps": 2, "clean": False, "max_depth": 2},
}


class ToeConfig(MethodConfig):
    """Settings of ``toe``."""

    # §IV-A: "a maximum of 20 iterations" and a depth of at most 5. At most 100
    # iterations is verity's bound: five times the paper's T_max.
    max_iterations: int = Field(default=20, ge=1, le=100, description="T_max of Algorithm 1")
    max_depth: int = Field(default=5, ge=1, le=5, description="root is depth 1")
    # Tab. I: 5 search steps; §IV-A: at most 10 documents per node.
    max_steps: int = Field(default=5, ge=1, le=5, description="searches per node episode")
    max_docs: int = Field(default=10, ge=1, le=10, description="documents per node")
    clean: bool = Field(default=True, description="a cleaning call per chunk (§III-C)")
    query_mode: Literal["per-node", "per-action"] = Field(
        default="per-node",
        description="per-node: the three queries of §III per node; per-action: a query "
        "written for each tool (§III-B read literally)",
    )
    evaluator: Literal["auto", "network", "llm-judge"] = Field(
        default="auto", description="auto: the network when weights hold one, else the judge"
    )
    policy: Literal["auto", "network", "heuristic"] = Field(
        default="auto", description="auto: the trained policy when weights hold one"
    )
    aggregation: Literal["auto", "network", "rule"] = Field(
        default="auto", description="auto: the aggregation network when weights hold one"
    )
    # §III-C: a 20 x 8 evidence matrix, with at most 10 documents a node (§IV-A).
    evidence_slots: Literal["document", "snippet"] = Field(
        default="document",
        description="a slot per document (§III-C's E_i) or per kept statement (spec 6)",
    )
    # At most 10 is verity's bound: ten times a child's full weight.
    self_weight: float = Field(
        default=0.0,
        ge=0.0,
        le=10.0,
        description="the node's own score as one more child (0: off)",
    )
    # A folder on the server: the operator's, not a request's (verity.methods.settings).
    weights: OperatorPath | None = Field(
        default=None, description="folder written by `verity train toe` (none: untrained)"
    )
    remove_tools: tuple[Literal["arxiv", "refute", "factcheck", "social"], ...] = Field(
        default=(), max_length=4, description="Table III's tool groups to mask"
    )
    uncertain_label: Literal["auto", "CONFLICTING", "NOT_ENOUGH_INFO"] = Field(
        default="auto",
        description="label of 0.4 <= v <= 0.6; auto: NOT_ENOUGH_INFO on Check-COVID, "
        "else CONFLICTING",
    )
