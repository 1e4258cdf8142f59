"""The evidence-source protocol and the filters every source applies.

source = OfflineWiki()
for ev in source.search("Eiffel Tower location", k=5, before=date(2020, 1, 1)):
    print(ev.title, ev.score)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from datetime import date
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from verity.domain import Evidence
from verity.limits import Limits


@runtime_checkable
class Source(Protocol):
    """Anything that returns evidence for a query."""

    name: str

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """Return at most ``k`` passages, best first, none published on or after ``before``."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """The exact configuration of this source, for run manifests (never a secret)."""
        ...


@runtime_checkable
class PageSource(Source, Protocol):
    """A source whose passages are pages with titles that can be looked up."""

    def lookup(self, title: str, *, fuzzy: bool = True) -> Evidence | None:
        """Return the page with this title, or None.

        Local sources fall back to the closest fuzzy title match unless ``fuzzy`` is False;
        remote ones follow the provider's own redirects.
        """
        ...


def domain_of(url: str | None) -> str:
    """Lower-case host of a URL without a leading ``www.``; empty when there is none."""
    if not url:
        return ""
    host = (urlsplit(url if "//" in url else f"//{url}").hostname or "").lower()
    return host.removeprefix("www.")


def is_excluded(url: str | None, exclude_domains: Sequence[str]) -> bool:
    """True when the URL's host is one of the domains or a subdomain of one."""
    host = domain_of(url)
    if not host:
        return False
    for raw in exclude_domains:
        domain = raw.lower().strip().removeprefix("www.")
        if domain and (host == domain or host.endswith("." + domain)):
            return True
    return False


def apply_filters(
    results: Iterable[Evidence],
    k: int,
    *,
    before: date | None = None,
    exclude_domains: Sequence[str] = (),
    max_chars: int | None = None,
) -> list[Evidence]:
    """Drop excluded domains and passages dated on or after the cutoff; keep the first ``k``.

    Every source calls this on its results, even when the provider was asked to filter
    already, because providers apply such filters loosely. A passage without a date is
    kept: a cutoff can only exclude what is known to be too late. A passage longer than
    ``max_chars`` (default: the ``passage_chars`` limit, `verity.limits`) is shortened
    and records its original length in ``truncated_from``.
    """
    limit = max_chars if max_chars is not None else passage_limit()
    kept: list[Evidence] = []
    for ev in results:
        if is_excluded(ev.url, exclude_domains):
            continue
        if before is not None and ev.published is not None and ev.published >= before:
            continue
        kept.append(shorten(ev, limit))
        if len(kept) >= k:
            break
    return kept


def passage_limit() -> int:
    """The ``passage_chars`` limit in force (`verity.limits`, from the environment).

    Read from the environment rather than the settings file: sources are shared by every
    run in a process, and a per-run limit could not apply to a shared source.
    """
    return Limits.from_env(os.environ).passage_chars


def shorten(ev: Evidence, max_chars: int) -> Evidence:
    """The passage cut to at most ``max_chars`` at a word boundary, marked as cut."""
    if len(ev.text) <= max_chars:
        return ev
    cut = ev.text[:max_chars]
    space = cut.rfind(" ")
    # A word boundary in the last fifth keeps words whole; text without spaces is cut hard.
    if space > max_chars * 4 // 5:
        cut = cut[:space]
    return ev.model_copy(update={"text": cut.rstrip(), "truncated_from": len(ev.text)})
