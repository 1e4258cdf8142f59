from __future__ import annotations

import dataclasses
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import pytest

from verity.errors import BadInputError, ConfigError
from verity.nlp.ner import DEFAULT_MODEL, EntityRecognizer, EntitySpan

EIFFEL = "The Eiffel Tower is in Paris, France, and was built by Gustave Eiffel in 1889."
AMBIGUOUS = "I met jordan near the river bank in washington last tuesday."


@pytest.fixture(scope="module")
def recognizer() -> EntityRecognizer:
    rec = EntityRecognizer()
    rec.warm_up()
    return rec


@pytest.fixture(scope="module")
def spacy_nlp():
    import spacy

    return spacy.load(DEFAULT_MODEL)


@pytest.mark.integration
def test_finds_eiffel_tower_and_paris(recognizer):
    spans = recognizer.extract(EIFFEL)
    by_text = {s.text: s for s in spans}
    tower = next(s for s in spans if "Eiffel Tower" in s.text)
    assert tower.label in {"FAC", "LOC", "ORG", "GPE"}
    assert by_text["Paris"].label == "GPE"
    assert by_text["Gustave Eiffel"].label == "PERSON"
    for span in spans:
        assert 0.0 < span.confidence <= 1.0
        assert EIFFEL[span.start_char : span.end_char] == span.text


@pytest.mark.integration
def test_spans_equal_plain_spacy_entities(recognizer, spacy_nlp):
    for text in (EIFFEL, AMBIGUOUS, "Apple is looking at buying U.K. startup for $1 billion."):
        doc = spacy_nlp(text)
        expected = [(e.text, e.label_, e.start, e.end, e.start_char, e.end_char) for e in doc.ents]
        got = [
            (s.text, s.label, s.start_token, s.end_token, s.start_char, s.end_char)
            for s in recognizer.extract(text)
        ]
        assert got == expected


@pytest.mark.integration
def test_confidence_is_summed_beam_probability(recognizer, spacy_nlp):
    # Recompute the documented method straight from spaCy's API.
    ner = spacy_nlp.get_pipe("ner")
    doc = spacy_nlp(AMBIGUOUS, disable=["ner"])
    beam = ner.beam_parse([doc], beam_width=16, beam_density=0.0001)[0]
    expected: dict[tuple[int, int, str], float] = defaultdict(float)
    total = 0.0
    for prob, ents in ner.moves.get_beam_parses(beam):
        total += prob
        for start, end, label in ents:
            expected[(start, end, label)] += prob
    assert total == pytest.approx(1.0)
    for span in recognizer.extract(AMBIGUOUS):
        key = (span.start_token, span.end_token, span.label)
        assert span.confidence == pytest.approx(min(1.0, expected[key]), abs=1e-9)


@pytest.mark.integration
def test_clear_entity_scores_high_and_ambiguous_lower(recognizer):
    clear = {s.text: s.confidence for s in recognizer.extract(EIFFEL)}
    assert clear["Paris"] > 0.95
    assert clear["Gustave Eiffel"] > 0.95
    unclear = recognizer.extract(AMBIGUOUS)
    # A lower-case name is a guess: the beam spreads its probability over readings.
    # If the beam ran on a doc that already had entities, every score would be 1.0.
    assert min(s.confidence for s in unclear) < 0.9


@pytest.mark.integration
def test_token_scores_agree_with_spans(recognizer):
    result = recognizer.analyse(EIFFEL)
    assert result.entities == tuple(recognizer.extract(EIFFEL))
    tokens = result.tokens
    assert all(0.0 <= t.confidence <= 1.0 for t in tokens)
    for span in result.entities:
        inside = tokens[span.start_token : span.end_token]
        assert inside[0].iob == "B"
        assert all(t.iob == "I" for t in inside[1:])
        assert {t.label for t in inside} == {span.label}
        # Every parse holding the whole span covers each of its tokens with that label.
        assert min(t.confidence for t in inside) >= span.confidence - 1e-9
    outside = [t for t in tokens if t.iob == "O"]
    assert outside and all(t.label == "" for t in outside)
    assert all(EIFFEL[t.start_char : t.end_char] == t.text for t in tokens)


@pytest.mark.integration
def test_empty_text_and_batches(recognizer):
    assert recognizer.extract("") == []
    results = recognizer.analyse_many([EIFFEL, "", AMBIGUOUS])
    assert [r.entities for r in results] == [
        recognizer.analyse(EIFFEL).entities,
        (),
        recognizer.analyse(AMBIGUOUS).entities,
    ]


@pytest.mark.integration
def test_threads_share_the_model_and_agree(recognizer):
    expected = recognizer.extract(EIFFEL)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: EntityRecognizer().extract(EIFFEL), range(8)))
    assert all(r == expected for r in results)


def test_pipeline_without_transition_ner_scores_one(tmp_path):
    import spacy

    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "ORG", "pattern": "Acme Corp"}])
    nlp.to_disk(tmp_path / "ruler-model")
    spans = EntityRecognizer(str(tmp_path / "ruler-model")).extract("Acme Corp sells anvils.")
    assert [(s.text, s.label, s.confidence) for s in spans] == [("Acme Corp", "ORG", 1.0)]


def test_unknown_model_is_a_config_error():
    with pytest.raises(ConfigError, match="not installed"):
        EntityRecognizer("no_such_spacy_model_xyz").extract("text")


def test_bad_settings_rejected():
    with pytest.raises(ConfigError):
        EntityRecognizer(beam_width=0)
    with pytest.raises(ConfigError):
        EntityRecognizer(beam_density=1.5)


def test_entity_span_is_frozen_and_validated():
    span = EntitySpan("Paris", "GPE", 0, 5, 0, 1, 0.9)
    with pytest.raises(dataclasses.FrozenInstanceError):
        span.label = "LOC"  # type: ignore[misc]
    with pytest.raises(BadInputError):
        EntitySpan("Paris", "GPE", 0, 5, 0, 1, 1.5)
    with pytest.raises(BadInputError):
        EntitySpan("Paris", "GPE", 5, 0, 0, 1, 0.5)


def test_to_dict():
    assert EntityRecognizer().to_dict() == {
        "type": "spacy-ner",
        "model": DEFAULT_MODEL,
        "beam_width": 16,
        "beam_density": 0.0001,
    }
