"""What an explanation cites: its sentences, their places, and the references they name.

    spans = sentences_of("Paris is in France [1]. So the claim holds.")
    cited("Paris is in France [1][T2].")          # ('1', 'T2')
    references_of(verdict)                         # [1]..[n]: the verdict's passages

A sentence names a reference with a bracketed id, the way verity's prompts number what
they show: ``[1]`` a passage, ``[T3]`` a graph fact, ``[W2]`` a web passage, ``[S2]`` a
sub-task; ``[1, 3]`` and ``[1][3]`` name two. Ids are matched without regard to case.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from verity.domain import Reference, Verdict
from verity.nlp.text import sentence_spans

# A bracket holding ids and nothing else: "[1]", "[T3]", "[1, 3]", "[W2; W5]".
_BRACKET = re.compile(r"\[\s*([A-Za-z]{0,2}\d{1,3}(?:\s*[,;]\s*[A-Za-z]{0,2}\d{1,3})*)\s*\]")
_ID = re.compile(r"[A-Za-z]{0,2}\d{1,3}")
# A line that is a list item: it opens with a bracketed id, a dash or bullet, or "1." / "2)".
_ITEM = re.compile(r"(?:\[\s*[A-Za-z]{0,2}\d{1,3}\s*\]|[-*\u2022]\s|\d{1,2}[.)]\s)")

# What a reference's text may hold when shown to the checker; a passage past it is cut.
REFERENCE_CHARS = 1_500


def sentences_of(explanation: str) -> list[tuple[int, int]]:
    """The character spans of the explanation's sentences.

    A line break ends a sentence: methods write their explanations as lines (LoCal one per
    sub-task, a tree one per node), and a sentence never runs from one into the next. A
    line that opens with an id or a list mark (``[S2] f1 ... -> true``, ``- point``) is a
    list item and stays one unit, whatever punctuation it holds.
    """
    spans: list[tuple[int, int]] = []
    at = 0
    for line in explanation.split("\n"):
        start = at
        at += len(line) + 1
        body = line.strip()
        if not body:
            continue
        begin = start + len(line) - len(line.lstrip())
        if _ITEM.match(body):
            spans.append((begin, begin + len(body)))
            continue
        spans.extend((start + a, start + b) for a, b in sentence_spans(line))
    return spans


def cited(sentence: str) -> tuple[str, ...]:
    """The reference ids a sentence names, in order, each once, upper-cased."""
    found: list[str] = []
    for bracket in _BRACKET.finditer(sentence):
        for ref in _ID.findall(bracket.group(1)):
            ref = ref.upper()
            if ref not in found:
                found.append(ref)
    return tuple(found)


def passages(verdict: Verdict) -> list[Reference]:
    """The verdict's evidence numbered from 1, as every method's prompts number passages."""
    return [
        Reference(id=str(i), text=_cut(ev.text), kind="passage", title=ev.title or "")
        for i, ev in enumerate(verdict.evidence, start=1)
    ]


def keyed(references: Sequence[Reference]) -> dict[str, Reference]:
    """References by upper-cased id; the first of two with one id wins."""
    out: dict[str, Reference] = {}
    for ref in references:
        out.setdefault(ref.id.upper(), ref)
    return out


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REFERENCE_CHARS else text[: REFERENCE_CHARS - 1] + "…"


def reference(id: str, text: str, kind: str, title: str = "") -> Reference:
    """A reference with its text cut to what the checker is shown."""
    return Reference(id=id, text=_cut(text), kind=kind, title=title)
