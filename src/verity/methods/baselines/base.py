"""What every published baseline shares: settings, models, evidence gathering, the verdict.

    class ZeroShotCot(Baseline):
        name = "z-cot"
        paper = "Lucas et al. 2023, Fighting Fire with Fire (EMNLP)"
        async def check(self, subject, evidence):
            log = CallLog()
            answer = await STEP.arun(self.model, log=log, claim=subject.text)
            return self.verdict(subject, answer, log)

A baseline is a `MethodBase` like the four methods: `verify`, `averify`, `to_dict`,
variants and live events come with it. What it adds is the plumbing each of the papers'
baselines would otherwise write again: one settings model per class (`Config`), the judge
model, `gather` (given evidence ranked by BM25 against a query, else the configured
sources), and `verdict` (a judgement and a call log made into a `Verdict`).

``substitute`` names what stands in for a defining part of the published method that
verity cannot run (a learned component, a fine-tuned model, prompts never published);
empty for a baseline built as published. `variant_kind` turns it into the manifest's
``variant_kind`` (``"paper"`` or ``"substitute: ..."``), the same key ToE's method fills,
so a benchmark report marks the row, and `verity methods` says so beside its paper.

``retrieves`` says whether the baseline searches: only then does its configuration list
sources, which is how the benchmark knows to give it the open setting's sources and to
guard them against leakage (`verity.bench.runner.retrieves`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.errors import BadInputError
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.methods.base import MethodBase, MethodConfig
from verity.methods.common import retrieve
from verity.sources.base import Source


class BaselineConfig(MethodConfig):
    """Settings every baseline has; a baseline's own settings subclass this."""

    # Upper bounds here and in every baseline's settings are verity's, so that a request
    # cannot ask for an unbounded search or prompt; each is well above what the baselines'
    # papers and code use.
    k: int = Field(default=5, ge=1, le=50, description="passages per source per search")
    max_passages: int = Field(
        default=10, ge=1, le=100, description="passages kept per search, all sources together"
    )
    max_chars: int = Field(
        default=1000, ge=100, le=20_000, description="characters shown per passage"
    )
    max_article_words: int = Field(
        default=600, ge=1, le=20_000, description="words of an article's text shown to the model"
    )


Setting = Literal["gold", "open", "closed"]


class SettingConfig(BaselineConfig):
    """Settings of a baseline that its paper ran with gold evidence, open book and closed book."""

    setting: Literal["auto", "gold", "open", "closed"] = Field(
        default="auto",
        description="evidence for search; auto = gold when evidence is given, else open "
        "when sources are configured, else closed",
    )


class Baseline(MethodBase):
    """Base class of the published baselines (`verity.methods.baselines`)."""

    name: ClassVar[str]
    # The baseline's own paper, as a short citation: shown by `verity methods`.
    paper: ClassVar[str]
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    Config: ClassVar[type[BaselineConfig]] = BaselineConfig
    retrieves: ClassVar[bool] = False
    variants: ClassVar[dict[str, dict[str, Any]]] = {}
    # What stands in for a defining part of the published method; "" when none does.
    substitute: ClassVar[str] = ""
    config: BaselineConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        self.config = self.Config(**config)
        self.models = models
        self.model = models.for_role("judge")
        self.sources = list(sources) if self.retrieves else []

    def to_dict(self) -> dict[str, Any]:
        """Configuration for run manifests; sources only for a baseline that searches."""
        out: dict[str, Any] = {
            "method": self.name,
            "paper": self.paper,
            "variant_kind": self.variant_kind(),
            **self.config.model_dump(),
            "models": self.models.to_dict(),
        }
        if self.retrieves:
            out["sources"] = [s.to_dict() for s in self.sources]
        return out

    def variant_kind(self) -> str:
        """``"paper"``, or ``"substitute: ..."`` when a stand-in replaces a defining part."""
        return f"substitute: {self.substitute}" if self.substitute else "paper"

    def warnings(self) -> list[str]:
        """What makes this run differ from the baseline as published."""
        if self.retrieves and not self.sources:
            return [f"{self.name}: no evidence source is configured, so every search is empty"]
        return []

    async def gather(
        self,
        query: str,
        subject: Claim | Article,
        evidence: Sequence[Evidence] | None,
        log: CallLog,
    ) -> list[Evidence]:
        """Passages for one search: the given evidence ranked by BM25, else the sources.

        Given evidence (a benchmark's gold passages) stands in for the sources, so a
        baseline that searches several times still asks one query at a time of it. The
        subject's date is the retrieval cutoff. Sources run in a worker thread.
        """
        cap = self.config.max_passages
        if evidence is not None:
            return rank_given(query, evidence, cap)
        if not self.sources:
            return []
        found = await asyncio.to_thread(
            retrieve, self.sources, query, self.config.k, before=subject.date, log=log
        )
        return found[:cap]

    def verdict(
        self,
        subject: Claim | Article,
        judgement: BaseModel,
        log: CallLog,
        *,
        evidence: Sequence[Evidence] = (),
        **trace: Any,
    ) -> Verdict:
        """The verdict from a judgement with ``label``, ``confidence`` and ``explanation``."""
        return Verdict(
            label=Label(judgement.label),  # type: ignore[attr-defined]
            confidence=getattr(judgement, "confidence", None),
            explanation=getattr(judgement, "explanation", ""),
            evidence=tuple(evidence),
            usage=log.usage(),
            trace=log.trace(**trace),
            method=self.name,
            subject=subject,
        )


def rank_given(query: str, evidence: Sequence[Evidence], k: int) -> list[Evidence]:
    """The ``k`` given passages that best match ``query`` by BM25, in the given order on ties.

    With ``k`` or fewer passages, all of them come back as given: ranking cannot change
    which are shown.
    """
    passages = list(evidence)
    if len(passages) <= k:
        return passages
    from verity.sources.bm25 import BM25Index

    index = BM25Index.build([f"{ev.title or ''} {ev.text}" for ev in passages])
    scored = [i for i, _ in index.ranked(query)]
    unscored = sorted(set(range(len(passages))) - set(scored))
    return [passages[i] for i in (scored + unscored)[:k]]


class SettingBaseline(Baseline):
    """A searching baseline run in LoCal's three evidence settings (gold, open, closed)."""

    retrieves: ClassVar[bool] = True
    Config: ClassVar[type[BaselineConfig]] = SettingConfig
    config: SettingConfig

    def warnings(self) -> list[str]:
        """Only an open setting forced without sources differs from the paper.

        Without sources the auto setting is closed book, which the papers also run.
        """
        if self.config.setting == "open" and not self.sources:
            return [
                f"{self.name}: the open setting has no evidence source, so every search is empty"
            ]
        return []

    def setting_for(self, evidence: Sequence[Evidence] | None) -> Setting:
        """The evidence setting a check runs in; the gold setting needs the evidence."""
        setting = self.config.setting
        if setting == "auto":
            if evidence is not None:
                return "gold"
            return "open" if self.sources else "closed"
        if setting == "gold" and evidence is None:
            raise BadInputError(f"{self.name}: the gold setting needs the gold evidence passed in")
        return setting
