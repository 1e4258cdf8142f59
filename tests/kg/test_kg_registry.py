"""make_kg: the built-in specs, the default graph file and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from verity.errors import ConfigError, UnknownNameError
from verity.kg import KnowledgeGraph, kg_names, make_kg
from verity.kg.local import LocalGraph
from verity.kg.store import KG_FILE_ENV, load_store
from verity.kg.wikidata import WikidataGraph


def test_names() -> None:
    assert {"wikidata", "kg-local"} <= set(kg_names())


def test_wikidata_spec() -> None:
    kg = make_kg("wikidata")
    assert isinstance(kg, WikidataGraph) and isinstance(kg, KnowledgeGraph)
    assert kg.name == "wikidata"
    with pytest.raises(ConfigError, match="takes no argument"):
        make_kg("wikidata:fr")


def test_unknown_spec_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown knowledge graph 'dbpedia'.*kg-local"):
        make_kg("dbpedia")


def test_default_graph_file_from_the_environment(
    small_nt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KG_FILE_ENV, str(small_nt))
    kg = make_kg("kg-local")
    assert isinstance(kg, LocalGraph)
    assert (kg.name, kg.store_name, kg.file) == ("kg-local", "default", small_nt)
    assert kg.labels(["Q1"]) == {"Q1": "Alpha City"}


def test_missing_default_file_names_the_path_and_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KG_FILE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    expected = (tmp_path / ".." / "shared" / "kg" / "wikidata_subset.nt.gz").resolve()
    with pytest.raises(ConfigError) as info:
        make_kg("kg-local")
    assert str(expected) in str(info.value) and KG_FILE_ENV in str(info.value)

    monkeypatch.setenv(KG_FILE_ENV, "nowhere/graph.nt")
    with pytest.raises(ConfigError, match=f"{tmp_path}/nowhere/graph.nt .*\\${KG_FILE_ENV}"):
        make_kg("kg-local")


def test_named_stores(small_nt: Path) -> None:
    # No root: the store goes to the test run's cache folder, where make_kg looks.
    load_store(small_nt, "registry-small")
    kg = make_kg("kg-local:registry-small")
    assert isinstance(kg, LocalGraph) and kg.name == "kg-local:registry-small"
    assert kg.link("alphaville")[0].qid == "Q1"
    with pytest.raises(ConfigError, match="verity kg load FILE --name missing"):
        make_kg("kg-local:missing")
