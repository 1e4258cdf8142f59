"""The model checker: one call judges each sentence of an explanation against its references.

The explanation's numbered sentences go beside the references, and the answer says, per
sentence, whether what it cites bears it out.

    grounding = await ground(verdict, references, model, mode="on")

The technique is reference-based claim checking as in RefChecker, AlignScore and MiniCheck
(a text's atomic statements judged against a reference, three ways), applied here to a
verdict's own explanation, sentence by sentence, with one more question: does the
explanation argue for the label the verdict carries?

Statuses. ``supported``: a reference the sentence may lean on states what it says.
``contradicted``: such a reference states the opposite. ``unsupported``: it states a
fact that none of them states. ``no_claim``: it states no fact (a transition, a remark on
the evidence's quality, the question restated). ``unchecked``: the checker left it out.
A sentence that cites references (``[1]``) may lean on those only; one that cites none
may lean on any reference, and ``found`` records which ones the checker named.

Flags (never a new label: the verdict is shown as the method gave it, flagged):
``contradicts_label`` when the explanation argues for another verdict,
``contradicted_sentence`` when a sentence is contradicted by what it may lean on, and
``nothing_supports`` when sentences state facts and none of them is supported. In
``strict`` mode a flagged verdict is shown as such wherever it is read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from verity.domain import (
    FACTUAL_STATUSES,
    Article,
    GroundedSentence,
    Grounding,
    Label,
    Reference,
    Usage,
    Verdict,
)
from verity.errors import VerityError
from verity.grounding.cite import cited, keyed, sentences_of
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.step import Delimited, Step, data_block, inert

Mode = Literal["off", "on", "strict"]
MODES: tuple[Mode, ...] = ("off", "on", "strict")

# Sentences of one explanation the checker reads; an explanation past it is checked up to
# there and the rest left unchecked (a long explanation would not fit a small model).
MAX_SENTENCES = 24
# References shown at most: more than any method cites in one explanation.
MAX_REFERENCES = 30
# Output tokens: a sentence's entry is about 20 tokens of JSON.
ANSWER_TOKENS = 40 + 24 * MAX_SENTENCES

# What each label means, in the words the checker is asked about.
_MEANING = {
    Label.SUPPORTED: "the claim is true",
    Label.REFUTED: "the claim is false",
    Label.NOT_ENOUGH_INFO: "the evidence cannot settle the claim",
    Label.CONFLICTING: "the evidence is mixed, some for and some against the claim",
    Label.REAL: "the news article is genuine",
    Label.FAKE: "the news article is fake",
    Label.CHECK_WORTHY: "the sentence holds a claim worth checking",
    Label.NOT_CHECK_WORTHY: "the sentence does not hold a claim worth checking",
}


class SentenceCheck(BaseModel):
    """The checker's word on one numbered sentence."""

    n: int = Field(ge=1, le=MAX_SENTENCES)
    status: Literal["supported", "contradicted", "unsupported", "no_claim"]
    references: list[str] = Field(default_factory=list, max_length=8)


class GroundingAnswer(BaseModel):
    """The checker's answer: every sentence, and whether the whole argues for the label."""

    sentences: list[SentenceCheck] = Field(max_length=MAX_SENTENCES)
    argues_for_label: Literal["yes", "no", "unclear"]


CHECK = Step(
    name="grounding.check",
    instruction=(
        "You audit the explanation a fact-checker wrote for a verdict. You get the claim, "
        "the verdict's meaning, the explanation split into numbered sentences, and the "
        "references the fact-checker had, each with its id. For every sentence, give its "
        "number and a status: 'supported' if a reference it may use states what the "
        "sentence says; 'contradicted' if such a reference states the opposite; "
        "'unsupported' if the sentence states a fact that none of those references "
        "states; 'no_claim' if it states no fact at all (a transition, a remark about the "
        "evidence, the question repeated). A sentence marked with cited ids may use only "
        "those references; a sentence with no cited ids may use any of them. In "
        "'references', list the ids that support or contradict the sentence. Judge only "
        "from the references, never from what you know yourself. Finally, in "
        "'argues_for_label', say 'yes' if the explanation as a whole argues for the "
        "verdict's meaning, 'no' if it argues for a different verdict, and 'unclear' if "
        "it does neither."
    ),
    template=(
        "Claim: {claim}\n\nVerdict: {label} ({meaning})\n\nExplanation, by sentence:\n"
        "{sentences}\n\nReferences:\n{references}"
    ),
    output=GroundingAnswer,
    trusted=("label", "meaning"),
)


def model_name(model: ModelClient) -> str:
    """How a grounding names the model that checked it."""
    identity = model.backend.identity()
    return f"model:{identity.get('model') or identity.get('provider') or 'unknown'}"


