"""Baseline ``steel``: multi-round retrieval, re-searching until the evidence suffices.

    method = load_method("steel", models=models, sources=[OfflineWiki()])
    verdict = method.verify(Claim(text="The Eiffel Tower was sold for scrap in 2019."))
    verdict.trace.model_dump()["rounds"]   # each round's query, passages, answer, next query
    load_method("steel", models=models, sources=[...], max_rounds=5)

Paper: G. Li, W. Lu, W. Zhang, D. Lian, K. Lu, R. Mao, K. Shu and H. Liao, "Re-Search for
The Truth: Multi-round Retrieval-augmented Large Language Models are Strong Fake News
Detectors", arXiv:2403.09747, 2024. Built from the paper's description.

STEEL pairs a retrieval module (a web search for the claim) with a reasoning module: the
model reads the claim and what was found, and either decides, when the evidence suffices
and it is confident, or writes down the evidence established so far and a refined query
to search again. The next round searches with that query and shows the model its notes
and the new results, up to a round limit. Here each round is one search of the
configured sources (or of the given evidence, ranked against the round's query) and one
call. A round ends the search when the model gives a label other than NOT_ENOUGH_INFO
with a confidence of at least ``min_confidence``; otherwise the last round's answer is
the verdict, NOT_ENOUGH_INFO included. Passages already shown are not shown again. A
claim is SUPPORTED, REFUTED or NOT_ENOUGH_INFO; an article REAL, FAKE or NOT_ENOUGH_INFO.
The round limit and the confidence bar are verity's settings (3 and 0.7), not values
taken from the paper.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from verity.domain import Article, Claim, Evidence, Label, Reference, Verdict
from verity.grounding.cite import reference
from verity.llm.calllog import CallLog
from verity.llm.step import Step
from verity.methods.article import article_context, retrieval_query, truncate_words
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.common import ClaimLabel, Confidence, numbered
from verity.methods.direct import claim_context

# A refined query is the model's words; it is cut before it reaches a search engine.
MAX_QUERY_CHARS = 300
# The notes carried from round to round are the model's words too, and cost context.
MAX_NOTES_CHARS = 1000


class RoundAnswer(BaseModel):
    """One round of the reasoning module: a decision, or notes and a new query.

    No length limits, for the reason `ClaimJudgement` gives.
    """

    explanation: str
    label: ClaimLabel
    confidence: Confidence
    established: str = ""
    next_query: str = ""


class ArticleRoundAnswer(BaseModel):
    """One round on an article; FAKE or REAL, or NOT_ENOUGH_INFO to search again."""

    explanation: str
    label: Literal["REAL", "FAKE", "NOT_ENOUGH_INFO"]
    confidence: Confidence
    established: str = ""
    next_query: str = ""


HOW = (
    "If the evidence settles it and you are confident, give your label. If it does not, "
    "answer NOT_ENOUGH_INFO, write in 'established' the facts the evidence does establish "
    "so far, and write in 'next_query' a short web search query that would find the "
    "missing evidence. Explain briefly first; give your confidence between 0 and 1."
)

REASON = Step(
    name="steel.reason",
    instruction=(
        "You are a fact-checker who searches the web in rounds. Decide whether the claim "
        "is true from the evidence found so far: SUPPORTED if it shows the claim is true, "
        "REFUTED if it shows it is false. " + HOW
    ),
    template=(
        "Claim: {claim}{context}\n\nEstablished so far: {notes}\n\n"
        "New evidence (round {round} of {rounds}):\n{evidence}"
    ),
    output=RoundAnswer,
)

REASON_ARTICLE = Step(
    name="steel.reason_article",
    instruction=(
        "You are a fact-checker who searches the web in rounds. Decide whether the news "
        "article is real or fake from the evidence found so far: REAL if it shows the "
        "article's main claims are true, FAKE if it shows they are false or fabricated. " + HOW
    ),
    template=(
        "{context}Article text: {text}\n\nEstablished so far: {notes}\n\n"
        "New evidence (round {round} of {rounds}):\n{evidence}"
    ),
    output=ArticleRoundAnswer,
)


class SteelConfig(BaselineConfig):
    """Settings of ``steel``; the per-round caps are smaller than other baselines'.

    Each round's prompt holds the claim, the notes and that round's passages, and must fit
    a small model's context: 5 passages of at most 600 characters by default.
    """

    max_rounds: int = Field(
        default=3, ge=1, le=10, description="searches at most, the first one included"
    )
    min_confidence: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description="a round's label ends the search only with at least this confidence",
    )
    max_passages: int = Field(default=5, ge=1, le=100, description="new passages shown per round")
    max_chars: int = Field(
        default=600, ge=100, le=20_000, description="characters shown per passage"
    )


class Steel(Baseline):
    """Search, judge; while unsure, note what is known and search again with a new query."""

    name: ClassVar[str] = "steel"
    paper: ClassVar[str] = "Li et al. 2024, Re-Search for The Truth (arXiv:2403.09747)"
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)
    Config: ClassVar[type[BaselineConfig]] = SteelConfig
    retrieves: ClassVar[bool] = True
    config: SteelConfig

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Up to ``max_rounds`` rounds of search and judgement; the last one's answer stands."""
        log = CallLog()
        query = retrieval_query(subject) if isinstance(subject, Article) else subject.text
        notes = ""
        shown: list[Evidence] = []
        rounds: list[dict[str, Any]] = []
        last = self.config.max_rounds
        for n in range(1, last + 1):
            found = await self.gather(query, subject, evidence, log)
            fresh = [ev for ev in found if not any(_same(ev, old) for old in shown)]
            shown.extend(fresh)
            answer = await self._reason(subject, notes, fresh, n, log)
            decided = answer.label != Label.NOT_ENOUGH_INFO.value
            done = decided and answer.confidence >= self.config.min_confidence
            rounds.append(
                {
                    "round": n,
                    "query": query,
                    "passages": [ev.ref for ev in fresh],
                    "label": answer.label,
                    "confidence": answer.confidence,
                    "established": answer.established,
                    "next_query": answer.next_query,
                }
            )
            log.milestone(
                "steel.round",
                f"round {n}: {len(fresh)} new passage(s), {answer.label} "
                f"({answer.confidence:.2f})" + ("" if done or n == last else ", searching again"),
                round=n,
                passages=len(fresh),
                label=answer.label,
                confidence=answer.confidence,
            )
            if done or n == last:
                break
            notes = _capped(answer.established, MAX_NOTES_CHARS) or notes
            query = _capped(answer.next_query, MAX_QUERY_CHARS) or query
        return Verdict(
            label=Label(answer.label),
            confidence=answer.confidence,
            explanation=answer.explanation,
            evidence=tuple(shown),
            usage=log.usage(),
            trace=log.trace(rounds=rounds, stopped="confident" if done else "last round"),
            method=self.name,
            subject=subject,
        )

    def references(self, verdict: Verdict) -> list[Reference]:
        """The last round's new passages as ``[1]``..``[k]``, then the earlier ones as ``P1``..

        The explanation is the last round's answer, whose prompt numbered only that
        round's new passages (the earlier ones reached it as the model's notes); the
        verdict keeps every round's passages in the order shown.
        """
        rounds = (verdict.trace.model_extra or {}).get("rounds") or []
        fresh = len(rounds[-1].get("passages") or []) if rounds else 0
        evidence = list(verdict.evidence)
        split = len(evidence) - fresh
        return [
            reference(str(i), ev.text, "passage", ev.title or "")
            for i, ev in enumerate(evidence[split:], start=1)
        ] + [
            reference(f"P{i}", ev.text, "passage", ev.title or "")
            for i, ev in enumerate(evidence[:split], start=1)
        ]

    async def _reason(
        self,
        subject: Claim | Article,
        notes: str,
        fresh: Sequence[Evidence],
        n: int,
        log: CallLog,
    ) -> RoundAnswer | ArticleRoundAnswer:
        common: dict[str, Any] = {
            "notes": notes or "(nothing yet)",
            "evidence": numbered(fresh, self.config.max_chars),
            "round": n,
            "rounds": self.config.max_rounds,
        }
        if isinstance(subject, Article):
            text = truncate_words(subject.text, self.config.max_article_words)
            return await REASON_ARTICLE.arun(
                self.model, log=log, text=text, context=article_context(subject), **common
            )
        return await REASON.arun(
            self.model, log=log, claim=subject.text, context=claim_context(subject), **common
        )


def _same(a: Evidence, b: Evidence) -> bool:
    return (a.source, a.ref or a.text[:200]) == (b.source, b.ref or b.text[:200])


def _capped(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat[:limit].rstrip()
