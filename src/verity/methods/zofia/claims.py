"""ZoFia's claim verification (section 4.1.3): claims checked against web passages only.

Each claim (eq. 8: one core claim and its sub-claims) sees only the chunks of the web
results whose cosine similarity with it is at least ``theta`` among its top ``k`` (eq. 9).
A claim with no such chunk is Not Enough Information without a model call: there is
nothing to check it against. Every quote in the verifier's answer is looked up in the
chunks it was shown; a quote that is not there word for word (ignoring case and spacing)
is marked, since an invented quote is not evidence.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from verity import schedule
from verity.domain import Evidence
from verity.errors import ModelOutputError
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.step import Delimited, data_block
from verity.methods.zofia.agents import VERIFY
from verity.nlp.embed import Encoder
from verity.nlp.text import chunk_text

_SPACE = re.compile(r"\s+")
_QUOTES = "\"'“”‘’"


@dataclass(frozen=True)
class Chunk:
    """A piece of a web passage and the passage it came from."""

    text: str
    evidence: Evidence


@dataclass
class CheckedClaim:
    """One claim, the chunks it was checked against and the verifier's answer."""

    text: str
    kind: str
    chunks: list[tuple[Chunk, float]] = field(default_factory=list)
    label: str = "Not Enough Information"
    reasoning: str = ""
    quotes: list[tuple[str, bool]] = field(default_factory=list)
    called: bool = False

    def to_trace(self) -> dict[str, Any]:
        """The record kept in the verdict's trace."""
        return {
            "claim": self.text,
            "kind": self.kind,
            "label": self.label,
            "reasoning": self.reasoning,
            "chunks": [
                {"text": c.text, "source": c.evidence.ref, "similarity": round(s, 4)}
                for c, s in self.chunks
            ],
            "quotes": [{"quote": q, "found": found} for q, found in self.quotes],
            "verified_by_model": self.called,
        }


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().strip(_QUOTES).strip().casefold()


def quote_found(quote: str, context: Sequence[str]) -> bool:
    """True when the quote appears in one of the context texts, ignoring case and spacing."""
    needle = _normal(quote)
    return bool(needle) and any(needle in _normal(text) for text in context)


def chunks_of(passages: Sequence[Evidence], max_words: int) -> list[Chunk]:
    """Sentence-aligned chunks of every passage."""
    return [Chunk(text, ev) for ev in passages for text in chunk_text(ev.text, max_words=max_words)]


def select_chunks(
    claim_vec: np.ndarray, chunk_vecs: np.ndarray, k: int, theta: float
) -> list[tuple[int, float]]:
    """Eq. 9: indices and similarities of the top-``k`` chunks with similarity >= theta."""
    if chunk_vecs.shape[0] == 0:
        return []
    sims = chunk_vecs @ claim_vec
    # A stable sort keeps earlier chunks first among equals.
    order = np.argsort(-sims, kind="stable")[:k]
    return [(int(i), float(sims[i])) for i in order if sims[i] >= theta]


async def verify_claims(
    claims: Sequence[tuple[str, str]],
    passages: Sequence[Evidence],
    *,
    encoder: Encoder,
    model: ModelClient,
    k: int,
    theta: float,
    chunk_words: int,
    params: GenParams | None,
    log: CallLog,
    failures: list[dict[str, str]],
) -> list[CheckedClaim]:
    """Check each ``(text, kind)`` claim against its own selection of chunks, all at once."""
    chunks = chunks_of(passages, chunk_words)
    chunk_vecs, claim_vecs = await asyncio.to_thread(
        lambda: (encoder.encode([c.text for c in chunks]), encoder.encode([t for t, _ in claims]))
    )

    async def check(text: str, kind: str, vec: np.ndarray) -> tuple[CheckedClaim, str | None]:
        result = CheckedClaim(text=text, kind=kind)
        result.chunks = [(chunks[i], s) for i, s in select_chunks(vec, chunk_vecs, k, theta)]
        if not result.chunks:
            result.reasoning = f"no web passage reaches similarity {theta} with this claim"
            return result, None
        shown = [c.text for c, _ in result.chunks]
        numbered = Delimited(
            "\n".join(
                f"[{i}] " + data_block("passage", c.text, url=c.evidence.url)
                for i, (c, _) in enumerate(result.chunks, start=1)
            )
        )
        result.called = True
        try:
            answer = await VERIFY.arun(model, log=log, params=params, claim=text, passages=numbered)
        except ModelOutputError as exc:
            result.reasoning = "the verifier gave no valid answer"
            return result, str(exc)
        result.label, result.reasoning = answer.label, answer.reasoning
        result.quotes = [(q, quote_found(q, shown)) for q in answer.quotes if q.strip()]
        return result, None

    # 4.1.3: each claim is verified on its own, so all of them are asked at once.
    done = await schedule.gather(
        *(check(text, kind, vec) for (text, kind), vec in zip(claims, claim_vecs, strict=True))
    )
    for result, error in done:
        if error is not None:
            failures.append({"agent": f"claim verifier ({result.kind})", "error": error})
    return [result for result, _ in done]
