"""ZoFia stage 1: the equations against values worked out by hand, then the real pipeline."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import pytest

from verity.errors import BadInputError, ConfigError
from verity.methods.zofia.keywords import (
    CONLL_LABELS,
    EntityUnit,
    KeywordParams,
    KeywordSelection,
    KeywordSelector,
    MMRPick,
    ScoredUnit,
    annealed_lambda,
    group_units,
    hierarchical_saliency,
    local_context,
    merge_units,
    sc_mmr,
    threshold_units,
)
from verity.methods.zofia.names import disambiguate
from verity.nlp.embed import Encoder, default_encoder
from verity.nlp.ner import TokenScore
from verity.nlp.text import split_sentences

DEFAULTS = KeywordParams()
# The reading kept as the mmr-relaxed variant, spelled out here rather than imported.
RELAXED = KeywordParams(
    schedule="relaxed", lambda_min=0.5, lambda_max=0.9, max_keywords=5, n_min=3, tau_floor=0.0
)
# Algorithm 3's weights, lambda_k = max(0.1, 1 - e^(0.3k - 2.5)), worked out by hand:
# k=1: 1 - e^-2.2 = 1 - 0.1108032 = 0.8891968; k=2: 1 - e^-1.9 = 1 - 0.1495686 = 0.8504314;
# k=3: 1 - e^-1.6 = 1 - 0.2018965 = 0.7981035.

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


def test_params_defaults_are_the_papers():
    assert DEFAULTS.to_dict() == {
        "lambda_init": 0.8,  # 5.1
        "delta": 0.1,  # 5.1
        "n_min": 1,  # Algorithm 2: until the set is non-empty
        "tau_floor": 0.1,  # Algorithm 2
        "lambda_min": 0.1,  # Algorithm 3
        "lambda_max": 1.0,  # Algorithm 3
        "alpha": 0.3,  # 5.5, Algorithm 3
        "beta": 2.5,  # 5.5, Algorithm 3
        "gamma": 0.5,  # 5.1
        "prev_init": 1.0,  # Algorithm 3
        "max_keywords": None,  # Algorithm 3 has no cap
        "schedule": "paper",
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
        {"lambda_min": 0.95, "lambda_max": 0.9},  # min above max
        {"lambda_max": 1.2},
        {"alpha": -0.3},
        {"beta": math.nan},
        {"gamma": 1.5},
        {"max_keywords": 0},
        {"tau_floor": 0.9},  # above lambda_init
        {"prev_init": math.inf},
        {"schedule": "other"},
    ],
)
def test_params_reject_bad_values(bad):
    with pytest.raises(ConfigError):
        KeywordParams(**bad)


# --- eq. 5: the annealed weight ----------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (0, 0.917915),  # 1 - e^-2.5 = 1 - 0.082085 (never used: the seed needs no weight)
        (1, 0.889197),  # 1 - e^(0.3 - 2.5) = 1 - 0.110803
        (2, 0.850431),  # 1 - e^-1.9 = 1 - 0.149569
        (3, 0.798103),  # 1 - e^-1.6 = 1 - 0.201897
        (5, 0.632121),  # 1 - e^-1.0 = 1 - 0.367879
        (6, 0.503415),  # 1 - e^-0.7 = 1 - 0.496585: section 5.5's inflection near k = 6
        (7, 0.329680),  # 1 - e^-0.4 = 1 - 0.670320
        (8, 0.1),  # 1 - e^-0.1 = 0.095163, held at the floor of 0.1
        (20, 0.1),
    ],
)
def test_annealed_lambda_by_hand(k, expected):
    assert annealed_lambda(k, DEFAULTS) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (1, 0.789197),  # 0.9 - e^(0.3 - 2.5) = 0.9 - 0.110803
        (2, 0.750431),  # 0.9 - e^-1.9 = 0.9 - 0.149569
        (5, 0.532121),  # 0.9 - e^-1.0 = 0.9 - 0.367879
        (6, 0.5),  # 0.9 - e^-0.7 = 0.403415, clipped to 0.5
    ],
)
def test_annealed_lambda_relaxed_bounds(k, expected):
    assert annealed_lambda(k, RELAXED) == pytest.approx(expected, abs=1e-6)


def test_annealed_lambda_other_params_and_bad_k():
    # No annealing (alpha = 0): 1 - e^-2.5 = 0.917915 for every k.
    flat = KeywordParams(alpha=0.0)
    assert [annealed_lambda(k, flat) for k in (1, 5, 50)] == pytest.approx([0.917915] * 3, abs=1e-6)
    with pytest.raises(BadInputError):
        annealed_lambda(-1, DEFAULTS)


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


# --- eq. 4a/4b, Algorithm 3: SC-MMR ---------------------------------------------------------


def test_sc_mmr_seed_is_the_most_salient_and_the_first_reference_is_one():
    # Seed u0 (0.45) by saliency alone. k=1: u1 scores 0.8891968 * 0.3 = 0.266759, which
    # is not above 0.5 * MMR*_prev = 0.5 * 1.0: one keyword, as MiniLM's small saliencies
    # usually give.
    picks, stop, rejected = sc_mmr([0.45, 0.3], np.eye(2), DEFAULTS)
    assert picks == [(0, None, None)]
    assert stop == "gamma"
    assert rejected == pytest.approx(0.266759, abs=1e-6)


def test_sc_mmr_by_hand_over_three_rounds():
    saliency = np.array([0.9, 0.8, 0.85, 0.1])
    similarity = np.array(
        [
            [1.0, 0.2, 0.9, 0.1],
            [0.2, 1.0, 0.3, 0.2],
            [0.9, 0.3, 1.0, 0.1],
            [0.1, 0.2, 0.1, 1.0],
        ]
    )
    # Seed: u0 (0.9). k=1, lambda 0.8891968, 1 - lambda 0.1108032, redundancy vs u0:
    #   u1 0.8891968*0.8 - 0.1108032*0.2 = 0.7113575 - 0.0221606 = 0.6891968
    #   u2 0.8891968*0.85 - 0.1108032*0.9 = 0.7558173 - 0.0997229 = 0.6560945
    #   u3 0.0889197 - 0.0110803 = 0.0778394
    #   u1 wins; 0.6891968 > 0.5 * 1.0: accepted, MMR*_prev = 0.6891968.
    # k=2, lambda 0.8504314, 1 - lambda 0.1495686, redundancy max over u0, u1:
    #   u2 0.8504314*0.85 - 0.1495686*0.9 = 0.7228667 - 0.1346118 = 0.5882549
    #   u3 0.0850431 - 0.1495686*0.2 = 0.0551294
    #   u2 wins; 0.5882549 > 0.5 * 0.6891968 = 0.3445984: accepted.
    # k=3, lambda 0.7981035, 1 - lambda 0.2018965: u3 0.0798103 - 0.2018965*0.2 = 0.0394310
    #   <= 0.5 * 0.5882549 = 0.2941275: the gamma rule stops.
    picks, stop, rejected = sc_mmr(saliency, similarity, DEFAULTS)
    assert [i for i, _, _ in picks] == [0, 1, 2]
    assert [lam for _, lam, _ in picks[1:]] == pytest.approx([0.889197, 0.850431], abs=1e-6)
    assert [mmr for _, _, mmr in picks[1:]] == pytest.approx([0.689197, 0.588255], abs=1e-6)
    assert stop == "gamma"
    assert rejected == pytest.approx(0.039431, abs=1e-6)


def test_sc_mmr_stops_at_equality_and_ties_go_early():
    # lambda fixed at 0.5: u1 scores 0.5 * 1.0 = 0.5, equal to 0.5 * MMR*_prev: stop (<=).
    flat = KeywordParams(lambda_min=0.5, lambda_max=0.5)
    picks, stop, rejected = sc_mmr([1.0, 1.0], np.eye(2), flat)
    assert (picks, stop, rejected) == ([(0, None, None)], "gamma", 0.5)
    # Two equally salient units: the seed is the first in the text.
    assert sc_mmr([0.5, 0.5], np.eye(2), DEFAULTS)[0][0] == (0, None, None)


def test_sc_mmr_the_reference_is_the_last_accepted_score():
    # Algorithm 3: MMR*_prev <- MMR_best after each accepted pick. Three unrelated units.
    # Seed u0 (0.95). k=1, lambda 0.8891968: u1 0.8891968 * 0.92 = 0.8180611, u2
    # 0.8891968 * 0.55 = 0.4890582; u1 wins, 0.8180611 > 0.5 * 1.0: accepted, and
    # MMR*_prev becomes 0.8180611.
    # k=2, lambda 0.8504314: u2 0.8504314 * 0.55 = 0.4677373 > 0.5 * 0.8180611 = 0.4090306:
    # accepted. Had the reference stayed at 1.0, 0.4677373 <= 0.5 would have stopped here.
    picks, stop, rejected = sc_mmr([0.95, 0.92, 0.55], np.eye(3), DEFAULTS)
    assert [i for i, _, _ in picks] == [0, 1, 2]
    assert [mmr for _, _, mmr in picks[1:]] == pytest.approx([0.818061, 0.467737], abs=1e-6)
    assert (stop, rejected) == ("no candidates", None)
    # A fourth unit scoring 0.4 after them is judged against 0.5 * 0.4677373 = 0.2338687:
    # k=3, lambda 0.7981035: u3 0.7981035 * s; s = 0.5 gives 0.3990518 > 0.2338687.
    picks, _, _ = sc_mmr([0.95, 0.92, 0.55, 0.5], np.eye(4), DEFAULTS)
    assert [mmr for _, _, mmr in picks[1:]] == pytest.approx(
        [0.818061, 0.467737, 0.399052], abs=1e-6
    )


def test_sc_mmr_runs_out_has_no_cap_unless_asked_and_rejects_bad_shapes():
    # Seed u1 (0.95); k=1: u0 0.8891968 * 0.9 = 0.800277 > 0.5: accepted; none left.
    picks, stop, rejected = sc_mmr([0.9, 0.95], np.eye(2), DEFAULTS)
    assert [(i, None if m is None else round(m, 6)) for i, _, m in picks] == [
        (1, None),
        (0, 0.800277),
    ]
    assert (stop, rejected) == ("no candidates", None)
    picks, stop, _ = sc_mmr([0.9, 0.95], np.eye(2), KeywordParams(max_keywords=1))
    assert (len(picks), stop) == (1, "max keywords")
    # Twelve unrelated, very salient units: without a cap, more than the relaxed 5 are
    # kept. Each pick scores lambda_k * 0.99 against half the one before, lambda_k =
    # max(0.1, 1 - e^(0.3k - 2.5)): k=1..7 give 0.889197, 0.850431, 0.798103, 0.727468,
    # 0.632120, 0.503415, 0.329680 (scores 0.880305, 0.841927, 0.790122, 0.720193,
    # 0.625799, 0.498381, 0.326383, each above half the last); k=8 gives
    # max(0.1, 1 - e^-0.1) = 0.1, score 0.099 <= 0.5 * 0.326383 = 0.163192: stop at 8.
    many, stop, rejected = sc_mmr(np.full(12, 0.99), np.eye(12), DEFAULTS)
    assert len(many) == 8 and stop == "gamma"
    assert rejected == pytest.approx(0.099, abs=1e-6)
    assert sc_mmr(np.zeros(0), np.zeros((0, 0)), DEFAULTS) == ([], "no candidates", None)
    with pytest.raises(BadInputError):
        sc_mmr([0.5, 0.4], np.eye(3), DEFAULTS)
    with pytest.raises(BadInputError):
        sc_mmr([0.5, math.nan], np.eye(2), DEFAULTS)


# The relaxed reading (variant mmr-relaxed), by hand with its own weights
# lambda_1 = 0.9 - e^-2.2 = 0.789197, lambda_2 = 0.9 - e^-1.9 = 0.750431,
# lambda_3 = 0.9 - e^-1.6 = 0.698103.


def test_relaxed_gamma_rule_stops():
    saliency = np.array([0.6, 0.55, 0.5, 0.1])
    similarity = np.array(
        [
            [1.0, 0.2, 0.9, 0.1],
            [0.2, 1.0, 0.3, 0.2],
            [0.9, 0.3, 1.0, 0.1],
            [0.1, 0.2, 0.1, 1.0],
        ]
    )
    # k=1 (S empty): 0.789197 * HS -> 0.473518 for u0, the best.
    # k=2: u1 0.750431*0.55 - 0.249569*0.2 = 0.362824 > 0.5 * 0.473518: accepted.
    # k=3: u2 0.698103*0.5 - 0.301897*0.9 = 0.077345 <= 0.5 * 0.362824: stop.
    picks, stop, rejected = sc_mmr(saliency, similarity, RELAXED)
    assert [i for i, _, _ in picks] == [0, 1]
    assert [lam for _, lam, _ in picks] == pytest.approx([0.789197, 0.750431], abs=1e-6)
    assert [mmr for _, _, mmr in picks] == pytest.approx([0.473518, 0.362824], abs=1e-6)
    assert stop == "gamma"
    assert rejected == pytest.approx(0.077345, abs=1e-6)


def test_relaxed_cap_and_non_positive_rule():
    # Unrelated units: k=1 0.473518; k=2 0.750431*0.5 = 0.375216; the cap of 2 stops.
    capped = KeywordParams(
        schedule="relaxed", lambda_min=0.5, lambda_max=0.9, max_keywords=2, n_min=3
    )
    picks, stop, rejected = sc_mmr([0.6, 0.5, 0.45], np.eye(3), capped)
    assert [(i, round(mmr, 6)) for i, _, mmr in picks] == [(0, 0.473518), (1, 0.375216)]
    assert (stop, rejected) == ("max keywords", None)
    # k=2: 0.750431*0.3 - 0.249569*0.95 = -0.011961 <= 0.
    picks, stop, rejected = sc_mmr([0.4, 0.3], [[1.0, 0.95], [0.95, 1.0]], RELAXED)
    assert [(i, round(mmr, 6)) for i, _, mmr in picks] == [(0, 0.315679)]
    assert stop == "non-positive"
    assert rejected == pytest.approx(-0.011961, abs=1e-6)


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


def test_only_conll_like_types_become_units():
    # Section 3.1: a CoNLL-2003 tagger knows persons, organisations, locations and other
    # names; the spaCy types within those, written out by hand:
    assert {
        "PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "EVENT", "WORK_OF_ART", "LAW",
        "PRODUCT", "LANGUAGE",
    } == CONLL_LABELS  # fmt: skip
    sentence = "On Friday Congress approved more than $2 billion for Texas."
    tags = [
        ("On", "O", "", 0.99),
        ("Friday", "B", "DATE", 0.95),
        ("Congress", "B", "ORG", 0.9),
        ("approved", "O", "", 0.99),
        ("more", "B", "MONEY", 0.9),
        ("than", "I", "MONEY", 0.9),
        ("$", "I", "MONEY", 0.9),
        ("2", "I", "MONEY", 0.9),
        ("billion", "I", "MONEY", 0.9),
        ("for", "O", "", 0.99),
        ("Texas", "B", "GPE", 0.97),
    ]
    units = merge_units([tokens(sentence, tags)], [sentence])
    assert [u.text for u in units] == ["Congress", "Texas"]
    # Without the type filter the date joins the next name and the amount is a unit.
    every = merge_units([tokens(sentence, tags)], [sentence], labels=None)
    assert [u.text for u in every] == ["Friday Congress", "more than $2 billion", "Texas"]


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


def test_threshold_lowers_until_the_set_is_not_empty():
    # Algorithm 2: 0.8 already lets two through; the loop stops at the first non-empty set.
    kept, threshold = threshold_units(_units(0.95, 0.85, 0.62, 0.55, 0.3), DEFAULTS)
    assert ([u.confidence for u in kept], threshold) == ([0.95, 0.85], 0.8)
    # Nothing at 0.8 or 0.7; 0.6 lets 0.62 through.
    kept, threshold = threshold_units(_units(0.62, 0.55, 0.3), DEFAULTS)
    assert ([u.confidence for u in kept], threshold) == ([0.62], 0.6)


def test_threshold_steps_do_not_drift():
    # 0.8 - 0.1 is 0.7000000000000001 in floats: unrounded, the 0.7 unit would miss it;
    # seven steps down, 0.1 must still be reached exactly.
    kept, threshold = threshold_units(_units(0.7), DEFAULTS)
    assert (len(kept), threshold) == (1, 0.7)
    kept, threshold = threshold_units(_units(0.1), DEFAULTS)
    assert (len(kept), threshold) == (1, 0.1)


def test_threshold_never_goes_below_the_floor():
    # Algorithm 2's floor of 0.1: units under it are never selected.
    assert threshold_units(_units(0.09, 0.05), DEFAULTS) == ([], 0.1)
    assert threshold_units([], DEFAULTS) == ([], 0.1)


def test_threshold_relaxed_needs_three_and_may_reach_zero():
    # n_min = 3: 0.8 lets 2 through, 0.7 lets 2, 0.6 lets 3.
    kept, threshold = threshold_units(_units(0.95, 0.85, 0.62, 0.55, 0.3), RELAXED)
    assert ([u.confidence for u in kept], threshold) == ([0.95, 0.85, 0.62], 0.6)
    kept, threshold = threshold_units(_units(0.4, 0.0), RELAXED)
    assert (len(kept), threshold) == (2, 0.0)


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
        DEFAULTS,
        0.7,
        (unit,),
        (MMRPick(0, "Paris", None, None, 0.48),),
        "no candidates",
        None,
        (("Friday", 0.4),),
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
        "iterations": [{"k": 0, "unit": "Paris", "lambda_k": None, "mmr": None, "saliency": 0.48}],
        "stop": "no candidates",
        "rejected_mmr": None,
        "below_threshold": [{"text": "Friday", "confidence": 0.4}],
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


def test_disambiguate_replaces_a_whole_word_mention_only():
    encoder = ScriptedEncoder([[1, 0], [0.6, 0.8]])
    disambiguate("It failed because the US voted no.", "US", ["a country"], encoder)
    assert encoder.seen[1] == "It failed because the a country voted no."
    with pytest.raises(BadInputError):
        disambiguate("It failed because of rain.", "US", ["a country"], encoder)


class LetterEncoder:
    """A fake encoder: each text's letter counts, unit length; remembers what it read."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts):
        self.seen += list(texts)
        rows = np.zeros((len(texts), 26), dtype=np.float32)
        for i, text in enumerate(texts):
            for ch in text.lower():
                if "a" <= ch <= "z":
                    rows[i, ord(ch) - 97] += 1.0
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_listed_names_count_where_they_occur_as_whole_words():
    sentences = [
        "Prices rose because business slowed.",
        "Analysts were surprised.",
        "Markets fell sharply.",
        "The US economy grew last year.",
    ]
    encoder = LetterEncoder()
    selection = KeywordSelector(encoder=encoder).select_names(" ".join(sentences), ["US"])
    assert [u.sentence for u in selection.units] == [3]
    # Only the context of the sentence naming "US" was embedded, not that of "because".
    assert encoder.seen == ["US", local_context(sentences, 3), " ".join(sentences)]


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
    # Algorithm 3's schedule written out again, independently of the module.
    return max(0.1, 1.0 - math.exp(0.3 * k - 2.5))


