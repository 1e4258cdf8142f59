"""One-property follows read from the store's indexes give the template's rows, in order.

On the small hand-written graph with literals, blank nodes, unlabelled entities and a
non-item subject added; the same comparison on the offline subset is in test_kg_subset.py.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from pathlib import Path

import pyoxigraph
import pytest

from verity.kg.follow import follow_rows
from verity.kg.keyorder import iri_key, siphash128, store_keeps_this_order
from verity.kg.local import LocalGraph
from verity.kg.sparql import Row, triple_from_row
from verity.kg.templates import render

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"

# Beside the small graph: an IRI object for P3, whose other objects are numbers; a blank
# node object with a label; a lexeme as a subject (no item: the in template drops it).
EXTRA = [
    f"<{WD}Q2> <{WDT}P3> <{WD}Q3> .",
    f"<{WD}Q2> <{WDT}P5> _:motto .",
    f'_:motto <{LABEL}> "an unnamed motto"@en .',
    f"<{WD}L7> <{WDT}P1> <{WD}Q3> .",
    f"<{WD}Q5> <{WDT}P2> <{WD}Q3> .",
    f"<{WD}Q9> <{WDT}P2> <{WD}Q1> .",
]
SEEDS = ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q9", "Q10"]
PIDS = ["P1", "P2", "P3", "P4", "P5"]


@pytest.fixture
def kg(tmp_path: Path, graph_writer: Callable[..., Path]) -> LocalGraph:
    graph = LocalGraph("rich", file=graph_writer(tmp_path / "rich.nt", EXTRA), root=tmp_path)
    graph.warm_up()
    return graph


def template_rows(kg: LocalGraph, seeds: list[str], pid: str, way: str, limit: int) -> list[Row]:
    rows, _ = kg._select(render(f"follow_{way}", seeds=seeds, pids=[pid], limit=limit))  # type: ignore[arg-type]
    return rows


def store_of(kg: LocalGraph) -> pyoxigraph.Store:
    return kg._open()


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        # veorq/SipHash vectors.h, vectors_sip128: key 00..0f, message 00..(length - 1).
        (0, "a3817f04ba25a8e66df67214c7550293"),
        (1, "da87c1d86b99af44347659119b22fc45"),
        (2, "8177228da4a45dc7fca38bdef60affe4"),
        (3, "9c70b60c5267a94e5f33b6b02985ed51"),
        (15, "5493e99933b0a8117e08ec0f97cfc3d9"),
    ],
)
def test_siphash_gives_the_reference_vectors(length: int, expected: str) -> None:
    value = siphash128(bytes(range(length)), bytes(range(16)))
    assert value.to_bytes(16, "little").hex() == expected


def test_the_store_holds_iris_in_key_order(kg: LocalGraph) -> None:
    store = store_of(kg)
    assert store_keeps_this_order(store)
    assert kg._index_order
    # The subjects of one property and object come from the index in key order.
    subjects = [
        q.subject.value
        for q in store.quads_for_pattern(
            None, pyoxigraph.NamedNode(WDT + "P1"), pyoxigraph.NamedNode(WD + "Q3")
        )
    ]
    assert len(subjects) == 5
    assert subjects == sorted(subjects, key=iri_key)


def test_index_reads_give_the_template_rows_for_every_seed_set(kg: LocalGraph) -> None:
    store = store_of(kg)
    unsettled = []
    compared = 0
    for size in (1, 2, 3):
        for seeds in map(list, combinations(SEEDS, size)):
            for pid in PIDS:
                for way in ("out", "in"):
                    for limit in (1, 2, 100):
                        found = follow_rows(store, seeds, pid, way, limit)  # type: ignore[arg-type]
                        if found is None:
                            unsettled.append((tuple(seeds), pid, way, limit))
                            continue
                        assert found == template_rows(kg, seeds, pid, way, limit), (
                            seeds,
                            pid,
                            way,
                            limit,
                        )
                        compared += 1
    assert compared > 2000
    # Only where objects other than IRIs come from two seeds, and the IRIs do not fill
    # the limit: Q1 and Q10 (numbers for P3), Q1 and Q2 (a motto, a blank node for P5).
    assert {(seeds, pid) for seeds, pid, _, _ in unsettled} == {
        (s, pid)
        for s in {tuple(c) for n in (2, 3) for c in combinations(SEEDS, n)}
        for pid, pair in (("P3", {"Q1", "Q10"}), ("P5", {"Q1", "Q2"}))
        if pair <= set(s)
    }
    assert all(way == "out" for _, _, way, _ in unsettled)
    # Q2's IRI object for P3 fills a limit of 1 before the numbers are needed.
    assert (("Q1", "Q2", "Q10"), "P3", "out", 1) not in unsettled


def test_iris_come_before_values_and_values_keep_their_seed_order(kg: LocalGraph) -> None:
    facts = kg.follow(["Q1", "Q2"], ["P3"], "out")
    assert [(t.subject, t.object) for t in facts] == [("Q2", "Q3"), ("Q1", "12345")]
    with_blank = follow_rows(store_of(kg), ["Q2"], "P5", "out", 10)
    assert with_blank is not None and with_blank[0]["oLabel"].value == "an unnamed motto"


def test_unsettled_reads_run_the_template(kg: LocalGraph) -> None:
    expected = [triple_from_row(r) for r in template_rows(kg, ["Q1", "Q2"], "P2", "in", 10)]
    ran: list[str] = []
    select = kg._select

    def spy(query: str) -> tuple[list[Row], bool]:
        ran.append(query)
        return select(query)

    kg._select = spy  # type: ignore[method-assign]
    read = kg.follow(["Q1", "Q2"], ["P2"], "in", limit=10)
    assert ran == []  # settled from the indexes
    assert read == expected and len(read) == 2
    both = kg.follow(["Q1", "Q10"], ["P3"], "out")
    assert len(ran) == 1  # numbers from two seeds: the template ran
    assert {(t.subject, t.object) for t in both} == {("Q1", "12345"), ("Q10", "7")}
    stats = kg.queries.summary()
    assert dict(stats.by_template) == {"follow_in": 1, "follow_out": 1}


def test_an_entity_with_two_english_labels_is_left_to_the_template(
    tmp_path: Path, graph_writer: Callable[..., Path]
) -> None:
    twice = [*EXTRA, f'<{WD}Q3> <{LABEL}> "Gamma Land"@en .']
    kg = LocalGraph("twice", file=graph_writer(tmp_path / "twice.nt", twice), root=tmp_path)
    kg.warm_up()
    assert follow_rows(store_of(kg), ["Q1"], "P1", "out", 10) is None
    # The template gives the statement once per label; so does follow.
    facts = kg.follow(["Q1"], ["P1"], "out")
    assert sorted(t.object_label or "" for t in facts) == ["Gamma Country", "Gamma Land"]


def test_a_store_without_the_key_order_reads_through_the_template(kg: LocalGraph) -> None:
    kg._index_order = False
    ran: list[str] = []
    select = kg._select

    def spy(query: str) -> tuple[list[Row], bool]:
        ran.append(query)
        return select(query)

    kg._select = spy  # type: ignore[method-assign]
    assert len(kg.follow(["Q3"], ["P1"], "in")) == 4
    assert len(ran) == 1
