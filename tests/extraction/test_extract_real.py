"""The extractor with the embedded model on a SummEval article: each claim placed on its text.

The model is small (SmolLM2-135M): this proves the pipeline runs end to end on real
text (every sentence read, its vote recorded) and that any claim it gives is placed on
text that bears it out, not that the claims are good; on these sentences it mostly finds
none. Spans on real text are tested claim by claim in test_spans_real.py. The ``single``
variant (one answer per step) keeps the run short.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import numpy as np
import pytest

from verity.api import load_extractor
from verity.bench.datasets import data_dir
from verity.errors import DatasetError
from verity.extraction import Document
from verity.extraction.sentences import split_document
from verity.nlp.embed import default_encoder

pytestmark = pytest.mark.integration

_WORD = re.compile(r"[A-Za-z0-9]{3,}")
# A claim and the sentence it came from share at least one content word, or the encoder
# finds them at least this near (a claim that merely rewords its sentence).
NEAR = 0.5


def first_article(sentences: int) -> str:
    try:
        path = data_dir() / "SummEval" / "summeval.jsonl"
    except DatasetError as exc:
        pytest.skip(str(exc))
    article = json.loads(Path(path).read_text(encoding="utf-8").splitlines()[0])["article"]
    units = split_document(article)
    return article[: units[sentences - 1].end]


def test_every_claim_points_at_text_that_bears_it_out() -> None:
    text = first_article(sentences=6)
    doc = Document(text=text, title="Paul Merson and Andros Townsend")
    found = asyncio.run(load_extractor(variant="single").extract(doc))
    assert len(found.sentences) == 6
    assert all(n.outcome != "failed" for n in found.sentences), found.sentences
    assert found.usage.llm_calls >= 6  # one selection answer per sentence at least
    assert all(
        n.selection.endswith("of 1 answers found a verifiable fact") for n in found.sentences
    )
    encoder = default_encoder()
    for claim in found.claims:
        for span in claim.spans:
            assert 0 <= span.start < span.end <= len(text)
        said = " ".join(text[s.start : s.end] for s in claim.spans)
        shared = {w.lower() for w in _WORD.findall(claim.text)} & {
            w.lower() for w in _WORD.findall(said)
        }
        vectors = encoder.encode([claim.text, said])
        near = float(np.dot(vectors[0], vectors[1]))
        assert shared or near >= NEAR, (claim.text, said, near)
        note = found.sentences[claim.sentence_index]
        assert claim.id in note.claim_ids and note.outcome == "claims"
