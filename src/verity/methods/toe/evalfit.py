"""Training ToE's evaluation network on Eq. 6 (paper §III-C), and measuring it.

    net = EvalNet(seed=0)
    before = mean_loss(net, claims, evidence, mask, v_t, r_t)       # held-out set
    losses = fit(net, claims, evidence, mask, v_t, r_t, epochs=20, seed=0)

A set is N claim vectors [N, 12], padded evidence [N, 20, 8], their bool masks [N, 20]
and the LLM judge's soft targets v_t, r_t [N] in [0, 1]. Eq. 6 adds two binary
cross-entropies; §III-C trains with Adam at lr 1e-3 and clips the gradient norm at 1.0.
Batch size and epochs are not in the paper (32 here, epochs chosen by the caller). The
seed drives the shuffling only: the initial weights are the net's own (`EvalNet(seed=)`).
Any module mapping (claim, evidence, mask) to (v, r) trains the same way.
"""

from __future__ import annotations

from typing import Final

import torch
from torch import Tensor, nn
from torch.nn import functional

from verity.errors import BadInputError
from verity.methods.toe.evalinputs import check_batch

# §III-C: "optimized with Adam using a learning rate of 1e-3 and gradient norm clipping at 1.0".
LR: Final = 1e-3
CLIP: Final = 1.0


def eval_loss(v_hat: Tensor, r_hat: Tensor, v_target: Tensor, r_target: Tensor) -> Tensor:
    """Eq. 6: BCE(v_hat, v_target) + BCE(r_hat, r_target), each averaged over the batch."""
    v_loss = functional.binary_cross_entropy(v_hat, v_target)
    return v_loss + functional.binary_cross_entropy(r_hat, r_target)


def _check_set(claims: Tensor, evidence: Tensor, mask: Tensor, v_t: Tensor, r_t: Tensor) -> int:
    check_batch(claims, evidence, mask)
    size = claims.shape[0]
    if size == 0 or v_t.shape != (size,) or r_t.shape != (size,):
        raise BadInputError(
            f"expected a non-empty set of {size} with targets [{size}]; "
            f"got {tuple(v_t.shape)} and {tuple(r_t.shape)}"
        )
    if not (bool(torch.isfinite(claims).all()) and bool(torch.isfinite(evidence[mask]).all())):
        raise BadInputError("claim features and occupied evidence slots must be finite")
    for name, target in (("veracity", v_t), ("reliability", r_t)):
        if not bool(((target >= 0) & (target <= 1)).all()):
            raise BadInputError(f"{name} targets must lie in [0, 1]")
    return size


def fit(
    net: nn.Module,
    claims: Tensor,
    evidence: Tensor,
    mask: Tensor,
    v_t: Tensor,
    r_t: Tensor,
    *,
    epochs: int,
    seed: int,
    batch_size: int = 32,
    lr: float = LR,
    clip: float = CLIP,
) -> list[float]:
    """Train on Eq. 6 with Adam and clipping; return each epoch's mean training loss."""
    size = _check_set(claims, evidence, mask, v_t, r_t)
    if epochs < 0 or batch_size < 1 or not (lr > 0 and clip > 0):
        raise BadInputError("fit needs epochs >= 0, batch_size >= 1, lr > 0 and clip > 0")
    generator = torch.Generator().manual_seed(seed)
    optimiser = torch.optim.Adam(net.parameters(), lr=lr)
    was_training = net.training
    net.train()
    losses = []
    try:
        for _ in range(epochs):
            order = torch.randperm(size, generator=generator)
            total = 0.0
            for start in range(0, size, batch_size):
                batch = order[start : start + batch_size]
                v, r = net(claims[batch], evidence[batch], mask[batch])
                loss = eval_loss(v, r, v_t[batch], r_t[batch])
                optimiser.zero_grad()
                torch.autograd.backward(loss)
                nn.utils.clip_grad_norm_(net.parameters(), clip)
                optimiser.step()
                total += loss.item() * len(batch)
            losses.append(total / size)
    finally:
        net.train(was_training)
    return losses


def mean_loss(
    net: nn.Module,
    claims: Tensor,
    evidence: Tensor,
    mask: Tensor,
    v_t: Tensor,
    r_t: Tensor,
    *,
    batch_size: int = 256,
) -> float:
    """Eq. 6 averaged over a whole set, in eval mode and without training."""
    size = _check_set(claims, evidence, mask, v_t, r_t)
    if batch_size < 1:
        raise BadInputError("batch_size must be >= 1")
    was_training = net.training
    net.eval()
    total = 0.0
    try:
        with torch.no_grad():
            for start in range(0, size, batch_size):
                part = slice(start, start + batch_size)
                v, r = net(claims[part], evidence[part], mask[part])
                total += float(eval_loss(v, r, v_t[part], r_t[part])) * v.shape[0]
    finally:
        net.train(was_training)
    return total / size
