"""What the two F3 detectors share: the subject as prompt inputs and the reasoned answer.

    kind, inputs = subject_inputs(Claim(text="The moon is cheese.", speaker="Bob"), 600)
    kind                # 'claim'
    inputs["claim"]     # 'The moon is cheese.'; inputs["context"] holds the speaker line
    answer = await REASON.arun(model, log=log, **inputs)     # a ReasonedClaim
    verdict = reasoned_verdict("z-cot", claim, answer, log, trigger=TRIGGER)

Lucas et al. 2023 ("Fighting Fire with Fire", EMNLP) detect disinformation in posts and
news articles with zero-shot prompts that end in a blank for the label (cloze style).
`z-cot` and `defgen` are two of those prompts; both read a claim or an article. `z-cot`
answers with its reasoning before the label, so the label follows from what was written;
`defgen` answers with the label alone, except in its two-call variant, which reasons first.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from verity.domain import Article, Claim, Label, Verdict
from verity.llm.calllog import CallLog
from verity.methods.article import ArticleLabel, article_context, truncate_words
from verity.methods.common import ClaimLabel, Confidence
from verity.methods.direct import claim_context

Kind = Literal["claim", "article"]


class ReasonedClaim(BaseModel):
    """A claim judged after written reasoning; no length limits (see `ClaimJudgement`)."""

    reasoning: str
    label: ClaimLabel
    confidence: Confidence


class ReasonedArticle(BaseModel):
    """An article judged REAL or FAKE after written reasoning."""

    reasoning: str
    label: ArticleLabel
    confidence: Confidence


def subject_inputs(subject: Claim | Article, max_article_words: int) -> tuple[Kind, dict[str, Any]]:
    """The subject's kind and its prompt inputs: ``claim`` or ``text``, and ``context``.

    Each input is shown in a block named after it (``<claim>``, ``<text>``). An article's
    text is cut to ``max_article_words`` words; its title, date and URL are the context.
    A claim's context is its speaker and date.
    """
    if isinstance(subject, Article):
        text = truncate_words(subject.text, max_article_words)
        return "article", {"text": text, "context": article_context(subject)}
    return "claim", {"claim": subject.text, "context": claim_context(subject)}


def reasoned_verdict(
    method: str,
    subject: Claim | Article,
    answer: ReasonedClaim | ReasonedArticle,
    log: CallLog,
    **trace: Any,
) -> Verdict:
    """The verdict from a reasoned answer: its reasoning is the explanation."""
    return Verdict(
        label=Label(answer.label),
        confidence=answer.confidence,
        explanation=answer.reasoning,
        usage=log.usage(),
        trace=log.trace(**trace),
        method=method,
        subject=subject,
    )
