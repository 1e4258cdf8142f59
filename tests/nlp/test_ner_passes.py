"""The recognizer's shortened passes give what spaCy's full pipeline gives, bit for bit.

`EntityRecognizer.analyse_many` skips the pipes whose output the NER never reads and runs
the greedy pass over a batch at once. Both are checked here against the plain way, on the
sentences of real articles: every pipe before the NER, then one greedy call per doc.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from verity.bench.datasets import load_dataset
from verity.nlp.ner import DEFAULT_MODEL, UNSEEN_BY_NER, EntityRecognizer, _pipeline, _result
from verity.nlp.text import split_sentences

DATA = Path(os.environ.get("VERITY_DATA_DIR") or "../shared/datasets").resolve()

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}"),
]


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    found: list[str] = []
    for name, count in (("politifact", 6), ("gossipcop", 12)):
        for example in list(load_dataset(name, data_dir=DATA).examples)[:count]:
            found += split_sentences(example.subject.text)
    return found


def plain(texts: list[str], disable: list[str]) -> list[tuple[object, ...]]:
    """Entities and token scores the long way: each doc through the greedy NER alone."""
    nlp, _ = _pipeline(DEFAULT_MODEL)
    ner = nlp.get_pipe("ner")
    docs = list(nlp.pipe(texts, disable=disable))
    beams = ner.beam_parse(docs, beam_width=16, beam_density=0.0001)
    parses = [ner.moves.get_beam_parses(beam) for beam in beams]
    for doc in docs:
        ner(doc)
    return [as_tuples(_result(doc, p)) for doc, p in zip(docs, parses, strict=True)]


def as_tuples(result: object) -> tuple[object, ...]:
    return tuple(dataclasses.astuple(result))  # type: ignore[call-overload]


def test_same_entities_and_scores_as_the_full_pipeline(sentences):
    assert len(sentences) > 150
    fast = [as_tuples(r) for r in EntityRecognizer().analyse_many(sentences)]
    assert fast == plain(sentences, ["ner"])


def test_the_parser_is_not_skipped_because_the_ner_reads_its_sentences(sentences):
    # The negative control: a pipe the NER does depend on changes the answer when skipped.
    assert "parser" not in UNSEEN_BY_NER
    full = plain(sentences, ["ner"])
    assert plain(sentences, ["ner", "parser"]) != full
