"""``claimify-select``: Claimify's selection vote as a check-worthiness judge (fake model)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from verity.domain import Article, Claim, Label
from verity.errors import BadInputError
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.testing import FakeChatModel


def _method(votes: list[bool], variant: str = "") -> tuple[Any, FakeChatModel]:
    def script(_messages: Any, _schema: Any) -> str:
        seed = fake.requests[-1][1].seed or 0
        return json.dumps({"analysis": f"answer {seed}", "verifiable": votes[seed]})

    fake = FakeChatModel(script, model=f"fake-cw-{votes}-{variant}")
    models = ModelSet(ModelClient(fake))
    name = "claimify-select" + (f"/{variant}" if variant else "")
    return load_method(name, models=models), fake


@pytest.mark.parametrize(
    ("votes", "label", "confidence"),
    [
        # Appendix D: 3 answers, at least 2 must find a verifiable fact.
        ([True, True, False], Label.CHECK_WORTHY, 2 / 3),
        ([True, True, True], Label.CHECK_WORTHY, 1.0),
        ([False, True, False], Label.NOT_CHECK_WORTHY, 2 / 3),
        ([False, False, False], Label.NOT_CHECK_WORTHY, 1.0),
    ],
)
def test_a_sentence_is_check_worthy_when_two_of_three_answers_find_a_fact(
    votes: list[bool], label: Label, confidence: float
) -> None:
    method, fake = _method(votes)
    verdict = method.verify(Claim(text="We're consuming 50 percent of the world's cocaine."))
    assert verdict.label is label
    assert verdict.confidence == pytest.approx(confidence)
    assert len(fake.requests) == 3
    assert {p.temperature for _, p, _ in fake.requests} == {0.2}
    # The sentence is its own excerpt: CheckThat's sentences come without context.
    user = fake.requests[0][0][-1].content
    assert user.count("50 percent of the world") == 2


def test_the_single_variant_asks_once_and_says_it_is_not_the_paper() -> None:
    method, fake = _method([True, False, False], "single")
    verdict = method.verify(Claim(text="Taxes rose by 3 percent in 1990."))
    assert verdict.label is Label.CHECK_WORTHY
    assert len(fake.requests) == 1
    assert fake.requests[0][1].temperature == 0.0
    assert "verity variant" in str(verdict.trace.model_extra.get("variant_kind"))


def test_an_article_is_refused() -> None:
    method, _ = _method([True, True, True])
    with pytest.raises(BadInputError):
        method.verify(Article(text="Some article."))
