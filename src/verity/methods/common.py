"""Parts the baseline methods share: the judgement contract and evidence retrieval."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from verity.domain import Article, Claim, Evidence, Retrieval
from verity.errors import BadInputError, SourceUnavailableError
from verity.llm.calllog import CallLog
from verity.llm.step import Delimited, data_block
from verity.markdown import md as md  # the methods' trace reports use it from here
from verity.sources.base import Source

ClaimLabel = Literal["SUPPORTED", "REFUTED", "NOT_ENOUGH_INFO"]

# A fraction. An answer of 85 (a percentage) or "0.8" (a string) is read as a fraction by
# the model client before validation, for every bounded number of every step
# (verity.llm.parse), so that the rule lives in one place.
Confidence = Annotated[float, Field(ge=0.0, le=1.0)]


class ClaimJudgement(BaseModel):
    """A model's judgement of a claim; the explanation comes first so it can reason.

    No length limits on strings or lists: the local backend turns the schema into a
    llama.cpp grammar, where a ``maxLength`` of hundreds unrolls into a grammar too large
    to parse. Length is bounded by the call's ``max_tokens`` instead.
    """

    explanation: str
    label: ClaimLabel
    confidence: Confidence


class CitedJudgement(ClaimJudgement):
    """A judgement that names the numbered passages it relies on."""

    cited: list[int] = Field(default_factory=list)


def require_claim(subject: Claim | Article, method: str) -> Claim:
    """The subject as a claim, or a clear error for methods that judge claims only."""
    if not isinstance(subject, Claim):
        raise BadInputError(f"method {method!r} checks claims, not articles")
    return subject


def retrieve(
    sources: Sequence[Source],
    query: str,
    k: int,
    *,
    before: date | None,
    log: CallLog,
) -> list[Evidence]:
    """Top-k from every source, interleaved by rank, duplicates dropped.

    A source that fails is recorded in the trace and skipped; only when every source
    fails is the error raised, since a verdict without any evidence source is not the
    verdict the user asked for.
    """
    per_source: list[list[Evidence]] = []
    failures: list[str] = []
    for source in sources:
        try:
            found = source.search(query, k, before=before)
        except SourceUnavailableError as exc:
            failures.append(f"{source.name}: {exc}")
            log.add_retrieval(
                Retrieval(source=source.name, query=query, k=k, before=before, error=str(exc))
            )
            continue
        log.add_retrieval(
            Retrieval(source=source.name, query=query, k=k, before=before, results=tuple(found))
        )
        per_source.append(found)
    if sources and len(failures) == len(sources):
        raise SourceUnavailableError("every evidence source failed: " + "; ".join(failures))
    merged: list[Evidence] = []
    seen: set[tuple[str, str]] = set()
    for rank in range(max((len(r) for r in per_source), default=0)):
        for results in per_source:
            if rank < len(results):
                ev = results[rank]
                key = evidence_key(ev)
                if key not in seen:
                    seen.add(key)
                    merged.append(ev)
    return merged


def evidence_key(ev: Evidence) -> tuple[str, str]:
    """What makes two passages the same: their source and reference, else their text."""
    return (ev.source, ev.ref or ev.text[:200])


def unique_evidence(evidence: Iterable[Evidence]) -> list[Evidence]:
    """The passages without repeats (`evidence_key`), first occurrence kept, in order."""
    seen: set[tuple[str, str]] = set()
    kept: list[Evidence] = []
    for ev in evidence:
        key = evidence_key(ev)
        if key not in seen:
            seen.add(key)
            kept.append(ev)
    return kept


def numbered(evidence: Sequence[Evidence], max_chars: int) -> str:
    """Evidence as a numbered list for prompts, each passage in its own data block.

    ``[1] <passage title="Eiffel Tower" source="offline-wiki">text</passage>``: the text,
    title and source come from the web and other people, so each stays inside its block
    (`verity.llm.step.data_block`), and a passage cannot forge the next one.
    """
    lines = []
    for i, ev in enumerate(evidence, start=1):
        text = ev.text if len(ev.text) <= max_chars else ev.text[:max_chars].rstrip() + " ..."
        lines.append(f"[{i}] " + data_block("passage", text, title=ev.title, source=ev.source))
    return Delimited("\n".join(lines)) if lines else "(no evidence found)"
