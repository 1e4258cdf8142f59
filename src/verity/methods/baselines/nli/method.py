"""The ``nli`` method: a local checkpoint's class (or word) for the claim, as a verdict.

    method = load_method("nli", models=models, checkpoint="/models/roberta-large-mnli")
    verdict = method.verify(claim, evidence=passages)

See the package docstring for the papers, the pairing and the label mapping.
"""

from __future__ import annotations

import asyncio
import string
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator

from verity.domain import Article, Claim, Evidence, Verdict
from verity.errors import ConfigError
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.baselines.nli.checkpoint import (
    Loaded,
    checkpoint_folder,
    classify,
    generate,
    load_checkpoint,
    weights_bytes,
)
from verity.methods.baselines.nli.labels import KNOWN_NAMES, VerdictName, normal_name
from verity.methods.common import require_claim
from verity.methods.settings import OperatorOnly, OperatorPath, OperatorTemplate
from verity.sources.base import Source

# Flan-T5's question as ProgramFC asks it (models/question_answering.py,
# answer_verify_question): the evidence, then whether the claim is true, true or false.
# The sentences are verity's own; the shape and the answer words are ProgramFC's.
TEMPLATE = "{evidence}\n\nFrom the text above, is this claim true or false? {claim}\nAnswer:"
CLOSED_TEMPLATE = "Is this claim true or false? {claim}\nAnswer:"


def joined(passages: Sequence[Evidence], passage_format: str, max_chars: int) -> str:
    """The evidence as one text: each passage written by ``passage_format``, one per line.

    joined([Evidence(text="Paris is in France.", title="Paris", source="x")],
           "{n}. {title}: {text}", 1000)          # '1. Paris: Paris is in France.'
    """
    return "\n".join(
        passage_format.format(n=n, title=ev.title, text=ev.text[:max_chars])
        for n, ev in enumerate(passages, start=1)
    )


def _fields(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}


class Prediction(BaseModel):
    """The checkpoint's decision in the shape `Baseline.verdict` reads."""

    explanation: str
    label: VerdictName
    confidence: float | None


class NliConfig(BaselineConfig):
    """Settings of ``nli``; ``checkpoint`` is required."""

    # The checkpoint, its class names and its templates describe a model on the server:
    # they are the operator's, never a request's (verity.methods.settings). A template is
    # a format string, which could pad a field to any width.
    checkpoint: OperatorPath = Field(
        default="",
        description="folder of a local Hugging Face checkpoint (required; nothing is downloaded)",
    )
    kind: Literal["auto", "classification", "seq2seq"] = Field(
        default="auto",
        description="sequence classifier or seq2seq model; auto reads the checkpoint's "
        "architectures",
    )
    labels: Annotated[
        dict[str, VerdictName], OperatorOnly("the class names of the checkpoint on the server")
    ] = Field(
        default_factory=dict,
        description="class names (or class ids, or answer words) to verdicts, over the "
        "built-in names (entailment, contradiction, neutral, supports, refutes, true, false)",
    )
    max_chars: int = Field(
        default=4000,
        ge=100,
        le=20_000,
        description="characters kept per passage before the token cap",
    )
    # At most 16,384 tokens (verity's bound): above the longest input of the checkpoints
    # the papers name (MultiVerS's Longformer reads 4,096).
    max_length: int = Field(
        default=512,
        ge=16,
        le=16_384,
        description="tokens of the model's input; the evidence is cut to fit (512: the "
        "input length of BERT, RoBERTa, DeBERTa and T5 checkpoints)",
    )
    passage_format: OperatorTemplate = Field(
        default="{text}",
        description="how each passage is written into the evidence ({n}, {title}, {text}); "
        "passages are joined by line breaks",
    )
    template: OperatorTemplate = Field(
        default=TEMPLATE, description="seq2seq prompt with evidence ({evidence}, {claim})"
    )
    closed_template: OperatorTemplate = Field(
        default=CLOSED_TEMPLATE, description="seq2seq prompt without evidence ({claim})"
    )
    # ProgramFC generates at most 8 new tokens for a verification answer (at most 512:
    # verity's bound).
    max_new_tokens: int = Field(
        default=8, ge=1, le=512, description="seq2seq answer length, tokens"
    )

    @field_validator("passage_format")
    @classmethod
    def _passage_fields(cls, value: str) -> str:
        unknown = _fields(value) - {"n", "title", "text"}
        if unknown or "text" not in _fields(value):
            raise ValueError("passage_format takes {text} and optionally {n} and {title}")
        return value

    @field_validator("template")
    @classmethod
    def _template_fields(cls, value: str) -> str:
        if _fields(value) != {"claim", "evidence"}:
            raise ValueError("template takes exactly the fields {evidence} and {claim}")
        return value

    @field_validator("closed_template")
    @classmethod
    def _closed_fields(cls, value: str) -> str:
        if _fields(value) != {"claim"}:
            raise ValueError("closed_template takes exactly the field {claim}")
        return value


