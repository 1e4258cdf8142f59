"""Baseline ``hiss``: HiSS, hierarchical step-by-step prompting for news claims.

    method = load_method("hiss", models=models, sources=[OfflineWiki()])
    verdict = method.verify(Claim(text="Emerson Moser was Crayola's top molder for 40 years."))
    verdict.trace.model_dump()["subclaims"]   # what the claim was split into
    verdict.trace.model_dump()["qa"]          # each question, who answered it, the answer

Xuan Zhang and Wei Gao, "Towards LLM-based Fact Verification on News Claims with a
Hierarchical Step-by-Step Prompting Method", AACL-IJCNLP 2023 (arXiv 2310.00305); code at
github.com/jadeCurl/HiSS (``HiSS.py``).

Two levels: the claim (or a news article's central claims) is split into subclaims that
are easier to verify, or kept whole when it is simple; then each subclaim is verified by
a series of questions, asked one at a time, each seeing the answers before it. For each
question the model says whether it is confident to answer it itself: if so it answers,
if not the question goes to the search tool and the first result's snippet is the answer
(as HiSS.py does with Google through SerpAPI, skipping results whose link contains
"fact"). Last, the model gives the label from the subclaims and their answers. HiSS used
the six LIAR ratings; here the labels are verity's (claims SUPPORTED, REFUTED or
NOT_ENOUGH_INFO; articles REAL or FAKE), as ZoFia ran it on news articles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from verity.domain import Article, Claim, Evidence, Verdict
from verity.llm.calllog import CallLog
from verity.llm.step import Delimited, Step, data_block
from verity.methods.baselines.agentloop import clip, judge_pair, subject_block, without_domains
from verity.methods.baselines.base import Baseline, BaselineConfig

NOTHING_FOUND = "No answer was found."


class Subclaims(BaseModel):
    """The subclaims to verify; the claim itself alone when it is simple enough."""

    subclaims: list[str]


class NextQuestion(BaseModel):
    """The next question for a subclaim, or ``done`` when the answers so far settle it."""

    done: bool
    question: str
    confident: bool


class OwnAnswer(BaseModel):
    """The model's answer to a question it was confident to answer itself."""

    answer: str


DECOMPOSE = Step(
    name="hiss.decompose",
    instruction=(
        "You are a fact-checker. Split the claim, or the central claim of the news "
        "article, into subclaims that are each easier to verify on their own and together "
        "cover what it asserts. If it is already simple to verify, give it unchanged as "
        "the only subclaim."
    ),
    template="{subject}\n\nGive at most {most} subclaims.",
    output=Subclaims,
)

ASK = Step(
    name="hiss.question",
    instruction=(
        "You are a fact-checker verifying one subclaim step by step, raising one question "
        "at a time whose answer bears on whether the subclaim is true. Read the questions "
        "and answers so far. If they already settle the subclaim, set done to true. "
        "Otherwise set done to false, write the next question, and set confident to true "
        "only if you are sure you can answer it correctly yourself; set it to false when "
        "the answer should be looked up."
    ),
    template=(
        "{subject}\n\nSubclaim to verify now: {subclaim}\n\nQuestions and answers so far:\n"
        "{history}"
    ),
    output=NextQuestion,
)

ANSWER = Step(
    name="hiss.answer",
    instruction=(
        "You are a fact-checker. Answer the question in one or two sentences from what you "
        "know, as it bears on the claim or news article shown."
    ),
    template="{subject}\n\nQuestion: {question}",
    output=OwnAnswer,
)

VERDICT = judge_pair(
    "hiss.verdict",
    "You are a fact-checker. Based on the answers to the questions raised for each "
    "subclaim, decide the veracity of the claim or news article.",
    "{subject}\n\nSubclaims with their questions and answers:\n{findings}",
)


class HissConfig(BaselineConfig):
    """Settings of ``hiss``."""

    # HiSS.py's demonstrations split a claim into at most 4 subclaims.
    # At most 20 (here and for questions) is verity's bound.
    max_subclaims: int = Field(default=4, ge=1, le=20, description="subclaims kept from the split")
    # HiSS.py asks until the model moves on, with no cap; its demonstrations ask at most 4
    # questions for one (sub)claim.
    max_questions: int = Field(default=4, ge=1, le=20, description="questions per subclaim")
    # A search engine snippet is the answer (HiSS.py takes Google's "snippet").
    max_chars: int = Field(
        default=300, ge=50, le=20_000, description="characters of a search answer"
    )
    # HiSS.py: `if 'fact' not in ...['link']`, keeping fact-checking sites out.
    skip_fact_links: bool = Field(
        default=True, description='skip search results whose URL contains "fact"'
    )


