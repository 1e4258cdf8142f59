"""Algorithm 1's loop: select, retrieve, evaluate, expand, aggregate, prune, stop.

    grown = await grow(claim, log, config=..., thresholds=..., evaluator=..., agent=...,
                       analyst=model, decomposer=model, aggnet=None)
    grown.tree, grown.stop, grown.history

Stops, each as Algorithm 1 writes it: the queue is empty; T_max iterations; the root
converged (γ, §III-D); the root is itself decisive (φ_0 = 1, line 18).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from verity.domain import Claim, Evidence
from verity.errors import ModelOutputError
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.toe.aggnet import AggNet
from verity.methods.toe.combine import aggregate_tree
from verity.methods.toe.config import ToeConfig
from verity.methods.toe.features import ClaimFeatures, EvidenceItem
from verity.methods.toe.judge import NodeEvaluator, evidence_text
from verity.methods.toe.prompts import ANALYZE, DECOMPOSE
from verity.methods.toe.retrieval import RetrievalAgent, StepRecord, one_line
from verity.methods.toe.reward import Belief
from verity.methods.toe.tree import (
    Node,
    Thresholds,
    Tree,
    converged,
    decisive,
    needs_expansion,
)

# §III-D: "two to four" sub-claims.
MIN_PARTS, MAX_PARTS = 2, 4
# A sub-claim is a model's sentence: kept to this many characters.
MAX_SUBCLAIM_CHARS = 400


@dataclass
class Grown:
    """A finished tree: why it stopped, the root's (v, r) per iteration, the documents."""

    tree: Tree
    stop: str
    history: list[tuple[float, float]] = field(default_factory=list)
    documents: list[tuple[Evidence, EvidenceItem]] = field(default_factory=list)
    root_judged: Belief | None = None


async def analyse(node: Node, analyst: ModelClient, log: CallLog) -> None:
    """Features and the three queries (§III-B, §III); defaults and a note when unreadable."""
    try:
        found = await ANALYZE.arun(analyst, log=log, claim=node.text)
    except ModelOutputError as exc:
        node.features = ClaimFeatures()
        node.note = f"analysis unreadable, defaults used: {str(exc)[:200]}"
        return
    node.features = ClaimFeatures(**found.model_dump(include=set(ClaimFeatures.model_fields)))
    node.queries = {
        "background": one_line(found.background_query),
        "supporting": one_line(found.supporting_query),
        "counter": one_line(found.counter_query),
    }


async def decompose(
    node: Node, decomposer: ModelClient, log: CallLog
) -> list[tuple[str, str, float]]:
    """2-4 sub-claims on distinct dimensions, weights renormalised (§III-D); [] if unusable."""
    try:
        found = await DECOMPOSE.arun(
            decomposer, log=log, claim=node.text, evidence=evidence_text(node.episode.items)
        )
    except ModelOutputError as exc:
        node.note = f"decomposition unreadable: {str(exc)[:200]}"
        return []
    parts: list[tuple[str, str, float]] = []
    seen: set[str] = set()
    for sub in found.subclaims:
        text = " ".join(sub.text.split())[:MAX_SUBCLAIM_CHARS]
        if text and sub.dimension not in seen:
            seen.add(sub.dimension)
            parts.append((text, sub.dimension, sub.weight))
    parts = parts[:MAX_PARTS]
    if len(parts) < MIN_PARTS:
        node.note = f"decomposition gave {len(parts)} usable sub-claim(s); not expanded"
        return []
    total = sum(w for _, _, w in parts)
    share = (lambda w: w / total) if total > 0 else (lambda w: 1.0 / len(parts))
    return [(text, dim, share(w)) for text, dim, w in parts]


async def grow(
    claim: Claim,
    log: CallLog,
    *,
    config: ToeConfig,
    thresholds: Thresholds,
    evaluator: NodeEvaluator,
    agent: RetrievalAgent,
    analyst: ModelClient,
    decomposer: ModelClient,
    aggnet: AggNet | None,
    on_episode: Callable[[Node, list[StepRecord]], None] | None = None,
    judge_root: bool = False,
) -> Grown:
    """Run Algorithm 1 to one of its stops."""
    tree = Tree(claim.text)
    grown = Grown(tree=tree, stop="T_max reached")
    for _ in range(config.max_iterations):
        node = tree.pop()
        if node is None:
            grown.stop = "queue empty"
            break
        # Every iteration that gets this far adds one entry to the history.
        log.milestone(
            "toe.node",
            f"iteration {len(grown.history) + 1}: node {node.id} at depth {node.depth}",
            iteration=len(grown.history) + 1,
            node=node.id,
            depth=node.depth,
        )
        await analyse(node, analyst, log)
        docs, records = await agent.run(node, claim, log)
        grown.documents += (
            list(zip(docs, node.episode.items[-len(docs) :], strict=True)) if docs else []
        )
        if on_episode is not None:
            on_episode(node, records)
        belief = await evaluator.evaluate(node, log)
        if judge_root and node.is_root:
            grown.root_judged = (
                belief if evaluator.kind == "llm-judge" else await evaluator.judged(node, log)
            )
        node.v_self, node.r_self, node.status = belief.v, belief.r, "evaluated"
        if needs_expansion(node, thresholds) and node.depth < config.max_depth:
            parts = await decompose(node, decomposer, log)
            log.milestone(
                "toe.decomposition",
                f"node {node.id}: {len(parts)} sub-claim(s)",
                node=node.id,
                subclaims=len(parts),
            )
            tree.add_children(node, parts)
        aggregate_tree(tree, aggnet, config.self_weight)
        tree.prune(thresholds)
        root = tree.root
        assert root.v is not None and root.r is not None
        grown.history.append((root.v, root.r))
        if converged(grown.history, thresholds):
            grown.stop = "root converged"
            break
        if decisive(root.v, root.r, thresholds):
            grown.stop = "root decisive"
            break
    log.milestone(
        "toe.stop", f"stopped: {grown.stop}", reason=grown.stop, iterations=len(grown.history)
    )
    return grown
