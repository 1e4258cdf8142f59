"""Leakage guards: keep a benchmark's answer key out of the evidence a method sees.

A fact-checking benchmark is made of published fact-checks. A source that can reach the
very ruling under test (a fact-check site, a corpus of rulings, the claim's own gold
abstracts) hands the method the label. `GuardedSource` wraps a source and, for the
example under test (`verity.sources.context.SearchContext`), removes:

- results from the dataset's own fact-checking sites (``exclude_domains``), including a
  whole source whose results come from one of them without URLs (its ``publishers``);
- results whose document id is one of the example's ``drop_documents`` (the statement's
  own id in a corpus of rulings, a Check-COVID claim's own gold abstracts);
- with ``same_statement``, fact-check results about the statement itself: near-identical
  text by `about_statement` (the rule is written there).

    guarded = GuardedSource(make_source("factcheck:offline"), exclude_domains=("politifact.com",))
    with searching_for(SearchContext(subject_id="11972", subject_text="Says ...")):
        guarded.search("...", k=3)

The source is asked for more results than ``k`` so that ``k`` are likely left after the
guard; what is dropped is counted in `GuardedSource.dropped`.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Sequence
from datetime import date
from typing import Any

from verity.domain import Evidence
from verity.sources.base import Source, is_excluded
from verity.sources.context import SearchContext, current_context

#: Results asked for beyond ``k``, to make up for those the guard drops.
EXTRA_RESULTS = 5
#: Share of the statement's word trigrams a fact-check result must contain to be about it.
SAME_STATEMENT_SHARE = 0.8
#: Word n-grams compared by `about_statement`.
SHINGLE = 3

_WORD = re.compile(r"\w+")


def document_id(evidence: Evidence) -> str | None:
    """The id of the document a passage comes from: a corpus id ``DOC#N`` without ``#N``."""
    if not evidence.id:
        return None
    return evidence.id.rsplit("#", 1)[0] if "#" in evidence.id else evidence.id


def _shingles(words: Sequence[str], size: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def about_statement(evidence: Evidence, statement: str) -> bool:
    """True when a result quotes the statement nearly word for word.

    The rule: the statement's lower-cased words, taken three at a time, are looked for
    among the result's (title and text); when at least `SAME_STATEMENT_SHARE` (80 %) of
    them are there, the result is about that very statement. A statement of fewer than
    three words must appear whole. Word order matters, so a ruling on another statement
    about the same people and topic, which shares words but not phrasing, is kept.
    """
    claim = _WORD.findall(statement.casefold())
    if not claim:
        return False
    found = _WORD.findall(f"{evidence.title}\n{evidence.text}".casefold())
    size = min(SHINGLE, len(claim))
    wanted = _shingles(claim, size)
    have = _shingles(found, size)
    return len(wanted & have) >= SAME_STATEMENT_SHARE * len(wanted)


def is_fact_check(source_name: str) -> bool:
    """Whether results of this source are fact-checks (``factcheck``, ``factcheck:...``)."""
    return source_name.split(":", 1)[0] == "factcheck"


class GuardedSource:
    """A source that never returns the example's answer key; see the module docstring."""

    def __init__(
        self,
        inner: Source,
        *,
        exclude_domains: Sequence[str] = (),
        same_statement: bool = True,
        drop_documents: bool = True,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.exclude_domains = tuple(exclude_domains)
        self.same_statement = same_statement and is_fact_check(inner.name)
        self.drop_documents = drop_documents
        publishers = tuple(getattr(inner, "publishers", ()) or ())
        # A source whose every result comes from an excluded site has nothing to give.
        self.silenced = bool(publishers) and all(
            is_excluded(f"https://{site}/", self.exclude_domains) for site in publishers
        )
        self._lock = threading.Lock()
        self.dropped: Counter[str] = Counter()

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """The wrapped source's results without the example's answer key, at most ``k``."""
        if self.silenced:
            self._count("publisher excluded")
            return []
        domains = (*exclude_domains, *self.exclude_domains)
        found = self.inner.search(query, k + EXTRA_RESULTS, before=before, exclude_domains=domains)
        context = current_context()
        kept: list[Evidence] = []
        for ev in found:
            reason = self._leak(ev, context)
            if reason is not None:
                self._count(reason)
                continue
            kept.append(ev)
            if len(kept) >= k:
                break
        return kept

    def _leak(self, ev: Evidence, context: SearchContext | None) -> str | None:
        """Why this result gives the answer away, or None."""
        if context is None:
            return None
        if self.drop_documents and document_id(ev) in context.drop_documents:
            return "the example's own document"
        if (
            self.same_statement
            and context.subject_text
            and about_statement(ev, context.subject_text)
        ):
            return "a fact-check of the statement"
        return None

    def _count(self, reason: str) -> None:
        with self._lock:
            self.dropped[reason] += 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def to_dict(self) -> dict[str, Any]:
        """The wrapped source's configuration and the guard's."""
        return {
            **self.inner.to_dict(),
            "guard": {
                "exclude_domains": list(self.exclude_domains),
                "same_statement": self.same_statement,
                "drop_documents": self.drop_documents,
            },
        }
