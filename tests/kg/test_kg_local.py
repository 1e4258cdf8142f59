"""kg-local on the small hand-written graph: every template, linking, persistence, rebuilds."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path

import pyoxigraph
import pytest

from verity.errors import BadInputError, ConfigError
from verity.kg.base import KnowledgeGraph, Relation, Triple
from verity.kg.local import LocalGraph
from verity.kg.sparql import parse_results_json
from verity.kg.store import load_store, store_info
from verity.kg.templates import render

XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
WD = "http://www.wikidata.org/entity/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"


@pytest.fixture
def kg(small_nt: Path, tmp_path: Path) -> LocalGraph:
    return LocalGraph("small", file=small_nt, root=tmp_path / "kg")


def test_neighbours_out_labels_literals_and_unlabelled(kg: LocalGraph) -> None:
    facts = kg.neighbours(["Q1", "Q2", "Q6"], "out")
    assert set(facts) == {
        Triple("Q1", "Alpha City", "P1", "located in", "Q3", "Gamma Country"),
        Triple("Q1", "Alpha City", "P3", "population", "12345", None, "literal", XSD_INTEGER),
        # The French motto is left out: only plain or English literals are kept.
        Triple("Q1", "Alpha City", "P5", "motto", "Alpha forever", None, "literal", None),
        Triple("Q2", "Beta Person", "P2", "place of birth", "Q1", "Alpha City"),
        # Neither P4 nor Q4 has a label; Q6 has only a French one.
        Triple("Q2", "Beta Person", "P4", None, "Q4", None),
        Triple("Q6", None, "P1", "located in", "Q3", "Gamma Country"),
    }
    assert kg.origin == "built"


def test_neighbours_in_and_limit(kg: LocalGraph) -> None:
    into_gamma = kg.neighbours(["Q3"], "in")
    assert {(t.subject, t.subject_label, t.pid, t.object) for t in into_gamma} == {
        ("Q1", "Alpha City", "P1", "Q3"),
        ("Q5", "Alpha City", "P1", "Q3"),
        ("Q6", None, "P1", "Q3"),
        ("Q10", "Delta", "P1", "Q3"),
    }
    assert all(t.object_label == "Gamma Country" for t in into_gamma)
    assert len(kg.neighbours(["Q3"], "in", limit=2)) == 2
    assert kg.neighbours(["Q4"], "in") == [Triple("Q2", "Beta Person", "P4", None, "Q4", None)]
    assert kg.neighbours(["Q4"], "out") == []
    assert kg.neighbours([], "out") == []


def test_relations_count_and_order(kg: LocalGraph) -> None:
    # Q1 has P1, P3 and one English P5; Q2 has P2 and P4: one each, so by property number.
    assert kg.relations(["Q1", "Q2"], "out") == [
        Relation("P1", "located in", 1),
        Relation("P2", "place of birth", 1),
        Relation("P3", "population", 1),
        Relation("P4", None, 1),
        Relation("P5", "motto", 1),
    ]
    assert kg.relations(["Q3"], "in") == [Relation("P1", "located in", 4)]
    assert kg.relations(["Q1", "Q10"], "out") == [
        Relation("P1", "located in", 2),
        Relation("P3", "population", 2),
        Relation("P5", "motto", 1),
    ]
    # Counted over at most `limit` statements.
    assert sum(r.count for r in kg.relations(["Q3"], "in", limit=3)) == 3


def test_follow_keeps_only_the_chosen_properties(kg: LocalGraph) -> None:
    kept = kg.follow(["Q1", "Q2", "Q10"], ["P3"], "out")
    assert {(t.subject, t.pid, t.object) for t in kept} == {
        ("Q1", "P3", "12345"),
        ("Q10", "P3", "7"),
    }
    both = kg.follow(["Q1", "Q2"], ["P2", "P4"], "out")
    assert {t.pid for t in both} == {"P2", "P4"}
    into = kg.follow(["Q1", "Q3"], ["P2"], "in")
    assert into == [Triple("Q2", "Beta Person", "P2", "place of birth", "Q1", "Alpha City")]
    assert kg.follow(["Q1"], [], "out") == []


def test_labels_of_items_and_properties(kg: LocalGraph) -> None:
    assert kg.labels(["Q1", "Q4", "Q6", "P4", "P5", "Q1"]) == {"Q1": "Alpha City", "P5": "motto"}
    assert kg.labels([]) == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Exact labels, ties broken by degree: Q10 (degree 2) before Q9 (degree 0).
        ("delta", [("Q10", "label", 1.0), ("Q9", "label", 1.0)]),
        ("  ALPHA   city ", [("Q1", "label", 1.0), ("Q5", "label", 1.0)]),
        # A label beats an alias, whatever the degrees.
        ("Betty", [("Q11", "label", 1.0), ("Q2", "alias", 0.9)]),
        ("alphaville", [("Q1", "alias", 0.9)]),
        ("B. Person", [("Q2", "alias", 0.9)]),
        # One letter more: fuzz.ratio 95.2 on the sorted words, times 0.8.
        ("Alpha Citty", [("Q1", "fuzzy", 0.7619), ("Q5", "fuzzy", 0.7619)]),
        ("Person Beta", [("Q2", "fuzzy", 0.8)]),
        ("q2", [("Q2", "id", 1.0)]),
        ("nothing of the sort", []),
    ],
)
def test_link_tiers_and_ranking(kg: LocalGraph, text: str, expected: list[object]) -> None:
    found = kg.link(text, k=5)
    assert [(m.qid, m.matched, m.score) for m in found] == expected


def test_link_details_and_k(kg: LocalGraph) -> None:
    [first] = kg.link("alphaville", k=1)
    assert (first.label, first.description, first.matched_text) == (
        "Alpha City",
        "a city made up for tests",
        "Alphaville",
    )
    assert [m.qid for m in kg.link("delta", k=1)] == ["Q10"]
    kg.close()  # and opened again by the next call
    assert [m.qid for m in kg.link("delta", k=1)] == ["Q10"]
    assert kg.labels(["Q10"]) == {"Q10": "Delta"}
    with pytest.raises(BadInputError):
        kg.link("   ")
    with pytest.raises(BadInputError):
        kg.link("delta", k=0)


def test_query_log_counts_every_call(kg: LocalGraph) -> None:
    kg.link("delta")
    mark = kg.queries.mark()
    kg.neighbours(["Q1"], "out")
    kg.relations(["Q1"], "in")
    kg.follow(["Q1"], ["P1"], "out")
    stats = kg.queries.summary(since=mark)
    assert (stats.queries, stats.sparql, stats.search, stats.failed) == (3, 3, 0, 0)
    assert dict(stats.by_template) == {"neighbours_out": 1, "relations_in": 1, "follow_out": 1}
    assert kg.queries.summary().search == 1
    assert 0 < stats.p50 <= stats.p95


def test_json_results_and_local_rows_agree(kg: LocalGraph, tmp_path: Path) -> None:
    """The online reader and the offline term conversion turn a result into the same rows."""
    kg.warm_up()
    assert kg.info is not None
    store = pyoxigraph.Store.read_only(str(kg.info.path / "store"))
    for query in (
        render("neighbours_out", seeds=["Q1", "Q2"], limit=50),
        render("relations_in", seeds=["Q3"], limit=50),
    ):
        solutions = store.query(query)
        assert isinstance(solutions, pyoxigraph.QuerySolutions)
        payload = json.loads(solutions.serialize(format=pyoxigraph.QueryResultsFormat.JSON) or b"")
        local_rows, cached = kg._select(query)
        assert not cached
        assert parse_results_json(payload) == local_rows


def test_store_is_reused_then_rebuilt_when_the_file_changes(
    small_nt: Path, tmp_path: Path, graph_writer: Callable[..., Path]
) -> None:
    root = tmp_path / "kg"
    first = LocalGraph("small", file=small_nt, root=root)
    first.warm_up()
    again = LocalGraph("small", file=small_nt, root=root)
    again.warm_up()
    by_name = LocalGraph("small", root=root)  # the recorded source file
    by_name.warm_up()
    assert (first.origin, again.origin, by_name.origin) == ("built", "loaded", "loaded")

    graph_writer(small_nt, [f'<{WD}Q4> <{LABEL}> "Fourth"@en .'])
    assert store_info("small", root=root).stale is not None
    changed = LocalGraph("small", root=root)
    assert changed.labels(["Q4"]) == {"Q4": "Fourth"}
    assert changed.origin == "built"

    # Same content, new modification time: rebuilt all the same.
    stat = small_nt.stat()
    os.utime(small_nt, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    touched = LocalGraph("small", root=root)
    touched.warm_up()
    assert touched.origin == "built"


def test_other_pyoxigraph_version_rebuilds_or_needs_the_source(
    small_nt: Path, tmp_path: Path
) -> None:
    root = tmp_path / "kg"
    load_store(small_nt, "small", root=root)
    manifest_path = root / "small" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, "pyoxigraph": "0.0.1"}))
    assert "pyoxigraph 0.0.1" in (store_info("small", root=root).stale or "")
    rebuilt = load_store(small_nt, "small", root=root)
    assert rebuilt.origin == "built" and rebuilt.pyoxigraph == pyoxigraph.__version__

    manifest_path.write_text(json.dumps({**manifest, "pyoxigraph": "0.0.1"}))
    small_nt.unlink()
    with pytest.raises(ConfigError, match=r"its source .* is gone"):
        LocalGraph("small", root=root).warm_up()


def test_store_without_its_source_still_opens(small_nt: Path, tmp_path: Path) -> None:
    root = tmp_path / "kg"
    load_store(small_nt, "small", root=root)
    small_nt.unlink()
    kg = LocalGraph("small", root=root)
    assert kg.labels(["Q1"]) == {"Q1": "Alpha City"}
    assert kg.origin == "loaded"


def test_force_reloads(small_nt: Path, tmp_path: Path) -> None:
    root = tmp_path / "kg"
    assert load_store(small_nt, "small", root=root).origin == "built"
    assert load_store(small_nt, "small", root=root).origin == "loaded"
    assert load_store(small_nt, "small", root=root, force=True).origin == "built"


def test_gzipped_turtle(tmp_path: Path) -> None:
    turtle = """\
