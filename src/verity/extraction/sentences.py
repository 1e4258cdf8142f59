"""A document's sentences with their places, and the excerpt each is read in.

    units = split_document(doc.text)              # [Sentence(index=0, start=0, end=42, ...)]
    excerpt(units, 7, before=5, after=5)          # the text around sentence 7, with "[...]"

A line break ends a sentence: headings, list items, speaker turns and table rows stand
on their own lines, and no sentence runs from one into the next. Within a line, spaCy's
rule-based sentencizer finds the boundaries (`verity.nlp.text`). A heading line (Markdown
``#``) is kept, so that the excerpts can carry the headings above a sentence, the way the
extractor's paper shows a sentence under the headers it sits in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from verity.nlp.text import sentence_spans

_HEADING = re.compile(r"#{1,6}\s")
# Characters of each other sentence (and heading) an excerpt shows: the sentence being
# read is shown whole, its neighbours are context, and one run-on neighbour must not
# push the prompt past a model's window.
NEIGHBOUR_CHARS = 600
# A line this long is no sentence anyone wrote (a minified blob, a data dump): it is cut
# into pieces of this size before the sentencizer sees it.
_MAX_LINE_CHARS = 20_000


@dataclass(frozen=True)
class Sentence:
    """One sentence: its place in the text and whether it is a heading."""

    index: int
    start: int
    end: int
    text: str
    heading: bool = False


def split_document(text: str) -> list[Sentence]:
    """Every sentence of ``text`` with its character span; ``text[start:end] == sentence``."""
    out: list[Sentence] = []
    at = 0
    for line in text.split("\n"):
        line_start = at
        at += len(line) + 1
        if not line.strip():
            continue
        for piece_at in range(0, len(line), _MAX_LINE_CHARS):
            piece = line[piece_at : piece_at + _MAX_LINE_CHARS]
            base = line_start + piece_at
            heading = bool(_HEADING.match(piece.lstrip())) and piece_at == 0
            spans = [(0, len(piece))] if heading else sentence_spans(piece)
            for a, b in spans:
                raw = piece[a:b]
                lead = len(raw) - len(raw.lstrip())
                body = raw.strip()
                if body:
                    begin = base + a + lead
                    out.append(Sentence(len(out), begin, begin + len(body), body, heading))
    return out


def headings_above(sentences: Sequence[Sentence], index: int) -> list[str]:
    """The headings that stand over sentence ``index``: the nearest of each level above it."""
    found: dict[int, str] = {}
    for sentence in sentences[:index]:
        if sentence.heading:
            level = len(sentence.text) - len(sentence.text.lstrip("#"))
            found = {k: v for k, v in found.items() if k < level}
            found[level] = sentence.text
    return [found[k] for k in sorted(found)]


def excerpt(sentences: Sequence[Sentence], index: int, *, before: int, after: int) -> str:
    """Sentence ``index`` with ``before`` sentences ahead of it and ``after`` behind.

    ``[...]`` marks where sentences of the document are left out (at either end), so the
    reader knows it is not seeing the whole text. Headings above the window are kept.
    Every part but sentence ``index`` is cut to `NEIGHBOUR_CHARS`.
    """
    first = max(0, index - before)
    last = min(len(sentences), index + after + 1)
    heads = [_cut(h) for h in headings_above(sentences, first) if h]
    parts: list[str] = [*heads]
    if first > 0:
        parts.append("[...]")
    parts.extend(s.text if s.index == index else _cut(s.text) for s in sentences[first:last])
    if last < len(sentences):
        parts.append("[...]")
    return "\n".join(parts)


def _cut(text: str) -> str:
    return text if len(text) <= NEIGHBOUR_CHARS else text[: NEIGHBOUR_CHARS - 1] + "…"
