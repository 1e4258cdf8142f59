"""A document's result in a few numbers: claims per label, and which to read first.

summary = summarise(results)
summary.counts     # {'SUPPORTED': 4, 'REFUTED': 1, 'NOT_ENOUGH_INFO': 2, 'failed': 0}
summary.in_doubt   # ('C3', 'C7', 'C1'): refuted or conflicting first, then least sure
"""

from __future__ import annotations

from collections.abc import Sequence

from verity.documents.types import ClaimResult, DocumentSummary
from verity.domain import Label

# Labels a reader acts on first: the text says something the evidence goes against.
_AGAINST = (Label.REFUTED, Label.CONFLICTING, Label.FAKE)
# Claims listed as most in doubt, at most.
IN_DOUBT = 5


def summarise(results: Sequence[ClaimResult]) -> DocumentSummary:
    """Counts per label (every label seen, and ``failed``) and the claims most in doubt.

    Most in doubt: refuted or conflicting verdicts, the least confident first; then the
    other verdicts by confidence, lowest first, a verdict with no confidence counted as
    0.5; then failed checks. At most `IN_DOUBT`, never a supported verdict of confidence
    0.9 or more.
    """
    counts: dict[str, int] = {}
    for r in results:
        counts[r.label] = counts.get(r.label, 0) + 1
    counts.setdefault("failed", 0)
    ranked: list[tuple[int, float, int, str]] = []
    for n, r in enumerate(results):
        verdict = r.verdict
        if verdict is None:
            ranked.append((2, 0.0, n, r.claim.id))
            continue
        sure = verdict.confidence if verdict.confidence is not None else 0.5
        if verdict.label in _AGAINST:
            ranked.append((0, sure, n, r.claim.id))
        elif sure < 0.9 or verdict.label is not Label.SUPPORTED:
            ranked.append((1, sure, n, r.claim.id))
    ranked.sort()
    return DocumentSummary(
        claims=len(results),
        counts=counts,
        in_doubt=tuple(claim_id for *_, claim_id in ranked[:IN_DOUBT]),
    )