@pytest.mark.integration
def test_selection_on_news_recomputes_from_its_trace(selector, encoder):
    trace = selector.select(NEWS).to_trace()
    sentences = split_sentences(NEWS)
    units = trace["units"]
    texts = [u["text"] for u in units]
    assert {"Christine Lagarde", "Frankfurt", "London", "Germany"} <= set(texts)
    assert "Thursday" not in texts and "next week" not in texts  # DATE is not a CoNLL type
    assert len(texts) == len({t.casefold() for t in texts})
    for unit in units:
        assert unit["text"] in NEWS
        assert unit["confidence"] >= trace["threshold"] >= 0.1
        assert unit["hierarchical"] == pytest.approx(unit["local"] * unit["global"], rel=1e-12)
        # eq. 3 from scratch: unit, its context, the article.
        context = local_context(sentences, unit["sentence"])
        e_u, e_ctx, e_doc = encoder.encode([unit["text"], context, " ".join(sentences)])
        assert unit["local"] == pytest.approx(float(e_u @ e_ctx), abs=1e-5)
        assert unit["global"] == pytest.approx(float(e_ctx @ e_doc), abs=1e-5)

    # Algorithm 3 from scratch: the seed by saliency, then the best remaining MMR score.
    vectors = encoder.encode(texts).astype(np.float64)
    similarity = vectors @ vectors.T
    hs = [u["hierarchical"] for u in units]

    def scores(selected: list[int]) -> dict[int, float]:
        lam = _lambda(len(selected))
        return {
            i: lam * hs[i] - (1 - lam) * max(similarity[i, j] for j in selected)
            for i in range(len(units))
            if i not in selected
        }

    iterations = trace["iterations"]
    assert iterations[0] == {
        "k": 0,
        "unit": texts[int(np.argmax(hs))],
        "lambda_k": None,
        "mmr": None,
        "saliency": max(hs),
    }
    selected, previous = [int(np.argmax(hs))], 1.0
    for pick in iterations[1:]:
        assert pick["k"] == len(selected)
        assert pick["lambda_k"] == pytest.approx(_lambda(len(selected)), abs=1e-12)
        candidates = scores(selected)
        chosen = texts.index(pick["unit"])
        assert pick["mmr"] == pytest.approx(candidates[chosen], abs=1e-5)
        assert pick["mmr"] >= max(candidates.values()) - 1e-5
        assert pick["mmr"] > 0.5 * previous
        previous = pick["mmr"]
        selected.append(chosen)

    if trace["stop"] == "gamma":
        best = max(scores(selected).values())
        assert trace["rejected_mmr"] == pytest.approx(best, abs=1e-5)
        assert best <= 0.5 * previous
    else:
        assert (trace["stop"], len(selected)) == ("no candidates", len(units))


@pytest.mark.integration
def test_dates_and_amounts_never_become_units(selector):
    text = (
        "On Friday, Apple agreed to pay more than $2 billion to the European Commission, "
        "the company said in Brussels at 9 a.m., about 15 percent of its profit in 2019."
    )
    units = [u.text for u in selector.select(text).units]
    assert units, "the organisations and the city are entities"
    for word in ("Friday", "$2 billion", "9 a.m.", "15 percent", "2019"):
        assert not any(word in u for u in units), (word, units)


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
