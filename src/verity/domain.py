"""Typed, validated, immutable domain objects.

claim = Claim(text="The Eiffel Tower is in Paris.")
ev = Evidence(text="The Eiffel Tower is ... in Paris", title="Eiffel Tower", source="offline-wiki")
verdict = Verdict(label=Label.SUPPORTED, confidence=0.9, explanation="[1] says so.",
                  evidence=(ev,), method="rag", subject=claim)
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Label(StrEnum):
    """Canonical verdict labels; every method maps its own labels onto these."""

    SUPPORTED = "SUPPORTED"
    REFUTED = "REFUTED"
    NOT_ENOUGH_INFO = "NOT_ENOUGH_INFO"
    CONFLICTING = "CONFLICTING"
    REAL = "REAL"
    FAKE = "FAKE"
    CHECK_WORTHY = "CHECK_WORTHY"
    NOT_CHECK_WORTHY = "NOT_CHECK_WORTHY"


CLAIM_LABELS = (Label.SUPPORTED, Label.REFUTED, Label.NOT_ENOUGH_INFO, Label.CONFLICTING)
# An article is real or fake; NOT_ENOUGH_INFO is a method declining to rule (ZoFia's judge
# after its last round), which the benchmarks count as wrong.
ARTICLE_LABELS = (Label.REAL, Label.FAKE, Label.NOT_ENOUGH_INFO)
# Whether a sentence states something worth fact-checking (the CheckThat! lab's task 1),
# not whether it is true. The sentence is carried as a Claim; an article is never judged so.
CHECKWORTHY_LABELS = (Label.CHECK_WORTHY, Label.NOT_CHECK_WORTHY)


class Stance(StrEnum):
    """How a piece of evidence relates to the claim, where a method decides it."""

    SUPPORTS = "SUPPORTS"
    REFUTES = "REFUTES"
    NEUTRAL = "NEUTRAL"


class Claim(_Frozen):
    """A short factual statement to verify."""

    text: NonEmpty
    date: dt.date | None = None
    speaker: str | None = None
    source_url: str | None = None
    language: str = "en"


class Article(_Frozen):
    """A news article to classify as real or fake."""

    title: str = ""
    text: NonEmpty
    url: str | None = None
    date: dt.date | None = None


class Evidence(_Frozen):
    """A passage with its provenance: which source, which page, how it ranked."""

    text: NonEmpty
    title: str = ""
    source: NonEmpty
    url: str | None = None
    id: str | None = None
    score: float | None = None
    published: dt.date | None = None
    stance: Stance | None = None
    credibility: Probability | None = None
    # Set when a source's passage was longer than the passage limit and was shortened.
    truncated_from: int | None = Field(default=None, ge=0)
    # What the provider says about the passage beyond its text: a post's author and
    # engagement, a ruling's rating, a paper's authors. Flat, so reports can show it.
    metadata: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @property
    def ref(self) -> str:
        """The best handle to find this passage again: its URL, else its id, else its title."""
        return self.url or self.id or self.title


class Usage(_Frozen):
    """Cost of model calls; added together per verdict and per run."""

    llm_calls: int = Field(default=0, ge=0)
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cached_tokens: int = Field(default=0, ge=0)
    cached_calls: int = Field(default=0, ge=0)
    seconds: float = Field(default=0.0, ge=0.0)
    # Of a whole check (zero on a single call's record): the calls that stood one after
    # another, its wall time, and the part of it with none of its calls in flight.
    critical_calls: int = Field(default=0, ge=0)
    wall_seconds: float = Field(default=0.0, ge=0.0)
    non_model_seconds: float = Field(default=0.0, ge=0.0)
    # Money, in US dollars, of the calls whose model has a known price (`verity.llm.prices`);
    # an answer from verity's own cache costs nothing. Calls to a model of unknown price
    # (the embedded one, an endpoint nobody priced) are counted apart, so that a total is
    # never passed off as complete when part of it is unknown.
    cost: float = Field(default=0.0, ge=0.0)
    unpriced_calls: int = Field(default=0, ge=0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            llm_calls=self.llm_calls + other.llm_calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cached_calls=self.cached_calls + other.cached_calls,
            seconds=self.seconds + other.seconds,
            critical_calls=self.critical_calls + other.critical_calls,
            wall_seconds=self.wall_seconds + other.wall_seconds,
            non_model_seconds=self.non_model_seconds + other.non_model_seconds,
            cost=self.cost + other.cost,
            unpriced_calls=self.unpriced_calls + other.unpriced_calls,
        )

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def price_known(self) -> bool:
        """Whether `cost` covers every call that reached a model."""
        return self.unpriced_calls == 0


class Message(_Frozen):
    """One chat message."""

    role: Literal["system", "user", "assistant"]
    content: str


class RejectedAnswer(_Frozen):
    """An answer that failed validation, and why; the call then asked for a repair."""

    output: str
    error: str


class ModelCall(_Frozen):
    """The record of one model call: what was asked, what came back, what it cost.

    ``attempts`` counts the answers requested (the first plus any repair rounds);
    ``rejected`` keeps every answer that failed validation, so the trace shows them all;
    ``normalised`` notes each number of the last answer read before validation, as in
    ``"confidence: 85 -> 0.85 (percentage)"`` or ``"score: -3 -> 0 (clamped)"``.
    """

    step: str
    role: str = "default"
    backend: str
    model: str
    messages: tuple[Message, ...]
    params: dict[str, Any] = Field(default_factory=dict)
    output: str
    parsed: dict[str, Any] | None = None
    usage: Usage = Usage()
    cached: bool = False
    structured_mode: str | None = None
    attempts: int = 1
    rejected: tuple[RejectedAnswer, ...] = ()
    finish_reason: str | None = None
    normalised: tuple[str, ...] = ()


class Retrieval(_Frozen):
    """The record of one source query and what it returned."""

    source: str
    query: str
    k: int
    before: dt.date | None = None
    results: tuple[Evidence, ...] = ()
    error: str | None = None


class Trace(BaseModel):
    """Everything that led to a verdict.

    The typed core is every model call and every retrieval; methods add their own typed
    parts (LoCal's iterations, ZoFia's keywords, WKGFC's actions) as extra fields, which
    serialise at the top level of the trace.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    calls: tuple[ModelCall, ...] = ()
    retrievals: tuple[Retrieval, ...] = ()


EventKind = Literal["check.start", "check.end", "call.start", "call.end", "retrieval", "milestone"]
# A milestone's details: flat, so a status line, a log and a web page can show them as is.
EventData = dict[str, str | int | float | bool | None]


class Event(_Frozen):
    """One step of a running check, as it happens: the progress a watcher sees.

    ``seq`` orders a check's events from 1; ``at`` is seconds since the check began.
    The generic kinds carry their own fields: a model call its ``step``, ``role`` and, when
    it ends, ``tokens``, ``seconds`` and ``cached``; a retrieval its ``source``, ``query``
    and ``results``; the check's end its ``label``. A milestone is a method's own step
    (``name`` such as ``local.iteration``) with flat ``data``. ``message`` is one line for
    people, made from these fields.
    """

    seq: int = Field(ge=1)
    kind: EventKind
    at: float = Field(ge=0.0)
    message: str
    method: str | None = None
    step: str | None = None
    role: str | None = None
    model: str | None = None
    tokens: int | None = None
    seconds: float | None = None
    cached: bool | None = None
    source: str | None = None
    query: str | None = None
    results: int | None = None
    error: str | None = None
    label: str | None = None
    name: str | None = None
    data: EventData = Field(default_factory=dict)


GroundingStatus = Literal["supported", "contradicted", "unsupported", "no_claim", "unchecked"]
# The statuses of a sentence that states a fact: the denominator of a grounded share.
FACTUAL_STATUSES: tuple[GroundingStatus, ...] = ("supported", "contradicted", "unsupported")


class Reference(_Frozen):
    """A passage an explanation may lean on, under the id the method shows it by.

    ``id`` is what a sentence cites: ``1`` for ``[1]``, ``T3`` for a graph fact ``[T3]``,
    ``S2`` for LoCal's second sub-task. ``kind`` says what it is (``passage``, ``fact``,
    ``subtask``, ``quote``, ``node``).
    """

    id: str
    text: str
    kind: str = "passage"
    title: str = ""


class GroundedSentence(_Frozen):
    """One sentence of an explanation, where it is, what it cites and how it stands.

    ``start`` and ``end`` index the verdict's ``explanation``. ``cites`` are the references
    the sentence names itself; ``found`` those the checker read as bearing on it.
    """

    text: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    status: GroundingStatus
    cites: tuple[str, ...] = ()
    found: tuple[str, ...] = ()


class Grounding(_Frozen):
    """How far a verdict's explanation rests on the evidence it cites (`verity.grounding`).

    ``grounded_share``: supported sentences over sentences with factual content (None when
    there are none). ``consistent_with_label``: whether the explanation argues for the
    label it carries (None when the checker cannot tell). ``flags`` name what a reader
    must know (``contradicts_label``, ``nothing_supports``, ``contradicted_sentence``);
    ``error`` says why the check could not run, the verdict itself being kept.
    """

    mode: Literal["on", "strict"]
    checker: str
    sentences: tuple[GroundedSentence, ...] = ()
    references: tuple[Reference, ...] = ()
    grounded_share: Probability | None = None
    consistent_with_label: bool | None = None
    flags: tuple[str, ...] = ()
    error: str | None = None
    usage: Usage = Usage()


class Verdict(_Frozen):
    """A method's decision about a claim or article, with the evidence and trace behind it."""

    label: Label
    confidence: Probability | None = None
    explanation: str = ""
    evidence: tuple[Evidence, ...] = ()
    usage: Usage = Usage()
    trace: Trace = Trace()
    method: str
    subject: Claim | Article
    # Filled after the method answers, when grounding is on (`verity.grounding`).
    grounding: Grounding | None = None

    @field_validator("evidence", mode="before")
    @classmethod
    def _tuple(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value

    @model_validator(mode="after")
    def _label_fits_subject(self) -> Verdict:
        allowed = (
            CLAIM_LABELS + CHECKWORTHY_LABELS if isinstance(self.subject, Claim) else ARTICLE_LABELS
        )
        if self.label not in allowed:
            kind = "a claim" if isinstance(self.subject, Claim) else "an article"
            raise ValueError(f"{self.label.value} is not a verdict for {kind}")
        return self

    def to_json_dict(self) -> dict[str, Any]:
        """The flat JSON shape the CLI prints with ``--json`` and writes in batch output."""
        subject = self.subject
        head: dict[str, Any]
        if isinstance(subject, Claim):
            head = {"claim": subject.text}
        else:
            head = {"article": {"title": subject.title, "url": subject.url}}
        return {
            **head,
            "method": self.method,
            "label": self.label.value,
            "confidence": self.confidence,
            "explanation": self.explanation,
            "evidence": [
                {
                    "title": ev.title,
                    "source": ev.source,
                    "url": ev.url,
                    "id": ev.id,
                    "score": ev.score,
                    "text": ev.text,
                    **({"published": ev.published.isoformat()} if ev.published else {}),
                    **({"metadata": dict(ev.metadata)} if ev.metadata else {}),
                }
                for ev in self.evidence
            ],
            "usage": self.usage.model_dump(),
            **({"grounding": self.grounding.model_dump(mode="json")} if self.grounding else {}),
            "trace": self.trace.model_dump(mode="json"),
        }
