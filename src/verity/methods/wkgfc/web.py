"""webSearch(query, currentKG) for WKGFC (paper sections 4.1, 4.3): coarse, then fine.

Coarse: the configured passage sources (web search providers or a local corpus), their
results ordered by BM25 against the query. Fine: the LLM re-evaluates every candidate,
beside the facts of the current subgraph, for factual relevance to the claim and
consistency, and keeps some, each with a confidence. Candidates go to the filter in the
coarse order, as many per call as fit the model's context (a search of 10 short
passages is one call). At most ``keep`` passages are kept, the most confident first.
Kept passages are marked as web evidence; they never replace a graph fact. When every
source fails, the search finds nothing and says why; the episode goes on.
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
from verity.methods.wkgfc.context import fit_lines, free_tokens
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
    batches: int = 0  # filter calls: candidates that did not fit one call went to more

    def to_trace(self) -> dict[str, Any]:
        """The record kept in the verdict's trace."""
        record: dict[str, Any] = {
            "query": self.query,
            "found": self.found,
            "filter_calls": self.batches,
            "kept": [{"ref": e.ref, "title": e.title, "confidence": c} for e, c in self.kept],
        }
        if self.error:
            record["error"] = self.error
        return record


@dataclass(frozen=True)
class WebSearch:
    """What a search needs besides the query: the sources, the filter model, the limits."""

    sources: Sequence[Source]
    claim: str
    model: ModelClient
    k: int
    keep: int
    passage_chars: int
    before: date | None
    log: CallLog
    context: int | None = None  # the model's context, when its backend cannot tell


def search_web(search: WebSearch, query: str, facts: list[str]) -> WebResult:
    """Coarse retrieval and BM25 order, then the LLM filter over every candidate.

    ``facts`` are the current subgraph's fact lines, closest to the claim first; the
    filter sees as many as fit in half of the room its prompt leaves.
    """
    result = WebResult(query=query)
    try:
        found = retrieve(search.sources, query, search.k, before=search.before, log=search.log)
    except SourceUnavailableError as exc:
        result.error = str(exc)
        return result
    result.found = len(found)
    candidates = bm25_rerank(query, found)
    if not candidates:
        return result
    model = search.model
    room = free_tokens(
        model, FILTER_PASSAGES, context=search.context, claim=search.claim, facts="",
        passages="",
    )  # fmt: skip
    shown = fit_lines(facts, None if room is None else room // 2, model)
    facts_text = "\n".join(shown) or "(no facts yet)"
    left = free_tokens(
        model, FILTER_PASSAGES, context=search.context, claim=search.claim,
        facts=facts_text, passages="",
    )  # fmt: skip
    paired: dict[int, float] = {}
    start = 0
    while start < len(candidates):
        batch = _batch(candidates[start:], left, search.passage_chars, model)
        try:
            choice = FILTER_PASSAGES.run(
                model, log=search.log, claim=search.claim, facts=facts_text,
                passages=numbered(batch, search.passage_chars),
            )  # fmt: skip
        except ModelOutputError:
            choice = None
        if choice is not None:
            # Each number is paired with its confidence before invalid or repeated numbers
            # are dropped, so a dropped number cannot shift the confidences of the others.
            for rank, number in enumerate(choice.kept):
                confidence = choice.confidence[rank] if rank < len(choice.confidence) else 0.5
                if 1 <= number <= len(batch) and start + number - 1 not in paired:
                    paired[start + number - 1] = float(confidence)
        start += len(batch)
        result.batches += 1
    best = sorted(paired, key=lambda i: (-paired[i], i))[: search.keep]
    result.kept = [(candidates[i], paired[i]) for i in sorted(best, key=lambda i: (-paired[i], i))]
    return result


def _batch(
    passages: Sequence[Evidence], room: int | None, chars: int, model: ModelClient
) -> list[Evidence]:
    """The head of ``passages`` whose numbered blocks fit in ``room`` (at least one)."""
    if room is None:
        return list(passages)
    lines = [str(numbered([p], chars)) for p in passages]
    return list(passages[: max(1, len(fit_lines(lines, room, model)))])
