from __future__ import annotations

import itertools

import pytest

from verity.errors import BadInputError
from verity.nlp.text import chunk_text, split_sentences


def test_split_sentences_basic():
    assert split_sentences("The tower is in Paris. It opened in 1889! Is it tall?") == [
        "The tower is in Paris.",
        "It opened in 1889!",
        "Is it tall?",
    ]


def test_split_sentences_keeps_abbreviations_together():
    assert split_sentences("Dr. Smith went home. He slept.") == [
        "Dr. Smith went home.",
        "He slept.",
    ]


def test_split_sentences_blank_line_ends_sentence_and_whitespace_collapses():
    text = "# Heading without a stop\n\nThe first   line\nwraps here. Second one."
    assert split_sentences(text) == [
        "# Heading without a stop",
        "The first line wraps here.",
        "Second one.",
    ]


@pytest.mark.parametrize("text", ["", "   ", "\n\n\n"])
def test_split_sentences_empty(text):
    assert split_sentences(text) == []


def _words(chunks):
    return [len(c.split()) for c in chunks]


def test_chunk_text_docstring_example():
    assert chunk_text("One two. Three four. Five six.", max_words=4, overlap_sentences=1) == [
        "One two. Three four.",
        "Three four. Five six.",
    ]


def test_chunk_text_without_overlap_partitions_the_sentences():
    sentences = [f"Sentence number {i} has five words." for i in range(10)]
    text = " ".join(sentences)
    chunks = chunk_text(text, max_words=12, overlap_sentences=0)
    # 6 words each, so two sentences a chunk; nothing repeated, nothing lost.
    assert len(chunks) == 5
    assert " ".join(chunks) == text
    assert all(n <= 12 for n in _words(chunks))


def test_chunk_text_overlap_repeats_last_sentence():
    sentences = [f"Fact {i} is here." for i in range(9)]  # 4 words each
    chunks = chunk_text(" ".join(sentences), max_words=12, overlap_sentences=1)
    assert chunks[0] == " ".join(sentences[0:3])
    assert chunks[1] == " ".join(sentences[2:5])
    for previous, current in itertools.pairwise(chunks):
        last = split_sentences(previous)[-1]
        assert current.startswith(last)
    assert all(n <= 12 for n in _words(chunks))
    # every sentence appears somewhere
    assert all(any(s in c for c in chunks) for s in sentences)


def test_chunk_text_drops_overlap_that_would_not_fit():
    text = "One two three four five. Six seven eight nine ten."
    # Carrying the first sentence into the second chunk would make 10 words > 6.
    assert chunk_text(text, max_words=6, overlap_sentences=1) == [
        "One two three four five.",
        "Six seven eight nine ten.",
    ]


def test_chunk_text_cuts_a_sentence_longer_than_the_limit():
    long = " ".join(f"w{i}" for i in range(25)) + "."
    chunks = chunk_text(long, max_words=10, overlap_sentences=0)
    assert _words(chunks) == [10, 10, 5]
    assert " ".join(chunks) == long


def test_chunk_text_short_text_is_one_chunk():
    assert chunk_text("Just one sentence.") == ["Just one sentence."]
    assert chunk_text("") == []


@pytest.mark.parametrize(("max_words", "overlap"), [(0, 1), (-5, 0), (10, -1)])
def test_chunk_text_rejects_bad_arguments(max_words, overlap):
    with pytest.raises(BadInputError):
        chunk_text("Some text.", max_words=max_words, overlap_sentences=overlap)
