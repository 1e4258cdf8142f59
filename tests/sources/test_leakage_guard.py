"""The per-example source wrappers: the leakage guard and the poisoned-evidence attack."""

from __future__ import annotations

import asyncio
import threading
from datetime import date

import pytest

from verity.domain import Evidence
from verity.methods.base import run_sync
from verity.sources.context import SearchContext, current_context, searching_for
from verity.sources.leakage import (
    SAME_STATEMENT_SHARE,
    GuardedSource,
    about_statement,
    document_id,
)
from verity.sources.poisoned import PoisonedSource, is_poisoned


class ListSource:
    """A stub source: the same passages for any query, filters applied like a real one."""

    def __init__(self, name: str, passages: list[Evidence], publishers: tuple[str, ...] = ()):
        self.name = name
        self.passages = passages
        self.asked: list[tuple[int, tuple[str, ...]]] = []
        if publishers:
            self.publishers = publishers

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        from verity.sources.base import apply_filters

        self.asked.append((k, tuple(exclude_domains)))
        return apply_filters(self.passages, k, before=before, exclude_domains=exclude_domains)

    def to_dict(self):
        return {"type": "list", "name": self.name}


def ev(text: str, *, id: str | None = None, url: str | None = None, source="factcheck:offline"):
    return Evidence(text=text, id=id, url=url, source=source)


STATEMENT = "Says the unemployment rate in Texas doubled during the last four years."


def test_about_statement_follows_the_written_rule() -> None:
    # 12 words -> 10 trigrams; 80 % means at least 8 of them.
    words = STATEMENT.rstrip(".").split()
    assert len(words) == 12
    verbatim = ev(f"Ruling: {STATEMENT} We rate it False.")
    assert about_statement(verbatim, STATEMENT)
    # Changing the 10th word breaks the 3 trigrams holding it: 7 of 10 left, below 80 %.
    changed = STATEMENT.replace("last", "past")
    assert not about_statement(ev(changed), STATEMENT)
    # Changing the 2nd word breaks the 2 trigrams holding it: exactly 8 of 10 still counts.
    assert about_statement(ev(STATEMENT.replace("the unemployment", "an unemployment")), STATEMENT)
    # Changing the last word breaks one trigram: 9 of 10 stays above.
    assert about_statement(ev(STATEMENT.replace("years", "decades")), STATEMENT)
    # Same words, other order: a different statement about the same topic is kept.
    shuffled = " ".join(reversed(words))
    assert not about_statement(ev(shuffled), STATEMENT)
    # Case and punctuation do not matter; the title counts too.
    title_only = Evidence(text="We rate it False.", title=STATEMENT.upper(), source="x")
    assert about_statement(title_only, STATEMENT)
    # A two-word statement must appear whole.
    assert about_statement(ev("he said tax cuts again"), "Tax cuts")
    assert not about_statement(ev("cuts in tax"), "Tax cuts")
    assert SAME_STATEMENT_SHARE == 0.8


def test_document_id_strips_the_passage_number() -> None:
    assert document_id(ev("x", id="11972#3")) == "11972"
    assert document_id(ev("x", id="a#b#2")) == "a#b"
    assert document_id(ev("x", id="plain")) == "plain"
    assert document_id(ev("x")) is None


def test_guard_drops_the_answer_key_of_the_example_under_test_only() -> None:
    inner = ListSource(
        "factcheck:offline",
        [
            ev("Another ruling on taxes.", id="500#1"),
            ev(f"{STATEMENT} Rated false.", id="777#1"),  # same text, other id
            ev("The ruling itself.", id="11972#1"),  # same id
            ev("Unrelated ruling.", id="600#1"),
        ],
    )
    guarded = GuardedSource(inner)
    # Without a context nothing is known about the example: everything passes.
    assert [e.id for e in guarded.search("q", k=4)] == ["500#1", "777#1", "11972#1", "600#1"]
    context = SearchContext(
        subject_id="11972", subject_text=STATEMENT, drop_documents=frozenset({"11972"})
    )
    with searching_for(context):
        kept = guarded.search("q", k=3)
    assert [e.id for e in kept] == ["500#1", "600#1"]
    assert guarded.dropped == {"the example's own document": 1, "a fact-check of the statement": 1}
    # The source was asked for more than k, to make up for what the guard drops.
    assert inner.asked[-1][0] == 3 + 5


