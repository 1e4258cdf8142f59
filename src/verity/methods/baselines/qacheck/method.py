"""Baseline ``qacheck``: question-guided multi-hop fact-checking.

Pan, Lu, Kan and Nakov (2023), "QACheck: A Demonstration System for Question-Guided
Multi-Hop Fact-Checking", EMNLP 2023 System Demonstrations (arXiv:2310.07609); code:
github.com/XinyuanLu00/QACheck.

    method = load_method("qacheck", models=models)                    # closed book
    verdict = method.verify(claim, evidence=gold_passages)             # gold setting
    verdict.trace.model_dump()["rounds"]       # each question, answer and whether kept

Five modules, each a step (`steps.py`). The claim verifier decides whether the
question-answer pairs gathered so far settle the claim; if not, the question generator
asks the next simple question (the first one from the claim alone); the
question-answering module answers it; the validator keeps the pair only if it is useful
for the claim; after at most ``max_questions`` questions, or once the verifier is
satisfied, the reasoner gives the verdict from the kept pairs, step by step. As in the
code, the verifier is first asked after the first question, since an empty context
cannot settle anything.

The question-answering module is one of the paper's three: a retriever-reader (search,
or the gold passages, then a reader), a reciter-reader (the model recalls a passage
about the question, then reads it: the code's choice, used closed book) or a direct
answer from the model's knowledge. The verdict is binary, SUPPORTED or REFUTED, as the
reasoner's answers are mapped in the code and as HOVER and FEVEROUS-S are labelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field

from verity.domain import Article, Claim, Evidence, Verdict
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.methods.baselines.base import BaselineConfig, Setting, SettingBaseline, SettingConfig
from verity.methods.baselines.qacheck.steps import (
    ANSWER_DIRECTLY,
    CLAIM_VERIFIER,
    FIRST_QUESTION,
    NEXT_QUESTION,
    READ,
    REASONER,
    RECITE,
    VALIDATOR,
)
from verity.methods.common import numbered, require_claim, unique_evidence
from verity.sources.base import Source

QaModule = Literal["retriever-reader", "reciter-reader", "direct"]


class QaCheckConfig(SettingConfig):
    """Settings of ``qacheck``; the defaults follow the paper and its code."""

    # fact_checker.py, verify_single_claim_GPT3(MAX_ROUND = 5); the paper's limit too.
    max_questions: int = Field(default=5, ge=1, le=10, description="questions asked, at most")
    qa: Literal["auto", "retriever-reader", "reciter-reader", "direct"] = Field(
        default="auto",
        description="question-answering module; auto = retriever-reader when there is "
        "evidence (gold or open), else reciter-reader (the code's own choice)",
    )


class QaCheck(SettingBaseline):
    """QACheck: ask, answer and validate questions until the claim can be judged."""

    name: ClassVar[str] = "qacheck"
    paper: ClassVar[str] = (
        "Pan et al. 2023, QACheck: Question-Guided Multi-Hop Fact-Checking (EMNLP demo)"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    Config: ClassVar[type[BaselineConfig]] = QaCheckConfig
    config: QaCheckConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        super().__init__(models=models, sources=sources, **config)
        self.agents = {
            role: models.for_role(role)
            for role in (
                "claim_verifier",
                "question_generator",
                "question_answerer",
                "validator",
                "reasoner",
            )
        }

    def qa_module(self, setting: Setting) -> QaModule:
        """The question-answering module a check uses."""
        if self.config.qa != "auto":
            return self.config.qa
        return "reciter-reader" if setting == "closed" else "retriever-reader"

    async def check(self, subject: Claim | Article, evidence: Sequence[Evidence] | None) -> Verdict:
        """Question rounds until the verifier is satisfied or the budget is spent; reason."""
        claim = require_claim(subject, self.name)
        setting = self.setting_for(evidence)
        module = self.qa_module(setting)
        log = CallLog()
        rounds: list[dict[str, Any]] = []
        kept: list[tuple[str, str]] = []
        used: list[Evidence] = []
        stopped = "max_questions"
        for number in range(1, self.config.max_questions + 1):
            if number > 1:
                enough = await CLAIM_VERIFIER.arun(
                    self.agents["claim_verifier"], log=log, claim=claim.text, context=shown(kept)
                )
                if enough.enough:
                    stopped = "sufficient"
                    log.milestone("qacheck.sufficient", f"enough after {number - 1} question(s)")
                    break
            if number == 1:
                asked = await FIRST_QUESTION.arun(
                    self.agents["question_generator"], log=log, claim=claim.text
                )
            else:
                asked = await NEXT_QUESTION.arun(
                    self.agents["question_generator"],
                    log=log,
                    claim=claim.text,
                    context=shown(kept),
                )
            question = asked.question.strip() or "(empty question)"
            answer, passages, recital = await self._answer(
                question, module, claim, evidence if setting == "gold" else None, setting, log
            )
            valid = await VALIDATOR.arun(
                self.agents["validator"],
                log=log,
                claim=claim.text,
                context=shown(kept),
                question=question,
                answer=answer,
            )
            record: dict[str, Any] = {
                "round": number,
                "question": question,
                "answer": answer,
                "useful": valid.useful,
                "validator_reason": valid.reason,
                "evidence": [ev.ref for ev in passages],
            }
            if recital is not None:
                record["recital"] = recital
            rounds.append(record)
            if valid.useful:
                kept.append((question, answer))
                used += passages
            log.milestone(
                "qacheck.round",
                f"question {number} answered, " + ("kept" if valid.useful else "discarded"),
                round=number,
                useful=valid.useful,
            )
        verdict = await REASONER.arun(
            self.agents["reasoner"], log=log, claim=claim.text, context=shown(kept)
        )
        log.milestone("qacheck.verdict", f"reasoner: {verdict.label}", label=verdict.label)
        return self.verdict(
            claim,
            verdict,
            log,
            evidence=unique_evidence(used),
            setting=setting,
            qa_module=module,
            rounds=rounds,
            stopped=stopped,
            context=[{"question": q, "answer": a} for q, a in kept],
        )

    async def _answer(
        self,
        question: str,
        module: QaModule,
        claim: Claim,
        gold: Sequence[Evidence] | None,
        setting: Setting,
        log: CallLog,
    ) -> tuple[str, list[Evidence], str | None]:
        """The QA module: an answer, the passages it read, and what a reciter recalled."""
        model = self.agents["question_answerer"]
        if module == "direct":
            reply = await ANSWER_DIRECTLY.arun(model, log=log, question=question)
            return reply.answer.strip() or "(no answer)", [], None
        if module == "reciter-reader":
            recalled = await RECITE.arun(model, log=log, question=question)
            reply = await READ.arun(model, log=log, question=question, evidence=recalled.passage)
            return reply.answer.strip() or "(no answer)", [], recalled.passage
        passages = [] if setting == "closed" else await self.gather(question, claim, gold, log)
        shown_passages = numbered(passages, self.config.max_chars)
        reply = await READ.arun(model, log=log, question=question, evidence=shown_passages)
        return reply.answer.strip() or "(no answer)", passages, None


def shown(pairs: Sequence[tuple[str, str]]) -> str:
    """The kept question-answer pairs, numbered, as the modules read them."""
    if not pairs:
        return "(nothing yet)"
    lines = []
    for number, (question, answer) in enumerate(pairs, start=1):
        lines += [f"Question {number}: {question}", f"Answer {number}: {answer}"]
    return "\n".join(lines)
