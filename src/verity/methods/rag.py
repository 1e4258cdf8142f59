"""Baseline ``rag``: retrieve top-k passages, judge the claim citing them by number.

    method = load_method("rag", models=models, sources=[OfflineWiki()], k=5)
    verdict = method.verify(Claim(text="The Eiffel Tower is in Paris."))
    verdict.evidence      # the passages the model cited

The query is the claim text. A claim's date is the retrieval cutoff, so no passage
published on or after it can leak the answer. The verdict's evidence is the passages
the model cited; when it cites none that exist, it is every passage it was shown, and
the trace says so (``citations_valid`` false).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.llm.step import Step
from verity.methods.base import MethodConfig
from verity.methods.common import CitedJudgement, numbered, require_claim, retrieve
from verity.methods.direct import claim_context
from verity.sources.base import Source

JUDGE = Step(
    name="rag.judge",
    instruction=(
        "You are a professional fact-checker. Decide whether the claim is supported or "
        "refuted by the numbered evidence passages. Use SUPPORTED if the passages show the "
        "claim is true, REFUTED if they show it is false, NOT_ENOUGH_INFO if they do not "
        "settle it. Explain briefly first, citing passages by number like [1]; then give "
        "the label, your confidence between 0 and 1, and the numbers of the passages you "
        "relied on."
    ),
    template="Claim: {claim}{context}\n\nEvidence:\n{evidence}",
    output=CitedJudgement,
)


class RagConfig(MethodConfig):
    """Settings of ``rag``."""

    k: int = Field(default=5, ge=1, le=50, description="passages per source")
    max_passages: int = Field(
        default=10, ge=1, description="passages shown to the model, all sources together"
    )
    max_chars: int = Field(default=1000, ge=100, description="characters kept per passage")


class RagMethod:
    """Retrieval, then one judging call over numbered passages."""

    name: ClassVar[str] = "rag"
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        self.config = RagConfig(**config)
        self.models = models
        self.model = models.for_role("judge")
        self.sources = list(sources)

    def to_dict(self) -> dict[str, Any]:
        """Configuration for run manifests."""
        return {
            "method": self.name,
            **self.config.model_dump(),
            "models": self.models.to_dict(),
            "sources": [s.to_dict() for s in self.sources],
        }

    def verify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Retrieve (unless evidence is given), then judge."""
        claim = require_claim(subject, self.name)
        log = CallLog()
        evidence = self._given(evidence) if evidence is not None else self._retrieve(claim, log)
        judgement = JUDGE.run(self.model, log=log, **self._inputs(claim, evidence))
        return self._verdict(claim, evidence, judgement, log)

    async def averify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Async twin of `verify`; sources run in a worker thread."""
        claim = require_claim(subject, self.name)
        log = CallLog()
        if evidence is not None:
            evidence = self._given(evidence)
        else:
            evidence = await asyncio.to_thread(self._retrieve, claim, log)
        judgement = await JUDGE.arun(self.model, log=log, **self._inputs(claim, evidence))
        return self._verdict(claim, evidence, judgement, log)

    def _given(self, evidence: Sequence[Evidence]) -> list[Evidence]:
        return list(evidence)[: self.config.max_passages]

    def _retrieve(self, claim: Claim, log: CallLog) -> list[Evidence]:
        found = retrieve(self.sources, claim.text, self.config.k, before=claim.date, log=log)
        # Interleaved by rank, so the cap keeps each source's best passages.
        return found[: self.config.max_passages]

    def _inputs(self, claim: Claim, evidence: Sequence[Evidence]) -> dict[str, Any]:
        return {
            "claim": claim.text,
            "context": claim_context(claim),
            "evidence": numbered(evidence, self.config.max_chars),
        }

    def _verdict(
        self,
        claim: Claim,
        evidence: Sequence[Evidence],
        judgement: CitedJudgement,
        log: CallLog,
    ) -> Verdict:
        valid = [n for n in dict.fromkeys(judgement.cited) if 1 <= n <= len(evidence)]
        cited = [evidence[n - 1] for n in valid] if valid else list(evidence)
        return Verdict(
            label=Label(judgement.label),
            confidence=judgement.confidence,
            explanation=judgement.explanation,
            evidence=tuple(cited),
            usage=log.usage(),
            trace=log.trace(
                query=claim.text,
                shown=[ev.ref for ev in evidence],
                cited=judgement.cited,
                citations_valid=bool(valid),
            ),
            method=self.name,
            subject=claim,
        )
