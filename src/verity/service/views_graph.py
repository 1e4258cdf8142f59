"""A knowledge subgraph laid out for an SVG drawing: layers by distance from the seeds.

    graph = layout(["Q1"], [Fact("Q1", "Alice", "spouse", "Q2", "Bob", True)], {"Q1": "Alice"})
    graph.width, graph.height        # the drawing's size in pixels
    graph.nodes[0].x, graph.edges[0].path

The seeds (the entities the claim named) form the first column; every other entity
sits in the column of its distance from them, in the order the facts name it, so the
same subgraph is always drawn the same way. A value (a date, a number) is a node of its
own. Only numbers are computed here: labels stay plain text for the template, which
escapes them (KG labels come from outside and may hold markup).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Most nodes drawn; the facts that would add more are left out and counted.
MAX_NODES = 40
LABEL_CHARS = 28
_COLUMN = 230  # pixels between layers: room for a label of LABEL_CHARS characters
_ROW = 64
_MARGIN = 110  # half a label's width, so the first and last columns are not cut
_TOP = 30
_RADIUS = 8


@dataclass(frozen=True)
class Fact:
    """One statement to draw: subject and object ids and labels, and the property."""

    subject: str
    subject_label: str
    prop: str
    object: str
    object_label: str
    object_is_entity: bool


@dataclass(frozen=True)
class GraphNode:
    """An entity or value at its place; ``label`` is cut, ``title`` is the full name."""

    key: str
    x: float
    y: float
    label: str
    title: str
    seed: bool
    value: bool


@dataclass(frozen=True)
class GraphEdge:
    """A statement drawn as a path from subject to object, labelled with its property."""

    path: str
    label: str
    label_x: float
    label_y: float


@dataclass(frozen=True)
class GraphView:
    """The drawing: its size, nodes and edges, and how many facts were left out."""

    width: int
    height: int
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    left_out: int


def _cut(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def _nodes(
    seeds: Sequence[str], facts: Sequence[Fact], labels: dict[str, str]
) -> tuple[list[str], list[tuple[str, str, str]], int, set[str]]:
    """Node keys in order of mention, the edges kept, the facts left out, the value nodes."""
    order = list(dict.fromkeys(seeds))[:MAX_NODES]
    known = set(order)
    values: set[str] = set()
    edges: dict[tuple[str, str], list[str]] = {}
    left_out = 0
    for index, fact in enumerate(facts):
        target = fact.object if fact.object_is_entity else f"value:{index}"
        if not fact.object_is_entity:
            labels[target] = fact.object_label or fact.object
            values.add(target)
        new = [k for k in dict.fromkeys((fact.subject, target)) if k not in known]
        if len(order) + len(new) > MAX_NODES or fact.subject == target:
            left_out += 1
            continue
        order += new
        known.update(new)
        edges.setdefault((fact.subject, target), []).append(fact.prop)
    merged = [(s, o, ", ".join(dict.fromkeys(props))) for (s, o), props in edges.items()]
    return order, merged, left_out, values


def _layers(
    order: Sequence[str], seeds: Sequence[str], edges: Sequence[tuple[str, str, str]]
) -> dict[str, int]:
    """Each node's column: its distance from the seeds (or from the first node of its part)."""
    near: dict[str, list[str]] = {k: [] for k in order}
    for s, o, _ in edges:
        near[s].append(o)
        near[o].append(s)
    layer: dict[str, int] = {}
    starts = [k for k in dict.fromkeys(seeds) if k in near] + list(order)
    for start in starts:
        if start in layer:
            continue
        layer[start] = 0
        queue = deque([start])
        while queue:
            here = queue.popleft()
            for there in near[here]:
                if there not in layer:
                    layer[there] = layer[here] + 1
                    queue.append(there)
    return layer


def _edge(a: tuple[float, float], b: tuple[float, float], label: str) -> GraphEdge:
    """A straight path between two nodes (bent when they share a column), stopping at b's rim."""
    (x1, y1), (x2, y2) = a, b
    if x1 == x2:
        # In one column a straight line would run through the nodes between: bow it out.
        cx, cy = x1 + 0.35 * abs(y2 - y1) + 30, (y1 + y2) / 2
    else:
        cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    dx, dy = x2 - cx, y2 - cy
    length = math.hypot(dx, dy) or 1.0
    ex, ey = x2 - dx / length * (_RADIUS + 3), y2 - dy / length * (_RADIUS + 3)
    path = f"M {x1:.1f} {y1:.1f} Q {cx:.1f} {cy:.1f} {ex:.1f} {ey:.1f}"
    # The label sits on the curve's middle point (of a quadratic: a quarter of each end
    # and half the control point).
    mx, my = (x1 + 2 * cx + ex) / 4, (y1 + 2 * cy + ey) / 4
    return GraphEdge(path=path, label=_cut(label), label_x=round(mx, 1), label_y=round(my - 4, 1))


def layout(
    seeds: Sequence[str], facts: Sequence[Fact], names: Mapping[str, str] | None = None
) -> GraphView:
    """Place the seeds and the facts' entities in columns and draw the facts between them.

    ``names`` labels entities the facts do not (a seed that no fact names).
    """
    labels: dict[str, str] = {k: v for k, v in (names or {}).items() if v}
    for fact in facts:
        labels.setdefault(fact.subject, fact.subject_label)
        if fact.object_is_entity:
            labels.setdefault(fact.object, fact.object_label)
    order, edges, left_out, values = _nodes(seeds, facts, labels)
    layer = _layers(order, seeds, edges)
    columns: dict[int, list[str]] = {}
    for key in order:
        columns.setdefault(layer[key], []).append(key)
    tallest = max((len(c) for c in columns.values()), default=1)
    place: dict[str, tuple[float, float]] = {}
    for column, keys in columns.items():
        offset = (tallest - len(keys)) * _ROW / 2  # each column centred on the tallest
        for row, key in enumerate(keys):
            place[key] = (_MARGIN + column * _COLUMN, _TOP + offset + row * _ROW)
    seed_set = set(seeds)
    nodes = []
    for key in order:
        name = labels.get(key) or key
        title = name if key in values or name == key else f"{name} ({key})"
        x, y = place[key]
        nodes.append(
            GraphNode(
                key=key,
                x=x,
                y=y,
                label=_cut(name),
                title=title,
                seed=key in seed_set,
                value=key in values,
            )
        )
    drawn = tuple(_edge(place[s], place[o], label) for s, o, label in edges)
    width = 2 * _MARGIN + max(len(columns) - 1, 0) * _COLUMN
    height = 2 * _TOP + (tallest - 1) * _ROW + 20
    return GraphView(width=width, height=height, nodes=tuple(nodes), edges=drawn, left_out=left_out)
