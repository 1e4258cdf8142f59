"""ZoFia stage 1: the equations against values worked out by hand, then the real pipeline."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import pytest

from verity.errors import BadInputError, ConfigError
from verity.methods.zofia.keywords import (
    EntityUnit,
    KeywordParams,
    KeywordSelection,
    KeywordSelector,
    MMRPick,
    ScoredUnit,
    annealed_lambda,
    disambiguate,
    group_units,
    hierarchical_saliency,
    local_context,
    merge_units,
    sc_mmr,
    threshold_units,
)
from verity.nlp.embed import Encoder, default_encoder
from verity.nlp.ner import TokenScore
from verity.nlp.text import split_sentences

DEFAULTS = KeywordParams()
# Annealed weights with the default parameters (eq. 5), used in the SC-MMR cases below:
# lambda_1 = 0.9 - e^-2.2 = 0.789197, lambda_2 = 0.9 - e^-1.9 = 0.750431,
# lambda_3 = 0.9 - e^-1.6 = 0.698103.

NEWS = (
    "The European Central Bank raised interest rates on Thursday, its president Christine "
    "Lagarde said in Frankfurt. The decision surprised investors in London and New York. "
    "Germany's finance minister welcomed the move, while the International Monetary Fund "
    "warned of slower growth across the eurozone. Christine Lagarde will explain the "
    "decision to the European Parliament next week."
)


def tokens(sentence: str, tags: Sequence[tuple[str, str, str, float]]) -> list[TokenScore]:
    """TokenScores for (word, iob, label, confidence) in order, char offsets found in text."""
    out: list[TokenScore] = []
    pos = 0
    for index, (word, iob, label, confidence) in enumerate(tags):
        start = sentence.index(word, pos)
        pos = start + len(word)
        out.append(TokenScore(word, index, start, pos, iob, label, confidence))
    return out


# --- KeywordParams ---------------------------------------------------------------------


def test_params_defaults_and_to_dict():
    assert DEFAULTS.to_dict() == {
        "lambda_init": 0.8,
        "delta": 0.1,
        "n_min": 3,
        "lambda_min": 0.5,
        "lambda_max": 0.9,
        "alpha": 0.3,
        "beta": 2.5,
        "gamma": 0.5,
        "max_keywords": 5,
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULTS.gamma = 0.1  # type: ignore[misc]


@pytest.mark.parametrize(
    "bad",
    [
        {"lambda_init": 1.5},
        {"lambda_init": -0.1},
        {"delta": 0.0},
        {"n_min": 0},
        {"n_min": 2.5},
        {"n_min": True},
        {"lambda_min": 0.95},  # above lambda_max
        {"lambda_max": 1.2},
        {"alpha": -0.3},
        {"beta": math.nan},
        {"gamma": 1.5},
        {"max_keywords": 0},
    ],
)
def test_params_reject_bad_values(bad):
    with pytest.raises(ConfigError):
        KeywordParams(**bad)


# --- eq. 5: the annealed weight ----------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (1, 0.789197),  # 0.9 - e^(0.3 - 2.5) = 0.9 - 0.110803
        (2, 0.750431),  # 0.9 - e^-1.9 = 0.9 - 0.149569
        (3, 0.698103),  # 0.9 - e^-1.6 = 0.9 - 0.201897
        (4, 0.627468),  # 0.9 - e^-1.3 = 0.9 - 0.272532
        (5, 0.532121),  # 0.9 - e^-1.0 = 0.9 - 0.367879
        (6, 0.5),  # 0.9 - e^-0.7 = 0.403415, clipped to lambda_min
        (7, 0.5),  # 0.9 - e^-0.4 = 0.229680, clipped
    ],
)
def test_annealed_lambda_by_hand(k, expected):
    assert annealed_lambda(k, DEFAULTS) == pytest.approx(expected, abs=1e-6)


def test_annealed_lambda_other_params_and_bad_k():
    # No annealing (alpha = 0): 0.9 - e^-2.5 = 0.9 - 0.082085 for every k.
    flat = KeywordParams(alpha=0.0, lambda_min=0.0)
    assert [annealed_lambda(k, flat) for k in (1, 5, 50)] == pytest.approx([0.817915] * 3, abs=1e-6)
    with pytest.raises(BadInputError):
        annealed_lambda(0, DEFAULTS)


# --- eq. 3: hierarchical saliency --------------------------------------------------------


def test_hierarchical_saliency_by_hand():
    # cos((1,0),(1,1)) = 1/sqrt 2; cos((1,1),(0,1)) = 1/sqrt 2; product 1/2.
    local, global_, hs = hierarchical_saliency([1.0, 0.0], [1.0, 1.0], [0.0, 1.0])
    assert (local, global_, hs) == pytest.approx((0.707107, 0.707107, 0.5), abs=1e-6)
    # cos((1,2,2),(2,1,2)) = 8/9; cos((2,1,2),(0,0,1)) = 2/3; product 16/27 = 0.592593.
    local, global_, hs = hierarchical_saliency([1, 2, 2], [2, 1, 2], [0, 0, 1])
    assert (local, global_, hs) == pytest.approx((0.888889, 0.666667, 0.592593), abs=1e-6)
    # A context pointing away from the document: cos((3,4),(4,3)) = 24/25, global -1.
    local, global_, hs = hierarchical_saliency([3, 4], [4, 3], [-4, -3])
    assert (local, global_, hs) == pytest.approx((0.96, -1.0, -0.96), abs=1e-9)


# --- eq. 4a/4b: SC-MMR --------------------------------------------------------------------


def test_sc_mmr_gamma_rule_stops():
    saliency = np.array([0.6, 0.55, 0.5, 0.1])
    similarity = np.array(
        [
            [1.0, 0.2, 0.9, 0.1],
            [0.2, 1.0, 0.3, 0.2],
            [0.9, 0.3, 1.0, 0.1],
            [0.1, 0.2, 0.1, 1.0],
        ]
    )
    # k=1 (S empty): 0.789197 * HS -> 0.473518, 0.434058, 0.394598, 0.078920: pick u0.
    # k=2, 1 - lambda = 0.249569, redundancy = sim with u0:
    #   u1 0.750431*0.55 - 0.249569*0.2 = 0.412737 - 0.049914 = 0.362824
    #   u2 0.750431*0.5  - 0.249569*0.9 = 0.375216 - 0.224612 = 0.150604
    #   u3 0.750431*0.1  - 0.249569*0.1 = 0.050086
    #   u1 wins, 0.362824 > 0.5 * 0.473518 = 0.236759: accepted.
    # k=3, 1 - lambda = 0.301897, redundancy = max sim with u0, u1:
    #   u2 0.698103*0.5 - 0.301897*0.9 = 0.349052 - 0.271707 = 0.077345
    #   u3 0.698103*0.1 - 0.301897*0.2 = 0.069810 - 0.060379 = 0.009431
    #   u2 wins but 0.077345 <= 0.5 * 0.362824 = 0.181412: the gamma rule stops.
    picks, stop, rejected = sc_mmr(saliency, similarity, DEFAULTS)
    assert [i for i, _, _ in picks] == [0, 1]
    assert [lam for _, lam, _ in picks] == pytest.approx([0.789197, 0.750431], abs=1e-6)
    assert [mmr for _, _, mmr in picks] == pytest.approx([0.473518, 0.362824], abs=1e-6)
    assert stop == "gamma"
    assert rejected == pytest.approx(0.077345, abs=1e-6)


def test_sc_mmr_max_keywords_stops():
    # Unrelated units (identity similarity), so the redundancy term is 0:
    # k=1 0.789197*0.6 = 0.473518; k=2 0.750431*0.5 = 0.375216 > 0.236759;
    # k=3 would be 0.698103*0.45 = 0.314146 > 0.187608, but two keywords is the cap.
    saliency = np.array([0.6, 0.5, 0.45])
    picks, stop, rejected = sc_mmr(saliency, np.eye(3), KeywordParams(max_keywords=2))
    assert [(i, round(mmr, 6)) for i, _, mmr in picks] == [(0, 0.473518), (1, 0.375216)]
    assert (stop, rejected) == ("max keywords", None)
    # Without the cap the third pick is accepted and the units run out.
    picks, stop, rejected = sc_mmr(saliency, np.eye(3), DEFAULTS)
    assert [(i, round(mmr, 6)) for i, _, mmr in picks] == [
        (0, 0.473518),
        (1, 0.375216),
        (2, 0.314147),  # 0.698103 * 0.45 = 0.3141466
    ]
    assert (stop, rejected) == ("no candidates", None)


def test_sc_mmr_non_positive_score_stops():
    # k=1: 0.789197*0.4 = 0.315679. k=2: u1 is nearly u0 (cos 0.95):
    # 0.750431*0.3 - 0.249569*0.95 = 0.225129 - 0.237091 = -0.011961 <= 0.
    picks, stop, rejected = sc_mmr([0.4, 0.3], [[1.0, 0.95], [0.95, 1.0]], DEFAULTS)
    assert [(i, round(mmr, 6)) for i, _, mmr in picks] == [(0, 0.315679)]
    assert stop == "non-positive"
    assert rejected == pytest.approx(-0.011961, abs=1e-6)
    # The first pick is held to it too: 0.789197 * -0.1 = -0.078920.
    picks, stop, rejected = sc_mmr([-0.1, -0.2], np.eye(2), DEFAULTS)
    assert picks == []
    assert stop == "non-positive"
    assert rejected == pytest.approx(-0.078920, abs=1e-6)


def test_sc_mmr_tie_goes_to_the_earlier_unit():
    # k=1: u1 and u2 both 0.789197*0.5 = 0.394598; u1 comes first in the text.
    # k=2: u2 0.750431*0.5 = 0.375216 > 0.197299; k=3: u0 0.698103*0.2 = 0.139621
    # <= 0.5 * 0.375216 = 0.187608: gamma.
    picks, stop, rejected = sc_mmr([0.2, 0.5, 0.5], np.eye(3), DEFAULTS)
    assert [(i, round(mmr, 6)) for i, _, mmr in picks] == [(1, 0.394598), (2, 0.375216)]
    assert stop == "gamma"
    assert rejected == pytest.approx(0.139621, abs=1e-6)


def test_sc_mmr_gamma_rule_needs_strictly_more():
    # lambda fixed at 0.5: k=1 0.5*0.8 = 0.4; k=2 0.5*0.4 = 0.2 = 0.5 * 0.4 exactly.
    flat = KeywordParams(lambda_min=0.5, lambda_max=0.5)
    picks, stop, rejected = sc_mmr([0.8, 0.4], np.eye(2), flat)
    assert picks == [(0, 0.5, 0.4)]
    assert (stop, rejected) == ("gamma", 0.2)


def test_sc_mmr_runs_out_and_rejects_bad_shapes():
    # k=2: 0.750431*0.5 - 0.249569*0.2 = 0.325302 > 0.236759; then nothing is left.
    picks, stop, _ = sc_mmr([0.6, 0.5], [[1.0, 0.2], [0.2, 1.0]], DEFAULTS)
    assert [(i, round(mmr, 6)) for i, _, mmr in picks] == [(0, 0.473518), (1, 0.325302)]
    assert stop == "no candidates"
    assert sc_mmr(np.zeros(0), np.zeros((0, 0)), DEFAULTS) == ([], "no candidates", None)
    with pytest.raises(BadInputError):
        sc_mmr([0.5, 0.4], np.eye(3), DEFAULTS)
    with pytest.raises(BadInputError):
        sc_mmr([0.5, math.nan], np.eye(2), DEFAULTS)


# --- eq. 2: entity units and the dynamic threshold ---------------------------------------


def test_merge_units_joins_adjacent_entity_tokens_across_labels():
    first = "Barack Obama met Google Pixel staff in 2016."
    second = "Paris and London agreed."
    sentence_tokens = [
        tokens(
            first,
            [
                ("Barack", "B", "PERSON", 0.9),
                ("Obama", "I", "PERSON", 0.7),
                ("met", "O", "", 0.99),
                ("Google", "B", "ORG", 0.6),
                ("Pixel", "B", "PRODUCT", 1.0),  # adjacent: joins "Google" though a new B
                ("staff", "O", "", 0.98),
                ("in", "O", "", 0.99),
                ("2016", "B", "DATE", 0.99),  # no letter: dropped
                (".", "O", "", 1.0),
            ],
        ),
        tokens(
            second,
            [
                ("Paris", "B", "GPE", 0.8),
                ("and", "O", "", 0.9),
                ("London", "B", "GPE", 0.6),
                ("agreed", "O", "", 0.9),
                (".", "O", "", 1.0),
            ],
        ),
    ]
    units = merge_units(sentence_tokens, [first, second])
    assert [(u.text, u.sentence, u.tokens) for u in units] == [
        ("Barack Obama", 0, 2),
        ("Google Pixel", 0, 2),
        ("Paris", 1, 1),
        ("London", 1, 1),
    ]
    # Means: (0.9 + 0.7) / 2, (0.6 + 1.0) / 2, then single tokens.
    assert [u.confidence for u in units] == pytest.approx([0.8, 0.8, 0.8, 0.6])


def test_merge_units_splits_on_a_token_gap_and_keeps_the_sentence_span():
    sentence = "St. Louis, Missouri"
    toks = [
        TokenScore("St.", 0, 0, 3, "B", "GPE", 0.5),
        TokenScore("Louis", 1, 4, 9, "I", "GPE", 0.7),
        # Index 2 (the comma) is missing from the list: not adjacent, a new unit.
        TokenScore("Missouri", 3, 11, 19, "I", "GPE", 0.9),
    ]
    units = merge_units([toks], [sentence])
    assert [(u.text, u.tokens) for u in units] == [("St. Louis", 2), ("Missouri", 1)]
    assert units[0].confidence == pytest.approx(0.6)
    with pytest.raises(BadInputError):
        merge_units([toks], [sentence, "another"])


def test_group_units_pools_over_all_tokens():
    units = [
        EntityUnit("NASA", 0.9, 0, 1),
        EntityUnit("Barack Obama", 0.8, 0, 2),
        EntityUnit("Nasa", 0.6, 2, 1),
        EntityUnit("nasa", 0.3, 3, 2),
    ]
    # NASA: (0.9 + 0.6 + 0.3 + 0.3) / 4 tokens = 0.525 (a mean of the means would be 0.6).
    grouped = group_units(units)
    assert [(u.text, u.sentence, u.tokens) for u in grouped] == [
        ("NASA", 0, 4),
        ("Barack Obama", 0, 2),
    ]
    assert [u.confidence for u in grouped] == pytest.approx([0.525, 0.8])


def _units(*confidences: float) -> list[EntityUnit]:
    return [EntityUnit(f"unit {i}", c, i) for i, c in enumerate(confidences)]


def test_threshold_lowers_until_n_min_pass():
    # 0.8 lets 2 through, 0.7 lets 2, 0.6 lets 3.
    kept, threshold = threshold_units(_units(0.95, 0.85, 0.62, 0.55, 0.3), DEFAULTS)
    assert [u.confidence for u in kept] == [0.95, 0.85, 0.62]
    assert threshold == 0.6
    # Already 3 at the start: no lowering.
    kept, threshold = threshold_units(_units(0.9, 0.85, 0.81, 0.1), DEFAULTS)
    assert (len(kept), threshold) == (3, 0.8)


def test_threshold_steps_do_not_drift():
    # 0.8 - 0.1 is 0.7000000000000001 in floats: unrounded, the 0.7 unit would miss it.
    kept, threshold = threshold_units(_units(0.9, 0.8, 0.7), DEFAULTS)
    assert (len(kept), threshold) == (3, 0.7)


def test_threshold_with_fewer_than_n_min_units_lets_all_through():
    kept, threshold = threshold_units(_units(0.4, 0.0), DEFAULTS)
    assert (len(kept), threshold) == (2, 0.0)
    assert threshold_units([], DEFAULTS) == ([], 0.0)
    # Steps that skip over 0 stop at 0: 0.75, 0.65, ..., 0.05, then 0.
    kept, threshold = threshold_units(_units(0.01), KeywordParams(lambda_init=0.75, n_min=2))
    assert (len(kept), threshold) == (1, 0.0)


# --- local context and the trace -----------------------------------------------------------


def test_local_context_edges():
    sentences = ["A.", "B.", "C.", "D."]
    assert local_context(sentences, 0) == "A. B."
    assert local_context(sentences, 1) == "A. B. C."
    assert local_context(sentences, 3) == "C. D."
    assert local_context(["A."], 0) == "A."
    with pytest.raises(BadInputError):
        local_context(sentences, 4)


def test_selection_keywords_and_trace():
    unit = ScoredUnit("Paris", 0.99, 1, "ctx", 0.6, 0.8, 0.48)
    selection = KeywordSelection(
        DEFAULTS, 0.7, (unit,), (MMRPick(1, "Paris", 0.789, 0.379),), "no candidates", None
    )
    assert selection.keywords == ["Paris"]
    assert selection.to_trace() == {
        "params": DEFAULTS.to_dict(),
        "threshold": 0.7,
        "units": [
            {
                "text": "Paris",
                "confidence": 0.99,
                "local": 0.6,
                "global": 0.8,
                "hierarchical": 0.48,
                "sentence": 1,
            }
        ],
        "iterations": [{"k": 1, "unit": "Paris", "lambda_k": 0.789, "mmr": 0.379}],
        "stop": "no candidates",
        "rejected_mmr": None,
    }


# --- eq. 7: disambiguation ---------------------------------------------------------------------


class ScriptedEncoder(Encoder):
    """Returns fixed vectors and records the texts it was asked to embed."""

    def __init__(self, vectors: list[list[float]]):
        super().__init__()
        self.vectors = np.array(vectors, dtype=np.float32)
        self.seen: list[str] = []

    def encode(self, texts):
        self.seen = list(texts)
        return self.vectors


def test_disambiguate_replaces_the_first_mention_case_insensitively():
    # cos((1,0),(0.6,0.8)) = 0.6; cos((1,0),(0.8,0.6)) = 0.8.
    encoder = ScriptedEncoder([[1, 0], [0.6, 0.8], [0.8, 0.6]])
    best, scores = disambiguate("An apple a day; Apple stock.", "APPLE", ["fruit", "firm"], encoder)
    assert encoder.seen == [
        "An apple a day; Apple stock.",
        "An fruit a day; Apple stock.",
        "An firm a day; Apple stock.",
    ]
    assert best == 1
    assert scores == pytest.approx([0.6, 0.8], abs=1e-6)


def test_disambiguate_tie_goes_to_the_first_and_bad_input():
    # (0.6, 0.8) and (0.6, -0.8) are both at cosine 0.6 from (1, 0).
    encoder = ScriptedEncoder([[1, 0], [0.6, 0.8], [0.6, -0.8]])
    assert disambiguate("Jordan won.", "Jordan", ["a", "b"], encoder)[0] == 0
    with pytest.raises(BadInputError):
        disambiguate("Jordan won.", "Paris", ["a"], encoder)
    with pytest.raises(BadInputError):
        disambiguate("Jordan won.", "Jordan", [], encoder)
    with pytest.raises(BadInputError):
        disambiguate("Jordan won.", " ", ["a"], encoder)


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    enc = default_encoder()
    enc.warm_up()
    return enc


@pytest.mark.integration
def test_disambiguate_with_the_real_encoder(encoder):
    context = "Apple released a new iPhone in Cupertino."
    senses = ["American technology company", "fruit of the apple tree"]
    best, scores = disambiguate(context, "Apple", senses, encoder)
    assert best == 0
    assert scores[0] > scores[1]
    # The order of the candidates does not matter, and the other sense wins in its context.
    assert disambiguate(context, "Apple", senses[::-1], encoder)[0] == 1
    orchard = "She baked an apple pie with fruit from the orchard."
    assert disambiguate(orchard, "apple", senses, encoder)[0] == 1


# --- the whole stage on real text ------------------------------------------------------------


def test_empty_text_is_bad_input():
    selector = KeywordSelector()
    with pytest.raises(BadInputError):
        selector.select("")
    with pytest.raises(BadInputError):
        selector.select("  \n\n ")


@pytest.fixture(scope="module")
def selector(encoder) -> KeywordSelector:
    sel = KeywordSelector(encoder=encoder)
    sel.warm_up()
    return sel


def _lambda(k: int) -> float:
    # eq. 5 written out again with the defaults, independently of the module.
    return max(0.5, 0.9 - math.exp(0.3 * k - 2.5))


@pytest.mark.integration
def test_selection_on_news_recomputes_from_its_trace(selector, encoder):
    trace = selector.select(NEWS).to_trace()
    sentences = split_sentences(NEWS)
    units = trace["units"]
    texts = [u["text"] for u in units]
    assert {"Christine Lagarde", "Frankfurt", "London", "Germany"} <= set(texts)
    assert len(texts) == len({t.casefold() for t in texts})
    for unit in units:
        assert unit["text"] in NEWS
        assert unit["confidence"] >= trace["threshold"]
        assert unit["hierarchical"] == pytest.approx(unit["local"] * unit["global"], rel=1e-12)
        # eq. 3 from scratch: unit, its context, the article.
        context = local_context(sentences, unit["sentence"])
        e_u, e_ctx, e_doc = encoder.encode([unit["text"], context, " ".join(sentences)])
        assert unit["local"] == pytest.approx(float(e_u @ e_ctx), abs=1e-5)
        assert unit["global"] == pytest.approx(float(e_ctx @ e_doc), abs=1e-5)

    # eq. 4a/4b/5 from scratch: each pick is the best remaining unit by its MMR score.
    vectors = encoder.encode(texts).astype(np.float64)
    similarity = vectors @ vectors.T
    hs = [u["hierarchical"] for u in units]
    selected: list[int] = []

    def scores(k: int) -> dict[int, float]:
        lam = _lambda(k)
        return {
            i: lam * hs[i]
            - (1 - lam) * (max(similarity[i, j] for j in selected) if selected else 0.0)
            for i in range(len(units))
            if i not in selected
        }

    iterations = trace["iterations"]
    assert iterations, "an article with entities keeps at least its most salient one"
    assert iterations[0]["unit"] == texts[int(np.argmax(hs))]
    for pick in iterations:
        k = pick["k"]
        assert k == len(selected) + 1
        assert pick["lambda_k"] == pytest.approx(_lambda(k), abs=1e-12)
        candidates = scores(k)
        chosen = texts.index(pick["unit"])
        assert pick["mmr"] == pytest.approx(candidates[chosen], abs=1e-5)
        assert pick["mmr"] >= max(candidates.values()) - 1e-5
        if selected:
            assert pick["mmr"] > 0.5 * iterations[k - 2]["mmr"]
        selected.append(chosen)

    stop, rejected = trace["stop"], trace["rejected_mmr"]
    assert stop in {"gamma", "non-positive", "max keywords", "no candidates"}
    if stop in {"gamma", "non-positive"}:
        assert rejected == pytest.approx(max(scores(len(selected) + 1).values()), abs=1e-5)
        if stop == "gamma":
            assert rejected <= 0.5 * iterations[-1]["mmr"]
    else:
        assert rejected is None


@pytest.mark.integration
def test_repeated_unit_is_reported_at_its_most_salient_occurrence(selector, encoder):
    trace = selector.select(NEWS).to_trace()
    sentences = split_sentences(NEWS)
    lagarde = next(u for u in trace["units"] if u["text"] == "Christine Lagarde")
    seen_in = [i for i, s in enumerate(sentences) if "Christine Lagarde" in s]
    assert len(seen_in) == 2
    e_doc = encoder.encode([" ".join(sentences)])[0]
    e_u = encoder.encode(["Christine Lagarde"])[0]
    by_sentence = {}
    for i in seen_in:
        e_ctx = encoder.encode([local_context(sentences, i)])[0]
        by_sentence[i] = float(e_u @ e_ctx) * float(e_ctx @ e_doc)
    assert lagarde["sentence"] == max(by_sentence, key=by_sentence.__getitem__)
    assert lagarde["hierarchical"] == pytest.approx(max(by_sentence.values()), abs=1e-5)


@pytest.mark.integration
def test_text_without_entities_gives_an_empty_selection(selector):
    selection = selector.select("We walked to the shop and bought some bread because it was cold.")
    assert selection.keywords == []
    assert selection.units == ()
    assert (selection.stop, selection.rejected_mmr) == ("no entities", None)
