"""kg-local on the shared offline Wikidata subset (977,044 triples), loaded once per run.

The facts asserted here are the ones the file holds (checked with SPARQL against it): the
subset is an approximation of Wikidata, not a snapshot of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from verity.errors import ConfigError
from verity.kg.base import Relation, Triple
from verity.kg.local import LocalGraph
from verity.kg.store import kg_file, load_store, store_info

pytestmark = pytest.mark.integration

OBAMA = ("Q76", "Barack Obama")


@pytest.fixture(scope="session")
def subset_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the subset's store, built once for the whole test run."""
    try:
        source = kg_file()
    except ConfigError as exc:
        pytest.skip(f"the offline Wikidata subset is not here: {exc}")
    root = tmp_path_factory.mktemp("kg-subset")
    info = load_store(source, "subset", root=root)
    assert info.origin == "built"
    return root


@pytest.fixture
def kg(subset_root: Path) -> LocalGraph:
    return LocalGraph("subset", root=subset_root)


def test_the_store_was_loaded_whole(subset_root: Path) -> None:
    info = store_info("subset", root=subset_root)
    assert info.triples == 977_044
    assert info.entities == 172_572  # items with an English label, as the README counts
    assert info.stale is None


def test_reopening_uses_the_persisted_store(kg: LocalGraph) -> None:
    kg.warm_up()
    assert kg.origin == "loaded"  # not built again: the session fixture built it


def test_link_by_label(kg: LocalGraph) -> None:
    first = kg.link("Barack Obama")[0]
    assert (first.qid, first.label, first.matched, first.score) == (
        "Q76",
        "Barack Obama",
        "label",
        1.0,
    )
    assert first.description == "44th president of the United States"
    assert kg.link("tom hanks", k=1)[0].qid == "Q2263"


def test_link_by_alias(kg: LocalGraph) -> None:
    [match] = kg.link("Barry Obama", k=1)
    assert (match.qid, match.matched, match.matched_text, match.score) == (
        "Q76",
        "alias",
        "Barry Obama",
        0.9,
    )
    # "Obama" is the label of the Japanese city Q41773 and an alias of Q76: label first.
    assert [(m.qid, m.matched) for m in kg.link("Obama", k=2)] == [
        ("Q41773", "label"),
        ("Q76", "alias"),
    ]


@pytest.mark.parametrize(("text", "score"), [("Barack Obamma", 0.768), ("Obama Barack", 0.8)])
def test_link_fuzzy(kg: LocalGraph, text: str, score: float) -> None:
    first = kg.link(text, k=3)[0]
    assert (first.qid, first.matched, first.matched_text) == ("Q76", "fuzzy", "Barack Obama")
    assert first.score == score


def test_neighbours_out_of_obama(kg: LocalGraph) -> None:
    facts = kg.neighbours(["Q76"], "out", limit=500)
    assert len(facts) == 27
    assert {
        Triple(*OBAMA, "P26", "spouse", "Q13133", "Michelle Obama"),
        Triple(*OBAMA, "P27", "country of citizenship", "Q30", "United States of America"),
        Triple(*OBAMA, "P31", "instance of", "Q5", "human"),
        Triple(*OBAMA, "P102", "member of political party", "Q29552", "Democratic Party"),
        Triple(*OBAMA, "P69", "educated at", "Q49088", "Columbia University"),
        Triple(*OBAMA, "P69", "educated at", "Q49122", "Harvard Law School"),
        Triple(*OBAMA, "P69", "educated at", "Q1346110", "Occidental College"),
        Triple(*OBAMA, "P551", "residence", "Q18094", "Honolulu"),
        # Q25649 takes part in statements but has no label in the subset.
        Triple(*OBAMA, "P737", "influenced by", "Q25649", None),
    } <= set(facts)
    assert all(t.subject == "Q76" and t.object_kind == "entity" for t in facts)
    assert len(kg.neighbours(["Q76"], "out", limit=10)) == 10


def test_neighbours_into_obama(kg: LocalGraph) -> None:
    facts = kg.neighbours(["Q76"], "in", limit=500)
    assert {(t.subject, t.subject_label, t.pid, t.property_label) for t in facts} == {
        ("Q13133", "Michelle Obama", "P26", "spouse"),
        ("Q1529637", "Oldboy", "P161", "cast member"),
        ("Q19315473", "Snowden", "P161", "cast member"),
        ("Q464964", "The Dictator", "P161", "cast member"),
        ("Q7300737", "Reagan", "P161", "cast member"),
        ("Q754855", "Capitalism: A Love Story", "P161", "cast member"),
    }
    assert all((t.object, t.object_label) == OBAMA for t in facts)


def test_relations_of_obama(kg: LocalGraph) -> None:
    out = kg.relations(["Q76"], "out")
    assert out[:3] == [
        Relation("P551", "residence", 4),
        Relation("P69", "educated at", 3),
        Relation("P106", "occupation", 3),
    ]
    assert len(out) == 17 and sum(r.count for r in out) == 27
    assert kg.relations(["Q76"], "in") == [
        Relation("P161", "cast member", 5),
        Relation("P26", "spouse", 1),
    ]


def test_follow_keeps_only_the_chosen_relation(kg: LocalGraph) -> None:
    schools = kg.follow(["Q76"], ["P69"], "out")
    assert {(t.pid, t.object_label) for t in schools} == {
        ("P69", "Columbia University"),
        ("P69", "Harvard Law School"),
        ("P69", "Occidental College"),
    }
    films = kg.follow(["Q76"], ["P161"], "in")
    assert len(films) == 5 and {t.pid for t in films} == {"P161"}
    # Two seeds: Michelle Obama's spouse is Barack Obama, and the reverse.
    couple = kg.follow(["Q76", "Q13133"], ["P26"], "out")
    assert {(t.subject, t.object) for t in couple} == {("Q76", "Q13133"), ("Q13133", "Q76")}


def test_labels_and_query_log(kg: LocalGraph) -> None:
    assert kg.labels(["Q76", "Q13133", "P26", "Q25649"]) == {
        "Q76": "Barack Obama",
        "Q13133": "Michelle Obama",
        "P26": "spouse",
    }
    mark = kg.queries.mark()
    kg.neighbours(["Q76"], "out")
    kg.relations(["Q76"], "in")
    stats = kg.queries.summary(since=mark)
    assert (stats.sparql, stats.failed) == (2, 0)
    assert dict(stats.by_template) == {"neighbours_out": 1, "relations_in": 1}
