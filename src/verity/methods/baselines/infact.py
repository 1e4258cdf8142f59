"""Baseline ``infact``: InFact, the question-driven fact-checker that won AVeriTeC 2024.

    method = load_method("infact", models=models, sources=[OfflineWiki()])
    verdict = method.verify(Claim(text="Nigeria donated $600 million to Joe Biden's campaign."))
    verdict.trace.model_dump()["qa"]          # each question, its queries and its answer
    load_method("infact/lite", models=models)  # 3 questions, 1 query each: fewer calls

Mark Rothermel, Tobias Braun, Marcus Rohrbach and Anna Rohrbach, "InFact: A Strong
Baseline for Automated Fact-Checking", Proceedings of the Seventh FEVER Workshop
(EMNLP 2024), pages 108-112. Its code lives on in github.com/multimodal-ai-lab/DEFAME
(``defame/procedure/variants/qa_based/infact.py`` and ``base.py``, the prompts under
``defame/prompts/``).

InFact's stages, each a model call: (1) interpret the claim and (2) pose ``questions``
questions whose answers would settle it (one call); for each question, (3) propose web
search queries and run them, and (4) answer the question from the search results, tried
one at a time until one answers it (a question nothing answers is dropped); (5) predict
the verdict from the question-answer pairs among AVeriTeC's four labels; (6) justify it.
Verity asks for the justification with the verdict, in one call, where InFact makes a
second call to write it afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from verity import schedule
from verity.domain import Article, Claim, Evidence, Verdict
from verity.llm.calllog import CallLog
from verity.llm.step import Step
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.baselines.qa import (
    LABEL_OPTIONS,
    QAPair,
    VeracityJudgement,
    distinct,
    merged,
    qa_block,
)
from verity.methods.common import numbered, require_claim
from verity.methods.direct import claim_context


class PosedQuestions(BaseModel):
    """Stages 1 and 2: the claim interpreted, what is missing, the questions to answer."""

    interpretation: str
    missing: str
    questions: list[str]


class ProposedQueries(BaseModel):
    """Stage 3: web search queries for one question."""

    queries: list[str]


class QuestionAnswer(BaseModel):
    """Stage 4: the answer one search result gives to a question, if it gives one."""

    answer: str
    answered: bool


POSE = Step(
    name="infact.pose_questions",
    instruction=(
        "You are a fact-checker about to verify a claim. First interpret the claim: "
        "restate its key points as a short list of simpler sub-claims. Then say what "
        "information is missing to confirm or refute it. Finally write the questions "
        "that must be answered to verify the claim. Each question must make sense on its "
        "own: name people, places and things explicitly instead of using pronouns or "
        "vague words such as 'the bill'."
    ),
    template="Claim: {claim}{context}\n\nWrite {n} questions.",
    output=PosedQuestions,
)

PROPOSE = Step(
    name="infact.propose_queries",
    instruction=(
        "You are a fact-checker verifying a claim, and the evidence so far does not "
        "settle it. To break the work down you asked a question. Propose web search "
        "queries that would find evidence answering that question. Be frugal: propose "
        "only as many queries as needed, none similar to another, without explaining them."
    ),
    template="Claim: {claim}{context}\n\nQuestion: {question}",
    output=ProposedQueries,
)

ANSWER = Step(
    name="infact.answer",
    instruction=(
        "You are a fact-checker verifying a claim. A web search for one of your questions "
        "returned the search result below. Answer the question from this result alone, "
        "in one sentence up to one paragraph; you may quote the result word for word in "
        "quotation marks. If the result does not hold enough to answer the question, "
        "set answered to false and write NONE as the answer."
    ),
    template="Claim: {claim}\n\nQuestion: {question}\n\nSearch result:\n{result}",
    output=QuestionAnswer,
)

JUDGE = Step(
    name="infact.judge",
    instruction=(
        "You are a fact-checker deciding a claim's veracity from your fact-check: the "
        "questions you asked and the answers the web gave. First sum up the key findings "
        "in one paragraph, then explain which of the options fits best and why; that "
        "explanation is the justification of your verdict. Options: "
        + LABEL_OPTIONS
        + " Missing evidence can itself be evidence: when the claim implies news "
        "coverage or other visible consequences, and enough time has passed for them to "
        "appear, their absence suggests the claim is refuted. Then give the label and "
        "your confidence between 0 and 1."
    ),
    template="Claim: {claim}{context}\n\nQuestions and answers:\n{qa}",
    output=VeracityJudgement,
)


class InfactConfig(BaselineConfig):
    """Settings of ``infact``; where each default comes from is noted beside it."""

    # DEFAME infact.py: _pose_questions(no_of_questions=10); at most 50 is verity's bound.
    questions: int = Field(default=10, ge=1, le=50, description="questions posed about the claim")
    # InFact asks the model to be frugal and sets no number; this cap is verity's guard.
    max_queries: int = Field(default=3, ge=1, le=20, description="search queries kept per question")
    # DEFAME config/experiments/averitec.yaml: limit_per_search: 5.
    k: int = Field(default=5, ge=1, le=50, description="passages per source per search")
    max_passages: int = Field(
        default=5, ge=1, le=100, description="passages kept per search, all sources together"
    )


@dataclass
class Inquiry:
    """One question followed through: its queries, the results tried, the answer found."""

    question: str
    queries: list[str] = field(default_factory=list)
    tried: int = 0
    pair: QAPair | None = None

    def to_trace(self) -> dict[str, Any]:
        """The record kept in the verdict's trace."""
        record: dict[str, Any] = {
            "question": self.question,
            "queries": self.queries,
            "results_tried": self.tried,
            "answered": self.pair is not None,
        }
        if self.pair is not None:
            record.update(self.pair.to_trace())
        return record


