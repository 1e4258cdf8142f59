"""One node's retrieval episode (§III-A, §III-B): choose a tool, search, assess, score.

    agent = RetrievalAgent(tools, evidence_agent, chooser, scorer, settings)
    await agent.run(node, claim, log)

Each step the chooser (the policy network, or the warm-up heuristic) picks one of the
eight actions under the mask; a search returns at most 3 results (§IV-A), documents the
node already holds are dropped, and the node never holds more than 10 (§III-A). Each new
document is assessed by the evidence agent; when a scorer is at hand (the trained
evaluation network) the node's (v, r) after the step gives Eq. 5's reward. The episode
ends on stop, after ``max_steps`` searches (Tab. I: 5) or at 10 documents.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from verity import schedule
from verity.domain import Claim, Evidence
from verity.errors import SourceUnavailableError
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.common import retrieve
from verity.methods.toe.evidence import EvidenceAgent
from verity.methods.toe.features import (
    ACTIONS,
    DOC_CAP,
    STOP,
    ClaimFeatures,
    EvidenceItem,
    retrieval_state,
)
from verity.methods.toe.prompts import QUERY
from verity.methods.toe.reward import Belief, RewardWeights, step_reward
from verity.methods.toe.tools import allowed_actions
from verity.methods.toe.tree import Action, Node
from verity.sources.base import Source

# §IV-A: "at most 3 results per search".
RESULTS_PER_SEARCH = 3
# A model's query is untrusted text sent to a search provider: one line, this long.
MAX_QUERY_CHARS = 300

# The chooser sees the 29 numbers and the mask and returns (action, log-probability).
Chooser = Callable[[Node, list[float], list[bool], float | None], tuple[int, float]]
# The scorer gives (v, r) for a node's evidence so far, or None when there is none
# that is cheap enough to ask at every step (before the network is trained).
Scorer = Callable[[ClaimFeatures, Sequence[EvidenceItem]], Belief | None]


@dataclass(frozen=True)
class StepRecord:
    """What a trained policy learns from: the state, mask, action, log-probability, reward."""

    state: list[float]
    allowed: list[bool]
    action: int
    logprob: float
    reward: float


def one_line(text: str) -> str:
    """A model-written query as one capped line."""
    return " ".join(text.split())[:MAX_QUERY_CHARS]


class RetrievalAgent:
    """Runs retrieval episodes for the nodes of one tree."""

    def __init__(
        self,
        *,
        tools: Mapping[str, Sequence[Source]],
        usable: Sequence[str],
        evidence: EvidenceAgent,
        chooser: Chooser,
        scorer: Scorer,
        query_model: ModelClient,
        max_steps: int,
        max_docs: int = DOC_CAP,
        query_mode: str = "per-node",
        reward: RewardWeights | None = None,
    ) -> None:
        self.tools = tools
        self.usable = list(usable)
        self.evidence = evidence
        self.chooser = chooser
        self.scorer = scorer
        self.query_model = query_model
        self.max_steps = max_steps
        self.max_docs = min(max_docs, DOC_CAP)
        self.query_mode = query_mode
        self.reward = reward or RewardWeights()

    async def run(
        self, node: Node, claim: Claim, log: CallLog, *, evidence: EvidenceAgent | None = None
    ) -> tuple[list[Evidence], list[StepRecord]]:
        """Fill ``node.episode`` and ``node.actions``; the documents and the transitions.

        ``evidence`` assesses the documents in place of the agent's own (a node's fork).
        """
        assessor = evidence or self.evidence
        features = node.features or ClaimFeatures()
        episode = node.episode
        docs: list[Evidence] = []
        records: list[StepRecord] = []
        belief = self.scorer(features, [])
        reached_high = belief is not None and belief.r >= self.reward.tau_h
        used: list[str] = []
        while True:
            room = len(docs) < self.max_docs
            allowed = allowed_actions(self.usable if room else (), episode, self.max_steps)
            r_now = belief.r if belief is not None else 0.0
            state = retrieval_state(features, episode, r_now, self.max_steps)
            action, logprob = self.chooser(node, state, allowed, belief.r if belief else None)
            tool = ACTIONS[action]
            log.milestone("toe.action", f"node {node.id}: {tool}", node=node.id, action=tool)
            if action == STOP:
                node.actions.append(Action(tool="stop", reward=0.0 if belief else None))
                records.append(StepRecord(state, allowed, action, logprob, 0.0))
                return docs, records
            query = await self._query(node, tool, used, log)
            used.append(query)
            episode.searches[tool] = episode.searches.get(tool, 0) + 1
            record = Action(tool=tool, query=query)
            node.actions.append(record)
            found = await self._search(tool, query, claim, record, log)
            held = {d.ref or d.text[:200] for d in docs}
            new = [ev for ev in found if (ev.ref or ev.text[:200]) not in held]
            new = new[: self.max_docs - len(docs)]
            record.found, record.new = len(found), len(new)
            items = (
                await schedule.gather(
                    *(assessor.assess(node.text, ev, tool=tool, log=log) for ev in new)
                )
                if new
                else []
            )
            docs += new
            episode.items += items
            after = self.scorer(features, episode.items)
            reward = 0.0
            if belief is not None and after is not None:
                first_high = not reached_high and after.r >= self.reward.tau_h
                reached_high = reached_high or first_high
                reward = step_reward(
                    belief,
                    after,
                    new_items=len(new),
                    authoritative=any(i.authoritative for i in items),
                    first_high=first_high,
                    weights=self.reward,
                )
                record.reward, record.v, record.r = reward, after.v, after.r
                belief = after
            records.append(StepRecord(state, allowed, action, logprob, reward))

    async def _query(self, node: Node, tool: str, used: list[str], log: CallLog) -> str:
        """§III's three queries per node, or a query written for this tool (per-action)."""
        if self.query_mode == "per-action":
            written = await QUERY.arun(
                self.query_model,
                log=log,
                tool=tool,
                claim=node.text,
                used="; ".join(used) or "(none)",
            )
            return one_line(written.query) or one_line(node.text)
        if tool == "counter":
            chosen = node.queries.get("counter", "")
        elif any(t != "counter" for t in node.episode.searches):
            chosen = node.queries.get("supporting", "")
        else:
            chosen = node.queries.get("background", "")
        return one_line(chosen) or one_line(node.text)

    async def _search(
        self, tool: str, query: str, claim: Claim, record: Action, log: CallLog
    ) -> list[Evidence]:
        sources = self.tools[tool]
        try:
            # Sources block (an index, a network call): in a worker thread.
            found = await asyncio.to_thread(
                retrieve, sources, query, RESULTS_PER_SEARCH, before=claim.date, log=log
            )
        except SourceUnavailableError as exc:
            record.error = str(exc)[:300]
            return []
        return found[:RESULTS_PER_SEARCH]
