"""One node's own work in Algorithm 1: analyse, retrieve, evaluate, and decompose if needed.

    worker = NodeWorker(claim, config=..., thresholds=..., evaluator=..., agent=...,
                        analyst=model, decomposer=model)
    work = await worker.run(node, started=0)   # on a copy of the node, in a log of its own
    worker.apply(node, work)                   # what Algorithm 1 takes in when it consumes it

Lines 9-13 of Algorithm 1 read nothing but the node itself: its statement, its depth,
whether it is the root. So the work is done on a copy, with a call log and an evidence
cache of its own, and changes the tree only when the loop consumes it (`apply`). Work
done ahead of the loop (`ahead.py`) and never consumed then leaves no mark on the tree,
the verdict or the trace.

The root is always expanded (§III-D), so its decomposition does not wait for its judge:
both read the same evidence, and both are asked at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from verity import schedule
from verity.domain import Claim, Evidence
from verity.errors import ModelOutputError
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.toe.config import ToeConfig
from verity.methods.toe.evidence import MAX_CHUNKS, EvidenceAgent
from verity.methods.toe.features import ClaimFeatures
from verity.methods.toe.judge import NodeEvaluator, evidence_text
from verity.methods.toe.prompts import ANALYZE, DECOMPOSE
from verity.methods.toe.retrieval import RetrievalAgent, StepRecord, one_line
from verity.methods.toe.reward import Belief
from verity.methods.toe.tree import Node, Thresholds, needs_expansion

# §III-D: "two to four" sub-claims.
MIN_PARTS, MAX_PARTS = 2, 4
# A sub-claim is a model's sentence: kept to this many characters.
MAX_SUBCLAIM_CHARS = 400

Parts = list[tuple[str, str, float]]


@dataclass
class Work:
    """A node's work, done on ``node``, a copy: what the loop takes in when it consumes it.

    ``parts`` is None when the node was not to be decomposed, [] when the decomposition
    was unusable. ``started`` is how many nodes the loop had consumed when the work began
    (what its evidence cache had seen). A failure is kept in ``error`` and raised when
    the node is consumed, never before: work done ahead may never be needed.
    """

    node: Node
    log: CallLog
    evidence: EvidenceAgent
    started: int
    docs: list[Evidence] = field(default_factory=list)
    records: list[StepRecord] = field(default_factory=list)
    belief: Belief | None = None
    judged: Belief | None = None
    parts: Parts | None = None
    error: Exception | None = None


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


async def decompose(node: Node, decomposer: ModelClient, log: CallLog) -> Parts:
    """2-4 sub-claims on distinct dimensions, weights renormalised (§III-D); [] if unusable."""
    try:
        found = await DECOMPOSE.arun(
            decomposer, log=log, claim=node.text, evidence=evidence_text(node.episode.items)
        )
    except ModelOutputError as exc:
        node.note = f"decomposition unreadable: {str(exc)[:200]}"
        return []
    parts: Parts = []
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


def most_calls(config: ToeConfig, *, judge: bool, judge_root: bool) -> int:
    """The most requests one node's work can make, each step answered at the first try.

    The analysis, a query per search in per-action mode, per document up to `MAX_CHUNKS`
    cleaning calls (when cleaning) and its assessment, the judge, a second judge on the
    root when asked for training targets, and the decomposition.
    """
    queries = config.max_steps if config.query_mode == "per-action" else 0
    per_document = (MAX_CHUNKS if config.clean else 0) + 1
    return 1 + queries + config.max_docs * per_document + int(judge) + int(judge_root) + 1


class NodeWorker:
    """Does nodes' work for one tree: each node on a copy, with its own log and cache."""

    def __init__(
        self,
        claim: Claim,
        *,
        config: ToeConfig,
        thresholds: Thresholds,
        evaluator: NodeEvaluator,
        agent: RetrievalAgent,
        analyst: ModelClient,
        decomposer: ModelClient,
        judge_root: bool = False,
    ) -> None:
        self.claim = claim
        self.config = config
        self.thresholds = thresholds
        self.evaluator = evaluator
        self.agent = agent
        self.analyst = analyst
        self.decomposer = decomposer
        self.judge_root = judge_root

    @property
    def most_calls(self) -> int:
        """The most requests one node's work can make (`most_calls`)."""
        judge = self.evaluator.kind == "llm-judge"
        return most_calls(self.config, judge=judge, judge_root=self.judge_root)

    async def run(self, node: Node, *, started: int) -> Work:
        """Lines 9-13 of Algorithm 1 for ``node``, on a copy; a failure kept, not raised."""
        copy = Node(
            id=node.id,
            text=node.text,
            depth=node.depth,
            weight=node.weight,
            dimension=node.dimension,
            parent=node.parent,  # read for is_root only; the copy is not its parent's child
        )
        # The cache as the consumed nodes left it; what this work adds is kept apart
        # until the loop consumes it (`adopt`).
        work = Work(copy, CallLog(), self.agent.evidence.fork(), started)
        try:
            await self._steps(work)
        except Exception as exc:  # noqa: BLE001 - raised when the node is consumed (`apply`)
            work.error = exc
        return work

    async def _steps(self, work: Work) -> None:
        node, log = work.node, work.log
        await analyse(node, self.analyst, log)
        work.docs, work.records = await self.agent.run(
            node, self.claim, log, evidence=work.evidence
        )
        expand = node.depth < self.config.max_depth
        if node.is_root and expand:
            # Always expanded (§III-D): the decomposition reads the evidence, not the score.
            (work.belief, work.judged), work.parts = await schedule.gather(
                self._evaluate(node, log), decompose(node, self.decomposer, log)
            )
            return
        work.belief, work.judged = await self._evaluate(node, log)
        node.v_self, node.r_self = work.belief.v, work.belief.r
        if expand and needs_expansion(node, self.thresholds):
            work.parts = await decompose(node, self.decomposer, log)

    async def _evaluate(self, node: Node, log: CallLog) -> tuple[Belief, Belief | None]:
        belief = await self.evaluator.evaluate(node, log)
        if not (self.judge_root and node.is_root):
            return belief, None
        kind = self.evaluator.kind
        return belief, belief if kind == "llm-judge" else await self.evaluator.judged(node, log)

    def apply(
        self, node: Node, work: Work, on_episode: Callable[[Node, list[StepRecord]], None] | None
    ) -> None:
        """Take a consumed node's work into the tree; its failure is raised here."""
        if work.error is not None:
            raise work.error
        assert work.belief is not None
        done = work.node
        node.features, node.queries, node.note = done.features, done.queries, done.note
        node.episode, node.actions = done.episode, done.actions
        if on_episode is not None:
            on_episode(node, work.records)
        node.v_self, node.r_self, node.status = work.belief.v, work.belief.r, "evaluated"
        self.agent.evidence.adopt(work.evidence)
