"""Baseline ``direct``: the model judges the claim from its own knowledge, no evidence.

verdict = load_method("direct", models=models).verify(Claim(text="Water boils at 50 C."))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.llm.step import Step
from verity.methods.base import MethodConfig
from verity.methods.common import ClaimJudgement, require_claim
from verity.sources.base import Source

JUDGE = Step(
    name="direct.judge",
    instruction=(
        "You are a professional fact-checker. Decide whether the claim is true using only "
        "your own knowledge. Use SUPPORTED if the claim is true, REFUTED if it is false, "
        "NOT_ENOUGH_INFO if you cannot tell. Explain briefly first, then give the label and "
        "your confidence between 0 and 1."
    ),
    template="Claim: {claim}{context}",
    output=ClaimJudgement,
)


def claim_context(claim: Claim) -> str:
    """Speaker and date lines for prompts, when the claim carries them."""
    parts = []
    if claim.speaker:
        parts.append(f"Speaker: {claim.speaker}")
    if claim.date:
        parts.append(f"Date: {claim.date.isoformat()}")
    return "".join("\n" + p for p in parts)


class DirectConfig(MethodConfig):
    """``direct`` has no settings of its own beyond the model."""


class DirectMethod:
    """The model's own knowledge, one call."""

    name: ClassVar[str] = "direct"
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        self.config = DirectConfig(**config)
        self.model = models.for_role("judge")
        self.models = models

    def to_dict(self) -> dict[str, Any]:
        """Configuration for run manifests."""
        return {"method": self.name, **self.config.model_dump(), "models": self.models.to_dict()}

    def verify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Judge the claim in one call; given evidence is ignored (closed book)."""
        claim = require_claim(subject, self.name)
        log = CallLog()
        judgement = JUDGE.run(self.model, log=log, claim=claim.text, context=claim_context(claim))
        return self._verdict(claim, judgement, log)

    async def averify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Async twin of `verify`."""
        claim = require_claim(subject, self.name)
        log = CallLog()
        judgement = await JUDGE.arun(
            self.model, log=log, claim=claim.text, context=claim_context(claim)
        )
        return self._verdict(claim, judgement, log)

    def _verdict(self, claim: Claim, judgement: ClaimJudgement, log: CallLog) -> Verdict:
        return Verdict(
            label=Label(judgement.label),
            confidence=judgement.confidence,
            explanation=judgement.explanation,
            usage=log.usage(),
            trace=log.trace(),
            method=self.name,
            subject=claim,
        )