@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
wd:Q76 rdfs:label "Barack Obama"@en ; skos:altLabel "Barry Obama"@en ; wdt:P26 wd:Q13133 .
wd:Q13133 rdfs:label "Michelle Obama"@en .
wd:P26 rdfs:label "spouse"@en .
"""
    path = tmp_path / "g.ttl.gz"
    path.write_bytes(gzip.compress(turtle.encode()))
    info = load_store(path, "ttl", root=tmp_path / "kg")
    assert (info.rdf_format, info.triples, info.entities, info.aliases) == ("Turtle", 5, 2, 1)
    kg = LocalGraph("ttl", root=tmp_path / "kg")
    assert kg.link("barry obama")[0].qid == "Q76"
    assert [t.text() for t in kg.neighbours(["Q76"])] == ["Barack Obama | spouse | Michelle Obama"]


def test_bad_files_and_names(tmp_path: Path) -> None:
    bad = tmp_path / "bad.nt"
    bad.write_text("<http://www.wikidata.org/entity/Q1> this is not N-Triples .\n")
    with pytest.raises(BadInputError, match="not valid N-Triples"):
        load_store(bad, "bad", root=tmp_path / "kg")
    assert not (tmp_path / "kg" / "bad").exists()  # nothing half-built is left
    other = tmp_path / "graph.json"
    other.write_text("{}")
    with pytest.raises(BadInputError, match="unknown RDF format"):
        load_store(other, "x", root=tmp_path / "kg")
    with pytest.raises(BadInputError, match="not found"):
        load_store(tmp_path / "missing.nt", "x", root=tmp_path / "kg")
    with pytest.raises(BadInputError, match="must be 1-64"):
        load_store(bad, "../escape", root=tmp_path / "kg")
    with pytest.raises(ConfigError, match="no knowledge graph named 'nope'"):
        LocalGraph("nope", root=tmp_path / "kg")
    with pytest.raises(ConfigError, match="not found"):
        LocalGraph("x", file=tmp_path / "missing.nt", root=tmp_path / "kg")


def test_configuration_and_protocol(kg: LocalGraph, small_nt: Path) -> None:
    assert isinstance(kg, KnowledgeGraph)
    config = kg.to_dict()
    stat = small_nt.stat()
    assert config == {
        "type": "kg-local",
        "name": "kg-local:small",
        "store": "small",
        "source": {"path": str(small_nt), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns},
        "pyoxigraph": pyoxigraph.__version__,
        "store_format": 1,
        "fuzzy_threshold": 85.0,
    }
    assert kg.origin is None  # describing a graph does not load it


def test_a_query_asked_again_is_answered_from_the_kept_rows(kg: LocalGraph) -> None:
    first = kg.relations(["Q3"], "in")
    query = render("relations_in", seeds=["Q3"], limit=10_000)
    rows, cached = kg._select(query)
    assert cached and len(rows) == 1
    rows.clear()  # a caller's list is its own: the kept answer stays whole
    again = kg.relations(["Q3"], "in")
    assert again == first == [Relation("P1", "located in", 4)]
    assert [r.cached for r in kg.queries.records()] == [False, True]
    kg.close()  # a closed graph forgets its answers with its store
    assert kg.relations(["Q3"], "in") == first
    assert kg.queries.records()[-1].cached is False
