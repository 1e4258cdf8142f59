"""The agentic module (paper section 4.2, a POMDP): the policy picks the next action.

After the initial KG retrieval the policy sees the claim, the facts, the web evidence and
the steps so far, and answers with its reasoning and one action: ``expandKG`` (one more
beam-search hop), ``webSearch(query)`` or ``verdict``. At ``max_steps`` the verdict is
forced from the evidence so far. Every action, its reason and what it observed goes into
``trace.actions``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from verity.errors import ModelOutputError
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.wkgfc.prompts import ACT
from verity.methods.wkgfc.subgraph import Subgraph
from verity.methods.wkgfc.web import WebResult


@dataclass
class Episode:
    """Everything the policy has seen and done for one claim."""

    claim: str
    sub: Subgraph
    web: list[WebResult] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    forced: bool = False

    def history(self) -> str:
        """The steps so far, as the policy reads them."""
        lines = []
        for i, step in enumerate(self.actions[1:], start=1):
            query = f"({step['query']!r})" if step.get("query") else ""
            lines.append(f"{i}. {step['action']}{query}: {step['summary']}")
        return "\n".join(lines) or "(none yet)"


def run_policy(
    episode: Episode,
    *,
    model: ModelClient,
    instruction: str,
    facts: Callable[[], str],
    web: Callable[[], str],
    expand: Callable[[], dict[str, Any]],
    search: Callable[[str], WebResult],
    max_steps: int,
    hops_left: Callable[[], int],
    log: CallLog,
    web_allowed: bool = True,
) -> None:
    """Act until the policy asks for a verdict or the steps run out (then it is forced)."""
    # The instruction is the policy prompt, the text that optimisation rewrites.
    step = replace(ACT, instruction=instruction)

    def can_expand() -> bool:
        return hops_left() > 0 and bool(episode.sub.frontier)

    for used in range(max_steps):
        try:
            act = step.run(
                model,
                log=log,
                claim=episode.claim,
                facts=facts(),
                web=web(),
                history=episode.history(),
                left=max_steps - used,
                hops_left=hops_left(),
                actions=_available(can_expand(), web_allowed),
            )
        except ModelOutputError as exc:
            episode.actions.append(
                {"action": "invalid", "reason": str(exc), "summary": "no valid action"}
            )
            continue
        record: dict[str, Any] = {"action": act.action, "reason": act.reasoning}
        if act.action == "verdict":
            record["summary"] = "ready to decide"
            episode.actions.append(record)
            return
        if act.action == "expandKG":
            if not can_expand():
                record["summary"] = "cannot expand: no hops or frontier left"
            else:
                hop = expand()
                record["observation"] = hop
                record["summary"] = f"{len(hop.get('kept', []))} new facts"
        elif not web_allowed:
            record["summary"] = "no web search in this setting"
        else:
            query = act.query.strip() or episode.claim
            found = search(query)
            episode.web.append(found)
            record["query"] = query
            record["observation"] = found.to_trace()
            record["summary"] = f"{len(found.kept)} passages kept of {found.found}"
        episode.actions.append(record)
    episode.forced = True
    episode.actions.append(
        {"action": "verdict", "reason": "step limit reached", "summary": "forced"}
    )


def _available(can_expand: bool, web_allowed: bool) -> str:
    """The actions the policy may take now; one it cannot take only wastes a step."""
    names = [*(["expandKG"] if can_expand else []), *(["webSearch"] if web_allowed else [])]
    missing = [
        *([] if can_expand else ["graph expansion: no hops or frontier left"]),
        *([] if web_allowed else ["web search: not available here"]),
    ]
    text = ", ".join([*names, "verdict"])
    return f"{text} (no {'; no '.join(missing)})" if missing else text
