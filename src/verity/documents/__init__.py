"""Whole documents checked claim by claim (`check_document`), with the claims in place.

    from verity.documents import check_document
    from verity.extraction import Document, Extractor

The claims come from `verity.extraction` (Claimify); each is checked with any claim
method; `DocumentVerdict` holds the claims with their spans, verdicts and a summary.
"""

from verity.documents.check import check_document
from verity.documents.types import ClaimResult, DocumentSummary, DocumentVerdict

__all__ = ["ClaimResult", "DocumentSummary", "DocumentVerdict", "check_document"]
