"""The evaluation network's inputs (paper §III-C): the claim vector and the padded evidence.

    evidence, mask = pack([[1, 1, 0, 0, 0, 0, 0.9, 0.8], [-1, 0, 0, 0, 1, 0, 0.7, 0.9]])
    evidence.shape, mask.shape          # (20, 8), (20,): two occupied slots, 18 padded
    claim = claim_row(features)         # [1, 12], the node's 12 claim features checked

An evidence item is 8 numbers. The paper names its contents (stance, source type,
relevance, credibility) but not their layout; this one is the specification's proposal
(section 6): 0 stance in {-1, 0, 1} (refute, neutral, support), 1-5 the source type
one-hot over `SOURCE_TYPES`, 6 relevance and 7 credibility, both in [0, 1]. A row that
breaks the layout is refused with `BadInputError`, since the network would otherwise
read it silently as something else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import torch
from torch import Tensor

from verity.errors import BadInputError

# §III-C: "a 12-dimensional claim feature vector and a padded 20 x 8 evidence matrix".
CLAIM_DIM: Final = 12
EVIDENCE_DIM: Final = 8
SLOTS: Final = 20

STANCE, RELEVANCE, CREDIBILITY = 0, 6, 7
# The five source groups named in the paper's Fig. 5 discussion, in feature order.
SOURCE_TYPES: Final = ("web", "academic", "encyclopedia", "factcheck", "social")
SOURCE_TYPE: Final = slice(1, 1 + len(SOURCE_TYPES))


def _numbers(values: Sequence[float], what: str) -> list[float]:
    try:
        return [float(value) for value in values]
    except (TypeError, ValueError) as exc:
        raise BadInputError(f"{what} is not a row of numbers") from exc


def _item(index: int, item: Sequence[float]) -> list[float]:
    row = _numbers(item, f"evidence item {index}")
    if len(row) != EVIDENCE_DIM:
        raise BadInputError(
            f"evidence item {index} has {len(row)} features; expected {EVIDENCE_DIM}"
        )
    source = row[SOURCE_TYPE]
    if not (
        row[STANCE] in (-1.0, 0.0, 1.0)
        and all(value in (0.0, 1.0) for value in source)
        and sum(source) <= 1.0
        and 0.0 <= row[RELEVANCE] <= 1.0
        and 0.0 <= row[CREDIBILITY] <= 1.0
    ):
        raise BadInputError(
            f"evidence item {index} breaks the layout: stance in {{-1, 0, 1}}, a source-type "
            "one-hot, relevance and credibility in [0, 1]"
        )
    return row


def pack(items: Sequence[Sequence[float]]) -> tuple[Tensor, Tensor]:
    """Pad evidence items into ([20, 8] float, [20] bool); beyond 20, keep the best 20.

    evidence, mask = pack(items)     # mask[i] is True where slot i holds an item
    """
    rows = [_item(index, item) for index, item in enumerate(items)]
    if len(rows) > SLOTS:
        # Spec section 6 PROPOSAL: keep the 20 of highest relevance x credibility. The sort
        # is stable, so ties keep the earlier item, and the kept items keep their order.
        ranked = sorted(range(len(rows)), key=lambda i: -rows[i][RELEVANCE] * rows[i][CREDIBILITY])
        rows = [rows[i] for i in sorted(ranked[:SLOTS])]
    evidence = torch.zeros(SLOTS, EVIDENCE_DIM)
    mask = torch.zeros(SLOTS, dtype=torch.bool)
    if rows:
        evidence[: len(rows)] = torch.tensor(rows)
        mask[: len(rows)] = True
    return evidence, mask


def claim_row(claim_vec: Sequence[float]) -> Tensor:
    """Return a node's claim features as a [1, 12] tensor, refusing any other width."""
    row = _numbers(claim_vec, "the claim vector")
    if len(row) != CLAIM_DIM or not all(map(math.isfinite, row)):
        raise BadInputError(f"the claim vector must be {CLAIM_DIM} finite numbers")
    return torch.tensor([row])


def check_batch(claim: Tensor, evidence: Tensor, mask: Tensor) -> None:
    """Refuse a batch whose shapes are not [B, 12], [B, 20, 8] and a bool [B, 20]."""
    size = claim.shape[0] if claim.dim() == 2 else -1
    if claim.shape != (size, CLAIM_DIM) or evidence.shape != (size, SLOTS, EVIDENCE_DIM):
        raise BadInputError(
            f"expected claim [B, {CLAIM_DIM}] and evidence [B, {SLOTS}, {EVIDENCE_DIM}]; "
            f"got {tuple(claim.shape)} and {tuple(evidence.shape)}"
        )
    if mask.shape != (size, SLOTS) or mask.dtype != torch.bool:
        raise BadInputError(
            f"expected a bool mask [B, {SLOTS}]; got {mask.dtype} {tuple(mask.shape)}"
        )
