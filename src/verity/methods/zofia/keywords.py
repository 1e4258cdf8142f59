"""ZoFia stage 1 (section 3): the article's entity keywords, chosen for saliency and diversity.

    selector = KeywordSelector()
    selection = selector.select(article_text)
    selection.keywords       # the chosen entity texts, in the order they were picked
    selection.to_trace()     # every unit's scores and every SC-MMR pick, for the report

Four steps, each a pure function here so it can be checked by hand:

1. Entity units (eq. 2: `merge_units`, `group_units`, `threshold_units`). spaCy's NER runs
   per sentence; consecutive entity tokens (B or I, adjacent, whatever their labels) form one
   unit, whose confidence is the mean of its tokens' confidences. Occurrences with the same
   case-folded text are one unit: it keeps the first occurrence's text, and its confidence
   is the mean over all tokens of all its occurrences. Units without a letter ("2016",
   "$5") are dropped: a bare number makes a poor search query. A dynamic threshold starts at
   ``lambda_init`` and falls by ``delta`` until ``n_min`` units pass or it reaches 0, where
   every unit passes.
2. Hierarchical saliency (eq. 3: `hierarchical_saliency`): HS(u) = cos(e_u, e_ctx) *
   cos(e_ctx, e_doc), the context being the unit's sentence with its neighbours
   (`local_context`) and the document the whole article. A unit seen in several sentences
   is scored, and reported, at its most salient occurrence.
3. SC-MMR (eq. 4a, 4b, 5: `sc_mmr`): maximal marginal relevance whose relevance weight
   lambda_k anneals with the pick index k, with a stop rule that ends the selection when the
   next best score is not above ``gamma`` times the last accepted one.
4. Sense disambiguation (eq. 7: `disambiguate`): of several descriptions of a mention (e.g.
   the first sentences of Wikipedia summaries), the one that, put in place of the mention,
   changes the meaning of its context least.

Every text is embedded by one `Encoder` (unit-length vectors). The document vector is the
encoder's view of the whole article, which for all-MiniLM-L6-v2 is its first 256 word pieces:
a long article is judged by its opening.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from verity.errors import BadInputError, ConfigError
from verity.nlp.embed import Encoder, FloatArray, default_encoder
from verity.nlp.ner import EntityRecognizer, TokenScore
from verity.nlp.text import split_sentences

# Why a selection ended: the article had no entity unit; the gamma rule rejected the next
# pick; the next pick's score was not positive; max_keywords were chosen; no unit was left.
StopReason = Literal["no entities", "gamma", "non-positive", "max keywords", "no candidates"]

_ENTITY_TAGS = ("B", "I")
_LETTER = re.compile(r"[^\W\d_]")  # a letter in any script


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class KeywordParams:
    """The settings of stage 1, the paper's values by default; bad values raise `ConfigError`.

    Saved beside every trace, so a selection can be rerun exactly:

        KeywordParams(max_keywords=3).to_dict()["gamma"]   # 0.5
    """

    lambda_init: float = 0.8  # first NER confidence threshold
    delta: float = 0.1  # how far the threshold falls per step
    n_min: int = 3  # how many units the threshold must let through
    lambda_min: float = 0.5  # eq. 5: floor of the relevance weight
    lambda_max: float = 0.9  # eq. 5: ceiling of the relevance weight
    alpha: float = 0.3  # eq. 5: annealing rate
    beta: float = 2.5  # eq. 5: annealing offset
    gamma: float = 0.5  # stop rule: the next score must exceed gamma * the last one
    max_keywords: int = 5

    def __post_init__(self) -> None:
        for name in ("lambda_init", "delta", "lambda_min", "lambda_max", "alpha", "beta", "gamma"):
            value = getattr(self, name)
            if not _is_number(value) or not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, got {value!r}")
        for name in ("n_min", "max_keywords"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a whole number of at least 1, got {value!r}")
        if not 0.0 <= self.lambda_init <= 1.0:
            raise ConfigError(f"lambda_init must be within [0, 1], got {self.lambda_init}")
        if not 0.0 < self.delta <= 1.0:
            raise ConfigError(f"delta must be within (0, 1], got {self.delta}")
        if not 0.0 <= self.lambda_min <= self.lambda_max <= 1.0:
            raise ConfigError(
                "need 0 <= lambda_min <= lambda_max <= 1, got "
                f"lambda_min={self.lambda_min}, lambda_max={self.lambda_max}"
            )
        if self.alpha < 0.0:
            raise ConfigError(f"alpha must be 0 or more, got {self.alpha}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ConfigError(f"gamma must be within [0, 1], got {self.gamma}")

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dict."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class EntityUnit:
    """An entity unit in one sentence or, from `group_units`, pooled over its occurrences.

    ``tokens`` counts the tokens whose confidences ``confidence`` averages, so that units can
    be pooled into a mean over all their tokens.

        EntityUnit("New York", 0.9, sentence=2, tokens=2)
    """

    text: str
    confidence: float
    sentence: int
    tokens: int = 1

    def __post_init__(self) -> None:
        if not self.text:
            raise BadInputError("an entity unit needs text")
        if not 0.0 <= self.confidence <= 1.0:
            raise BadInputError(f"confidence must be within [0, 1], got {self.confidence}")
        if self.sentence < 0 or self.tokens < 1:
            raise BadInputError(f"bad sentence index or token count: {self!r}")


@dataclass(frozen=True, slots=True)
class ScoredUnit:
    """A unit that passed the threshold, scored at its most salient occurrence (eq. 3).

    ``sentence`` and ``context`` are those of that occurrence; ``hierarchical`` is
    ``local * global_``.

        ScoredUnit("Paris", 0.99, 0, "The tower is in Paris.", 0.6, 0.8, 0.48)
    """

    text: str
    confidence: float
    sentence: int
    context: str
    local: float
    global_: float
    hierarchical: float

    def to_dict(self) -> dict[str, Any]:
        """The scores as a plain dict, ``global_`` under the key ``"global"``."""
        return {
            "text": self.text,
            "confidence": self.confidence,
            "local": self.local,
            "global": self.global_,
            "hierarchical": self.hierarchical,
            "sentence": self.sentence,
        }


@dataclass(frozen=True, slots=True)
class MMRPick:
    """The k-th accepted keyword with the weight and SC-MMR score it was chosen with.

    ``k`` starts at 1:

        MMRPick(1, "Paris", 0.789, 0.41)
    """

    k: int
    text: str
    lambda_k: float
    mmr: float

    def to_dict(self) -> dict[str, Any]:
        """The pick as a plain dict, the text under the key ``"unit"``."""
        return {"k": self.k, "unit": self.text, "lambda_k": self.lambda_k, "mmr": self.mmr}


@dataclass(frozen=True, slots=True)
class KeywordSelection:
    """The outcome of stage 1: the scored units, the picks and why picking stopped.

    ``rejected_mmr`` is the score of the candidate the stop rule turned down ("gamma" or
    "non-positive"), else None.

        selection.keywords            # ['The European Central Bank']
        selection.to_trace()["stop"]  # 'gamma'
    """

    params: KeywordParams
    threshold: float
    units: tuple[ScoredUnit, ...]
    picks: tuple[MMRPick, ...]
    stop: StopReason
    rejected_mmr: float | None

    @property
    def keywords(self) -> list[str]:
        """The chosen unit texts, in the order they were picked."""
        return [pick.text for pick in self.picks]

    def to_trace(self) -> dict[str, Any]:
        """Everything needed to recompute the selection, as plain data."""
        return {
            "params": self.params.to_dict(),
            "threshold": self.threshold,
            "units": [unit.to_dict() for unit in self.units],
            "iterations": [pick.to_dict() for pick in self.picks],
            "stop": self.stop,
            "rejected_mmr": self.rejected_mmr,
        }


def merge_units(
    sentence_tokens: Sequence[Sequence[TokenScore]], sentences: Sequence[str]
) -> list[EntityUnit]:
    """The entity units of each sentence, one per occurrence, in text order (eq. 2).

    Adjacent entity tokens join one unit even across labels; its text is the sentence from
    the first token's start to the last token's end, its confidence their mean. Units
    without a letter are dropped.

        merge_units([analysis.tokens], ["Barack Obama visited Paris in 2016."])
        # [EntityUnit('Barack Obama', ..., 0, 2), EntityUnit('Paris', ..., 0, 1)]
    """
    if len(sentence_tokens) != len(sentences):
        raise BadInputError(f"{len(sentence_tokens)} token lists for {len(sentences)} sentences")
    units: list[EntityUnit] = []
    for i, (tokens, sentence) in enumerate(zip(sentence_tokens, sentences, strict=True)):
        runs: list[list[TokenScore]] = []
        previous: TokenScore | None = None
        for token in tokens:
            if token.iob not in _ENTITY_TAGS:
                previous = None
                continue
            if previous is not None and token.index == previous.index + 1:
                runs[-1].append(token)
            else:
                runs.append([token])
            previous = token
        for run in runs:
            text = sentence[run[0].start_char : run[-1].end_char]
            if not _LETTER.search(text):
                continue  # "2016", "$5": a bare number makes a poor query
            confidence = sum(t.confidence for t in run) / len(run)
            units.append(EntityUnit(text, min(1.0, confidence), i, len(run)))
    return units


def group_units(units: Sequence[EntityUnit]) -> list[EntityUnit]:
    """One unit per case-folded text, in order of first occurrence.

    The unit keeps its first occurrence's text and sentence; its confidence is the mean over
    all tokens of all occurrences.

        group_units([EntityUnit("NASA", 0.9, 0), EntityUnit("Nasa", 0.6, 3)])
        # [EntityUnit('NASA', 0.75, 0, 2)]
    """
    first: dict[str, EntityUnit] = {}
    total: dict[str, float] = {}
    count: dict[str, int] = {}
    for unit in units:
        key = unit.text.casefold()
        first.setdefault(key, unit)
        total[key] = total.get(key, 0.0) + unit.confidence * unit.tokens
        count[key] = count.get(key, 0) + unit.tokens
    return [
        # min(): the weighted sum can round a mean of ones to 1.0000000000000002.
        EntityUnit(unit.text, min(1.0, total[key] / count[key]), unit.sentence, count[key])
        for key, unit in first.items()
    ]


def threshold_units(
    units: Sequence[EntityUnit], params: KeywordParams
) -> tuple[list[EntityUnit], float]:
    """The units whose confidence reaches the dynamic threshold, and that threshold.

    The threshold starts at ``lambda_init`` and falls by ``delta`` while fewer than ``n_min``
    units reach it, down to 0 at the lowest (where every unit passes).

        threshold_units(units, KeywordParams())   # ([...], 0.7)
    """
    threshold = params.lambda_init
    while True:
        kept = [unit for unit in units if unit.confidence >= threshold]
        if len(kept) >= params.n_min or threshold <= 0.0:
            return kept, threshold
        # Rounded so that 0.8 - 8 * 0.1 is 0.0 and not 1e-16, which would shut out a unit
        # scored 0; never below 0, where everything has already passed.
        threshold = max(0.0, round(threshold - params.delta, 10))


def annealed_lambda(k: int, params: KeywordParams) -> float:
    """The relevance weight of the k-th pick (eq. 5), k = 1 for the first.

    It falls from lambda_max as k grows but never below lambda_min:

        annealed_lambda(1, KeywordParams())   # 0.9 - exp(-2.2) = 0.7892
    """
    if k < 1:
        raise BadInputError(f"the pick index k starts at 1, got {k}")
    # ZoFia eq. 5
    return max(params.lambda_min, params.lambda_max - math.exp(params.alpha * k - params.beta))


def hierarchical_saliency(
    unit_vec: npt.ArrayLike, context_vec: npt.ArrayLike, doc_vec: npt.ArrayLike
) -> tuple[float, float, float]:
    """Local, global and hierarchical saliency of a unit (eq. 3).

    Any vectors work; each cosine normalises them first:

        hierarchical_saliency([1, 0], [1, 1], [0, 1])   # (0.7071, 0.7071, 0.5)
    """
    local = Encoder.cosine(unit_vec, context_vec)
    global_ = Encoder.cosine(context_vec, doc_vec)
    # ZoFia eq. 3: relevant to its context, in a context relevant to the article.
    return local, global_, local * global_


def sc_mmr(
    saliency: npt.ArrayLike, similarity: npt.ArrayLike, params: KeywordParams
) -> tuple[list[tuple[int, float, float]], StopReason, float | None]:
    """Pick units by saliency-constrained MMR (eq. 4a, 4b) with the stop rule.

    Returns ``(index, lambda_k, mmr)`` for each accepted pick, why picking stopped, and the
    score of the candidate the stop rule rejected ("gamma" or "non-positive"; else None).
    A first pick is held to the positive-score rule too.

        sc_mmr([0.6, 0.5], [[1.0, 0.2], [0.2, 1.0]], KeywordParams())
        # ([(0, 0.789..., 0.473...), (1, 0.750..., 0.325...)], 'no candidates', None)
    """
    sal = np.asarray(saliency, dtype=np.float64)
    sim = np.asarray(similarity, dtype=np.float64)
    if sal.ndim != 1 or sim.shape != (sal.size, sal.size):
        raise BadInputError(
            f"need n saliencies and an n-by-n similarity matrix, got {sal.shape} and {sim.shape}"
        )
    if not (np.isfinite(sal).all() and np.isfinite(sim).all()):
        raise BadInputError("saliencies and similarities must be finite")
    picks: list[tuple[int, float, float]] = []
    selected: list[int] = []
    while True:
        remaining = [i for i in range(sal.size) if i not in selected]
        if not remaining:
            return picks, "no candidates", None
        if len(picks) >= params.max_keywords:
            return picks, "max keywords", None
        k = len(picks) + 1
        lam = annealed_lambda(k, params)
        best, best_score = remaining[0], -math.inf
        for i in remaining:
            redundancy = max(float(sim[i, j]) for j in selected) if selected else 0.0
            # ZoFia eq. 4a: saliency, less the likeness to the closest unit already chosen.
            score = lam * float(sal[i]) - (1.0 - lam) * redundancy
            # ZoFia eq. 4b: the argmax; strict, so a tie keeps the earlier unit.
            if score > best_score:
                best, best_score = i, score
        if best_score <= 0.0:
            return picks, "non-positive", best_score
        if picks and not best_score > params.gamma * picks[-1][2]:
            return picks, "gamma", best_score
        picks.append((best, lam, best_score))
        selected.append(best)


def local_context(sentences: Sequence[str], i: int) -> str:
    """Sentence ``i`` with the sentences before and after it, where they exist.

    At the edges the context is two sentences (one for a one-sentence text):

        local_context(["A.", "B.", "C.", "D."], 0)   # 'A. B.'
    """
    if not 0 <= i < len(sentences):
        raise BadInputError(f"sentence {i} is not among {len(sentences)} sentences")
    return " ".join(sentences[max(0, i - 1) : i + 2])


def disambiguate(
    context: str, mention: str, descriptions: Sequence[str], encoder: Encoder
) -> tuple[int, list[float]]:
    """The description that best keeps the context's meaning in place of the mention (eq. 7).

    Each description replaces the first case-insensitive occurrence of the mention; its
    score is the cosine of that modified context with the original. Returns the index of the
    best score (the first on a tie) and every score.

        disambiguate("Apple released a new iPhone in Cupertino.", "Apple",
                     ["American technology company", "fruit of the apple tree"], encoder)
        # (0, [0.924..., 0.888...])
    """
    if isinstance(descriptions, str) or not descriptions:
        raise BadInputError("disambiguate needs a sequence of candidate descriptions")
    if not mention.strip():
        raise BadInputError("disambiguate needs a mention")
    match = re.search(re.escape(mention), context, flags=re.IGNORECASE)
    if match is None:
        raise BadInputError(f"mention {mention!r} does not occur in the context")
    modified = [context[: match.start()] + d + context[match.end() :] for d in descriptions]
    vectors = encoder.encode([context, *modified])
    # ZoFia eq. 7: the sense whose description changes the context's meaning least.
    scores = [Encoder.cosine(vectors[0], vector) for vector in vectors[1:]]
    best = 0
    for i, score in enumerate(scores):
        if score > scores[best]:
            best = i
    return best, scores


class KeywordSelector:
    """Stage 1 of ZoFia: an article's entity keywords by saliency and SC-MMR.

    Cheap to construct; spaCy and the encoder load on first use (or `warm_up`).

        selector = KeywordSelector(params=KeywordParams(max_keywords=3))
        selector.select("The ECB raised rates, Christine Lagarde said in Frankfurt.").keywords
    """

    def __init__(
        self,
        recognizer: EntityRecognizer | None = None,
        encoder: Encoder | None = None,
        params: KeywordParams | None = None,
    ) -> None:
        self.recognizer = recognizer if recognizer is not None else EntityRecognizer()
        self.encoder = encoder if encoder is not None else default_encoder()
        self.params = params if params is not None else KeywordParams()

    def warm_up(self) -> None:
        """Load the NER pipeline and the encoder now instead of on the first call."""
        self.recognizer.warm_up()
        self.encoder.warm_up()

    def select(self, text: str) -> KeywordSelection:
        """The keywords of ``text`` with every score behind them."""
        if not isinstance(text, str) or not text.strip():
            raise BadInputError("cannot select keywords from an empty text")
        sentences = split_sentences(text)
        analyses = self.recognizer.analyse_many(sentences)
        occurrences = merge_units([a.tokens for a in analyses], sentences)
        units, threshold = threshold_units(group_units(occurrences), self.params)
        if not units:
            return KeywordSelection(self.params, threshold, (), (), "no entities", None)
        scored, vectors = self._score(units, occurrences, sentences)
        similarity = vectors @ vectors.T  # unit-length rows: cosines
        saliency = np.array([unit.hierarchical for unit in scored])
        chosen, stop, rejected = sc_mmr(saliency, similarity, self.params)
        picks = tuple(
            MMRPick(k, scored[i].text, lam, mmr) for k, (i, lam, mmr) in enumerate(chosen, 1)
        )
        return KeywordSelection(self.params, threshold, tuple(scored), picks, stop, rejected)

    def _score(
        self, units: list[EntityUnit], occurrences: list[EntityUnit], sentences: list[str]
    ) -> tuple[list[ScoredUnit], npt.NDArray[np.float64]]:
        """Each unit at its most salient occurrence (eq. 3), and the units' vectors."""
        where: dict[str, list[int]] = {unit.text.casefold(): [] for unit in units}
        for occurrence in occurrences:
            found = where.get(occurrence.text.casefold())
            if found is not None and occurrence.sentence not in found:
                found.append(occurrence.sentence)
        context_ids = sorted({i for ids in where.values() for i in ids})
        contexts = {i: local_context(sentences, i) for i in context_ids}
        vectors: FloatArray = self.encoder.encode(
            [*(unit.text for unit in units), *contexts.values(), " ".join(sentences)]
        )
        unit_vecs = vectors[: len(units)]
        context_vecs = dict(zip(context_ids, vectors[len(units) : -1], strict=True))
        doc_vec = vectors[-1]
        scored: list[ScoredUnit] = []
        for unit, vec in zip(units, unit_vecs, strict=True):
            candidates = []
            for i in where[unit.text.casefold()]:
                local, global_, hs = hierarchical_saliency(vec, context_vecs[i], doc_vec)
                candidates.append(
                    ScoredUnit(unit.text, unit.confidence, i, contexts[i], local, global_, hs)
                )
            # Occurrences are in text order and max() keeps the first maximum: ties go early.
            scored.append(max(candidates, key=lambda c: c.hierarchical))
        return scored, unit_vecs.astype(np.float64)

    def to_dict(self) -> dict[str, Any]:
        """The configuration of this selector."""
        return {
            "recognizer": self.recognizer.to_dict(),
            "encoder": self.encoder.to_dict(),
            "params": self.params.to_dict(),
        }
