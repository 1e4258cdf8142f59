"""ZoFia stage 1 (section 3): the article's entity keywords, chosen for saliency and diversity.

    selector = KeywordSelector()
    selection = selector.select(article_text)
    selection.keywords       # the chosen entity texts, in the order they were picked
    selection.to_trace()     # every unit's scores and every SC-MMR pick, for the report

Three steps, each a pure function here so it can be checked by hand (eq. 7's choice of
a Wikipedia sense is in `names`):

1. Entity units (section 3.1, eq. 2; appendix A.1, Algorithm 2: `merge_units`,
   `group_units`, `threshold_units`). spaCy's NER runs per sentence. Only the entity types
   of the CoNLL-2003 tagger the paper uses count (persons, organisations, places and the
   miscellaneous names: `CONLL_LABELS`); dates, amounts, numbers and times never become
   units. Consecutive entity tokens (adjacent, whatever their labels) form one unit, whose
   confidence is the mean of its tokens' confidences. Occurrences with the same case-folded
   text are one unit: it keeps the first occurrence's text, and its confidence is the mean
   over all tokens of all its occurrences. Units without a letter are dropped. The dynamic
   threshold starts at ``lambda_init`` and falls by ``delta`` until ``n_min`` units pass
   (Algorithm 2: one, a non-empty set) or the next step would go below ``tau_floor``.
2. Hierarchical saliency (eq. 3: `hierarchical_saliency`): HS(u) = cos(e_u, e_ctx) *
   cos(e_ctx, e_doc), the context being the unit's sentence with its neighbours
   (`local_context`) and the document the whole article. A unit seen in several sentences
   is scored, and reported, at its most salient occurrence.
3. SC-MMR (section 3.3, eq. 4a, 4b, 5; appendix A.2, Algorithm 3: `sc_mmr`): the most
   salient unit is the seed; then maximal marginal relevance whose relevance weight
   lambda_k anneals with k, the number of units already chosen, until the best score is at
   most ``gamma`` times the last accepted one (1.0 before the second pick).
   `sc_mmr_relaxed` keeps an earlier reading (the ``mmr-relaxed`` variant).

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
from verity.methods.zofia.names import find_name
from verity.nlp.embed import Encoder, FloatArray, default_encoder
from verity.nlp.ner import EntityRecognizer, TokenScore
from verity.nlp.text import split_sentences

# Why a selection ended: the article had no entity unit; the gamma rule rejected the next
# pick; the next pick's score was not positive (relaxed reading only); max_keywords were
# chosen; no unit was left.
StopReason = Literal["no entities", "gamma", "non-positive", "max keywords", "no candidates"]
Schedule = Literal["paper", "relaxed"]

# Section 3.1: the paper's NER is a CoNLL-2003 tagger (dslim/bert-base-NER), which knows
# persons, organisations, locations and miscellaneous names. These are the spaCy (OntoNotes)
# types that fall within those four; DATE, TIME, MONEY, PERCENT, QUANTITY, ORDINAL and
# CARDINAL do not, and would otherwise turn "Friday" or "$2 billion" into search keywords.
CONLL_LABELS = frozenset(
    {
        "PERSON",
        "ORG",
        "GPE",
        "LOC",
        "NORP",
        "FAC",
        "EVENT",
        "WORK_OF_ART",
        "LAW",
        "PRODUCT",
        "LANGUAGE",
    }
)

_ENTITY_TAGS = ("B", "I")
_LETTER = re.compile(r"[^\W\d_]")  # a letter in any script


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class KeywordParams:
    """The settings of stage 1, the paper's values by default; bad values raise `ConfigError`.

    Saved beside every trace, so a selection can be rerun exactly:

        KeywordParams(max_keywords=3).to_dict()["gamma"]   # 0.5

    The defaults are Algorithm 2's and Algorithm 3's (appendix A) with section 5.1's
    lambda_init, delta and gamma; ``schedule="relaxed"`` with lambda in [0.5, 0.9], a cap
    of 5 and n_min = 3 is the ``mmr-relaxed`` variant (docs/zofia.md).
    """

    lambda_init: float = 0.8  # section 5.1: first NER confidence threshold
    delta: float = 0.1  # section 5.1: how far the threshold falls per step
    n_min: int = 1  # Algorithm 2: lower the threshold until the set is non-empty
    tau_floor: float = 0.1  # Algorithm 2: the threshold never goes below 0.1
    lambda_min: float = 0.1  # Algorithm 3 (eq. 5's lambda_min): floor of the weight
    lambda_max: float = 1.0  # Algorithm 3 (eq. 5's lambda_max): ceiling of the weight
    alpha: float = 0.3  # section 5.5, Algorithm 3: annealing rate
    beta: float = 2.5  # section 5.5, Algorithm 3: annealing offset
    gamma: float = 0.5  # section 5.1: stop when the best score <= gamma * the last one
    prev_init: float = 1.0  # Algorithm 3: the reference score before the second pick
    max_keywords: int | None = None  # Algorithm 3 has no cap; the relaxed reading has 5
    schedule: Schedule = "paper"

    def __post_init__(self) -> None:
        for name in (
            "lambda_init",
            "delta",
            "tau_floor",
            "lambda_min",
            "lambda_max",
            "alpha",
            "beta",
            "gamma",
            "prev_init",
        ):
            value = getattr(self, name)
            if not _is_number(value) or not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, got {value!r}")
        for name in ("n_min", "max_keywords"):
            value = getattr(self, name)
            if name == "max_keywords" and value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a whole number of at least 1, got {value!r}")
        if not 0.0 <= self.lambda_init <= 1.0:
            raise ConfigError(f"lambda_init must be within [0, 1], got {self.lambda_init}")
        if not 0.0 < self.delta <= 1.0:
            raise ConfigError(f"delta must be within (0, 1], got {self.delta}")
        if not 0.0 <= self.tau_floor <= self.lambda_init:
            raise ConfigError(f"need 0 <= tau_floor <= lambda_init, got tau_floor={self.tau_floor}")
        if not 0.0 <= self.lambda_min <= self.lambda_max <= 1.0:
            raise ConfigError(
                "need 0 <= lambda_min <= lambda_max <= 1, got "
                f"lambda_min={self.lambda_min}, lambda_max={self.lambda_max}"
            )
        if self.alpha < 0.0:
            raise ConfigError(f"alpha must be 0 or more, got {self.alpha}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ConfigError(f"gamma must be within [0, 1], got {self.gamma}")
        if self.schedule not in ("paper", "relaxed"):
            raise ConfigError(f"schedule must be 'paper' or 'relaxed', got {self.schedule!r}")

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
    """An accepted keyword: ``k`` units were already chosen when it was picked.

    The seed (k = 0) is chosen by saliency alone (Algorithm 3), so it has no weight and
    no MMR score; every later pick has both. ``saliency`` is its hierarchical saliency.

        MMRPick(0, "Paris", None, None, 0.48)
        MMRPick(1, "Louvre", 0.889, 0.52, 0.61)
    """

    k: int
    text: str
    lambda_k: float | None
    mmr: float | None
    saliency: float

    def to_dict(self) -> dict[str, Any]:
        """The pick as a plain dict, the text under the key ``"unit"``."""
        return {
            "k": self.k,
            "unit": self.text,
            "lambda_k": self.lambda_k,
            "mmr": self.mmr,
            "saliency": self.saliency,
        }


@dataclass(frozen=True, slots=True)
class KeywordSelection:
    """The outcome of stage 1: the scored units, the picks and why picking stopped.

    ``rejected_mmr`` is the score of the candidate the stop rule turned down ("gamma" or
    "non-positive"), else None; ``below_threshold`` the units (text, confidence) that the
    threshold of Algorithm 2 kept out.

        selection.keywords            # ['The European Central Bank']
        selection.to_trace()["stop"]  # 'gamma'
    """

    params: KeywordParams
    threshold: float
    units: tuple[ScoredUnit, ...]
    picks: tuple[MMRPick, ...]
    stop: StopReason
    rejected_mmr: float | None
    below_threshold: tuple[tuple[str, float], ...] = ()

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
            "below_threshold": [
                {"text": text, "confidence": conf} for text, conf in self.below_threshold
            ],
        }


def merge_units(
    sentence_tokens: Sequence[Sequence[TokenScore]],
    sentences: Sequence[str],
    labels: frozenset[str] | None = CONLL_LABELS,
) -> list[EntityUnit]:
    """The entity units of each sentence, one per occurrence, in text order (eq. 2).

    Adjacent entity tokens join one unit even across labels; its text is the sentence from
    the first token's start to the last token's end, its confidence their mean. Tokens
    whose label is not in ``labels`` (by default `CONLL_LABELS`) count as outside any
    entity; units without a letter are dropped.

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
            if token.iob not in _ENTITY_TAGS or (labels is not None and token.label not in labels):
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
                continue  # a bare number makes a poor query
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

    Algorithm 2 (appendix A.1): the threshold starts at ``lambda_init`` and falls by
    ``delta`` while fewer than ``n_min`` units reach it (the paper's loop: while none
    does), as long as it stays at or above ``tau_floor``. At the floor the units that pass
    are returned, possibly none.

        threshold_units(units, KeywordParams())   # ([...], 0.8)
    """
    threshold = params.lambda_init
    while True:
        kept = [unit for unit in units if unit.confidence >= threshold]
        # Rounded so that 0.8 - 7 * 0.1 is 0.1 and not 0.09999999999999987, which would
        # end the loop one step early.
        lower = round(threshold - params.delta, 10)
        if len(kept) >= params.n_min or lower < params.tau_floor:
            return kept, threshold
        threshold = lower


def annealed_lambda(k: int, params: KeywordParams) -> float:
    """The relevance weight when ``k`` units are already chosen (eq. 5, Algorithm 3).

    It falls from lambda_max as k grows but never below lambda_min:

        annealed_lambda(1, KeywordParams())   # 1 - exp(0.3 - 2.5) = 0.8892
    """
    if k < 0:
        raise BadInputError(f"k counts the units already chosen, got {k}")
    # ZoFia eq. 5; Algorithm 3 sets lambda_max = 1.0, lambda_min = 0.1.
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


Picked = tuple[int, float | None, float | None]


def _check_scores(saliency: npt.ArrayLike, similarity: npt.ArrayLike) -> tuple[Any, Any]:
    sal = np.asarray(saliency, dtype=np.float64)
    sim = np.asarray(similarity, dtype=np.float64)
    if sal.ndim != 1 or sim.shape != (sal.size, sal.size):
        raise BadInputError(
            f"need n saliencies and an n-by-n similarity matrix, got {sal.shape} and {sim.shape}"
        )
    if not (np.isfinite(sal).all() and np.isfinite(sim).all()):
        raise BadInputError("saliencies and similarities must be finite")
    return sal, sim


def _best(sal: Any, sim: Any, selected: list[int], lam: float) -> tuple[int, float]:
    """The remaining unit with the highest MMR score (eq. 4a), the earlier one on a tie."""
    best, best_score = -1, -math.inf
    for i in range(sal.size):
        if i in selected:
            continue
        redundancy = max(float(sim[i, j]) for j in selected) if selected else 0.0
        # ZoFia eq. 4a: saliency, less the likeness to the closest unit already chosen.
        score = lam * float(sal[i]) - (1.0 - lam) * redundancy
        # Strictly greater, so a tie keeps the unit seen first in the text.
        if score > best_score:
            best, best_score = i, score
    return best, best_score


def sc_mmr(
    saliency: npt.ArrayLike, similarity: npt.ArrayLike, params: KeywordParams
) -> tuple[list[Picked], StopReason, float | None]:
    """Pick units by SC-MMR as Algorithm 3 (appendix A.2) writes it.

    Returns ``(index, lambda_k, mmr)`` per accepted pick (None, None for the seed), why
    picking stopped, and the score the stop rule rejected (else None). With
    ``params.schedule == "relaxed"`` it runs `sc_mmr_relaxed` instead.

        sc_mmr([0.6, 0.5], [[1.0, 0.2], [0.2, 1.0]], KeywordParams())
        # ([(0, None, None)], 'gamma', 0.4224...)
    """
    sal, sim = _check_scores(saliency, similarity)
    if params.schedule == "relaxed":
        return sc_mmr_relaxed(sal, sim, params)
    if sal.size == 0:
        return [], "no candidates", None
    # Algorithm 3: the seed is the most salient unit (the first of equals).
    seed = int(np.argmax(sal))
    picks: list[Picked] = [(seed, None, None)]
    selected = [seed]
    previous = params.prev_init  # Algorithm 3: MMR*_prev <- 1.0
    while len(selected) < sal.size:
        if params.max_keywords is not None and len(picks) >= params.max_keywords:
            return picks, "max keywords", None
        k = len(selected)  # Algorithm 3: k <- |U_selected|
        lam = annealed_lambda(k, params)
        best, best_score = _best(sal, sim, selected, lam)
        # Algorithm 3: stop once the best score is at most gamma times the last accepted.
        if best_score <= params.gamma * previous:
            return picks, "gamma", best_score
        previous = best_score
        picks.append((best, lam, best_score))
        selected.append(best)
    return picks, "no candidates", None


def sc_mmr_relaxed(
    saliency: npt.ArrayLike, similarity: npt.ArrayLike, params: KeywordParams
) -> tuple[list[Picked], StopReason, float | None]:
    """An earlier reading of SC-MMR, kept as the ``mmr-relaxed`` variant.

    It differs from Algorithm 3 in four ways: k counts the pick being made (1 for the
    first), so every weight is one step further along the schedule; the first pick is
    scored by MMR like the others (lambda_1 * HS, with no redundancy); the gamma rule's
    first reference is that score rather than 1.0; and a pick must score above 0. With
    lambda in [0.5, 0.9] and a cap of 5 it keeps more keywords than the paper's schedule
    when saliencies are small.
    """
    sal, sim = _check_scores(saliency, similarity)
    picks: list[Picked] = []
    selected: list[int] = []
    previous: float | None = None
    while len(selected) < sal.size:
        if params.max_keywords is not None and len(picks) >= params.max_keywords:
            return picks, "max keywords", None
        lam = annealed_lambda(len(picks) + 1, params)
        best, best_score = _best(sal, sim, selected, lam)
        if best_score <= 0.0:
            return picks, "non-positive", best_score
        if previous is not None and not best_score > params.gamma * previous:
            return picks, "gamma", best_score
        previous = best_score
        picks.append((best, lam, best_score))
        selected.append(best)
    return picks, "no candidates", None


def local_context(sentences: Sequence[str], i: int) -> str:
    """Sentence ``i`` with the sentences before and after it, where they exist.

    At the edges the context is two sentences (one for a one-sentence text):

        local_context(["A.", "B.", "C.", "D."], 0)   # 'A. B.'
    """
    if not 0 <= i < len(sentences):
        raise BadInputError(f"sentence {i} is not among {len(sentences)} sentences")
    return " ".join(sentences[max(0, i - 1) : i + 2])


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
        grouped = group_units(occurrences)
        units, threshold = threshold_units(grouped, self.params)
        kept = {id(unit) for unit in units}
        below = tuple((u.text, u.confidence) for u in grouped if id(u) not in kept)
        return self._choose(units, occurrences, sentences, threshold, below)

    def select_names(self, text: str, names: Sequence[str]) -> KeywordSelection:
        """Saliency and SC-MMR over entity names found by other means (PromptNER, Table 3).

        Each name counts where it occurs in the text as whole words (ignoring case,
        `find_name`) with confidence 1: a list of names carries no confidences, so the
        threshold of Algorithm 2 has nothing to act on. Names the text does not contain
        are left out.
        """
        if not isinstance(text, str) or not text.strip():
            raise BadInputError("cannot select keywords from an empty text")
        sentences = split_sentences(text)
        occurrences = [
            EntityUnit(name, 1.0, i)
            for name in dict.fromkeys(n.strip() for n in names if n.strip())
            for i, sentence in enumerate(sentences)
            if find_name(sentence, name) is not None
        ]
        return self._choose(group_units(occurrences), occurrences, sentences, 1.0, ())

    def _choose(
        self,
        units: list[EntityUnit],
        occurrences: list[EntityUnit],
        sentences: list[str],
        threshold: float,
        below: tuple[tuple[str, float], ...],
    ) -> KeywordSelection:
        if not units:
            return KeywordSelection(self.params, threshold, (), (), "no entities", None, below)
        scored, vectors = self._score(units, occurrences, sentences)
        similarity = vectors @ vectors.T  # unit-length rows: cosines
        saliency = np.array([unit.hierarchical for unit in scored])
        chosen, stop, rejected = sc_mmr(saliency, similarity, self.params)
        picks = tuple(
            MMRPick(k, scored[i].text, lam, mmr, scored[i].hierarchical)
            for k, (i, lam, mmr) in enumerate(chosen)
        )
        return KeywordSelection(self.params, threshold, tuple(scored), picks, stop, rejected, below)

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
