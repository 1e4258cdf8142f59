"""A document checked claim by claim: each claim's result, the summary, the whole record.

result.claims[0].claim.spans[0]      # where the first claim was said
result.claims[0].verdict.label       # what its check found
result.summary.counts                # {'SUPPORTED': 3, 'REFUTED': 1, 'failed': 0}
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from verity.domain import Trace, Usage, Verdict
from verity.extraction.types import Document, ExtractedClaim, SentenceNote, Span


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


ClaimStatus = Literal["checked", "failed", "pending"]


class ClaimResult(_Frozen):
    """A claim and what its check gave: a verdict, or the error that stopped it."""

    claim: ExtractedClaim
    status: ClaimStatus = "pending"
    verdict: Verdict | None = None
    error: str | None = None

    @property
    def label(self) -> str:
        """The verdict's label, or ``failed`` / ``pending``."""
        return self.verdict.label.value if self.verdict is not None else self.status


class DocumentSummary(_Frozen):
    """Counts per label (and ``failed``), and the claims a reader should look at first.

    ``in_doubt`` lists claim ids by how uncertain their verdict is: refuted and
    conflicting verdicts first, then those with the least confidence, then failed checks.
    """

    claims: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    in_doubt: tuple[str, ...] = ()


class DocumentVerdict(_Frozen):
    """A whole document checked claim by claim with one method."""

    document: Document
    method: str
    extractor: str
    sentences: tuple[SentenceNote, ...] = ()
    claims: tuple[ClaimResult, ...] = ()
    summary: DocumentSummary = DocumentSummary()
    # The whole article's REAL / FAKE, when asked for beside the claims (``--with zofia``).
    article: Verdict | None = None
    article_error: str | None = None
    extraction_usage: Usage = Usage()
    # The extraction's model calls, as a verdict's trace holds a check's.
    extraction_trace: Trace = Trace()
    # Everything the document's checks cost, extraction included, over every run.
    usage: Usage = Usage()
    # The extractor's configuration, so that a rerun reuses the claims only under the same.
    settings: dict[str, Any] = Field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether every sentence was read and every claim checked."""
        return all(n.outcome != "failed" for n in self.sentences) and all(
            c.status == "checked" for c in self.claims
        )

    def _selection(self, index: int) -> str:
        return next((n.selection for n in self.sentences if n.index == index), "")

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON shape the CLI prints and the service returns."""
        doc = self.document
        return {
            "document": {
                "title": doc.title,
                "url": doc.url,
                "date": doc.date.isoformat() if doc.date else None,
                "text": doc.text,
                "checksum": doc.checksum,
            },
            "method": self.method,
            "extractor": self.extractor,
            "settings": dict(self.settings),
            "summary": self.summary.model_dump(mode="json"),
            "sentences": [n.model_dump(mode="json") for n in self.sentences],
            "claims": [
                {
                    **r.claim.model_dump(mode="json"),
                    "sentence": _sentence_text(doc.text, r.claim.spans[0]),
                    "checkworthy": self._selection(r.claim.sentence_index),
                    "status": r.status,
                    "label": r.label,
                    "error": r.error,
                    "verdict": r.verdict.to_json_dict() if r.verdict is not None else None,
                }
                for r in self.claims
            ],
            "article": self.article.to_json_dict() if self.article is not None else None,
            "article_error": self.article_error,
            "extraction_usage": self.extraction_usage.model_dump(),
            "usage": self.usage.model_dump(),
            "complete": self.complete,
        }


def _sentence_text(text: str, span: Span) -> str:
    return text[span.start : span.end]
