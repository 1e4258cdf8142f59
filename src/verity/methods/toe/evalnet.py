"""ToE's evaluation network (paper §III-C, Fig. 3, Eq. 6): a node's evidence -> (v, r).

    net = EvalNet(seed=0)
    items = [[1, 1, 0, 0, 0, 0, 0.9, 0.8]]          # one supporting web page
    v, r = score(net, claim_vec, items)             # claim_vec: the node's 12 claim features
    losses = fit(net, claims, evidence, mask, v_t, r_t, epochs=20, seed=0)
    mean_loss(net, claims, evidence, mask, v_t, r_t)

Inputs (`verity.methods.toe.evalinputs`, re-exported here): a 12-number claim vector, up
to 20 evidence items of 8 numbers (stance, source-type one-hot, relevance, credibility)
padded by `pack`, and a mask of the occupied slots.

The network follows Fig. 3; its sizes are the specification's proposal, as the paper
gives none. A claim encoder and a shared evidence encoder embed the inputs; a quality gate
gives each item a weight in (0, 1). Each stance track (`TRACKS`: support, refute,
neutral) has its own multi-head self-attention whose keys are only the track's occupied
slots (the hard "safe mask"); its outputs are scaled by the gate (the "soft mask") and
averaged over the track's own items, an empty track giving a zero vector. The claim
embedding and the three track vectors pass through a shared MLP into a veracity head and
a reliability head. Each track being a mean, the heads see which tracks are occupied and
what their items say, but not how many items there are.

Training on Eq. 6 (`fit`, `mean_loss`, `eval_loss`) lives in
`verity.methods.toe.evalfit` and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import torch
from torch import Tensor, nn

from verity.methods.toe.evalfit import CLIP, LR, eval_loss, fit, mean_loss
from verity.methods.toe.evalinputs import (
    CLAIM_DIM,
    CREDIBILITY,
    EVIDENCE_DIM,
    RELEVANCE,
    SLOTS,
    SOURCE_TYPE,
    SOURCE_TYPES,
    STANCE,
    check_batch,
    claim_row,
    pack,
)

__all__ = [
    "CLAIM_DIM",
    "CREDIBILITY",
    "EVIDENCE_DIM",
    "HYPERPARAMETERS",
    "RELEVANCE",
    "SLOTS",
    "SOURCE_TYPE",
    "SOURCE_TYPES",
    "STANCE",
    "TRACKS",
    "EvalNet",
    "eval_loss",
    "fit",
    "mean_loss",
    "pack",
    "score",
]

# Fusion order is support, refute, neutral; the number is the stance feature's value.
TRACKS: Final = (("support", 1), ("refute", -1), ("neutral", 0))

# Spec section 6 PROPOSAL (the paper states no size): d = 64, 4 heads, gate 8->32->1,
# fusion 256->128->64, heads 64->32->1.
D_MODEL: Final = 64
HEADS: Final = 4
GATE_HIDDEN: Final = 32
FUSION_HIDDEN: Final = 128
HEAD_HIDDEN: Final = 32

HYPERPARAMETERS: Final[dict[str, object]] = {
    "claim_dim": CLAIM_DIM,
    "evidence_dim": EVIDENCE_DIM,
    "slots": SLOTS,
    "d_model": D_MODEL,
    "heads": HEADS,
    "gate_hidden": GATE_HIDDEN,
    "fusion": [D_MODEL * (1 + len(TRACKS)), FUSION_HIDDEN, D_MODEL],
    "head_hidden": HEAD_HIDDEN,
    "tracks": [name for name, _ in TRACKS],
    "track_counts": False,
    "optimizer": "adam",
    "lr": LR,
    "clip": CLIP,
}


def _mlp(width: int, hidden: int, out: int, last: nn.Module | None = None) -> nn.Sequential:
    layers = [nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, out)]
    return nn.Sequential(*layers, *([last] if last is not None else []))


class EvalNet(nn.Module):
    """Stance-aware evaluation network: ``net(claim, evidence, mask) -> (v, r)``.

    net = EvalNet(seed=0)
    v, r = net(claim, evidence, mask)   # [B, 12], [B, 20, 8], bool [B, 20] -> [B], [B]
    """

    def __init__(self, *, seed: int | None = None, track_counts: bool = False) -> None:
        """Build the net; ``seed`` fixes its initial weights, ``track_counts`` adds counts."""
        super().__init__()
        self.track_counts = track_counts
        # A seeded initialisation that leaves the caller's global random state alone.
        with torch.random.fork_rng(devices=[]):
            if seed is not None:
                torch.manual_seed(seed)
            self.claim_encoder = _mlp(CLAIM_DIM, D_MODEL, D_MODEL)
            self.evidence_encoder = _mlp(EVIDENCE_DIM, D_MODEL, D_MODEL)
            self.gate = _mlp(EVIDENCE_DIM, GATE_HIDDEN, 1, nn.Sigmoid())
            self.attention = nn.ModuleList(
                nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True) for _ in TRACKS
            )
            width = D_MODEL * (1 + len(TRACKS)) + (len(TRACKS) if track_counts else 0)
            self.fusion = _mlp(width, FUSION_HIDDEN, D_MODEL, nn.ReLU())
            self.veracity = _mlp(D_MODEL, HEAD_HIDDEN, 1, nn.Sigmoid())
            self.reliability = _mlp(D_MODEL, HEAD_HIDDEN, 1, nn.Sigmoid())

    def hyperparameters(self) -> dict[str, object]:
        """Return the sizes and training settings of this net, for the weights manifest."""
        if not self.track_counts:
            return dict(HYPERPARAMETERS)
        fusion = [D_MODEL * (1 + len(TRACKS)) + len(TRACKS), FUSION_HIDDEN, D_MODEL]
        return {**HYPERPARAMETERS, "track_counts": True, "fusion": fusion}

    def tracks(self, claim: Tensor, evidence: Tensor, mask: Tensor) -> Tensor:
        """Return the stance aggregation vectors, [B, 3, 64], in `TRACKS` order."""
        check_batch(claim, evidence, mask)
        # Padded slots are zeroed so that nothing in them (not even NaN) reaches a valid one.
        evidence = evidence.masked_fill(~mask.unsqueeze(-1), 0.0)
        encoded = self.evidence_encoder(evidence)
        quality = self.gate(evidence).squeeze(-1)  # the soft mask, one weight per slot
        stance = evidence[..., STANCE].round()
        vectors = []
        for (_, value), attention in zip(TRACKS, self.attention, strict=True):
            safe = mask & (stance == value)  # the hard safe mask
            empty = ~safe.any(dim=1, keepdim=True)
            # A row whose keys are all masked makes softmax NaN; an empty track may attend
            # to anything instead, and the pooling below drops all its outputs.
            blocked = ~safe & ~empty
            attended, _ = attention(
                encoded, encoded, encoded, key_padding_mask=blocked, need_weights=False
            )
            weight = (quality * safe).unsqueeze(-1)
            count = safe.sum(dim=1, keepdim=True).clamp(min=1)
            vectors.append((attended * weight).sum(dim=1) / count)
        return torch.stack(vectors, dim=1)

    def forward(self, claim: Tensor, evidence: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """Return veracity and reliability, each [B], for a batch of padded evidence sets."""
        parts = [self.claim_encoder(claim), self.tracks(claim, evidence, mask).flatten(1)]
        if self.track_counts:
            # The deviation the spec allows (section 6): each track's share of the 20 slots.
            stance = evidence[..., STANCE].round()
            counts = [(mask & (stance == value)).sum(dim=1) for _, value in TRACKS]
            parts.append(torch.stack(counts, dim=1).float() / SLOTS)
        hidden = self.fusion(torch.cat(parts, dim=1))
        return self.veracity(hidden).squeeze(-1), self.reliability(hidden).squeeze(-1)


def score(
    net: EvalNet, claim_vec: Sequence[float], items: Sequence[Sequence[float]]
) -> tuple[float, float]:
    """Score one node, (v, r), in eval mode and without gradients.

    v, r = score(net, claim_vec, [[-1, 0, 0, 0, 1, 0, 0.7, 0.9]])
    """
    claim = claim_row(claim_vec)
    evidence, mask = pack(items)
    was_training = net.training
    net.eval()
    try:
        with torch.no_grad():
            v, r = net(claim, evidence.unsqueeze(0), mask.unsqueeze(0))
    finally:
        net.train(was_training)
    return float(v[0]), float(r[0])
