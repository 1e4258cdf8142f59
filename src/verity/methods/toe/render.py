"""The tree for people and for the trace: an indented Markdown tree and plain records.

    markdown(tree, label="false", stop="decisive root", iterations=3)
    node_record(node)       # one node as a JSON-able dict for ``trace.tree``

Node texts, queries and evidence references come from the claim, a model or the web:
each is escaped (`verity.methods.common.md`) so that it shows as text and cannot turn
into a link, a heading or an image.
"""

from __future__ import annotations

from typing import Any

from verity.methods.common import md
from verity.methods.toe.tree import Node, Tree


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def node_record(node: Node) -> dict[str, Any]:
    """Everything the trace keeps of a node (the issue's per-node list)."""
    return {
        "id": node.id,
        "parent": node.parent.id if node.parent is not None else None,
        "depth": node.depth,
        "text": node.text,
        "dimension": node.dimension,
        "weight": node.weight,
        "status": node.status,
        "expanded": node.expanded,
        "v_self": node.v_self,
        "r_self": node.r_self,
        "v": node.v,
        "r": node.r,
        "aggregated_by": node.aggregated_by,
        "features": node.features.model_dump() if node.features else None,
        "queries": dict(node.queries),
        "actions": [
            {
                "tool": a.tool,
                "query": a.query,
                "found": a.found,
                "new": a.new,
                "reward": a.reward,
                "v": a.v,
                "r": a.r,
                **({"error": a.error} if a.error else {}),
            }
            for a in node.actions
        ],
        "evidence": [
            {
                "ref": i.ref,
                "tool": i.tool,
                "stance": i.stance,
                "authoritative": i.authoritative,
                "primary": i.primary,
                "relevance": i.relevance,
                "credibility": i.credibility,
            }
            for i in node.episode.items
        ],
        "note": node.note,
    }


def _line(node: Node) -> str:
    indent = "  " * (node.depth - 1)
    head = "claim" if node.is_root else f"{md(node.dimension)}, w {node.weight:.2f}"
    scores = (
        f"v {_score(node.v_self)} / r {_score(node.r_self)} self; "
        f"v {_score(node.v)} / r {_score(node.r)} aggregated"
        if node.status == "evaluated"
        else node.status
    )
    tools = ", ".join(a.tool for a in node.actions) or "none"
    stances = ", ".join(f"{i.stance} ({md(i.ref[:80])})" for i in node.episode.items[:10])
    lines = [f"{indent}- **{head}**: {md(node.text)}  ", f"{indent}  {scores}; tools: {tools}"]
    if stances:
        lines.append(f"{indent}  evidence: {stances}")
    if node.note:
        lines.append(f"{indent}  note: {md(node.note)}")
    return "\n".join(lines)


def markdown(tree: Tree, *, label: str, stop: str, iterations: int) -> str:
    """The whole tree, indented by depth, with the verdict and why the search stopped."""
    root = tree.root
    head = (
        f"**ToE verdict: {label}** (root v {_score(root.v)}, r {_score(root.r)}; "
        f"{iterations} iteration(s); stopped: {stop})"
    )
    return "\n".join([head, "", *(_line(node) for node in tree.walk())])
