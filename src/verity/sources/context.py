"""What the sources of one check know about the subject under test.

A benchmark checks many examples with one set of sources. The wrappers that act per
example, the leakage guard (`verity.sources.leakage`) and the poisoned-evidence attack
(`verity.sources.poisoned`), read the example from here; the harness sets it around each
check:

    with searching_for(SearchContext(subject_id="11972", subject_text="Says ...")):
        verdict = method.verify(claim)

It is a context variable, so it follows the check into the event loop a method runs in
and into the worker threads that ``asyncio.to_thread`` starts, while checks running at
once in other threads each see their own. Outside a benchmark nothing is set and the
wrappers pass results through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from verity.domain import Evidence


@dataclass(frozen=True)
class SearchContext:
    """The example under test, as far as sources acting for a benchmark need to know it.

    ``drop_documents`` are document ids no source may return for this example (a claim's
    own gold abstracts); ``poison`` are the passages an attack puts first in every result
    list for it.
    """

    subject_id: str | None = None
    subject_text: str = ""
    drop_documents: frozenset[str] = frozenset()
    poison: tuple[Evidence, ...] = ()


_CURRENT: ContextVar[SearchContext | None] = ContextVar("verity_search_context", default=None)


def current_context() -> SearchContext | None:
    """The context of the check running in this thread or task, if a harness set one."""
    return _CURRENT.get()


@contextmanager
def searching_for(context: SearchContext) -> Iterator[SearchContext]:
    """Make ``context`` the current one until the block ends."""
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)
