"""webSearch(query, currentKG) for WKGFC (paper sections 4.1, 4.3): coarse, then fine.

Coarse: the configured passage sources (web search providers or a local corpus), their
results ordered by BM25 against the query. Fine: the LLM re-evaluates every candidate,
beside the facts of the current subgraph, for factual relevance to the claim and
consistency, and keeps some, each with a confidence. Candidates go to the filter in the
coarse order, as many per call as fit the model's context (a search of 10 short
passages is one call; the calls of a longer one run at once). At most ``keep`` passages
are kept, the most confident first. Kept passages are marked as web evidence; they never
replace a graph fact. When every source fails, the search finds nothing and says why;
the episode goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from verity import schedule
from verity.domain import Evidence
from verity.errors import ModelOutputError, SourceUnavailableError
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.common import numbered, retrieve
from verity.methods.wkgfc.context import fit_lines, free_tokens
from verity.methods.wkgfc.prompts import FILTER_PASSAGES, PassageChoice
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


def passage_key(ev: Evidence) -> tuple[str, str]:
    """What makes two passages the same: their source and handle (or opening text)."""
    return (ev.source, ev.ref or ev.text[:200])


@dataclass
class WebResult:
    """What one webSearch action found and kept."""

    query: str
    found: int = 0
    kept: list[tuple[Evidence, float]] = field(default_factory=list)
    error: str | None = None
    batches: int = 0  # filter calls: candidates that did not fit one call went to more
    candidates: list[Evidence] = field(default_factory=list, repr=False)  # BM25 order

    def to_trace(self, chars: int = 0) -> dict[str, Any]:
        """The record kept in the verdict's trace; with ``chars``, each kept text up to it.

        The verdict's trace keeps the texts as the prompts showed them, so that the critic
        can judge what was retrieved (4.4); an action's observation keeps only handles.
        """
        kept = []
        for e, c in self.kept:
            entry: dict[str, Any] = {"ref": e.ref, "title": e.title, "confidence": c}
            if chars > 0:
                entry |= {"source": e.source, "text": e.text[:chars]}
            kept.append(entry)
        record: dict[str, Any] = {
            "query": self.query,
            "found": self.found,
            "filter_calls": self.batches,
            "kept": kept,
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


async def coarse(search: WebSearch, query: str) -> WebResult:
    """The candidates of a search, in BM25 order: no model, nothing of the graph.

    The sources run in a worker thread. A search whose query does not come from the
    graph (kg-web's claim) can run this beside the graph's hops.
    """
    return await asyncio.to_thread(_coarse, search, query)


def _coarse(search: WebSearch, query: str) -> WebResult:
    result = WebResult(query=query)
    try:
        found = retrieve(search.sources, query, search.k, before=search.before, log=search.log)
    except SourceUnavailableError as exc:
        result.error = str(exc)
        return result
    result.found = len(found)
    result.candidates = bm25_rerank(query, found)
    return result


async def fine(search: WebSearch, result: WebResult, facts: list[str]) -> WebResult:
    """The LLM filter over a search's candidates, beside the current subgraph's facts.

    ``facts`` are the subgraph's fact lines, closest to the claim first; the filter sees
    as many as fit in half of the room its prompt leaves. The batches are judged at once:
    each sees the same facts and only its own passages, and their choices are merged in
    the coarse order, as one batch after another would give.
    """
    if not result.candidates:
        return result
    facts_text, batches = await asyncio.to_thread(_batches, search, result.candidates, facts)
    choices = await schedule.gather(*(_filter(search, facts_text, batch) for batch in batches))
    paired: dict[int, float] = {}
    start = 0
    for batch, choice in zip(batches, choices, strict=True):
        if choice is not None:
            # Each number is paired with its confidence before invalid or repeated numbers
            # are dropped, so a dropped number cannot shift the confidences of the others.
            for rank, number in enumerate(choice.kept):
                confidence = choice.confidence[rank] if rank < len(choice.confidence) else 0.5
                if 1 <= number <= len(batch) and start + number - 1 not in paired:
                    paired[start + number - 1] = float(confidence)
        start += len(batch)
    result.batches = len(batches)
    best = sorted(paired, key=lambda i: (-paired[i], i))[: search.keep]
    result.kept = [(result.candidates[i], paired[i]) for i in best]
    return result


def _batches(
    search: WebSearch, candidates: list[Evidence], facts: list[str]
) -> tuple[str, list[list[Evidence]]]:
    """The facts the filter is shown, and the candidates cut into batches that fit."""
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
    batches: list[list[Evidence]] = []
    start = 0
    while start < len(candidates):
        batches.append(_batch(candidates[start:], left, search.passage_chars, model))
        start += len(batches[-1])
    return facts_text, batches


async def _filter(
    search: WebSearch, facts_text: str, batch: list[Evidence]
) -> PassageChoice | None:
    try:
        return await FILTER_PASSAGES.arun(
            search.model, log=search.log, claim=search.claim, facts=facts_text,
            passages=numbered(batch, search.passage_chars),
        )  # fmt: skip
    except ModelOutputError:
        return None


def _batch(
    passages: Sequence[Evidence], room: int | None, chars: int, model: ModelClient
) -> list[Evidence]:
    """The head of ``passages`` whose numbered blocks fit in ``room`` (at least one)."""
    if room is None:
        return list(passages)
    lines = [str(numbered([p], chars)) for p in passages]
    return list(passages[: max(1, len(fit_lines(lines, room, model)))])