class Hiss(Baseline):
    """Subclaims, then questions answered by the model or by search, then the label."""

    name: ClassVar[str] = "hiss"
    paper: ClassVar[str] = (
        "Zhang and Gao 2023, Towards LLM-based Fact Verification on News Claims with a "
        "Hierarchical Step-by-Step Prompting Method (AACL)"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)
    Config: ClassVar[type[BaselineConfig]] = HissConfig
    retrieves: ClassVar[bool] = True
    variants: ClassVar[dict[str, dict[str, Any]]] = {
        # For a model with a small context window (the embedded one).
        "lite": {"max_subclaims": 2, "max_questions": 2},
    }
    config: HissConfig

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Split, question each subclaim step by step, then judge from the answers."""
        log = CallLog()
        block = subject_block(subject, self.config.max_article_words)
        split = await DECOMPOSE.arun(
            self.model, log=log, subject=block, most=self.config.max_subclaims
        )
        subclaims = [s.strip() for s in split.subclaims if s.strip()]
        subclaims = subclaims[: self.config.max_subclaims] or [_whole(subject)]
        log.milestone("hiss.decompose", f"{len(subclaims)} subclaim(s)", subclaims=len(subclaims))
        qa: list[dict[str, Any]] = []
        used: list[Evidence] = []
        for number, subclaim in enumerate(subclaims, start=1):
            for _ in range(self.config.max_questions):
                asked = [r for r in qa if r["subclaim"] == number]
                nxt = await ASK.arun(
                    self.model,
                    log=log,
                    subject=block,
                    subclaim=subclaim,
                    history=_history(subclaims, qa),
                )
                question = nxt.question.strip()
                # Every subclaim gets at least one question, as in every HiSS demonstration.
                if (nxt.done and asked) or not question:
                    break
                record, found = await self._answer(
                    subject, block, question, nxt.confident, evidence, log
                )
                qa.append({"subclaim": number, "question": question, **record})
                if found is not None:
                    used.append(found)
                log.milestone(
                    "hiss.question",
                    f"subclaim {number}: answered by {record['by']}",
                    subclaim=number,
                    by=record["by"],
                )
        judgement = await VERDICT.pick(subject).arun(
            self.model, log=log, subject=block, findings=_history(subclaims, qa)
        )
        return self.verdict(subject, judgement, log, evidence=used, subclaims=subclaims, qa=qa)

    async def _answer(
        self,
        subject: Claim | Article,
        block: Delimited,
        question: str,
        confident: bool,
        evidence: Sequence[Evidence] | None,
        log: CallLog,
    ) -> tuple[dict[str, Any], Evidence | None]:
        """The model's own answer when it is confident, else the first search snippet."""
        if confident:
            own = await ANSWER.arun(self.model, log=log, subject=block, question=question)
            return {"confident": True, "by": "model", "answer": own.answer}, None
        found = await self.gather(question, subject, evidence, log)
        if self.config.skip_fact_links:
            found = without_domains(found, ("fact",))
        if not found:
            return {"confident": False, "by": "search", "answer": NOTHING_FOUND}, None
        top = found[0]
        answer = clip(top.text, self.config.max_chars)
        return {"confident": False, "by": "search", "answer": answer, "ref": top.ref}, top


def _whole(subject: Claim | Article) -> str:
    """The subject itself as its one subclaim, when the split gave none."""
    if isinstance(subject, Article):
        return subject.title.strip() or clip(subject.text, 300)
    return subject.text


def _history(subclaims: list[str], qa: list[dict[str, Any]]) -> Delimited:
    """Each subclaim with its questions and answers so far, every part in its own block."""
    lines = []
    for number, subclaim in enumerate(subclaims, start=1):
        rows = [r for r in qa if r["subclaim"] == number]
        if not rows:
            continue
        lines.append(f"Subclaim {number}: " + data_block("subclaim", subclaim))
        for r in rows:
            lines.append("Question: " + data_block("question", r["question"]))
            source = "own knowledge" if r["by"] == "model" else "search"
            lines.append(f"Answer ({source}): " + data_block("answer", r["answer"]))
    return Delimited("\n".join(lines) if lines else "(none yet)")
