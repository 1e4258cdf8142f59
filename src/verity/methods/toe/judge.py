"""Node evaluation (§III-C): the evaluation network, or the LLM judge before it is trained.

    evaluator = NodeEvaluator("network", judge_model, net)
    evaluator.belief(features, items)           # per step: Belief or None
    v, r = await evaluator.evaluate(node, log)  # once per node

The network is cheap enough to score a node after every search step, which is what Eq. 5's
Δrel and Δver need. The judge is a model call: it scores each node once, at the end of
its episode, and its scores are the network's training targets (Eq. 6's ṽ, r̃); a run that
judges (before training, or the ``toe/llm-eval`` variant) has no per-step reward.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.step import Delimited, data_block
from verity.methods.toe.evalnet import EvalNet, score
from verity.methods.toe.features import (
    ClaimFeatures,
    EvidenceItem,
    SlotMode,
    claim_vector,
    evidence_rows,
)
from verity.methods.toe.prompts import JUDGE
from verity.methods.toe.reward import Belief
from verity.methods.toe.tree import Node

EvaluatorKind = Literal["network", "llm-judge"]


def evidence_text(items: Sequence[EvidenceItem]) -> str:
    """Assessed evidence as numbered blocks, attributes first, for the judge and decomposer."""
    if not items:
        return "(no evidence found)"
    lines = []
    for i, item in enumerate(items, start=1):
        body = " ".join(item.statements) or item.explanation or "(no statement)"
        lines.append(
            f"[{i}] "
            + data_block(
                "evidence",
                body[:600],
                stance=item.stance,
                tool=item.tool,
                authoritative="yes" if item.authoritative else "no",
                primary="yes" if item.primary else "no",
                relevance=f"{item.relevance:.2f}",
                credibility=f"{item.credibility:.2f}",
            )
        )
    return Delimited("\n".join(lines))


class NodeEvaluator:
    """Scores nodes with the network or the judge."""

    def __init__(
        self,
        kind: EvaluatorKind,
        judge: ModelClient,
        net: EvalNet | None,
        slots: SlotMode = "document",
    ) -> None:
        if kind == "network" and net is None:
            raise ValueError("the network evaluator needs trained weights")
        self.kind = kind
        self.judge = judge
        self.net = net
        self.slots: SlotMode = slots

    def belief(self, features: ClaimFeatures, items: Sequence[EvidenceItem]) -> Belief | None:
        """(v, r) of this evidence by the network; None when the judge evaluates."""
        if self.net is None or self.kind != "network":
            return None
        v, r = score(self.net, claim_vector(features), evidence_rows(items, self.slots))
        return Belief(v, r)

    async def judged(self, node: Node, log: CallLog) -> Belief:
        """The LLM judge's soft scores for the node's evidence (§III-C's targets)."""
        found = await JUDGE.arun(
            self.judge, log=log, claim=node.text, evidence=evidence_text(node.episode.items)
        )
        return Belief(found.veracity, found.reliability)

    async def evaluate(self, node: Node, log: CallLog) -> Belief:
        """The node's self (v, r)."""
        belief = self.belief(node.features or ClaimFeatures(), node.episode.items)
        if belief is not None:
            return belief
        return await self.judged(node, log)
