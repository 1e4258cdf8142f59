"""Aggregate (Algorithm 1): every evaluated node's scores from its subtree, bottom-up.

    aggregate_tree(tree, net=None)            # the rule (§III-D)
    aggregate_tree(tree, net=aggnet)          # the aggregation network (Fig. 4)
    rows = tree_rows(tree, self_weight=0.0)   # the network's input, rule targets included

A leaf, or a node none of whose children is evaluated yet, keeps its self scores. A node
with evaluated children takes the rule's aggregate of their aggregated scores, or the
network's output. Pending and pruned nodes have no scores.
"""

from __future__ import annotations

from verity.methods.toe.aggnet import AggNet, TreeRow, apply
from verity.methods.toe.aggregate import Scored, rule_aggregate
from verity.methods.toe.features import node_row
from verity.methods.toe.tree import Node, Tree


def _post_order(node: Node) -> list[Node]:
    out: list[Node] = []
    for child in node.children:
        out += _post_order(child)
    return [*out, node]


def rule_scores(node: Node, self_weight: float = 0.0) -> tuple[float, float]:
    """The rule's (v, r) for an evaluated node from its children's current aggregates."""
    assert node.v_self is not None and node.r_self is not None
    done = node.evaluated_children()
    scored = [Scored(w=c.weight, v=c.v, r=c.r) for c in done if c.v is not None and c.r is not None]
    return rule_aggregate(scored, len(node.children), (node.v_self, node.r_self), self_weight)


def aggregate_tree(tree: Tree, net: AggNet | None = None, self_weight: float = 0.0) -> None:
    """Set ``v`` and ``r`` on every evaluated node (rule, or network where it applies)."""
    for node in _post_order(tree.root):
        if node.status != "evaluated":
            node.v = node.r = None
            continue
        if not node.evaluated_children():
            node.v, node.r, node.aggregated_by = node.v_self, node.r_self, "self"
            continue
        node.v, node.r = rule_scores(node, self_weight)
        node.aggregated_by = "rule"
    if net is None:
        return
    rows, index = tree_rows(tree, self_weight)
    for row_id, (v, r) in apply(net, rows).items():
        node = index[row_id]
        node.v, node.r, node.aggregated_by = v, r, "network"


def tree_rows(tree: Tree, self_weight: float = 0.0) -> tuple[list[TreeRow], dict[int, Node]]:
    """The evaluated nodes as the network's rows (root first), with the rule's aggregates.

    Each row shows the node's self scores; the network swaps in a child's aggregate
    when the child enters its parent. The rule's (v, r) rides along as Eq. 8's target:
    the rule the tree was aggregated with, ``self_weight`` included, so that the network
    imitates what the rule did (§III-D: the rule is "a source of soft supervision").
    """
    nodes = [n for n in tree.walk() if n.status == "evaluated"]
    position = {id(n): i for i, n in enumerate(nodes)}
    rows = []
    for node in nodes:
        assert node.v_self is not None and node.r_self is not None
        evaluated = node.evaluated_children()
        features = node_row(
            v=node.v_self,
            r=node.r_self,
            weight=node.weight,
            depth=node.depth,
            children=len(node.children),
            evaluated=len(evaluated),
            items=node.episode.items,
            searches=node.episode.steps,
            is_root=node.is_root,
            expanded=node.expanded,
        )
        parent = position[id(node.parent)] if node.parent is not None else None
        rule = rule_scores(node, self_weight) if evaluated else None
        rows.append(TreeRow(features=features, parent=parent, rule=rule))
    return rows, dict(enumerate(nodes))
