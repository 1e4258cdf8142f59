"""Sentences and sentence-aligned chunks of plain text.

Sentence boundaries come from spaCy's rule-based ``sentencizer`` on a blank English
pipeline: no statistical model, so splitting a long document takes milliseconds. The
pipeline is built on first use and shared by the whole process.

    split_sentences("The tower is in Paris. It opened in 1889.")
    # ['The tower is in Paris.', 'It opened in 1889.']
    chunk_text(long_document, max_words=120, overlap_sentences=1)
"""

from __future__ import annotations

import re
import threading
from typing import Any

from verity.errors import BadInputError

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SPACE = re.compile(r"\s+")
# The tokenizer keeps every character in memory a few times over; a paragraph this long
# is not prose, and spaCy's own limit (1,000,000) would reject long documents outright.
_MAX_PARAGRAPH_CHARS = 2_000_000

_lock = threading.Lock()
_pipeline: Any = None


def _sentencizer() -> Any:
    """The shared blank English pipeline with a sentencizer, built once."""
    global _pipeline
    if _pipeline is None:
        with _lock:
            if _pipeline is None:
                import spacy

                nlp = spacy.blank("en")
                nlp.add_pipe("sentencizer")
                nlp.max_length = _MAX_PARAGRAPH_CHARS
                _pipeline = nlp
    return _pipeline


def split_sentences(text: str) -> list[str]:
    """Split text into sentences, whitespace inside each collapsed to single spaces.

    A blank line always ends a sentence (headings and list items stay apart); empty
    input gives an empty list.

        split_sentences("Dr. Smith went home. He slept.")
        # ['Dr. Smith went home.', 'He slept.']
    """
    paragraphs = [p for p in _PARAGRAPH_BREAK.split(text) if p.strip()]
    if not paragraphs:
        return []
    pieces: list[str] = []
    for paragraph in paragraphs:
        # Slicing keeps any single paragraph under the tokenizer's limit.
        for start in range(0, len(paragraph), _MAX_PARAGRAPH_CHARS):
            pieces.append(paragraph[start : start + _MAX_PARAGRAPH_CHARS])
    sentences: list[str] = []
    for doc in _sentencizer().pipe(pieces):
        for sent in doc.sents:
            clean = _SPACE.sub(" ", sent.text).strip()
            if clean:
                sentences.append(clean)
    return sentences


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of ``text``, in order.

    The same sentences as `split_sentences`, but as places in ``text`` itself (leading
    and trailing whitespace left out), so that a reader can be shown each one where it is.

        sentence_spans("It rains. It pours.")  # [(0, 9), (10, 19)]
    """
    spans: list[tuple[int, int]] = []
    offset = 0
    for paragraph in _PARAGRAPH_BREAK.split(text):
        start_of = text.index(paragraph, offset) if paragraph else offset
        offset = start_of + len(paragraph)
        if not paragraph.strip():
            continue
        for piece_at in range(0, len(paragraph), _MAX_PARAGRAPH_CHARS):
            piece = paragraph[piece_at : piece_at + _MAX_PARAGRAPH_CHARS]
            base = start_of + piece_at
            for sent in _sentencizer()(piece).sents:
                raw = sent.text
                stripped = raw.strip()
                if stripped:
                    lead = len(raw) - len(raw.lstrip())
                    begin = base + sent.start_char + lead
                    spans.append((begin, begin + len(stripped)))
    return spans


def _word_count(sentence: str) -> int:
    return len(sentence.split())


def _split_long(sentence: str, max_words: int) -> list[str]:
    """Cut a sentence longer than ``max_words`` into consecutive word windows."""
    words = sentence.split()
    return [" ".join(words[i : i + max_words]) for i in range(0, len(words), max_words)]


def chunk_text(text: str, max_words: int = 120, overlap_sentences: int = 1) -> list[str]:
    """Group consecutive sentences into chunks of at most ``max_words`` words.

    Each chunk after the first starts with the last ``overlap_sentences`` sentences of the
    previous one, so a fact split across a boundary is whole in one chunk; overlap is
    dropped where it would push a chunk over the limit. A single sentence longer than
    ``max_words`` is cut into word windows, the only case where a chunk does not end at
    a sentence boundary.

        chunk_text("One two. Three four. Five six.", max_words=4, overlap_sentences=1)
        # ['One two. Three four.', 'Three four. Five six.']
    """
    if max_words < 1:
        raise BadInputError(f"max_words must be at least 1, got {max_words}")
    if overlap_sentences < 0:
        raise BadInputError(f"overlap_sentences must be 0 or more, got {overlap_sentences}")

    units: list[str] = []
    for sentence in split_sentences(text):
        if _word_count(sentence) > max_words:
            units.extend(_split_long(sentence, max_words))
        else:
            units.append(sentence)

    chunks: list[str] = []
    current: list[str] = []
    current_words = 0
    for unit in units:
        words = _word_count(unit)
        if current and current_words + words > max_words:
            # `current` always ends with a sentence no earlier chunk holds.
            chunks.append(" ".join(current))
            carried = current[-overlap_sentences:] if overlap_sentences else []
            # Drop carried sentences from the front until the next sentence fits.
            while carried and sum(map(_word_count, carried)) + words > max_words:
                carried = carried[1:]
            current = list(carried)
            current_words = sum(map(_word_count, current))
        current.append(unit)
        current_words += words
    if current:
        chunks.append(" ".join(current))
    return chunks
