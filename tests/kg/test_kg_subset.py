"""kg-local on the shared offline Wikidata subset (977,044 triples), loaded once per run.

The facts asserted here are the ones the file holds (checked with SPARQL against it): the
subset is an approximation of Wikidata, not a snapshot of it.
"""

from __future__ import annotations

import random
from pathlib import Path

import pyoxigraph
import pytest

from verity.errors import ConfigError
from verity.kg.base import Relation, Triple
from verity.kg.follow import follow_rows
from verity.kg.local import LocalGraph
from verity.kg.sparql import Row
from verity.kg.store import kg_file, load_store, store_info
from verity.kg.templates import DIRECT as WDT
from verity.kg.templates import ENTITY as WD
from verity.kg.templates import render

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


# Beams WKGFC reached on FEVER claims: hubs ("human", "film", countries) beside small
# items, and the largest properties ("instance of", "occupation", "country"), whose
# SPARQL reads from two seeds or more scanned every statement of the property.
FOLLOWS = [
    (["Q76", "Q13133"], "P26"),
    (["Q76", "Q13133"], "P69"),
    (["Q193459", "Q4233718", "Q180914"], "P31"),
    (["Q193459", "Q4233718", "Q180914"], "P106"),
    (["Q154509", "Q11424"], "P31"),
    (["Q643740", "Q5", "Q2354637"], "P31"),
    (["Q1329919", "Q231642", "Q189526", "Q3863"], "P31"),
    (["Q1329919", "Q231642", "Q189526", "Q3863"], "P161"),
    (["Q232", "Q148", "Q330298"], "P530"),
    (["Q30", "Q142"], "P530"),
    (["Q30", "Q142", "Q183"], "P17"),
    (["Q30", "Q142"], "P27"),
    (["Q21980377", "Q285928", "Q796"], "P17"),
    (["Q16349", "Q28603", "Q1077", "Q159"], "P530"),
    (["Q15063586", "Q179029", "Q281138", "Q220445"], "P17"),
]


def _template_rows(kg: LocalGraph, seeds: list[str], pid: str, way: str, limit: int) -> list[Row]:
    rows, _ = kg._select(render(f"follow_{way}", seeds=seeds, pids=[pid], limit=limit))  # type: ignore[arg-type]
    return rows


def test_index_reads_give_the_template_rows_on_the_subset(kg: LocalGraph) -> None:
    """Every row, label and position as the SPARQL template gives them, on hubs too."""
    store = kg._open()
    assert kg._index_order  # this pyoxigraph holds IRIs in the computed order
    for seeds, pid in FOLLOWS:
        for way in ("out", "in"):
            for limit in (1, 7, 50):
                found = follow_rows(store, seeds, pid, way, limit)  # type: ignore[arg-type]
                assert found is not None, (seeds, pid, way, limit)  # no literal objects here
                assert found == _template_rows(kg, seeds, pid, way, limit), (seeds, pid, way)


def test_index_reads_on_sampled_statements_of_the_subset(kg: LocalGraph) -> None:
    """Seed sets drawn from the store's own statements, hubs mixed in, both directions."""
    store = kg._open()
    rng = random.Random(43)
    statements = [
        q
        for i, q in enumerate(store.quads_for_pattern(None, None, None))
        if i % 997 == 0 and q.predicate.value.startswith(WDT)
    ]
    assert len(statements) > 300
    for _ in range(60):
        picked = rng.sample(statements, rng.randint(1, 4))
        way = rng.choice(["out", "in"])
        pid = rng.choice(picked).predicate.value[len(WDT) :]
        ends = [q.subject if way == "out" else q.object for q in picked]
        items = [n.value[len(WD) :] for n in ends if isinstance(n, pyoxigraph.NamedNode)]
        seeds = [q for q in items if q.startswith("Q")]
        seeds = list(dict.fromkeys([*seeds, *rng.sample(["Q5", "Q30", "Q11424", "Q145"], 1)]))
        limit = rng.choice([3, 50])
        found = follow_rows(store, seeds, pid, way, limit)  # type: ignore[arg-type]
        assert found == _template_rows(kg, seeds, pid, way, limit), (seeds, pid, way, limit)
