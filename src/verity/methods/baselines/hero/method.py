"""Baseline ``hero``: HerO, the herd of open LLMs that came second at AVeriTeC 2024.

    method = load_method("hero", models=models, sources=[OfflineWiki()])
    verdict = method.verify(Claim(text="Sean Connery refused to appear in an Apple ad."))
    verdict.trace.model_dump()["hypothetical_documents"]   # the query expansion
    verdict.trace.model_dump()["qa"]                       # question, sentence, source

Yejun Yoon, Jaeyoon Jung, Seunghyun Yoon and Kunwoo Park, "HerO at AVeriTeC: The Herd of
Open Large Language Models for Verifying Real-World Claims", Proceedings of the Seventh
FEVER Workshop (EMNLP 2024), pages 130-136 (arXiv 2410.12377); code at
github.com/ssu-humane/HerO (``hyde_fc_generation.py``, ``retrieval.py``,
``reranking.py``, ``question_generation.py``, ``veracity_prediction.py``).

HerO's pipeline: (1) the model writes ``documents`` hypothetical fact-checking passages
about the claim (HyDE-FC), sampled at ``temperature``; (2) the evidence found is split
into sentences, ranked by BM25 against the claim and those passages together, and the
best ``bm25_k`` are ranked again by cosine to the mean embedding of the claim and the
passages; near-copies of the claim are dropped and ``evidence_k`` sentences kept;
(3) for each sentence the model writes the question it answers about the claim, giving
question-answer pairs whose answers are the sentences themselves; (4) the model predicts
one of AVeriTeC's four labels from those pairs, justifying it.

What verity cannot have: HerO's embedding model (SFR-Embedding-2_R, 7B parameters)
gives way to verity's sentence encoder (all-MiniLM-L6-v2, which takes no instruction
prefix); its fine-tuned Llama-3.1 verdict models (humane-lab/Meta-Llama-3.1-8B-HerO and
-70B-HerO) and the Llama 3 models of the other steps give way to the configured model;
its question prompts retrieve ten demonstrations from AVeriTeC's training split, which
is not here, so two demonstrations written for verity stand in. AVeriTeC gives HerO a
store of web pages per claim; here the sources are searched with the claim.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from verity import schedule
from verity.domain import Article, Claim, Evidence, Verdict
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.llm.step import Step
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.baselines.hero.retrieval import bm25_top, dense_rank, select, sentence_pool
from verity.methods.baselines.qa import (
    LABEL_OPTIONS,
    QAPair,
    VeracityJudgement,
    as_question,
    qa_block,
)
from verity.methods.common import require_claim
from verity.nlp.embed import Encoder, default_encoder
from verity.sources.base import Source


class HypotheticalDocument(BaseModel):
    """One hypothetical fact-checking passage about the claim."""

    passage: str


class LinkingQuestion(BaseModel):
    """The question an evidence sentence answers about the claim."""

    question: str


HYDE = Step(
    name="hero.hyde",
    instruction=(
        "Write a passage of a fact-checking article about the claim. The passage may "
        "support the claim, refute it, find that there is not enough evidence, or set "
        "out conflicting evidence."
    ),
    template="Claim: {claim}",
    output=HypotheticalDocument,
)

QUESTION = Step(
    name="hero.question",
    instruction=(
        "Write one question that links the claim to the evidence: a question that the "
        "evidence answers, and whose answer shows how the evidence bears on the claim."
    ),
    template="Claim: {claim}\nEvidence: {evidence}",
    output=LinkingQuestion,
)

# HerO retrieves ten demonstrations per question from AVeriTeC's training split by BM25
# (question_generation.py); that split is not here, so these two, written for verity,
# show the task instead.
SHOTS: tuple[tuple[dict[str, Any], BaseModel], ...] = (
    (
        {
            "claim": "The city council voted to close every public library in 2019.",
            "evidence": "In March 2019 the council approved a budget that kept all twelve "
            "branch libraries open.",
        },
        LinkingQuestion(question="Did the city council vote to close the public libraries?"),
    ),
    (
        {
            "claim": "The new bridge cost twice as much as first planned.",
            "evidence": "The final cost of the bridge was 410 million dollars, against an "
            "estimate of 200 million.",
        },
        LinkingQuestion(question="How much did the bridge cost compared with its estimate?"),
    ),
)

VERDICT = Step(
    name="hero.verdict",
    instruction=(
        "Predict the verdict of the claim from the question-answer pairs given as "
        "evidence. Leave aside pairs that have nothing to do with the claim. Justify "
        "your decision step by step from the evidence, then choose the label. Options: "
        + LABEL_OPTIONS
        + " Give your confidence between 0 and 1."
    ),
    template="Claim: {claim}\n\nEvidence:\n{qa}",
    output=VeracityJudgement,
)


class HeroConfig(BaselineConfig):
    """Settings of ``hero``; where each default comes from is noted beside it."""

    # Verity's own: HerO's store holds the pages AVeriTeC gathered for the claim; here one
    # search with the claim fills it, with more passages than a single judgement reads.
    k: int = Field(default=10, ge=1, le=50, description="passages per source")
    max_passages: int = Field(
        default=20, ge=1, le=100, description="passages in the store, all sources together"
    )
    # hyde_fc_generation.py: VLLMGenerator(n=8, max_tokens=512, temperature=0.7); the
    # upper bounds (four and eight times those) are verity's.
    documents: int = Field(default=8, ge=1, le=32, description="hypothetical documents (HyDE-FC)")
    document_tokens: int = Field(default=512, ge=16, le=4096, description="tokens per document")
    temperature: float = Field(default=0.7, ge=0.0, le=2.0, description="sampling temperature")
    # retrieval.py: --top_k 10000 sentences by BM25; reranking.py: --top_k 10. The upper
    # bounds, ten times those, are verity's.
    bm25_k: int = Field(default=10_000, ge=1, le=100_000, description="sentences kept by BM25")
    evidence_k: int = Field(
        default=10, ge=1, le=100, description="sentences kept by the dense rank"
    )


class Hero(Baseline):
    """HyDE-FC query expansion, BM25 then dense ranking, questions, a verdict over QA."""

    name: ClassVar[str] = "hero"
    paper: ClassVar[str] = "Yoon et al. 2024, HerO at AVeriTeC (FEVER workshop)"
    # What stands in for the published method (see the module docstring and docs/baselines.md).
    substitute: ClassVar[str] = (
        "the configured model with a prompt in place of HerO's fine-tuned Llama-3.1 "
        "verdict model; all-MiniLM-L6-v2 in place of SFR-Embedding-2_R"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    Config: ClassVar[type[BaselineConfig]] = HeroConfig
    retrieves: ClassVar[bool] = True
    config: HeroConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        super().__init__(models=models, sources=sources, **config)
        # The dense ranker's sentence encoder, loaded on first use (tests may set one).
        self.encoder: Encoder | None = None

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Expand, retrieve, rank, ask, judge; the sources run in a worker thread."""
        claim = require_claim(subject, self.name)
        log = CallLog()
        # The hypothetical documents and the search do not depend on each other.
        documents, passages = await schedule.gather(
            self._documents(claim, log), self.gather(claim.text, claim, evidence, log)
        )
        log.milestone(
            "hero.hyde", f"{len(documents)} hypothetical document(s)", documents=len(documents)
        )
        chosen, counts = await asyncio.to_thread(self._retrieve, claim.text, documents, passages)
        log.milestone(
            "hero.retrieval",
            f"{len(chosen)} of {counts['sentences']} sentence(s) kept",
            kept=len(chosen),
            **counts,
        )
        asked = await schedule.gather(
            *(
                QUESTION.arun(self.model, log=log, shots=SHOTS, claim=claim.text, evidence=ev.text)
                for ev in chosen
            )
        )
        pairs = [
            QAPair(as_question(q.question), ev.text, evidence=ev)
            for q, ev in zip(asked, chosen, strict=True)
        ]
        log.milestone("hero.questions", f"{len(pairs)} question(s) written", questions=len(pairs))
        judgement = await VERDICT.arun(
            self.model, log=log, claim=claim.text, qa=qa_block(pairs, self.config.max_chars)
        )
        return self.verdict(
            claim,
            judgement,
            log,
            evidence=chosen,
            hypothetical_documents=documents,
            retrieval=counts,
            qa=[{**p.to_trace(), "score": p.evidence.score if p.evidence else None} for p in pairs],
        )

    async def _documents(self, claim: Claim, log: CallLog) -> list[str]:
        """HyDE-FC: ``documents`` passages sampled at once, each with a seed of its own."""
        base = self.model.params
        first = base.seed or 0
        params = [
            base.model_copy(
                update={
                    "temperature": self.config.temperature,
                    "max_tokens": self.config.document_tokens,
                    "seed": first + i,
                }
            )
            for i in range(self.config.documents)
        ]
        written = await schedule.gather(
            *(HYDE.arun(self.model, log=log, params=p, claim=claim.text) for p in params)
        )
        return [w.passage.strip() for w in written if w.passage.strip()]

    def _retrieve(
        self, claim: str, documents: Sequence[str], passages: Sequence[Evidence]
    ) -> tuple[list[Evidence], dict[str, int]]:
        """Sentences of the passages, BM25-shortlisted, densely ranked, claim copies out."""
        sentences = sentence_pool(passages)
        shortlist = bm25_top(" ".join([claim, *documents]), sentences, self.config.bm25_k)
        if self.encoder is None:
            self.encoder = default_encoder()
        ranked = dense_rank(claim, documents, shortlist, self.encoder)
        chosen = select(claim, ranked, self.config.evidence_k)
        counts = {"passages": len(passages), "sentences": len(sentences), "bm25": len(shortlist)}
        return chosen, counts
