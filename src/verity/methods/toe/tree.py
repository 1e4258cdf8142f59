"""The argument tree of Algorithm 1: nodes, their priority, the flags and the stops.

    tree = Tree(root_text)                     # n0 = the claim, Q = {n0}
    node = tree.pop()                          # argmax priority, ties by insertion
    tree.add_children(node, [("...", "core event", 0.6), ("...", "quantitative accuracy", 0.4)])
    tree.prune()                               # pending descendants of decisive nodes
    tree.converged(history, thresholds)        # γ of §III-D

The thresholds are §III-D's and §IV-A's (Thresholds). Boundaries: expansion below τ_r^exp
(strict), decisive when reliability is above τ_r^dec and veracity outside the closed band
[τ_v−, τ_v+], labels False below 0.4, True above 0.6, Uncertain on [0.4, 0.6].
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from verity.methods.toe.features import ClaimFeatures, Episode

Status = Literal["pending", "evaluated", "pruned"]


@dataclass(frozen=True)
class Thresholds:
    """Tree management settings (§III-D, §IV-A)."""

    expand_r: float = 0.7  # τ_r^exp: expand while self reliability is below it
    decisive_r: float = 0.7  # τ_r^dec
    decisive_v_high: float = 0.7  # τ_v+
    decisive_v_low: float = 0.3  # τ_v−
    converge_range: float = 0.1  # τ_c: root veracity range over the window
    window: int = 3  # "the last three iterations" (§III-D)
    true_above: float = 0.6  # §IV-A: v > 0.6 is True
    false_below: float = 0.4  # §IV-A: v < 0.4 is False

    def to_dict(self) -> dict[str, Any]:
        """The thresholds, for manifests."""
        return asdict(self)


@dataclass
class Action:
    """One step of a node's retrieval episode, with what it found and earned."""

    tool: str
    query: str = ""
    found: int = 0
    new: int = 0
    reward: float | None = None
    v: float | None = None
    r: float | None = None
    error: str = ""


@dataclass
class Node:
    """A claim or sub-claim with its evidence and its self and aggregated scores."""

    id: int
    text: str
    depth: int
    weight: float = 1.0
    dimension: str = "claim"
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    status: Status = "pending"
    features: ClaimFeatures | None = None
    queries: dict[str, str] = field(default_factory=dict)
    episode: Episode = field(default_factory=Episode)
    actions: list[Action] = field(default_factory=list)
    v_self: float | None = None
    r_self: float | None = None
    v: float | None = None  # aggregated
    r: float | None = None
    expanded: bool = False
    aggregated_by: str = ""
    note: str = ""

    @property
    def is_root(self) -> bool:
        """Whether this is n0."""
        return self.parent is None

    def evaluated_children(self) -> list[Node]:
        """Children whose own evaluation is done (C of the rule aggregation)."""
        return [c for c in self.children if c.status == "evaluated"]


def needs_expansion(node: Node, th: Thresholds) -> bool:
    """δ_n (§III-D): self reliability below τ_r^exp; the root always."""
    return node.is_root or (node.r_self is not None and node.r_self < th.expand_r)


def decisive(v: float | None, r: float | None, th: Thresholds) -> bool:
    """φ_n (§III-D): reliable and clearly true or false; [τ_v−, τ_v+] is not decisive."""
    if v is None or r is None:
        return False
    return r > th.decisive_r and (v < th.decisive_v_low or v > th.decisive_v_high)


def converged(history: Sequence[tuple[float, float]], th: Thresholds) -> bool:
    """γ (§III-D): root veracity range over the last window below τ_c, root r above τ_r^exp.

    ``history`` holds the root's aggregated (v, r) after each iteration; the comparison is
    with the expansion threshold τ_r^exp, as §III-D writes it.
    """
    if len(history) < th.window:
        return False
    recent = [v for v, _ in history[-th.window :]]
    return max(recent) - min(recent) < th.converge_range and history[-1][1] > th.expand_r


def verdict_band(v: float, th: Thresholds) -> Literal["false", "uncertain", "true"]:
    """§IV-A's three labels: False below 0.4, True above 0.6, Uncertain between (inclusive)."""
    if v < th.false_below:
        return "false"
    if v > th.true_above:
        return "true"
    return "uncertain"


def priority(node: Node) -> float:
    """§III: parent's uncertainty and own importance, equally weighted (verity's weights).

    P(n) = 0.5·(1 − r_aggr(parent)) + 0.5·w_n; the root's is 1.
    """
    if node.parent is None:
        return 1.0
    parent_r = node.parent.r if node.parent.r is not None else 0.0
    return 0.5 * (1.0 - parent_r) + 0.5 * node.weight


class Tree:
    """The tree and its queue of pending nodes; priority recomputed at every pop."""

    def __init__(self, claim: str) -> None:
        self.root = Node(id=0, text=claim, depth=1)
        self.nodes: list[Node] = [self.root]
        self.queue: list[Node] = [self.root]

    def pop(self) -> Node | None:
        """The pending node of highest priority; the earliest added on a tie."""
        if not self.queue:
            return None
        best = max(range(len(self.queue)), key=lambda i: (priority(self.queue[i]), -i))
        return self.queue.pop(best)

    def add_children(self, node: Node, parts: Sequence[tuple[str, str, float]]) -> list[Node]:
        """Attach sub-claims (text, dimension, weight) as pending nodes in the queue."""
        added = []
        for text, dimension, weight in parts:
            child = Node(
                id=len(self.nodes),
                text=text,
                depth=node.depth + 1,
                weight=weight,
                dimension=dimension,
                parent=node,
            )
            node.children.append(child)
            self.nodes.append(child)
            self.queue.append(child)
            added.append(child)
        node.expanded = bool(added)
        return added

    def prune(self, th: Thresholds) -> list[Node]:
        """Top-down: pending descendants of every decisive non-leaf leave the queue.

        They stay in the tree, marked pruned, so the trace shows what was not checked.
        """
        pruned: list[Node] = []
        for node in self.walk():
            if node.children and node.status == "evaluated" and decisive(node.v, node.r, th):
                for below in _descendants(node):
                    if below.status == "pending":
                        below.status = "pruned"
                        pruned.append(below)
        self.queue = [n for n in self.queue if n.status == "pending"]
        return pruned

    def walk(self) -> Iterator[Node]:
        """Every node, parents before children."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))


def _descendants(node: Node) -> Iterator[Node]:
    for child in node.children:
        yield child
        yield from _descendants(child)
