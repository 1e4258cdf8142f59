"""Baseline ``fire``: FIRE, fact-checking with iterative retrieval and verification.

    method = load_method("fire", models=models, sources=[OfflineWiki()])
    verdict = method.verify(Claim(text="The Eiffel Tower is in Berlin."))
    verdict.trace.model_dump()["searches"]     # each query and what it found
    verdict.trace.model_dump()["stopped"]      # 'answered', 'early_stop' or 'max_steps'

Zhuohan Xie, Rui Xing, Yuxia Wang, Jiahui Geng, Hasan Iqbal, Dhruv Sahnan, Iryna Gurevych
and Preslav Nakov, "FIRE: Fact-checking with Iterative Retrieval and Verification",
Findings of NAACL 2025 (arXiv 2411.00784); code at github.com/mbzuai-nlp/fire
(``eval/fire/verify_atomic_claim.py``, ``eval/fire/config.py``).

One decision, made again after every search: the model reads the claim and the knowledge
found so far and either gives its final answer, when it is confident, or asks for one
more web search. The loop ends at an answer, at ``max_steps`` searches, or early when the
model asks again for what it already searched (its new query, or the last search's
results, within cosine ``similarity`` of the previous ones under the sentence encoder,
as FIRE checks with all-MiniLM-L6-v2); the model must then answer with what it has.

FIRE labels an atomic claim true or false: here SUPPORTED or REFUTED. Its answers carry
no confidence; verity asks for one beside the label, so calibration can be measured.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from verity.domain import Article, Claim, Evidence, Verdict
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.llm.step import Step
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.baselines.qa import merged
from verity.methods.common import Confidence, numbered, require_claim
from verity.methods.direct import claim_context
from verity.nlp.embed import Encoder, default_encoder
from verity.sources.base import Source

BinaryLabel = Literal["SUPPORTED", "REFUTED"]

# FIRE's search tool answers "No good Google Search result was found" when a search finds
# nothing, and that text takes part in its repeated-results check: two empty searches in
# a row are repeated results.
NO_RESULT = "No search result was found."


class FireDecision(BaseModel):
    """FIRE's one decision: answer now, or search once more (the other fields then unused)."""

    explanation: str
    action: Literal["answer", "search"]
    query: str
    label: BinaryLabel
    confidence: Confidence


class FireAnswer(BaseModel):
    """The answer FIRE must give when it may search no more."""

    explanation: str
    label: BinaryLabel
    confidence: Confidence


DECIDE = Step(
    name="fire.decide",
    instruction=(
        "You are a fact-checker who verifies a claim with the help of web search. Think "
        "step by step, first summarising what the knowledge gathered so far says about "
        "the claim (it may be empty). If the knowledge and what you know yourself let "
        "you judge the claim with confidence, set action to answer and give the label: "
        "SUPPORTED if the claim is true, REFUTED if it is false. Otherwise set action to "
        "search and write one web search query that would bring information the "
        "knowledge does not hold yet and that would help judge the claim; the label is "
        "then your best guess so far. Give your confidence between 0 and 1."
    ),
    template="Claim: {claim}{context}\n\nKnowledge:\n{knowledge}",
    output=FireDecision,
)

FINAL = Step(
    name="fire.final",
    instruction=(
        "You are a fact-checker. No more searches are possible: judge the claim now, "
        "from the knowledge gathered and what you know yourself. Think step by step, "
        "first summarising what the knowledge says about the claim; then give the label, "
        "SUPPORTED if the claim is true or REFUTED if it is false, and your confidence "
        "between 0 and 1."
    ),
    template="Claim: {claim}{context}\n\nKnowledge:\n{knowledge}",
    output=FireAnswer,
)


class FireConfig(BaselineConfig):
    """Settings of ``fire``; defaults are FIRE's own (eval/fire/config.py) unless noted."""

    # FIRE config.py: num_searches = 3 results per search.
    k: int = Field(default=3, ge=1, le=50, description="passages per source per search")
    max_passages: int = Field(
        default=3, ge=1, le=100, description="passages kept per search, all sources together"
    )
    # FIRE reads search-engine snippets, a sentence or two each; longer passages are cut
    # to about that length so that five searches fit a small model's context.
    max_chars: int = Field(
        default=300, ge=100, le=20_000, description="characters shown per passage"
    )
    # FIRE config.py: max_steps = 5; at most 20 is verity's bound, four times that.
    max_steps: int = Field(
        default=5, ge=0, le=20, description="most searches before a forced answer"
    )
    early_stop: bool = Field(
        default=True, description="stop searching when a query or its results repeat"
    )
    # FIRE config.py: max_tolerance = 2 (a value of 1 would stop at every query).
    tolerance: int = Field(
        default=2,
        ge=2,
        le=20,
        description="repeats within this many searches that stop the search",
    )
    # verify_atomic_claim.py: get_sentence_similarity(..., threshold=0.9).
    similarity: float = Field(
        default=0.9, gt=0.0, le=1.0, description="cosine above which two texts repeat"
    )


