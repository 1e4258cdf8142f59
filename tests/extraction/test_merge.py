"""Near copies merged with the real sentence encoder; different facts never merged."""

from __future__ import annotations

import pytest

from verity.extraction.merge import merge_claims
from verity.nlp.embed import default_encoder


@pytest.fixture(scope="module")
def encoder():  # type: ignore[no-untyped-def]
    return default_encoder()


def test_rewordings_of_one_fact_are_one_claim_with_every_place(encoder) -> None:  # type: ignore[no-untyped-def]
    claims = [
        "Paris is in France.",
        "The dam was finished in 1936.",
        "Paris is located in France.",
        "The dam was completed in 1936.",
    ]
    assert merge_claims(claims, encoder) == [[0, 2], [1, 3]]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Paris is in France.", "Paris is the capital of France."),
        ("The tower is 300 metres tall.", "The tower is 330 metres tall."),
        ("Sales rose in 2019.", "Sales fell in 2019."),
        ("Joe Biden won the 2020 election.", "Donald Trump won the 2020 election."),
    ],
)
def test_different_facts_about_one_subject_stay_apart(encoder, a: str, b: str) -> None:  # type: ignore[no-untyped-def]
    assert merge_claims([a, b], encoder) == [[0], [1]]


def test_without_an_encoder_only_the_same_words_merge() -> None:
    claims = ["Paris is in France.", "paris  is in FRANCE.", "Paris is located in France."]
    assert merge_claims(claims, None) == [[0, 1], [2]]


def test_claims_whose_numbers_differ_are_never_merged_however_near(encoder) -> None:  # type: ignore[no-untyped-def]
    # 0.890 apart with this encoder: a lower threshold would merge them but for the numbers.
    claims = ["The tower is 300 metres tall.", "The tower is 330 metres tall."]
    assert merge_claims(claims, encoder, threshold=0.8) == [[0], [1]]
    assert merge_claims(["The tower is tall.", "The tower is very tall."], encoder, 0.8) == [[0, 1]]
