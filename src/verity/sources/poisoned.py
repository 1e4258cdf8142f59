"""The poisoned-evidence attack as a source wrapper: an example's adversarial passages first.

ToE's AdvFact (§IV-A) poisons the retrieval corpus PoisonedRAG-style: passages written to
be retrieved for a statement and to support it. `PoisonedSource` puts the passages of the
example under test (`verity.sources.context.SearchContext.poison`) at the top of every
result list of the source it wraps, where the attack is built to rank them, and the
source's own results after them, ``k`` in all:

    source = PoisonedSource(OfflineWiki())
    with searching_for(SearchContext(poison=(passage,))):
        source.search("...", k=3)        # [passage, wiki result 1, wiki result 2]

Outside such a context, or for an example without passages, results pass unchanged. The
passages are marked ``source="poisoned"``, so a report can count the verdicts that cite
one, and two wrapped sources give the same passage once after de-duplication.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from verity.domain import Evidence
from verity.sources.base import Source
from verity.sources.context import current_context

POISONED = "poisoned"
"""``Evidence.source`` of an injected passage."""


def is_poisoned(evidence: Evidence) -> bool:
    """True for a passage the attack injected."""
    return evidence.source == POISONED


class PoisonedSource:
    """A source whose results for the example under test start with its poisoned passages."""

    def __init__(self, inner: Source) -> None:
        self.inner = inner
        self.name = inner.name

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """The example's passages, then the wrapped source's results: at most ``k``."""
        context = current_context()
        poison = context.poison if context is not None else ()
        if not poison:
            return self.inner.search(query, k, before=before, exclude_domains=exclude_domains)
        # The passages carry no date and no URL, so no cutoff or exclusion can drop them:
        # the attack places them to be read whatever the filters.
        room = k - len(poison)
        found = (
            self.inner.search(query, room, before=before, exclude_domains=exclude_domains)
            if room > 0
            else []
        )
        return [*poison, *found][:k]

    def __getattr__(self, name: str) -> Any:
        # Everything else (lookup, warm_up, publishers) is the wrapped source's.
        return getattr(self.inner, name)

    def to_dict(self) -> dict[str, Any]:
        """The wrapped source's configuration, marked as poisoned."""
        return {**self.inner.to_dict(), "poisoned": True}
