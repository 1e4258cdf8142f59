"""Baseline ``rag``: retrieve top-k passages, judge the claim or article citing them.

    method = load_method("rag", models=models, sources=[OfflineWiki()], k=5)
    verdict = method.verify(Claim(text="The Eiffel Tower is in Paris."))
    verdict.evidence      # the passages the model cited
    verdict = method.verify(Article(title="Tower sold for scrap", text="..."))   # REAL or FAKE

The query is the claim text; for an article, its title, else its first sentence, at most
300 characters. A claim's or article's date is the retrieval cutoff, so no passage
published on or after it can leak the answer. An article is shown to the model as its
title, date, URL and first ``max_article_words`` words. The verdict's evidence is the
passages the model cited; when it cites none that exist, it is every passage it was
shown, and the trace says so (``citations_valid`` false).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

from verity.domain import Article, Claim, Evidence, Label, Reference, Verdict
from verity.grounding.cite import reference
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.llm.step import Step
from verity.methods.article import (
    CitedArticleJudgement,
    article_context,
    retrieval_query,
    truncate_words,
)
from verity.methods.base import MethodBase, MethodConfig
from verity.methods.common import CitedJudgement, numbered, retrieve
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

JUDGE_ARTICLE = Step(
    name="rag.judge_article",
    instruction=(
        "You are a professional fact-checker. Decide whether the news article is real or "
        "fake, using the numbered evidence passages and your own knowledge. Use REAL if its "
        "main claims are true and it reports actual events, FAKE if the passages contradict "
        "it or it is fabricated. Explain briefly first, citing passages by number like [1]; "
        "then give the label, your confidence between 0 and 1, and the numbers of the "
        "passages you relied on."
    ),
    template="{context}Article text: {text}\n\nEvidence:\n{evidence}",
    output=CitedArticleJudgement,
)

Judgement = CitedJudgement | CitedArticleJudgement


class RagConfig(MethodConfig):
    """Settings of ``rag``."""

    # The upper bounds are verity's: no request asks for an unbounded prompt.
    k: int = Field(default=5, ge=1, le=50, description="passages per source")
    max_passages: int = Field(
        default=10, ge=1, le=100, description="passages shown to the model, all sources together"
    )
    max_chars: int = Field(
        default=1000, ge=100, le=20_000, description="characters kept per passage"
    )
    max_article_words: int = Field(
        default=600, ge=1, le=20_000, description="words of an article's text shown to the model"
    )


class RagMethod(MethodBase):
    """Retrieval, then one judging call over numbered passages."""

    name: ClassVar[str] = "rag"
    paper: ClassVar[str] = "retrieve-then-judge (Lewis et al. 2020, NeurIPS)"
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)
    config: RagConfig

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

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Retrieve (unless evidence is given), then judge; sources run in a worker thread."""
        log = CallLog()
        query = await asyncio.to_thread(self._query, subject)
        if evidence is not None:
            evidence = self._given(evidence)
        else:
            evidence = await asyncio.to_thread(self._retrieve, query, subject, log)
        step, inputs = self._prompt(subject, evidence)
        judgement = await step.arun(self.model, log=log, **inputs)
        return self._verdict(subject, query, evidence, judgement, log)

    def references(self, verdict: Verdict) -> list[Reference]:
        """The kept passages under the numbers the prompt showed them by.

        The verdict keeps only the passages the answer cited, in the order cited; its
        explanation still names them by their place in the prompt (``[3]``).
        """
        trace = verdict.trace.model_extra or {}
        shown = trace.get("shown") or []
        cited = [n for n in dict.fromkeys(trace.get("cited") or []) if 1 <= n <= len(shown)]
        numbers = cited if cited else list(range(1, len(verdict.evidence) + 1))
        return [
            reference(str(n), ev.text, "passage", ev.title or "")
            for n, ev in zip(numbers, verdict.evidence, strict=False)
        ]

    def _query(self, subject: Claim | Article) -> str:
        return retrieval_query(subject) if isinstance(subject, Article) else subject.text

    def _given(self, evidence: Sequence[Evidence]) -> list[Evidence]:
        return list(evidence)[: self.config.max_passages]

    def _retrieve(self, query: str, subject: Claim | Article, log: CallLog) -> list[Evidence]:
        found = retrieve(self.sources, query, self.config.k, before=subject.date, log=log)
        # Interleaved by rank, so the cap keeps each source's best passages.
        return found[: self.config.max_passages]

    def _prompt(
        self, subject: Claim | Article, evidence: Sequence[Evidence]
    ) -> tuple[Step[CitedJudgement] | Step[CitedArticleJudgement], dict[str, Any]]:
        shown = numbered(evidence, self.config.max_chars)
        if isinstance(subject, Article):
            text = truncate_words(subject.text, self.config.max_article_words)
            inputs = {"text": text, "context": article_context(subject), "evidence": shown}
            return JUDGE_ARTICLE, inputs
        return JUDGE, {"claim": subject.text, "context": claim_context(subject), "evidence": shown}

    def _verdict(
        self,
        subject: Claim | Article,
        query: str,
        evidence: Sequence[Evidence],
        judgement: Judgement,
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
                query=query,
                shown=[ev.ref for ev in evidence],
                cited=judgement.cited,
                citations_valid=bool(valid),
            ),
            method=self.name,
            subject=subject,
        )
