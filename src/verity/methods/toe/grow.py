"""Algorithm 1's loop: select, retrieve, evaluate, expand, aggregate, prune, stop.

    grown = await grow(claim, log, config=..., thresholds=..., evaluator=..., agent=...,
                       analyst=model, decomposer=model, aggnet=None)
    grown.tree, grown.stop, grown.history

Stops, each as Algorithm 1 writes it: the queue is empty; T_max iterations; the root
converged (γ, §III-D); the root is itself decisive (φ_0 = 1, line 18). Each node's own
work (lines 9-13) is `nodework.py`'s; with ``run_ahead`` pending nodes' work may be done
before their turn (`ahead.py`), and is taken in at its turn all the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from verity.domain import Claim, Evidence, Trace, Usage
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.toe.aggnet import AggNet
from verity.methods.toe.ahead import Ahead
from verity.methods.toe.combine import aggregate_tree
from verity.methods.toe.config import ToeConfig
from verity.methods.toe.features import EvidenceItem
from verity.methods.toe.judge import NodeEvaluator
from verity.methods.toe.nodework import NodeWorker
from verity.methods.toe.retrieval import RetrievalAgent, StepRecord
from verity.methods.toe.reward import Belief
from verity.methods.toe.tree import Node, Thresholds, Tree, converged, decisive


@dataclass
class Grown:
    """A finished tree: why it stopped, the root's (v, r) per iteration, the documents.

    ``logs`` are the consumed nodes' call logs in the order the loop took them: the
    check's calls and retrievals, as a sequential run makes them. ``unused`` are the logs
    of work run ahead and never consumed: spent, so counted in `usage`, but not the
    verdict's calls.
    """

    tree: Tree
    stop: str
    history: list[tuple[float, float]] = field(default_factory=list)
    documents: list[tuple[Evidence, EvidenceItem]] = field(default_factory=list)
    root_judged: Belief | None = None
    logs: list[CallLog] = field(default_factory=list)
    unused: list[CallLog] = field(default_factory=list)

    def usage(self) -> Usage:
        """Every call made, the unused ones included."""
        total = Usage()
        for log in self.logs + self.unused:
            total = total + log.usage()
        return total

    def trace(self, **extra: Any) -> Trace:
        """The consumed nodes' calls and retrievals in turn, with the method's own parts."""
        calls = tuple(call for log in self.logs for call in log.calls)
        retrievals = tuple(found for log in self.logs for found in log.retrievals)
        return Trace(calls=calls, retrievals=retrievals, **extra)

    def unused_calls(self) -> int:
        """Model calls of work run ahead and never consumed."""
        return sum(log.usage().llm_calls for log in self.unused)


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
    run_ahead: bool = False,
) -> Grown:
    """Run Algorithm 1 to one of its stops.

    ``run_ahead``: pending nodes' work may start before the loop takes them (`ahead.py`),
    when the check runs in parallel; the tree, verdict and trace are the same either way.
    """
    tree = Tree(claim.text)
    grown = Grown(tree=tree, stop="T_max reached")
    worker = NodeWorker(
        claim,
        config=config,
        thresholds=thresholds,
        evaluator=evaluator,
        agent=agent,
        analyst=analyst,
        decomposer=decomposer,
        judge_root=judge_root,
    )
    ahead = Ahead(worker, run_ahead=run_ahead, iterations=config.max_iterations)
    for iteration in range(1, config.max_iterations + 1):
        node = tree.pop()
        if node is None:
            grown.stop = "queue empty"
            break
        # Every iteration that gets this far adds one entry to the history.
        log.milestone(
            "toe.node",
            f"iteration {iteration}: node {node.id} at depth {node.depth}",
            iteration=iteration,
            node=node.id,
            depth=node.depth,
        )
        work = await ahead.take(node, tree, iteration)
        worker.apply(node, work, on_episode)
        grown.logs.append(work.log)
        docs = work.docs
        grown.documents += (
            list(zip(docs, node.episode.items[-len(docs) :], strict=True)) if docs else []
        )
        if judge_root and node.is_root:
            grown.root_judged = work.judged
        if work.parts is not None:
            log.milestone(
                "toe.decomposition",
                f"node {node.id}: {len(work.parts)} sub-claim(s)",
                node=node.id,
                subclaims=len(work.parts),
            )
            tree.add_children(node, work.parts)
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
    grown.unused = ahead.unused()
    log.milestone(
        "toe.stop", f"stopped: {grown.stop}", reason=grown.stop, iterations=len(grown.history)
    )
    return grown
