"""Baseline ``direct``: the model judges the claim or article from its own knowledge.

    verdict = load_method("direct", models=models).verify(Claim(text="Water boils at 50 C."))
    verdict = load_method("direct", models=models).verify(Article(title="...", text="..."))

A claim gets SUPPORTED, REFUTED or NOT_ENOUGH_INFO; an article REAL or FAKE, judged from
its title, date, URL and the first ``max_article_words`` words of its text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.llm.step import Step
from verity.methods.article import ArticleJudgement, article_context, truncate_words
from verity.methods.base import MethodBase, MethodConfig
from verity.methods.common import ClaimJudgement
from verity.sources.base import Source

JUDGE = Step(
    name="direct.judge",
    instruction=(
        "You are a professional fact-checker. Decide whether the claim is true using only "
        "your own knowledge. Use SUPPORTED if the claim is true, REFUTED if it is false, "
        "NOT_ENOUGH_INFO if you cannot tell. Explain briefly first, then give the label and "
        "your confidence between 0 and 1."
    ),
    template="Claim: {claim}{context}",
    output=ClaimJudgement,
)

JUDGE_ARTICLE = Step(
    name="direct.judge_article",
    instruction=(
        "You are a professional fact-checker. Decide whether the news article is real or "
        "fake using only your own knowledge. Use REAL if its main claims are true and it "
        "reports actual events, FAKE if it is fabricated or its main claims are false. "
        "Explain briefly first, then give the label and your confidence between 0 and 1."
    ),
    template="{context}Article text: {text}",
    output=ArticleJudgement,
)


def claim_context(claim: Claim) -> str:
    """Speaker and date lines for prompts, when the claim carries them."""
    parts = []
    if claim.speaker:
        parts.append(f"Speaker: {claim.speaker}")
    if claim.date:
        parts.append(f"Date: {claim.date.isoformat()}")
    return "".join("\n" + p for p in parts)


class DirectConfig(MethodConfig):
    """Settings of ``direct``."""

    # The upper bound is verity's: no request asks for an unbounded prompt.
    max_article_words: int = Field(
        default=600, ge=1, le=20_000, description="words of an article's text shown to the model"
    )


class DirectMethod(MethodBase):
    """The model's own knowledge, one call."""

    name: ClassVar[str] = "direct"
    paper: ClassVar[str] = (
        "the model alone, no paper: the general-LLM rows of the four papers' tables"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)
    config: DirectConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        self.config = DirectConfig(**config)
        self.model = models.for_role("judge")
        self.models = models

    def to_dict(self) -> dict[str, Any]:
        """Configuration for run manifests."""
        return {"method": self.name, **self.config.model_dump(), "models": self.models.to_dict()}

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Judge the claim or article in one call; given evidence is ignored (closed book)."""
        log = CallLog()
        step, inputs = self._prompt(subject)
        judgement = await step.arun(self.model, log=log, **inputs)
        return self._verdict(subject, judgement, log)

    def _prompt(
        self, subject: Claim | Article
    ) -> tuple[Step[ClaimJudgement] | Step[ArticleJudgement], dict[str, Any]]:
        if isinstance(subject, Article):
            text = truncate_words(subject.text, self.config.max_article_words)
            return JUDGE_ARTICLE, {"text": text, "context": article_context(subject)}
        return JUDGE, {"claim": subject.text, "context": claim_context(subject)}

    def _verdict(
        self,
        subject: Claim | Article,
        judgement: ClaimJudgement | ArticleJudgement,
        log: CallLog,
    ) -> Verdict:
        return Verdict(
            label=Label(judgement.label),
            confidence=judgement.confidence,
            explanation=judgement.explanation,
            usage=log.usage(),
            trace=log.trace(),
            method=self.name,
            subject=subject,
        )
