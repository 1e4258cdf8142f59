"""The retrieval agent's tools: which source serves which action, and the warm-up policy.

    tools = tool_sources(sources)             # {"web": [...], "arxiv": [...], ...}
    allowed = allowed_actions(tools, episode, max_steps, removed)
    action = heuristic_action(features, episode, allowed, belief_r=0.4)

A source serves the tool its name says (``arxiv``, ``arxiv:offline`` → arXiv;
``factcheck:*`` → fact-checking sites; ``offline-wiki``, ``wikipedia`` → Wikipedia;
``reddit``; ``social``); every other source is a web search, and serves the
counter-evidence search too (§III-B: the same web search with a query against the claim).
A tool with no source is masked, as are the tools an ablation removes (Table III).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from verity.methods.toe.features import ACTIONS, DOC_CAP, STOP, ClaimFeatures, Episode
from verity.sources.base import Source

# Table III's groups: removing fact-checking removes Wikipedia too, as the paper groups
# them ("Wiki and PolitiFact"), and removing social removes Reddit ("Twitter and Reddit").
ABLATIONS = {
    "arxiv": ("arxiv",),
    "refute": ("counter",),
    "factcheck": ("factcheck", "wiki"),
    "social": ("social", "reddit"),
}


def tool_of(source: Source) -> str:
    """The action a source serves, read from its name."""
    name = source.name.lower()
    if name.startswith("arxiv"):
        return "arxiv"
    if name.startswith("factcheck"):
        return "factcheck"
    if name.startswith(("offline-wiki", "wikipedia")):
        return "wiki"
    if name.startswith("reddit"):
        return "reddit"
    if name.startswith("social"):
        return "social"
    return "web"


def tool_sources(sources: Sequence[Source]) -> dict[str, list[Source]]:
    """Sources per search action; the counter search uses the web sources."""
    tools: dict[str, list[Source]] = {tool: [] for tool in ACTIONS[:STOP]}
    for source in sources:
        tools[tool_of(source)].append(source)
    tools["counter"] = list(tools["web"])
    return tools


def available(tools: Mapping[str, Sequence[Source]], removed: Collection[str]) -> list[str]:
    """Search actions that have a source and are not ablated."""
    return [t for t in ACTIONS[:STOP] if tools.get(t) and t not in removed]


def allowed_actions(usable: Collection[str], episode: Episode, max_steps: int) -> list[bool]:
    """The action mask: usable tools while steps and documents remain; stop always."""
    room = episode.steps < max_steps and len(episode.items) < DOC_CAP
    return [(room and tool in usable) for tool in ACTIONS[:STOP]] + [True]


def heuristic_action(
    features: ClaimFeatures,
    episode: Episode,
    allowed: Sequence[bool],
    *,
    belief_r: float | None,
    tau_h: float = 0.8,
) -> int:
    """The warm-up policy "based on claim category and recency" (§III-B).

    Built from §III-B's reasoning, not from Figure 5 (the trained agent's behaviour):
    established facts go to fact-checking sites, encyclopedic and historical knowledge to
    Wikipedia, time-sensitive claims and people to social media, scientific and health
    claims to arXiv; once something supports the claim, a counter-evidence search; then
    the general web. Each tool once; stop at reliability τ_h (Tab. I) or when no planned
    tool is left.
    """
    if belief_r is not None and belief_r >= tau_h:
        return STOP
    plan: list[str] = []
    if any(item.stance == "support" for item in episode.items):
        plan.append("counter")
    if features.category in ("scientific", "health"):
        plan.append("arxiv")
    if features.recent_event or features.category == "celebrity":
        plan += ["social", "reddit"]
    if features.historical_fact or features.category == "historical":
        plan.append("wiki")
    if features.factual_statement or features.category == "political":
        plan.append("factcheck")
    plan += ["web", "wiki", "factcheck", "counter"]
    for tool in plan:
        index = ACTIONS.index(tool)
        if allowed[index] and not episode.searches.get(tool):
            return index
    return STOP
