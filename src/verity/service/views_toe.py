"""ToE's reasoning for the web page: the argument tree, each node with its v and r.

    view = toe_view(verdict.trace.model_dump(mode="json"))
    view.root.text, view.root.v, view.root.r      # the claim, veracity, reliability
    view.root.children[0].dimension               # 'core event'

The trace keeps the tree as a flat list of node records (`verity.methods.toe.render.
node_record`), each naming its parent; here it becomes nested again, for a template
that draws each node as a ``<details>`` element with its children inside.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from verity.service.views_common import (
    fixed,
    fraction,
    integer,
    records,
    safe_href,
    text,
)

#: Deepest level drawn (the method stops at 5; a record deeper than this is malformed).
MAX_DEPTH = 8


@dataclass(frozen=True)
class NodeView:
    """One claim or sub-claim: its scores, its searches, its evidence and its children."""

    id: str
    text: str
    dimension: str
    weight: str
    status: str
    v: str
    r: str
    v_value: float | None
    r_value: float | None
    v_self: str
    r_self: str
    aggregated_by: str
    band: str  # 'true', 'false' or 'uncertain', from v as the verdict reads it
    actions: tuple[tuple[str, str, int], ...]  # (tool, query, documents found)
    evidence: tuple[tuple[str, str | None, str], ...]  # (reference, link, stance)
    note: str
    children: tuple[NodeView, ...]


@dataclass(frozen=True)
class ToeView:
    """ToE's tree and how the search ended."""

    root: NodeView | None
    nodes: int
    iterations: int
    stop: str
    history: tuple[tuple[str, str], ...]  # the root's (v, r) after each iteration
    kind: Literal["toe"] = "toe"


def _band(v: float | None) -> str:
    # The verdict's reading of the root (verity.methods.toe): above 0.6 true, below 0.4
    # false, between uncertain.
    if v is None:
        return "uncertain"
    return "true" if v > 0.6 else "false" if v < 0.4 else "uncertain"


def _node(
    record: Mapping[str, Any],
    children: Mapping[str, list[Mapping[str, Any]]],
    seen: set[str],
    depth: int,
) -> NodeView:
    key = text(record.get("id"), 40)
    seen.add(key)
    below = []
    if depth < MAX_DEPTH:
        # A node id met twice (a malformed record) is drawn once: no loop, no repeat.
        below = [
            _node(child, children, seen, depth + 1)
            for child in children.get(key, [])
            if text(child.get("id"), 40) not in seen
        ]
    v, r = fraction(record.get("v")), fraction(record.get("r"))
    return NodeView(
        id=key,
        text=text(record.get("text"), 1000),
        dimension=text(record.get("dimension"), 100),
        weight=fixed(record.get("weight")),
        status=text(record.get("status"), 40),
        v=fixed(v),
        r=fixed(r),
        v_value=v,
        r_value=r,
        v_self=fixed(record.get("v_self")),
        r_self=fixed(record.get("r_self")),
        aggregated_by=text(record.get("aggregated_by"), 40),
        band=_band(v),
        actions=tuple(
            (text(a.get("tool"), 40), text(a.get("query"), 300), integer(a.get("found")))
            for a in records(record.get("actions"), 20)
        ),
        evidence=tuple(
            (text(e.get("ref"), 300), safe_href(e.get("ref")), text(e.get("stance"), 40))
            for e in records(record.get("evidence"), 20)
        ),
        note=text(record.get("note"), 1000),
        children=tuple(below),
    )


def toe_view(trace: Mapping[str, Any]) -> ToeView:
    """ToE's part of the page from its trace."""
    nodes = records(trace.get("tree"))
    children: dict[str, list[Mapping[str, Any]]] = {}
    root = None
    for node in nodes:
        parent = node.get("parent")
        if parent is None:
            root = root or node
        else:
            children.setdefault(text(parent, 40), []).append(node)
    history = tuple(
        (fixed(pair[0]), fixed(pair[1]))
        for pair in (trace.get("root_history") or [])[:100]
        if isinstance(pair, list | tuple) and len(pair) == 2
    )
    return ToeView(
        root=_node(root, children, set(), 1) if root is not None else None,
        nodes=len(nodes),
        iterations=integer(trace.get("iterations_used")),
        stop=text(trace.get("stop_reason"), 200),
        history=history,
    )
