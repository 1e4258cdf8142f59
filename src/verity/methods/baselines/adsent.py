"""Baseline ``adsent``: rewrite the text in a neutral tone, then judge only the rewrite.

    verdict = load_method("adsent", models=models).verify(
        Claim(text="Shockingly, the corrupt mayor wasted a staggering $2 million!"))
    verdict.trace.model_dump()["neutral"]    # the sentiment-neutral version that was judged

Paper: S. Tahmasebi, E. Müller-Budack and R. Ewerth, "Robust Fake News Detection using
Large Language Models under Adversarial Sentiment Attacks", WWW 2026 (arXiv:2601.15277);
code: https://github.com/TIBHannover/AdSent.

Changing the sentiment of a news text while keeping its facts sways LLM detectors.
AdSent's defence is to rewrite every input with neutral sentiment, facts unchanged
(reformation.py), and to classify the neutral version, so that the verdict rests on the
facts alone. Here one call rewrites (role ``rewriter``) and a second judges the rewrite
(role ``judge``); the judge never sees the original wording. AdSent's own classifier is
Llama-3.1-8B-Instruct fine-tuned on neutralised training articles; that checkpoint is not
published, so the judge here is the configured model used zero-shot, with AdSent's question
(fake or real). A fine-tuned checkpoint served behind an OpenAI-compatible endpoint can be
given the ``judge`` role. A claim is SUPPORTED, REFUTED or NOT_ENOUGH_INFO; an article REAL
or FAKE. Nothing is retrieved; given evidence is ignored (ToE: "solely on the provided
input").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.llm.step import Step
from verity.methods.article import ArticleJudgement, truncate_words
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.common import ClaimJudgement
from verity.methods.direct import claim_context
from verity.sources.base import Source


class Rewrite(BaseModel):
    """The input in a neutral tone, its facts unchanged."""

    neutral: str


# What reformation.py asks for with --sentiment neutral: the same facts, only the tone
# changed, neither summarised nor expanded.
NEUTRALIZE = Step(
    name="adsent.neutralize",
    instruction=(
        "Rewrite the text below in a neutral, matter-of-fact tone. Keep every fact as it "
        "is: the same people, places, numbers, dates and assertions, none added, none "
        "dropped, none softened into doubt. Change only the sentiment: remove emotional, "
        "loaded and sensational wording. Do not summarise, expand or comment."
    ),
    template="Text: {text}",
    output=Rewrite,
)

JUDGE = Step(
    name="adsent.judge",
    instruction=(
        "You are a fact-checker. Is the claim true? Judge its facts only. Use SUPPORTED "
        "if it is true, REFUTED if it is false, NOT_ENOUGH_INFO if you cannot tell. "
        "Explain briefly first, then give the label and your confidence between 0 and 1."
    ),
    template="Claim: {claim}{context}",
    output=ClaimJudgement,
)

JUDGE_ARTICLE = Step(
    name="adsent.judge_article",
    instruction=(
        "You are a fact-checker. Is this news article fake or real? Judge its facts only. "
        "Use REAL if its main claims are true, FAKE if they are false or fabricated. "
        "Explain briefly first, then give the label and your confidence between 0 and 1."
    ),
    template="{context}Article text: {text}",
    output=ArticleJudgement,
)


class AdSentConfig(BaselineConfig):
    """Settings of ``adsent``."""

    max_rewrite_ratio: float = Field(
        default=2.0,
        ge=1.0,
        le=10.0,
        description="a rewrite is cut to this many times the characters of its input, "
        "as the rewrite should neither expand nor summarise",
    )


class AdSent(Baseline):
    """Neutralise the sentiment of the input, then judge the neutral version alone."""

    name: ClassVar[str] = "adsent"
    paper: ClassVar[str] = "Tahmasebi et al. 2026, AdSent (WWW): sentiment-neutral rewriting"
    # What stands in for the published method (see the module docstring and docs/baselines.md).
    substitute: ClassVar[str] = (
        "the configured model judges zero-shot in place of AdSent's fine-tuned "
        "Llama-3.1-8B classifier (unpublished)"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)
    Config: ClassVar[type[BaselineConfig]] = AdSentConfig
    config: AdSentConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        super().__init__(models=models, sources=sources, **config)
        self.rewriter = models.for_role("rewriter")

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Rewrite neutrally, then judge the rewrite; given evidence is ignored."""
        log = CallLog()
        original = self._text(subject)
        rewrite = await NEUTRALIZE.arun(self.rewriter, log=log, text=original)
        limit = int(len(original) * self.config.max_rewrite_ratio)
        neutral = " ".join(rewrite.neutral.split())[:limit].strip()
        # A blank rewrite leaves nothing to judge: the original is judged, and the trace
        # says so, rather than a verdict on an empty text.
        used = bool(neutral)
        if not used:
            neutral = original
        log.milestone(
            "adsent.rewrite",
            "rewrote the input in a neutral tone"
            if used
            else "empty rewrite: judging the original",
            chars=len(neutral),
            rewritten=used,
        )
        judgement: ClaimJudgement | ArticleJudgement
        if isinstance(subject, Article):
            context = f"Date: {subject.date.isoformat()}\n" if subject.date else ""
            judgement = await JUDGE_ARTICLE.arun(self.model, log=log, text=neutral, context=context)
        else:
            judgement = await JUDGE.arun(
                self.model, log=log, claim=neutral, context=claim_context(subject)
            )
        log.milestone("adsent.judge", f"judged the neutral version: {judgement.label}")
        return Verdict(
            label=Label(judgement.label),
            confidence=judgement.confidence,
            explanation=judgement.explanation,
            usage=log.usage(),
            trace=log.trace(original=original, neutral=neutral, rewritten=used),
            method=self.name,
            subject=subject,
        )

    def _text(self, subject: Claim | Article) -> str:
        """What is rewritten: the claim, or the article's title and its first words.

        The title carries sentiment as much as the body does, so it is rewritten with it
        and the judge sees no original wording. A claim's speaker and date are facts about
        the claim, not its wording: the judge sees them as they are.
        """
        if isinstance(subject, Claim):
            return subject.text
        body = truncate_words(subject.text, self.config.max_article_words)
        title = subject.title.strip()
        return f"{title}\n\n{body}" if title else body
