"""What a model call costs: a price per million tokens for each model, and the sum.

    price = shipped_price("openai:gpt-4o-mini", base_url=None)
    price.cost_of(prompt_tokens=12_000, completion_tokens=800)   # 0.00228 (US dollars)

A price is for one model at one provider: US dollars per million prompt tokens, per
million completion tokens, and, where the provider discounts them, per million prompt
tokens it served from its own prompt cache. verity ships the prices of a few hosted models
(`SHIPPED`), each with where and when it was read; they apply only when the endpoint is
that provider's own (no ``--base-url``, or the provider's address), since the same model
name on a local server costs nothing or something else. A price in ``verity.toml``
(``[prices."openai:MODEL"]``, see `verity.config`) wins over a shipped one. The embedded
model, and any model without a price, costs 0 and is reported as "price unknown".

Providers change their prices: the shipped figures are a default to check, not a bill.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from verity.domain import Usage

__all__ = [
    "SHIPPED",
    "Price",
    "ShippedPrice",
    "cost_phrase",
    "cost_text",
    "dollars",
    "shipped_price",
]

_MILLION = 1_000_000


class Price(BaseModel):
    """US dollars per million tokens of one model at one provider.

    Price(input=0.15, output=0.60)     # what a verity.toml [prices."SPEC"] table holds
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0, le=10_000, description="USD per million prompt tokens")
    output: float = Field(ge=0, le=10_000, description="USD per million completion tokens")
    cached_input: float | None = Field(
        default=None,
        ge=0,
        le=10_000,
        description="USD per million prompt tokens the provider served from its prompt cache",
    )
    read: dt.date | None = Field(default=None, description="when the price was read")
    source: str = Field(default="", max_length=300, description="where it was read")

    def cost_of(
        self, *, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0
    ) -> float:
        """US dollars for one call's tokens."""
        cached = min(max(cached_tokens, 0), prompt_tokens) if self.cached_input is not None else 0
        fresh = prompt_tokens - cached
        dollars = fresh * self.input + completion_tokens * self.output
        if cached:
            dollars += cached * (self.cached_input or 0.0)
        return dollars / _MILLION


@dataclass(frozen=True)
class ShippedPrice:
    """A provider's published price for one model, as verity ships it."""

    model: str
    host: str
    price: Price


_READ = dt.date(2026, 11, 28)
_OPENAI = (
    "platform.openai.com/docs/pricing, standard tier, as quoted by a price index "
    "ingested 2026-06-20"
)
_DEEPSEEK = "api-docs.deepseek.com/quick_start/pricing, the price list effective 2025-09-05"


def _openai(model: str, dollars_in: float, dollars_out: float, cached: float) -> ShippedPrice:
    price = Price(
        input=dollars_in, output=dollars_out, cached_input=cached, read=_READ, source=_OPENAI
    )
    return ShippedPrice(model, "api.openai.com", price)


def _deepseek(model: str) -> ShippedPrice:
    price = Price(input=0.56, output=1.68, cached_input=0.07, read=_READ, source=_DEEPSEEK)
    return ShippedPrice(model, "api.deepseek.com", price)


#: The hosted models whose prices verity knows without being told.
SHIPPED: tuple[ShippedPrice, ...] = (
    _openai("gpt-4o", 2.50, 10.00, 1.25),
    _openai("gpt-4o-mini", 0.15, 0.60, 0.075),
    _openai("gpt-4.1", 2.00, 8.00, 0.50),
    _openai("gpt-4.1-mini", 0.40, 1.60, 0.10),
    _openai("gpt-4.1-nano", 0.10, 0.40, 0.025),
    _openai("o3", 2.00, 8.00, 0.50),
    _openai("o3-mini", 1.10, 4.40, 0.55),
    _deepseek("deepseek-chat"),
    _deepseek("deepseek-reasoner"),
)

# A dated snapshot ("gpt-4o-mini-2024-07-18") is priced as its model.
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def shipped_price(spec: str, base_url: str | None) -> Price | None:
    """The shipped price of ``spec`` at this endpoint; None when verity has none.

    Only ``openai:MODEL`` specs at the provider's own endpoint are priced: OpenAI's when
    no ``base_url`` is given, another provider's at its own address.

        shipped_price("openai:gpt-4o", None)                                 # 2.50 / 10.00
        shipped_price("openai:deepseek-chat", "https://api.deepseek.com")    # 0.56 / 1.68
        shipped_price("openai:gpt-4o", "http://localhost:8080/v1")           # None
    """
    backend, _, name = spec.strip().partition(":")
    if backend != "openai" or not name:
        return None
    host = "api.openai.com" if not base_url else (urlsplit(base_url).hostname or "").lower()
    model = _SNAPSHOT.sub("", name.strip())
    for entry in SHIPPED:
        if entry.model == model and entry.host == host:
            return entry.price
    return None


PRICE_UNKNOWN = "price unknown"


def cost_phrase(usage: Usage) -> str:
    """``cost $0.0042`` for a summary line, or ``price unknown``."""
    said = cost_text(usage)
    return said if said == PRICE_UNKNOWN else f"cost {said}"


def dollars(value: float) -> str:
    """US dollars with the digits that matter: ``$12.50``, ``$0.0123``, ``$0.000062``."""
    if value >= 1:
        return f"${value:,.2f}"
    if value >= 0.01:
        return f"${value:.4f}"
    if value >= 1e-6:
        return f"${value:.6f}"
    return "$0" if value <= 0 else f"${value:.1e}"


def cost_text(usage: Usage) -> str:
    """What calls cost, in words: ``$0.0042``, ``price unknown``, or both.

    cost_text(verdict.usage)     # '$0.0042', or '$0 (all answers from the cache)'
    """
    sent = usage.llm_calls - usage.cached_calls
    if usage.llm_calls and sent <= 0:
        return "$0 (all answers from the cache)"
    if usage.unpriced_calls and usage.unpriced_calls >= sent:
        return PRICE_UNKNOWN
    shown = dollars(usage.cost)
    if usage.unpriced_calls:
        return f"{shown} + {usage.unpriced_calls} call(s) at an unknown price"
    return shown
