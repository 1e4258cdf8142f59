"""ToE's aggregation network (paper §III-D, Fig. 4, Eqs. 7-8): learned bottom-up scores.

    torch.manual_seed(0)
    net = AggNet()
    rows = [TreeRow(root_features, parent=None),
            TreeRow(child_features, parent=0), TreeRow(other_features, parent=0)]
    apply(net, rows)                                  # {0: (v, r)}: nodes with a child
    fit(net, [TreeSample(rows, y_v=1.0, y_r=0.8), ...], epochs=20, seed=0)

A node is a 16-dim feature vector (``NODE_DIM``, spec 7 lists the features) whose
indices 0 and 1 hold a veracity and a reliability score. As a *parent* a node shows its
self scores there; as a *child* it shows its aggregated scores (§III-D: children carry
scores "that reflect the combined evidence from the entire subtree"), that is the
network's own detached output when the child has evaluated children, else its self
scores. So `apply` runs deepest level first and only on nodes with an evaluated child.

Layers (the sizes are the specification's, the paper gives none): a shared node encoder
16→64→64, one 4-head self-attention over the children under a padding mask, one
cross-attention with the parent as query, then [parent, context] → 64 → a veracity and
a reliability head, each a sigmoid. Training is `fit` on trees (`TreeSample`, see
`aggtree`) with Eq. 7's root loss plus Eq. 8's imitation of the rule-based aggregate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from verity.errors import BadInputError
from verity.methods.toe.aggtree import NODE_DIM, TreeRow, TreeSample, plan

__all__ = [
    "HYPERPARAMETERS",
    "NODE_DIM",
    "AggNet",
    "TreeRow",
    "TreeSample",
    "apply",
    "fit",
    "mean_loss",
]

HIDDEN: Final = 64  # spec 7 PROPOSAL (the paper gives no sizes)
HEADS: Final = 4  # spec 7 PROPOSAL
LR: Final = 1e-4  # §III-D: AdamW, learning rate 1e-4
WEIGHT_DECAY: Final = 1e-5  # §III-D: weight decay 1e-5
CLIP: Final = 1.0  # §III-D: gradient norm clipping at 1.0
W_ROOT: Final = 1.0  # §III-D, Eq. 7: w_root = 1.0
W_IMIT: Final = 0.1  # §III-D, Eq. 8: w_imit = 0.1
BATCH_SIZE: Final = 16  # trees per step; the paper is silent

HYPERPARAMETERS: Final[dict[str, float | int | str]] = {
    "node_dim": NODE_DIM,
    "hidden": HIDDEN,
    "heads": HEADS,
    "optimizer": "AdamW",
    "lr": LR,
    "weight_decay": WEIGHT_DECAY,
    "clip": CLIP,
    "w_root": W_ROOT,
    "w_imit": W_IMIT,
    "batch_size": BATCH_SIZE,
}


class AggNet(nn.Module):
    """Parent and evaluated children in, the parent's aggregated (v, r) out.

        v, r = AggNet()(parent, children, mask)   # [B, 16], [B, C, 16], [B, C] bool -> [B], [B]

    ``mask`` is True where a child is present; every row needs at least one. Weights
    start from torch's global generator: call `torch.manual_seed` first to reproduce them.
    """

    def __init__(self, hidden: int = HIDDEN, heads: int = HEADS) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(NODE_DIM, hidden), nn.ReLU(), nn.Linear(hidden, hidden)
        )
        self.self_attention = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.cross_attention = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.fuse = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU())
        self.v_head = nn.Linear(hidden, 1)
        self.r_head = nn.Linear(hidden, 1)

    def logits(self, parent: Tensor, children: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """The two scores before their sigmoids (the losses use these, for stability)."""
        _check_shapes(parent, children, mask)
        padding = ~mask  # PyTorch masks the True positions out
        p = self.encoder(parent)
        c = self.encoder(children)
        # No positional encoding: the children are a set, so the output cannot depend
        # on their order. The residual keeps each child's own encoding next to its context.
        c = c + self.self_attention(c, c, c, key_padding_mask=padding, need_weights=False)[0]
        context = self.cross_attention(
            p.unsqueeze(1), c, c, key_padding_mask=padding, need_weights=False
        )[0].squeeze(1)
        h = self.fuse(torch.cat([p, context], dim=-1))
        return self.v_head(h).squeeze(-1), self.r_head(h).squeeze(-1)

    def forward(self, parent: Tensor, children: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """Veracity and reliability in (0, 1), one each per row."""
        v, r = self.logits(parent, children, mask)
        return torch.sigmoid(v), torch.sigmoid(r)


def _check_shapes(parent: Tensor, children: Tensor, mask: Tensor) -> None:
    b = parent.shape[0] if parent.dim() == 2 else -1
    if parent.shape != (b, NODE_DIM) or children.dim() != 3:
        raise BadInputError(f"parent must be [B, {NODE_DIM}] and children [B, C, {NODE_DIM}]")
    if children.shape[0] != b or children.shape[2] != NODE_DIM:
        raise BadInputError(f"children must be [B, C, {NODE_DIM}] with B = {b}")
    if mask.dtype != torch.bool or mask.shape != children.shape[:2]:
        raise BadInputError("mask must be a bool tensor shaped [B, C] like the children")
    if not bool(mask.any(dim=1).all()):
        # A fully masked row would make attention return NaN; such a node has no
        # aggregate to learn (it keeps its self scores).
        raise BadInputError("every parent needs at least one child in the mask")


def _tree_logits(
    net: AggNet, trees: Sequence[Sequence[TreeRow]]
) -> list[dict[int, tuple[Tensor, Tensor]]]:
    """Logits of every node with a child, in every tree; one forward pass per depth level."""
    plans = [plan(rows) for rows in trees]
    raw = [torch.tensor([row.features for row in rows], dtype=torch.float32) for rows in trees]
    # What each node shows as a child: its self scores until its own output replaces them.
    as_child = [features.clone() for features in raw]
    out: list[dict[int, tuple[Tensor, Tensor]]] = [{} for _ in trees]
    deepest = max(max(p.depth) for p in plans)
    for level in range(deepest, -1, -1):
        jobs = [(t, i) for t, p in enumerate(plans) for i in p.internal if p.depth[i] == level]
        if not jobs:
            continue
        parent = torch.stack([raw[t][i] for t, i in jobs])
        kids = [as_child[t][plans[t].children[i]] for t, i in jobs]
        children = nn.utils.rnn.pad_sequence(kids, batch_first=True)
        lengths = torch.tensor([len(k) for k in kids])
        mask = torch.arange(children.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
        v, r = net.logits(parent, children, mask)
        scores = torch.stack([torch.sigmoid(v), torch.sigmoid(r)], dim=1).detach()
        for b, (t, i) in enumerate(jobs):
            out[t][i] = (v[b], r[b])
            as_child[t][i, :2] = scores[b]
    return out


def apply(net: AggNet, rows: Sequence[TreeRow]) -> dict[int, tuple[float, float]]:
    """Aggregated (v, r) of every row with at least one child, keyed by row index."""
    with torch.no_grad():
        (out,) = _tree_logits(net, [rows])
    return {
        i: (float(torch.sigmoid(v)), float(torch.sigmoid(r))) for i, (v, r) in sorted(out.items())
    }


def _tree_losses(
    net: AggNet, samples: Sequence[TreeSample], w_root: float, w_imit: float
) -> Tensor:
    """One loss per tree, Eq. 7 plus Eq. 8; every root must have a child (`_usable`)."""
    outs = _tree_logits(net, [s.rows for s in samples])
    roots = torch.stack([torch.stack(out[0]) for out in outs])
    targets = torch.tensor([[s.y_v, s.y_r] for s in samples])
    # Eq. 7: w_root [BCE(v_root, y_v) + BCE(r_root, y_r)]
    loss = w_root * F.binary_cross_entropy_with_logits(roots, targets, reduction="none").sum(1)
    inner = [(t, i) for t, out in enumerate(outs) for i in out if i != 0]
    if not inner:
        return loss
    logits = torch.stack([torch.stack(outs[t][i]) for t, i in inner])
    rules = torch.tensor([samples[t].rows[i].rule for t, i in inner])
    per_node = F.binary_cross_entropy_with_logits(logits, rules, reduction="none").sum(1)
    # Eq. 8: w_imit times the mean over each tree's non-root nodes with children.
    owner = torch.tensor([t for t, _ in inner])
    sums = torch.zeros(len(samples)).index_add(0, owner, per_node)
    counts = torch.bincount(owner, minlength=len(samples)).clamp(min=1)
    return loss + w_imit * sums / counts


def _check_weights(w_root: float, w_imit: float) -> None:
    if not (w_root >= 0.0 and w_imit >= 0.0):
        raise BadInputError("the loss weights w_root and w_imit must be >= 0")


def _usable(samples: Sequence[TreeSample]) -> list[TreeSample]:
    usable = [s for s in samples if len(s.rows) > 1]
    if not usable:
        raise BadInputError("no tree has a root with an evaluated child: nothing to learn from")
    return usable


def mean_loss(
    net: AggNet,
    samples: Sequence[TreeSample],
    *,
    w_root: float = W_ROOT,
    w_imit: float = W_IMIT,
    batch_size: int = 64,
) -> float:
    """Mean per-tree loss (Eq. 7 + Eq. 8) over the trees whose root has a child."""
    _check_weights(w_root, w_imit)
    if batch_size < 1:
        raise BadInputError("batch_size must be at least 1")
    usable = _usable(samples)
    total = 0.0
    with torch.no_grad():
        for start in range(0, len(usable), batch_size):
            batch = usable[start : start + batch_size]
            total += float(_tree_losses(net, batch, w_root, w_imit).sum())
    return total / len(usable)


def fit(
    net: AggNet,
    samples: Sequence[TreeSample],
    *,
    epochs: int,
    seed: int,
    lr: float = LR,
    weight_decay: float = WEIGHT_DECAY,
    clip: float = CLIP,
    w_root: float = W_ROOT,
    w_imit: float = W_IMIT,
    batch_size: int = BATCH_SIZE,
) -> list[float]:
    """Train in place on shuffled mini-batches of trees; each epoch's mean per-tree loss.

    ``seed`` orders the batches, the only randomness here; the starting weights are the
    caller's (seed `torch.manual_seed` before building the net). Trees with a lone root
    are skipped: the network never runs on them.
    """
    _check_weights(w_root, w_imit)
    if epochs < 0 or batch_size < 1 or not (lr > 0.0 and clip > 0.0 and weight_decay >= 0.0):
        raise BadInputError("epochs >= 0, batch_size >= 1, lr > 0, clip > 0, weight_decay >= 0")
    usable = _usable(samples)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
    net.train()
    history = []
    for _ in range(epochs):
        order = torch.randperm(len(usable), generator=generator).tolist()
        total = 0.0
        for start in range(0, len(order), batch_size):
            batch = [usable[i] for i in order[start : start + batch_size]]
            loss = _tree_losses(net, batch, w_root, w_imit).mean()
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            nn.utils.clip_grad_norm_(net.parameters(), clip)
            optimizer.step()
            total += float(loss.detach()) * len(batch)
        history.append(total / len(usable))
    return history
