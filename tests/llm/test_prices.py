"""Prices: what a call costs, where a shipped price applies, and how a total is shown."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from verity.config import load_settings
from verity.domain import Message, Usage
from verity.llm.client import ModelClient
from verity.llm.prices import SHIPPED, Price, cost_text, shipped_price
from verity.llm.spec import ModelSettings, make_model
from verity.testing import FakeChatModel


def test_a_calls_cost_is_its_tokens_at_the_price_per_million() -> None:
    price = Price(input=2.50, output=10.00, cached_input=1.25)
    # 12,000 prompt tokens of which 4,000 from the provider's prompt cache, 800 completion:
    # (8,000 * 2.50 + 4,000 * 1.25 + 800 * 10.00) / 1,000,000 = 0.033 dollars.
    assert price.cost_of(
        prompt_tokens=12_000, completion_tokens=800, cached_tokens=4_000
    ) == pytest.approx(0.033)
    # No cached rate: every prompt token at the full rate, (12,000 * 0.15 + 800 * 0.6) / 1e6.
    plain = Price(input=0.15, output=0.60)
    assert plain.cost_of(
        prompt_tokens=12_000, completion_tokens=800, cached_tokens=4_000
    ) == pytest.approx(0.00228)


def test_shipped_prices_apply_at_the_providers_own_endpoint_only() -> None:
    mini = shipped_price("openai:gpt-4o-mini", None)
    assert mini is not None and (mini.input, mini.output) == (0.15, 0.60)
    assert shipped_price("openai:gpt-4o-mini-2024-07-18", None) == mini  # a dated snapshot
    assert shipped_price("openai:gpt-4o-mini", "https://api.openai.com/v1") == mini
    # The same name on a local server is not OpenAI's bill.
    assert shipped_price("openai:gpt-4o-mini", "http://127.0.0.1:8080/v1") is None
    deepseek = shipped_price("openai:deepseek-chat", "https://api.deepseek.com")
    assert deepseek is not None and (deepseek.input, deepseek.output) == (0.56, 1.68)
    assert shipped_price("openai:deepseek-chat", None) is None
    assert shipped_price("local", None) is None
    assert shipped_price("openai:some-model", None) is None


def test_every_shipped_price_says_where_and_when_it_was_read() -> None:
    for entry in SHIPPED:
        assert entry.price.read is not None and entry.price.read <= dt.date.today()
        assert entry.price.source
        assert entry.price.output >= entry.price.input > 0


def test_a_client_charges_calls_to_a_priced_model_and_counts_the_rest_apart() -> None:
    hi = [Message(role="user", content="one two three")]
    priced = ModelClient(FakeChatModel(["an answer"]), price=Price(input=1.0, output=10.0))
    call = priced.chat(hi).call
    assert call.usage.cost == pytest.approx((3 * 1.0 + 2 * 10.0) / 1e6)
    assert call.usage.unpriced_calls == 0
    unknown = ModelClient(FakeChatModel(["an answer"])).chat(hi).call
    assert (unknown.usage.cost, unknown.usage.unpriced_calls) == (0.0, 1)


def test_cost_text_never_passes_part_of_a_bill_off_as_all_of_it() -> None:
    assert cost_text(Usage(llm_calls=2, cost=0.0123)) == "$0.0123"
    assert cost_text(Usage(llm_calls=2, unpriced_calls=2)) == "price unknown"
    assert cost_text(Usage(llm_calls=3, cost=0.5, unpriced_calls=1)) == (
        "$0.5000 + 1 call(s) at an unknown price"
    )
    assert cost_text(Usage(llm_calls=2, cached_calls=2)) == "$0 (all answers from the cache)"
    assert cost_text(Usage(llm_calls=4, cost=12.5)) == "$12.50"


def test_a_price_in_the_settings_file_prices_every_model_of_that_spec(tmp_path: Path) -> None:
    config = tmp_path / "verity.toml"
    config.write_text(
        '[model]\nspec = "openai:mine"\nbase_url = "http://127.0.0.1:9/v1"\n'
        '[roles.judge]\nspec = "openai:gpt-4o"\n'
        '[prices."openai:mine"]\ninput = 0.2\noutput = 0.8\n',
        encoding="utf-8",
    )
    settings = load_settings(config_file=config, env={})
    assert settings.model.price == Price(input=0.2, output=0.8)
    assert settings.roles["judge"].price is None  # not in the table: the shipped one applies
    assert settings.roles["judge"].known_price() == shipped_price("openai:gpt-4o", None)
    # Another spec in place of the default model takes that spec's price, never the old one.
    assert settings.with_model("openai:other").price is None
    assert settings.with_model("openai:mine").price == Price(input=0.2, output=0.8)


def test_make_model_gives_the_client_its_price(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # built, never called
    client = make_model(ModelSettings(spec="openai:gpt-4o-mini", cache=False))
    assert client.price == shipped_price("openai:gpt-4o-mini", None)
    assert make_model(ModelSettings(spec="local", cache=False)).price is None


def test_dollars_keep_the_digits_that_matter() -> None:
    from verity.llm.prices import dollars

    assert [dollars(v) for v in (1234.5, 0.0123, 0.000062, 0.0, 4e-8)] == [
        "$1,234.50", "$0.0123", "$0.000062", "$0", "$4.0e-08",
    ]  # fmt: skip


def test_a_summary_line_says_cost_or_that_the_price_is_unknown() -> None:
    from verity.llm.prices import cost_phrase

    assert cost_phrase(Usage(llm_calls=1, cost=0.0123)) == "cost $0.0123"
    assert cost_phrase(Usage(llm_calls=1, unpriced_calls=1)) == "price unknown"


def test_an_answer_from_verity_s_own_cache_costs_nothing(tmp_path: Path) -> None:
    from verity.llm.cache import ResponseCache

    hi = [Message(role="user", content="one two three")]
    model = ModelClient(
        FakeChatModel(["an answer"]),
        price=Price(input=1.0, output=10.0),
        cache=ResponseCache(tmp_path / "answers.sqlite"),
    )
    assert model.chat(hi).call.usage.cost > 0
    again = model.chat(hi).call.usage
    assert again.cached_calls == 1 and (again.cost, again.unpriced_calls) == (0.0, 0)


def test_the_endpoint_set_in_the_environment_decides_the_shipped_price(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    assert ModelSettings(spec="openai:gpt-4o").known_price() is None  # a local server
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.deepseek.com")
    deepseek = ModelSettings(spec="openai:deepseek-chat").known_price()
    assert deepseek is not None and deepseek.output == 1.68
