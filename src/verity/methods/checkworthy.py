"""``claimify-select``: is a sentence worth fact-checking? The extractor's selection step alone.

    method = load_method("claimify-select", models=models)
    method.verify(Claim(text="We're consuming 50 percent of the world's cocaine.")).label
    # Label.CHECK_WORTHY or Label.NOT_CHECK_WORTHY

The claim extractor for documents (`verity.extraction`, after Claimify, Metropolitansky
& Larson 2025, §3.2) first asks of each sentence whether it states a specific fact that
could be checked; this method asks that question, with the paper's vote (3 answers, 2 to
pass, Appendix D), of one sentence shown alone, the way the CheckThat! 2024 Task 1
sentences come. It is how verity's check-worthiness is measured
(``verity bench --dataset ct24-checkworthy``); it verifies nothing.

Claimify's question (verifiable or not) is broader than the lab's (worth checking for
the public): a verifiable trivial fact is check-worthy here and not there. The figure on
the lab's data measures that gap as well as the model. The ``single`` variant asks once,
at temperature 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.extraction.extract import NO_QUESTION, Extractor, Variant
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.methods.base import MethodBase, MethodConfig
from verity.methods.common import require_claim
from verity.sources.base import Source


class CheckworthyConfig(MethodConfig):
    """Settings of ``claimify-select``."""

    # "paper": Claimify's vote (Appendix D); "single": one answer at temperature 0.
    votes: Literal["paper", "single"] = "paper"


class ClaimifySelect(MethodBase):
    """A sentence judged check-worthy when Claimify's selection finds a verifiable fact."""

    name: ClassVar[str] = "claimify-select"
    paper: ClassVar[str] = (
        "Metropolitansky & Larson 2025, Claimify's selection step (§3.2): a check-worthiness "
        "judge, not a verifier"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    # What it decides: whether a sentence is worth checking, never whether it is true.
    task: ClassVar[str] = "check-worthiness"
    variants: ClassVar[dict[str, dict[str, Any]]] = {"single": {"votes": "single"}}
    config: CheckworthyConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        self.config = CheckworthyConfig(**config)
        self.models = models
        variant: Variant = "claimify" if self.config.votes == "paper" else "single"
        self.extractor = Extractor(models.for_role("extract"), variant=variant)

    def variant_kind(self) -> str:
        """The vote is the paper's; one answer is verity's cheaper variant."""
        if self.config.votes == "single":
            return "verity variant: one selection answer at temperature 0, no vote"
        return "paper"

    def to_dict(self) -> dict[str, Any]:
        """Configuration for run manifests."""
        return {"method": self.name, **self.config.model_dump(), "models": self.models.to_dict()}

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Ask the selection step about the sentence, shown as its own excerpt."""
        claim = require_claim(subject, self.name)
        log = CallLog()
        vote = await self.extractor.select(NO_QUESTION, claim.text, claim.text, log)
        asked = vote.asked
        worthy = vote.chosen is not None
        agreeing = vote.passed if worthy else asked - vote.passed
        shown = vote.chosen or vote.answers[0]
        explanation = shown.analysis.strip()
        if worthy and vote.chosen is not None and vote.chosen.rewritten.strip():
            explanation += f"\nVerifiable part: {vote.chosen.rewritten.strip()}"
        return Verdict(
            label=Label.CHECK_WORTHY if worthy else Label.NOT_CHECK_WORTHY,
            confidence=agreeing / asked,
            explanation=explanation,
            usage=log.usage(),
            trace=log.trace(votes=f"{vote.passed} of {asked} answers found a verifiable fact"),
            method=self.name,
            subject=claim,
        )
