"""One claim and one evidence passage through a checker, as one cited sentence and its reference.

    grounding = await check_pair("The Cretaceous ended.", "The Cretaceous ended with ...", model)
    pair_label(grounding)                   # Label.SUPPORTED

How the checkers are measured (docs/grounding.md): the claim stands for an explanation of
one sentence that cites ``[1]``, the evidence passage is reference 1, and the sentence's
status is read as a label: supported -> SUPPORTED, contradicted -> REFUTED, anything else
(unsupported, no_claim, unchecked) -> NOT_ENOUGH_INFO.

The model checker is asked through its own step (`verity.grounding.check.CHECK`), with one
change: the verdict line says that no verdict is given. A verdict's label would either
tell the checker the gold answer or lean it towards one; with none, the sentence's status
is the checker's reading of the pair alone. Its ``argues_for_label`` answer is then
meaningless and is not used.
"""

from __future__ import annotations

from verity.domain import GroundedSentence, Grounding, Label, Reference
from verity.errors import VerityError
from verity.grounding.check import (
    ANSWER_TOKENS,
    CHECK,
    listed_references,
    model_name,
    numbered_sentences,
    settle,
)
from verity.grounding.cite import reference
from verity.grounding.nli import Judge, nli_sentences
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient

# The claim shown as the one sentence: as much of a claim as the checker's prompt shows
# (`verity.grounding.check` cuts a claim subject at 2,000 characters).
CLAIM_CHARS = 2_000
# What the verdict line says in place of a label (see the module docstring).
NO_LABEL = "none"
NO_MEANING = "no verdict is given here; judge the sentence against the reference only"

# A sentence's status as a label of the pair.
LABEL_OF = {
    "supported": Label.SUPPORTED,
    "contradicted": Label.REFUTED,
    "unsupported": Label.NOT_ENOUGH_INFO,
    "no_claim": Label.NOT_ENOUGH_INFO,
    "unchecked": Label.NOT_ENOUGH_INFO,
}


def pair_sentence(claim: str) -> GroundedSentence:
    """The claim as an explanation's one sentence, citing reference 1."""
    text = claim[:CLAIM_CHARS]
    return GroundedSentence(text=text, start=0, end=len(text), status="unchecked", cites=("1",))


def pair_reference(evidence: str, title: str = "") -> Reference:
    """The evidence passage as reference 1, cut to what the checker is shown."""
    return reference("1", evidence, "passage", title)


def pair_label(grounding: Grounding) -> Label:
    """The pair's predicted label: its one sentence's status, read as a label."""
    if not grounding.sentences:
        return Label.NOT_ENOUGH_INFO
    return LABEL_OF[grounding.sentences[0].status]


async def check_pair(
    claim: str, evidence: str, model: ModelClient, *, title: str = ""
) -> Grounding:
    """The model checker's grounding of ``claim`` as a sentence citing ``evidence`` as [1].

    Never raises for the model's sake: a failed call is a grounding with ``error`` and the
    sentence ``unchecked``, as `verity.grounding.check.ground` gives it.
    """
    sentence = pair_sentence(claim)
    ref = pair_reference(evidence, title)
    checker = model_name(model)
    log = CallLog()
    try:
        answer = await CHECK.arun(
            model,
            log=log,
            params=GenParams(max_tokens=model.answer_cap(ANSWER_TOKENS)),
            claim=sentence.text,
            label=NO_LABEL,
            meaning=NO_MEANING,
            # Rendered by the checker's own helpers, so a pair reads as a verdict would.
            sentences=numbered_sentences([sentence]),
            references=listed_references([ref]),
        )
    except VerityError as exc:
        return Grounding(
            mode="on",
            checker=checker,
            sentences=(sentence,),
            references=(ref,),
            error=f"{type(exc).__name__}: {exc}"[:300],
            usage=log.usage(),
        )
    found = settle([sentence], [ref], answer, mode="on", checker=checker, usage=log.usage())
    # No verdict was asked about: what the answer says of one is dropped.
    flags = tuple(flag for flag in found.flags if flag != "contradicts_label")
    return found.model_copy(update={"consistent_with_label": None, "flags": flags})


async def nli_pair(
    claim: str, evidence: str, judge: Judge, *, checker: str, title: str = ""
) -> Grounding:
    """The NLI checker's grounding of the same pair (`verity.grounding.nli`)."""
    return await nli_sentences(
        [pair_sentence(claim)], [pair_reference(evidence, title)], judge, checker=checker
    )