class NliMethod(Baseline):
    """A fine-tuned encoder (or seq2seq) checkpoint's decision on the claim and evidence."""

    name: ClassVar[str] = "nli"
    paper: ClassVar[str] = (
        "the fine-tuned baselines of Pan et al. 2023, Fact-Checking Complex Claims with "
        "Program-Guided Reasoning (ACL): RoBERTa-NLI, DeBERTaV3-NLI, Flan-T5 and others"
    )
    # What stands in for the published method (see the module docstring and docs/baselines.md).
    substitute: ClassVar[str] = (
        "one runner for local checkpoints in place of each row's own trained model; "
        "the checkpoint named decides, and Flan-T5 runs zero-shot"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    Config: ClassVar[type[BaselineConfig]] = NliConfig
    retrieves: ClassVar[bool] = True
    variants: ClassVar[dict[str, dict[str, Any]]] = {
        # LisT5's label-prediction input (castorini/pygaggle,
        # experiments/list5/convert_run_to_label_prediction_input.py): the claim as the
        # hypothesis, then the numbered evidence sentences; answers true / false / weak.
        "list5": {
            "kind": "seq2seq",
            "template": "hypothesis: {claim} {evidence}",
            "closed_template": "hypothesis: {claim}",
            "passage_format": "sentence{n}: {title} . {text}",
        },
    }
    config: NliConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        super().__init__(models=models, sources=sources, **config)
        # Cheap checks now (the folder exists and holds a config); the weights load later.
        self.folder = checkpoint_folder(self.config.checkpoint)

    def to_dict(self) -> dict[str, Any]:
        """Configuration for run manifests: the checkpoint, and no language model."""
        out = super().to_dict()
        out["models"] = {"unused": "nli decides with its checkpoint and calls no LLM"}
        out["checkpoint_bytes"] = weights_bytes(self.folder)
        return out

    def warnings(self) -> list[str]:
        """Closed book when no source is configured (given evidence still counts)."""
        if not self.sources:
            return [
                "nli: no evidence source is configured: without given evidence the "
                "checkpoint sees the claim alone (closed book)"
            ]
        return []

    def warm_up(self) -> None:
        """Load the checkpoint now, and check its classes map onto verdicts."""
        self._verdicts(self._loaded())

    def _loaded(self) -> Loaded:
        return load_checkpoint(self.folder, self.config.kind)

    def _verdict_for(self, name: str, index: int | None = None) -> VerdictName | None:
        own = {normal_name(k): v for k, v in self.config.labels.items()}
        if index is not None and str(index) in self.config.labels:
            return self.config.labels[str(index)]
        return own.get(normal_name(name)) or KNOWN_NAMES.get(normal_name(name))

    def _verdicts(self, loaded: Loaded) -> dict[str, VerdictName]:
        """Each class name of a classifier with its verdict; unmapped classes are an error."""
        mapped = {name: self._verdict_for(name, i) for i, name in loaded.names.items()}
        missing = sorted(name for name, verdict in mapped.items() if verdict is None)
        if missing:
            raise ConfigError(
                f"nli: the checkpoint's classes {', '.join(missing)} have no verdict: set "
                "labels, e.g. labels = {'LABEL_0': 'SUPPORTED', 'LABEL_1': "
                "'NOT_ENOUGH_INFO', 'LABEL_2': 'REFUTED'}, in the order its model card gives"
            )
        return {name: verdict for name, verdict in mapped.items() if verdict is not None}

    async def check(self, subject: Claim | Article, evidence: Sequence[Evidence] | None) -> Verdict:
        """Gather the evidence, then one forward pass (or one generation) in a worker thread."""
        claim = require_claim(subject, self.name)
        log = CallLog()
        shown = await self.gather(claim.text, claim, evidence, log)
        premise = joined(shown, self.config.passage_format, self.config.max_chars)
        source = "given" if evidence is not None else "searched"
        log.milestone(
            "nli.evidence",
            f"{len(shown)} passage(s), {source}" if shown else "no evidence: closed book",
            passages=len(shown),
            closed_book=not shown,
        )
        loaded = await asyncio.to_thread(self._loaded)
        if loaded.kind == "classification":
            prediction, trace = await asyncio.to_thread(self._classify, loaded, premise, claim)
        else:
            prediction, trace = await asyncio.to_thread(self._generate, loaded, premise, claim)
        log.milestone(
            "nli.predict",
            f"{loaded.kind}: {prediction.label}",
            label=prediction.label,
            confidence=prediction.confidence,
        )
        return self.verdict(
            claim,
            prediction,
            log,
            evidence=shown,
            kind=loaded.kind,
            closed_book=not shown,
            **trace,
        )

    def _classify(
        self, loaded: Loaded, premise: str, claim: Claim
    ) -> tuple[Prediction, dict[str, Any]]:
        verdicts = self._verdicts(loaded)
        out = classify(
            loaded, premise=premise, hypothesis=claim.text, max_length=self.config.max_length
        )
        # Classes sharing a verdict (a three-way checkpoint on a binary task) add up.
        totals: dict[VerdictName, float] = {}
        for name, p in out.probabilities.items():
            totals[verdicts[name]] = totals.get(verdicts[name], 0.0) + p
        label = max(totals, key=lambda v: totals[v])
        scores = ", ".join(f"{name} {p:.3f}" for name, p in out.probabilities.items())
        # A sum of floats may pass 1 by a rounding error; a confidence may not.
        confidence = min(1.0, totals[label])
        prediction = Prediction(
            explanation=f"class probabilities: {scores}", label=label, confidence=confidence
        )
        return prediction, {
            "probabilities": {n: round(p, 6) for n, p in out.probabilities.items()},
            "input": out.shown,
            "premise_tokens": out.premise_tokens,
            "premise_tokens_kept": out.premise_kept,
        }

    def _generate(
        self, loaded: Loaded, premise: str, claim: Claim
    ) -> tuple[Prediction, dict[str, Any]]:
        template = self.config.template if premise else self.config.closed_template
        out = generate(
            loaded,
            template=template,
            claim=claim.text,
            evidence=premise,
            max_length=self.config.max_length,
            max_new_tokens=self.config.max_new_tokens,
        )
        word = normal_name(out.answer)
        verdict = self._verdict_for(word) or self._verdict_for(word.split(" ", 1)[0])
        if verdict is None:
            # ProgramFC draws a random label for an answer it cannot read; verity does not
            # guess: the claim is left undecided and the trace says why.
            prediction = Prediction(
                explanation=f"the model answered {out.answer!r}, which names no label",
                label="NOT_ENOUGH_INFO",
                confidence=None,
            )
        else:
            prediction = Prediction(
                explanation=f"the model answered {out.answer!r}",
                label=verdict,
                confidence=out.probability,
            )
        return prediction, {
            "answer": out.answer,
            "mapped": verdict is not None,
            "answer_probability": round(out.probability, 6),
            "input": out.shown,
            "evidence_tokens": out.evidence_tokens,
            "evidence_tokens_kept": out.evidence_kept,
        }
