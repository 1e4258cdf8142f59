"""The tree the aggregation network reads (paper §III-D): rows of node features, validated.

    rows = [TreeRow(root_features, parent=None),
            TreeRow(a_features, parent=0, rule=(0.3, 0.6)),   # a has children: a rule target
            TreeRow(b_features, parent=0),
            TreeRow(c_features, parent=1)]
    sample = TreeSample(rows, y_v=0.0, y_r=0.9)
    plan(rows).children[0]                                    # [1, 2]

Row 0 is the root; every other row names its parent's row index, in any order, and the
rows must form one tree. The caller passes evaluated nodes only, so a node's evaluated
children are exactly the rows naming it. ``rule`` is the rule-based aggregate
(`aggregate.rule_aggregate`) that Eq. 8 imitates; it is required on every non-root row
with a child and unused elsewhere. ``y_v`` and ``y_r`` are the root's targets in Eq. 7.
Plain Python, no torch, so that collecting trees needs no model library.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from verity.errors import BadInputError

NODE_DIM: Final = 16  # §III-D: "the node's own 16-dimensional feature vector"
# A tree of depth 5 (§IV-A) with at most 4 children a node (§III-D) has 341 nodes.
MAX_ROWS: Final = 10_000


def _unit_pair(name: str, pair: tuple[float, float]) -> tuple[float, float]:
    if len(pair) != 2:
        raise BadInputError(f"{name} must be a (v, r) pair")
    v, r = float(pair[0]), float(pair[1])
    if not all(math.isfinite(x) and 0.0 <= x <= 1.0 for x in (v, r)):
        raise BadInputError(f"{name} must hold two numbers in [0, 1], got {(v, r)!r}")
    return v, r


@dataclass(frozen=True)
class TreeRow:
    """One evaluated node: its 16 features, its parent's row index, its rule target."""

    features: Sequence[float]
    parent: int | None
    rule: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        features = tuple(float(x) for x in self.features)
        if len(features) != NODE_DIM or not all(math.isfinite(x) for x in features):
            raise BadInputError(f"a node needs {NODE_DIM} finite features, got {len(features)}")
        object.__setattr__(self, "features", features)
        if self.rule is not None:
            object.__setattr__(self, "rule", _unit_pair("a rule target", self.rule))


@dataclass(frozen=True)
class Plan:
    """A tree's shape: each row's depth (root 0), its children, the rows with a child."""

    depth: list[int]
    children: dict[int, list[int]]
    internal: list[int]


def plan(rows: Sequence[TreeRow]) -> Plan:
    """Check that ``rows`` form one tree under row 0 and describe its shape."""
    n = len(rows)
    if not 0 < n <= MAX_ROWS:
        raise BadInputError(f"a tree needs between 1 and {MAX_ROWS} rows, got {n}")
    if rows[0].parent is not None:
        raise BadInputError("row 0 is the root and must have no parent")
    children: dict[int, list[int]] = {}
    for i, row in enumerate(rows[1:], start=1):
        if row.parent is None or not 0 <= row.parent < n or row.parent == i:
            raise BadInputError(f"row {i} must name another row as its parent")
        children.setdefault(row.parent, []).append(i)
    depth = [-1] * n
    depth[0] = 0
    queue = [0]
    for node in queue:  # each row has one parent, so a walk from the root meets it once
        for child in children.get(node, []):
            depth[child] = depth[node] + 1
            queue.append(child)
    if -1 in depth:
        raise BadInputError("the rows do not form one tree under row 0 (a cycle?)")
    return Plan(depth=depth, children=children, internal=sorted(children))


@dataclass(frozen=True)
class TreeSample:
    """A completed tree with the root's targets y_v, y_r (Eq. 7)."""

    rows: Sequence[TreeRow]
    y_v: float
    y_r: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", tuple(self.rows))
        y_v, y_r = _unit_pair("the root targets (y_v, y_r)", (self.y_v, self.y_r))
        object.__setattr__(self, "y_v", y_v)
        object.__setattr__(self, "y_r", y_r)
        for i in plan(self.rows).internal:
            if i != 0 and self.rows[i].rule is None:
                raise BadInputError(f"row {i} has children, so it needs a rule target (Eq. 8)")
