"""Web retrieval for WKGFC (paper section 4.3): coarse retrieval, then a fine LLM filter.

Coarse: the configured passage sources (web search providers or a local corpus), their
results re-ranked against the claim with BM25. Fine: the LLM keeps the passages that are
factually relevant to the claim and consistent, each with a confidence. Kept passages are
marked as web evidence; they never replace a graph fact. When every source fails, the
search finds nothing and says why; the episode goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from verity.domain import Evidence
from verity.errors import ModelOutputError, SourceUnavailableError
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.common import numbered, retrieve
from verity.methods.wkgfc.prompts import FILTER_PASSAGES
from verity.sources.base import Source
from verity.sources.bm25 import BM25Index


def bm25_rerank(query: str, passages: Sequence[Evidence]) -> list[Evidence]:
    """Passages ordered by BM25 score against the query; unscored ones keep their order."""
    if len(passages) < 2:
        return list(passages)
    index = BM25Index.build([f"{p.title} {p.text}" for p in passages])
    scores = index.scores(query)
    order = sorted(range(len(passages)), key=lambda i: -float(scores[i]))
    return [passages[i] for i in order]


@dataclass
class WebResult:
    """What one webSearch action found and kept."""

    query: str
    found: int = 0
    kept: list[tuple[Evidence, float]] = field(default_factory=list)
    error: str | None = None

    def to_trace(self) -> dict[str, Any]:
        """The record kept in the verdict's trace."""
        record: dict[str, Any] = {
            "query": self.query,
            "found": self.found,
            "kept": [{"ref": e.ref, "title": e.title, "confidence": c} for e, c in self.kept],
        }
        if self.error:
            record["error"] = self.error
        return record


def search_web(
    sources: Sequence[Source],
    query: str,
    claim: str,
    model: ModelClient,
    *,
    k: int,
    keep: int,
    before: date | None,
    log: CallLog,
) -> WebResult:
    """Coarse retrieval, BM25 re-ranking against the claim, then the LLM filter."""
    result = WebResult(query=query)
    try:
        found = retrieve(sources, query, k, before=before, log=log)
    except SourceUnavailableError as exc:
        result.error = str(exc)
        return result
    result.found = len(found)
    shortlist = bm25_rerank(claim, found)[:keep]
    if not shortlist:
        return result
    try:
        choice = FILTER_PASSAGES.run(model, log=log, claim=claim, passages=numbered(shortlist, 600))
    except ModelOutputError:
        return result
    # Each number is paired with its confidence before invalid or repeated numbers are
    # dropped, so a dropped number cannot shift the confidences of the others.
    paired: dict[int, float] = {}
    for rank, number in enumerate(choice.kept):
        confidence = choice.confidence[rank] if rank < len(choice.confidence) else 0.5
        if 1 <= number <= len(shortlist) and number not in paired and len(paired) < keep:
            paired[number] = float(confidence)
    result.kept = [(shortlist[n - 1], c) for n, c in paired.items()]
    return result