class Infact(Baseline):
    """Questions, searches per question, answers per question, a verdict over the answers."""

    name: ClassVar[str] = "infact"
    paper: ClassVar[str] = "Rothermel et al. 2024, InFact (FEVER workshop, AVeriTeC winner)"
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    Config: ClassVar[type[BaselineConfig]] = InfactConfig
    retrieves: ClassVar[bool] = True
    variants: ClassVar[dict[str, dict[str, Any]]] = {
        # Fewer calls for small local models: the paper's defaults fit their context,
        # but ask for about ten times as many calls.
        "lite": {"questions": 3, "max_queries": 1, "k": 3, "max_passages": 3},
    }
    config: InfactConfig

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Pose questions, answer each from the web, then judge the claim on the answers."""
        claim = require_claim(subject, self.name)
        log = CallLog()
        context = claim_context(claim)
        posed = await POSE.arun(
            self.model, log=log, claim=claim.text, context=context, n=self.config.questions
        )
        questions = distinct(posed.questions, self.config.questions)
        log.milestone(
            "infact.questions", f"{len(questions)} question(s) posed", questions=len(questions)
        )
        inquiries = await schedule.gather(
            *(self._inquire(claim, q, evidence, log) for q in questions)
        )
        pairs = [i.pair for i in inquiries if i.pair is not None]
        judgement = await JUDGE.arun(
            self.model,
            log=log,
            claim=claim.text,
            context=context,
            qa=qa_block(pairs, self.config.max_chars),
        )
        log.milestone("infact.verdict", f"verdict {judgement.label}", label=judgement.label)
        return self.verdict(
            claim,
            judgement,
            log,
            evidence=merged([[p.evidence for p in pairs if p.evidence is not None]]),
            interpretation=posed.interpretation,
            missing=posed.missing,
            qa=[i.to_trace() for i in inquiries],
        )

    async def _inquire(
        self,
        claim: Claim,
        question: str,
        evidence: Sequence[Evidence] | None,
        log: CallLog,
    ) -> Inquiry:
        """Stages 3 and 4 for one question: its queries, its searches, its answer."""
        inquiry = Inquiry(question=question)
        proposed = await PROPOSE.arun(
            self.model, log=log, claim=claim.text, context=claim_context(claim), question=question
        )
        inquiry.queries = distinct(proposed.queries, self.config.max_queries)
        found = merged([await self.gather(q, claim, evidence, log) for q in inquiry.queries])
        # InFact answers from one result at a time, in search order, and keeps the first
        # answer (DEFAME qa_based/base.py, answer_question_individually).
        for result in found:
            inquiry.tried += 1
            reply = await ANSWER.arun(
                self.model,
                log=log,
                claim=claim.text,
                question=question,
                result=numbered([result], self.config.max_chars),
            )
            if _answers(reply):
                inquiry.pair = QAPair(question, reply.answer.strip(), evidence=result)
                break
        source = inquiry.pair.evidence if inquiry.pair else None
        outcome = f"answered from {source.ref or source.source}" if source else "unanswered"
        log.milestone(
            "infact.answer",
            f"{question!r}: {outcome} ({inquiry.tried} result(s) read)",
            question=question,
            answered=inquiry.pair is not None,
            tried=inquiry.tried,
        )
        return inquiry


def _answers(reply: QuestionAnswer) -> bool:
    """Whether a reply answers its question (InFact reads an answer of NONE as none)."""
    text = reply.answer.strip().strip(".").strip()
    return reply.answered and bool(text) and text.upper() != "NONE"