async def ground(
    verdict: Verdict,
    references: Sequence[Reference],
    model: ModelClient,
    *,
    mode: Literal["on", "strict"] = "on",
) -> Grounding:
    """The grounding of ``verdict``'s explanation against ``references``.

    Never raises for the model's sake: a failed check (no answer, a spent budget, an
    answer that does not parse) is a grounding with ``error`` and every sentence
    ``unchecked``, beside the verdict as the method gave it.
    """
    text = verdict.explanation
    spans = sentences_of(text)
    sentences = [_sentence(text, start, end) for start, end in spans]
    refs = kept_references(references, sentences)
    checker = model_name(model)
    if not sentences:
        return Grounding(mode=mode, checker=checker, references=tuple(refs))
    log = CallLog()
    try:
        answer = await CHECK.arun(
            model,
            log=log,
            params=GenParams(max_tokens=model.answer_cap(ANSWER_TOKENS)),
            claim=_subject_text(verdict),
            label=verdict.label.value,
            meaning=_MEANING[verdict.label],
            sentences=numbered_sentences(sentences[:MAX_SENTENCES]),
            references=listed_references(refs),
        )
    except VerityError as exc:
        return Grounding(
            mode=mode,
            checker=checker,
            sentences=tuple(sentences),
            references=tuple(refs),
            error=f"{type(exc).__name__}: {exc}"[:300],
            usage=log.usage(),
        )
    found = settle(sentences, refs, answer, mode=mode, checker=checker, usage=log.usage())
    _announce(log, found)
    return found


def _announce(log: CallLog, found: Grounding) -> None:
    """The ``grounding`` milestone: what a watcher of the check sees of the result."""
    factual = [s for s in found.sentences if s.status in FACTUAL_STATUSES]
    supported = sum(s.status == "supported" for s in factual)
    message = f"grounding: {supported} of {len(factual)} factual sentence(s) supported"
    if found.consistent_with_label is False:
        message += "; the explanation argues against the label"
    # A time budget spent just now stops nothing: the grounding is done, keep it.
    with contextlib.suppress(VerityError):
        log.milestone(
            "grounding",
            message,
            supported=supported,
            factual=len(factual),
            consistent=found.consistent_with_label,
            flags=",".join(found.flags),
        )


def settle(
    sentences: Sequence[GroundedSentence],
    references: Sequence[Reference],
    answer: GroundingAnswer,
    *,
    mode: Literal["on", "strict"],
    checker: str,
    usage: Usage,
) -> Grounding:
    """The grounding from the checker's answer: statuses, share, consistency, flags.

    A status the answer gives a sentence stands, except that a sentence that cites ids
    cannot be supported or contradicted by a reference it does not cite: the checker's
    ids are kept only where the sentence may use them, and a supported or contradicted
    status left with none of them becomes ``unsupported``.
    """
    known = keyed(references)
    by_n = {check.n: check for check in answer.sentences}
    out: list[GroundedSentence] = []
    for n, sentence in enumerate(sentences, start=1):
        check = by_n.get(n)
        if check is None:
            out.append(sentence)
            continue
        allowed = set(sentence.cites) if sentence.cites else set(known)
        found = tuple(dict.fromkeys(r.upper() for r in check.references if r.upper() in allowed))
        status = check.status
        if status in ("supported", "contradicted") and not found and references:
            # Nothing it may lean on was named: the statement rests on nothing shown.
            status = "unsupported"
        out.append(sentence.model_copy(update={"status": status, "found": found}))
    factual = [s for s in out if s.status in FACTUAL_STATUSES]
    share = sum(s.status == "supported" for s in factual) / len(factual) if factual else None
    consistent = {"yes": True, "no": False, "unclear": None}[answer.argues_for_label]
    flags: list[str] = []
    if consistent is False:
        flags.append("contradicts_label")
    if any(s.status == "contradicted" for s in out):
        flags.append("contradicted_sentence")
    if factual and share == 0.0:
        flags.append("nothing_supports")
    return Grounding(
        mode=mode,
        checker=checker,
        sentences=tuple(out),
        references=tuple(references),
        grounded_share=share,
        consistent_with_label=consistent,
        flags=tuple(flags),
        usage=usage,
    )


def kept_references(
    references: Sequence[Reference], sentences: Sequence[GroundedSentence]
) -> list[Reference]:
    """At most `MAX_REFERENCES` references: those the sentences cite first, then in order."""
    named = {ref for sentence in sentences for ref in sentence.cites}
    first = [r for r in references if r.id.upper() in named]
    rest = [r for r in references if r.id.upper() not in named]
    kept = (first + rest)[:MAX_REFERENCES]
    # Shown in the method's own order, whichever were kept.
    return [r for r in references if any(r is k for k in kept)]


def _sentence(text: str, start: int, end: int) -> GroundedSentence:
    body = text[start:end]
    # An id the sentence names that no reference has stays in ``cites``: a reader sees it
    # cited something the verdict does not hold, and the checker sees no such reference.
    return GroundedSentence(text=body, start=start, end=end, status="unchecked", cites=cited(body))


def numbered_sentences(sentences: Sequence[GroundedSentence]) -> str:
    """The sentences as the checker reads them: numbered, each in its own block."""
    lines = []
    for n, sentence in enumerate(sentences, start=1):
        cites = ", ".join(sentence.cites) if sentence.cites else "none"
        lines.append(f"{n}. (cites: {cites}) " + data_block("sentence", sentence.text))
    # Each sentence is its own safe block; the numbering around them is this module's.
    return Delimited("\n".join(lines))


def listed_references(references: Sequence[Reference]) -> str:
    """The references as the checker reads them: each id before its own block."""
    if not references:
        return Delimited("(none)")
    return Delimited(
        "\n".join(
            f"[{inert(ref.id)}] "
            + data_block("reference", ref.text, kind=ref.kind, title=ref.title)
            for ref in references
        )
    )


def _subject_text(verdict: Verdict) -> str:
    subject = verdict.subject
    text = getattr(subject, "text", "")
    if isinstance(subject, Article):
        title = getattr(subject, "title", "") or ""
        return (title + "\n" + text[:1_500]).strip()
    return text[:2_000]