def test_text_rule_applies_to_fact_checks_only() -> None:
    wiki = ListSource("offline-wiki", [ev(STATEMENT, source="offline-wiki")])
    with searching_for(SearchContext(subject_text=STATEMENT)):
        assert len(GuardedSource(wiki).search("q", k=2)) == 1
        assert GuardedSource(ListSource("factcheck:google", [ev(STATEMENT)])).search("q") == []


def test_guard_excludes_the_sites_and_silences_a_publisher_without_urls() -> None:
    web = ListSource(
        "news",
        [ev("a", url="https://www.politifact.com/x", source="news"), ev("b", url="https://b.org")],
    )
    guarded = GuardedSource(web, exclude_domains=("politifact.com",))
    assert [e.text for e in guarded.search("q", k=2)] == ["b"]
    assert web.asked[-1][1] == ("politifact.com",)
    rulings = ListSource("factcheck:offline", [ev("ruling", id="1#1")], ("politifact.com",))
    silenced = GuardedSource(rulings, exclude_domains=("politifact.com",))
    assert silenced.search("q", k=3) == [] and rulings.asked == []
    assert GuardedSource(rulings, exclude_domains=("snopes.com",)).search("q")[0].text == "ruling"


def test_guard_without_document_rule_keeps_the_gold_documents() -> None:
    inner = ListSource("arxiv:offline", [ev("abstract", id="cord1#1", source="arxiv:offline")])
    with searching_for(SearchContext(drop_documents=frozenset({"cord1"}))):
        assert GuardedSource(inner, drop_documents=False).search("q") != []
        assert GuardedSource(inner, drop_documents=True).search("q") == []


def poison(n: int) -> tuple[Evidence, ...]:
    return tuple(Evidence(text=f"poison {i}", source="poisoned", id=f"p#{i}") for i in range(n))


def test_poisoned_source_puts_the_example_passages_first() -> None:
    inner = ListSource("offline-wiki", [ev(f"real {i}", source="offline-wiki") for i in range(5)])
    source = PoisonedSource(inner)
    assert [e.text for e in source.search("q", k=3)] == ["real 0", "real 1", "real 2"]
    with searching_for(SearchContext(poison=poison(2))):
        found = source.search("q", k=3, before=date(2000, 1, 1))
    assert [e.text for e in found] == ["poison 0", "poison 1", "real 0"]
    assert [is_poisoned(e) for e in found] == [True, True, False]
    # Only the room left is asked of the real source; none when the passages fill k.
    assert inner.asked[-1][0] == 1
    with searching_for(SearchContext(poison=poison(5))):
        assert [e.text for e in source.search("q", k=3)] == ["poison 0", "poison 1", "poison 2"]
    assert len(inner.asked) == 2
    assert source.to_dict() == {"type": "list", "name": "offline-wiki", "poisoned": True}
    assert source.name == "offline-wiki"


def test_context_follows_a_check_into_its_loop_and_threads_but_not_across_threads() -> None:
    seen: dict[str, SearchContext | None] = {}

    async def check(tag: str) -> None:
        seen[tag] = await asyncio.to_thread(current_context)

    def run(tag: str) -> None:
        with searching_for(SearchContext(subject_id=tag)):
            run_sync(check(tag))

    threads = [threading.Thread(target=run, args=(tag,)) for tag in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {tag: c.subject_id if c else None for tag, c in seen.items()} == {"a": "a", "b": "b"}
    assert current_context() is None


def test_context_reaches_a_check_started_inside_a_running_loop() -> None:
    async def outer() -> str | None:
        async def inner() -> str | None:
            context = current_context()
            return context.subject_id if context else None

        with searching_for(SearchContext(subject_id="x")):
            # verify() from async code: the work runs in a thread with its own loop.
            return run_sync(inner())

    assert asyncio.run(outer()) == "x"


@pytest.mark.parametrize("wrapper", [GuardedSource, PoisonedSource])
def test_wrappers_pass_other_attributes_through(wrapper) -> None:
    inner = ListSource("factcheck:offline", [], ("politifact.com",))
    assert wrapper(inner).publishers == ("politifact.com",)
    with pytest.raises(AttributeError):
        _ = wrapper(inner).lookup
