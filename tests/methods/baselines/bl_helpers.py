"""Helpers the baseline tests share: reading a fake model's prompts, a list as a source."""

from __future__ import annotations

from collections.abc import Sequence

from verity.domain import Evidence
from verity.sources.base import apply_filters
from verity.testing import FakeChatModel


def prompts_of(fake: FakeChatModel, step_start: str) -> list[str]:
    """The user prompts of the calls whose instruction starts with ``step_start``."""
    return [m[-1].content for m, _, _ in fake.requests if m[0].content.startswith(step_start)]


class ListSource:
    """A source that answers every query with the same passages, and records the queries."""

    name = "list"

    def __init__(self, passages: Sequence[Evidence]) -> None:
        self.passages = list(passages)
        self.queries: list[str] = []

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        self.queries.append(query)
        return apply_filters(self.passages, k, before=before, exclude_domains=exclude_domains)

    def to_dict(self):
        return {"name": self.name}
