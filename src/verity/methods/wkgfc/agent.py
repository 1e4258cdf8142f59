"""The agentic module (paper sections 3 and 4.1, a POMDP): the policy picks the next action.

After the first observation (the pruned N-hop subgraph) the policy sees the claim, the
facts, the web evidence and the steps so far, and answers with its reasoning and one
action: ``expandKG(entities)`` (one more beam-search hop from the entities it names,
or from where the last hop ended), ``webSearch(query)`` or ``verdict``. Its output schema
is built per step from the actions it may take now and the entities it may expand, so it
cannot name anything else. At ``max_steps`` the verdict is forced (section 5.7). Every
action, its reason and what it observed goes into ``trace.actions``.

The steps run one after another: each decision reads the observations of the steps
before it (eq. 2), so nothing of the loop can run beside the next decision.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, create_model

from verity.errors import ModelOutputError
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.wkgfc.prompts import ACT
from verity.methods.wkgfc.subgraph import Subgraph
from verity.methods.wkgfc.web import WebResult, passage_key

# The first observation is the environment's answer to a_0 (section 4.1), not a choice.
FIRST_OBSERVATIONS = ("initKGRetrieval", "givenEvidence")


@dataclass
class Episode:
    """Everything the policy has seen and done for one claim."""

    claim: str
    sub: Subgraph
    web: list[WebResult] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    forced: bool = False
    agent_hops: int = 0  # hops the policy asked for (beyond the initial N)
    cut: int = 0  # the most facts a prompt left out to fit the model's context

    def history(self) -> str:
        """The steps so far, as the policy reads them."""
        lines = []
        chosen = [a for a in self.actions if a["action"] not in FIRST_OBSERVATIONS]
        for i, step in enumerate(chosen, start=1):
            if step.get("query"):
                arg = f"({step['query']!r})"
            elif step.get("entities"):
                arg = f"({', '.join(step['entities'])})"
            else:
                arg = ""
            lines.append(f"{i}. {step['action']}{arg}: {step['summary']}")
        return "\n".join(lines) or "(none yet)"


@dataclass(frozen=True)
class Tools:
    """What the policy's actions do: expand from entities, search the web."""

    expand: Callable[[list[str]], Awaitable[dict[str, Any]]]
    search: Callable[[str], Awaitable[WebResult]]
    facts: Callable[[], Awaitable[str]]
    web: Callable[[], str]


def action_model(actions: list[str], entities: list[str]) -> type[BaseModel]:
    """The policy's answer schema: only ``actions`` may be named, only ``entities`` expanded."""
    fields: dict[str, Any] = {
        "reasoning": (str, ...),
        "action": (Literal[tuple(actions)], ...),
    }
    if "expandKG" in actions:
        item: Any = Literal[tuple(entities)] if entities else str
        fields["entities"] = (list[item], [])
    if "webSearch" in actions:
        fields["query"] = (str, "")
    model: type[BaseModel] = create_model("Action", **fields)
    model.__doc__ = "The policy's next move, with its reason first."
    return model


async def run_policy(
    episode: Episode,
    *,
    model: ModelClient,
    instruction: str,
    tools: Tools,
    max_steps: int,
    agent_hops: int,
    k: int,
    log: CallLog,
    web_allowed: bool = True,
) -> None:
    """Act until the policy asks for a verdict or the steps run out (then it is forced)."""
    labels = episode.sub.labels

    for used in range(max_steps):
        expandable = episode.sub.expandable() if episode.agent_hops < agent_hops else []
        actions = [
            *(["expandKG"] if expandable else []),
            *(["webSearch"] if web_allowed else []),
            "verdict",
        ]
        names = labels()
        # The instruction is the policy prompt, the text that optimisation rewrites.
        step = replace(ACT, instruction=instruction, output=action_model(actions, expandable))
        try:
            act = await step.arun(
                model,
                log=log,
                claim=episode.claim,
                facts=await tools.facts(),
                web=tools.web(),
                history=episode.history(),
                left=max_steps - used,
                hops_left=agent_hops - episode.agent_hops,
                actions=", ".join(actions),
                entities=", ".join(f"{names.get(q, '?')} ({q})" for q in expandable) or "(none)",
            )
        except ModelOutputError as exc:
            episode.actions.append(
                {"action": "invalid", "reason": str(exc), "summary": "no valid action",
                 "taken": False, "new": 0}
            )  # fmt: skip
            continue
        chosen = str(act.model_dump()["action"])
        log.milestone(
            "wkgfc.action", f"step {used + 1}: {chosen}", step=used + 1, action=chosen, forced=False
        )
        record: dict[str, Any] = {"action": chosen, "reason": getattr(act, "reasoning", "")}
        if chosen == "verdict":
            record.update(summary="ready to decide", taken=True, new=0)
            episode.actions.append(record)
            return
        if chosen == "expandKG":
            named = list(dict.fromkeys(getattr(act, "entities", [])))[:k]
            # Named none: the hop goes on from where the last one ended (the beam).
            start = named or [q for q in expandable if q in episode.sub.frontier][:k]
            start = start or expandable[:k]
            episode.agent_hops += 1
            hop = await tools.expand(start)
            record.update(
                entities=start, observation=hop, taken=True, new=len(hop.get("kept", [])),
                summary=f"{len(hop.get('kept', []))} new facts",
            )  # fmt: skip
        else:
            query = getattr(act, "query", "").strip() or episode.claim
            # Only passages no earlier search kept are new: a search that repeats an
            # earlier one brings nothing (4.4, "redundant retrieval actions").
            before = {passage_key(e) for r in episode.web for e, _ in r.kept}
            found = await tools.search(query)
            fresh = len({passage_key(e) for e, _ in found.kept} - before)
            record.update(
                query=query, observation=found.to_trace(), taken=found.error is None,
                new=fresh,
                summary=f"{len(found.kept)} passages kept of {found.found}, {fresh} new",
            )  # fmt: skip
        episode.actions.append(record)
    episode.forced = True
    log.milestone(
        "wkgfc.action",
        f"step limit of {max_steps} reached: verdict forced",
        step=max_steps,
        action="verdict",
        forced=True,
    )
    episode.actions.append(
        {"action": "verdict", "reason": "step limit reached", "summary": "forced",
         "taken": True, "new": 0}
    )  # fmt: skip