@dataclass(frozen=True)
class Search:
    """One search FIRE asked for, and the passages it found."""

    query: str
    found: tuple[Evidence, ...]

    @property
    def text(self) -> str:
        """What the search returned, as one text (FIRE joins its snippets)."""
        return " ".join(ev.text for ev in self.found) or NO_RESULT

    def to_trace(self) -> dict[str, Any]:
        """The record kept in the verdict's trace."""
        return {"query": self.query, "found": len(self.found), "refs": [e.ref for e in self.found]}


class Fire(Baseline):
    """Decide, search, decide again; answer when confident or when searching must stop."""

    name: ClassVar[str] = "fire"
    paper: ClassVar[str] = "Xie et al. 2025, FIRE (Findings of NAACL)"
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    Config: ClassVar[type[BaselineConfig]] = FireConfig
    retrieves: ClassVar[bool] = True
    config: FireConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        super().__init__(models=models, sources=sources, **config)
        # The sentence encoder of the repeat check, loaded on first use (tests may set one).
        self.encoder: Encoder | None = None

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Search until the model answers, then return its answer as the verdict."""
        claim = require_claim(subject, self.name)
        log = CallLog()
        inputs: dict[str, Any] = {"claim": claim.text, "context": claim_context(claim)}
        searches: list[Search] = []
        decisions: list[dict[str, Any]] = []
        stopped = "max_steps"
        for step in range(1, self.config.max_steps + 1):
            knowledge = self._knowledge(searches)
            decision = await DECIDE.arun(self.model, log=log, knowledge=knowledge, **inputs)
            query = " ".join(decision.query.split())
            decisions.append(
                {
                    "step": step,
                    "action": decision.action if query else "answer",
                    "query": query if decision.action == "search" else "",
                    "label": decision.label,
                    "confidence": decision.confidence,
                }
            )
            # A search with no query is no search: the decision stands as the answer.
            if decision.action == "answer" or not query:
                log.milestone(
                    "fire.answer",
                    f"answered {decision.label} after {len(searches)} search(es)",
                    label=decision.label,
                    searches=len(searches),
                )
                return self._verdict(claim, decision, log, searches, decisions, "answered")
            repeat = await self._repeat(query, searches) if self.config.early_stop else None
            if repeat is not None:
                stopped = "early_stop"
                log.milestone("fire.early_stop", f"search stopped: {repeat}", reason=repeat)
                break
            found = await self.gather(query, claim, evidence, log)
            searches.append(Search(query=query, found=tuple(found)))
            log.milestone(
                "fire.search",
                f"search {step}: {query!r}, {len(found)} passage(s)",
                step=step,
                query=query,
                found=len(found),
            )
        knowledge = self._knowledge(searches)
        answer = await FINAL.arun(self.model, log=log, knowledge=knowledge, **inputs)
        log.milestone("fire.final", f"forced answer {answer.label} ({stopped})", label=answer.label)
        return self._verdict(claim, answer, log, searches, decisions, stopped)

    def _knowledge(self, searches: Sequence[Search]) -> str:
        """Every passage found so far, numbered, each once."""
        return numbered(merged(s.found for s in searches), self.config.max_chars)

    async def _repeat(self, query: str, searches: Sequence[Search]) -> str | None:
        """Why searching should stop before running ``query``, or None to go on.

        FIRE (verify_atomic_claim.py, final_answer_or_next_search) stops when the new
        query repeats each of the last ``tolerance - 1`` queries, or when the last
        search's results repeat each of the ``tolerance - 1`` results before them.
        """
        t = self.config.tolerance
        queries = [s.query for s in searches]
        results = [s.text for s in searches]
        if len(queries) >= t - 1 and await self._repeats(query, queries[-(t - 1) :]) >= t - 1:
            return "the query repeats an earlier one"
        if len(results) >= t and await self._repeats(results[-1], results[-t:-1]) >= t - 1:
            return "the last results repeat earlier ones"
        return None

    async def _repeats(self, text: str, earlier: Sequence[str]) -> int:
        """How many of ``earlier`` are within the similarity threshold of ``text``."""
        if not earlier:
            return 0
        if self.encoder is None:
            self.encoder = default_encoder()
        vectors = await asyncio.to_thread(self.encoder.encode, [text, *earlier])
        cosines = Encoder.cosine_matrix(vectors[:1], vectors[1:])[0]
        return int(sum(float(c) > self.config.similarity for c in cosines))

    def _verdict(
        self,
        claim: Claim,
        judgement: FireDecision | FireAnswer,
        log: CallLog,
        searches: Sequence[Search],
        decisions: list[dict[str, Any]],
        stopped: str,
    ) -> Verdict:
        return self.verdict(
            claim,
            judgement,
            log,
            evidence=merged(s.found for s in searches),
            searches=[s.to_trace() for s in searches],
            decisions=decisions,
            stopped=stopped,
        )
