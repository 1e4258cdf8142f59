"""An NLI checker: each sentence of an explanation judged against each reference, pairwise.

    judge = ...   # (premise, hypothesis) -> "entailment" | "contradiction" | "neutral"
    grounding = await nli_ground(verdict, references, judge, checker="nli:/models/deberta")

The alternative to the model checker (`verity.grounding.check`): no language model, one
pair classification per sentence and reference it may lean on, with the reference as the
premise and the sentence as the hypothesis (the order NLI models are trained in).
``entailment`` by any of them makes the sentence ``supported``; else ``contradiction`` by
any makes it ``contradicted``; else it is ``unsupported``. Supported wins over
contradicted because one passage stating the sentence is enough to ground it, as
reference-based checkers take the best-scoring chunk of a long reference (AlignScore,
MiniCheck). An NLI model has no class for a sentence that states no fact, so no sentence
is ``no_claim``, and it cannot read what a whole explanation argues, so
``consistent_with_label`` stays None.

The judge is passed in, so this module loads no model: `verity.cli.grounding` builds one
from a local checkpoint folder (``--checker nli:DIR``) with the ``nli`` baseline's loader.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Literal

from verity.domain import GroundedSentence, Grounding, Reference, Usage, Verdict
from verity.grounding.check import MAX_SENTENCES, GroundingAnswer, kept_references, settle
from verity.grounding.cite import cited as cited_ids
from verity.grounding.cite import keyed, sentences_of

NliClass = Literal["entailment", "contradiction", "neutral"]
# (premise, hypothesis) -> the NLI class of the pair.
Judge = Callable[[str, str], NliClass]

# The status each NLI class gives a sentence when it is the best a reference does.
STATUS_OF: dict[NliClass, Literal["supported", "contradicted", "unsupported"]] = {
    "entailment": "supported",
    "contradiction": "contradicted",
    "neutral": "unsupported",
}
# The ids an answer may list per sentence (`verity.grounding.check.SentenceCheck`).
_MAX_FOUND = 8


async def nli_ground(
    verdict: Verdict,
    references: Sequence[Reference],
    judge: Judge,
    *,
    checker: str,
    mode: Literal["on", "strict"] = "on",
) -> Grounding:
    """The grounding of ``verdict``'s explanation, every sentence judged by ``judge``."""
    text = verdict.explanation
    sentences = [
        GroundedSentence(
            text=text[start:end],
            start=start,
            end=end,
            status="unchecked",
            cites=cited_ids(text[start:end]),
        )
        for start, end in sentences_of(text)
    ]
    return await nli_sentences(sentences, references, judge, checker=checker, mode=mode)


async def nli_sentences(
    sentences: Sequence[GroundedSentence],
    references: Sequence[Reference],
    judge: Judge,
    *,
    checker: str,
    mode: Literal["on", "strict"] = "on",
) -> Grounding:
    """The grounding of these sentences: each against the references it may lean on.

    The sentences past `MAX_SENTENCES` and the references past the checker's cap (those
    cited kept first) are left out, as the model checker leaves them out. Classification
    runs in a worker thread.
    """
    refs = kept_references(references, sentences)
    shown = list(sentences)[:MAX_SENTENCES]
    checks = await asyncio.to_thread(_judge_all, shown, refs, judge)
    answer = GroundingAnswer.model_validate({"sentences": checks, "argues_for_label": "unclear"})
    return settle(sentences, refs, answer, mode=mode, checker=checker, usage=Usage())


def _judge_all(
    sentences: Sequence[GroundedSentence], references: Sequence[Reference], judge: Judge
) -> list[dict[str, object]]:
    known = keyed(references)
    checks: list[dict[str, object]] = []
    for n, sentence in enumerate(sentences, start=1):
        # A sentence that cites ids leans on those only; one that cites none, on any.
        ids = [i for i in sentence.cites if i in known] if sentence.cites else list(known)
        found: dict[NliClass, list[str]] = {"entailment": [], "contradiction": [], "neutral": []}
        for ref_id in ids:
            found[judge(known[ref_id].text, sentence.text)].append(ref_id)
        best: NliClass = next((c for c in ("entailment", "contradiction") if found[c]), "neutral")
        # Only the ids that bear on the sentence are named, as the model checker names them.
        named = [] if best == "neutral" else found[best][:_MAX_FOUND]
        checks.append({"n": n, "status": STATUS_OF[best], "references": named})
    return checks
