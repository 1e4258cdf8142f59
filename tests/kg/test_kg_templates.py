"""The SPARQL templates: checked ids only, standard SPARQL only, valid on pyoxigraph."""

from __future__ import annotations

import pyoxigraph
import pytest

from verity.errors import BadInputError
from verity.kg.base import MAX_IDS, MAX_LIMIT
from verity.kg.templates import TEMPLATES, render, template_for


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_template_is_standard_sparql(name: str) -> None:
    query = render(name, seeds=["Q76", "Q30"], pids=["P26"], ids=["Q76", "P26"], limit=10)  # type: ignore[arg-type]
    assert "SERVICE" not in query and "wikibase:label" not in query
    assert "$" not in query  # every placeholder was filled
    # pyoxigraph parses and runs it (on an empty store): no endpoint-specific syntax.
    assert list(pyoxigraph.Store().query(query)) == []  # type: ignore[arg-type]


def test_seeds_and_properties_are_values_lists() -> None:
    query = render("follow_in", seeds=["Q76", "Q30", "Q76"], pids=["P26", "P27"], limit=7)
    assert "VALUES ?o { wd:Q76 wd:Q30 }" in query
    assert "VALUES ?p { wdt:P26 wdt:P27 }" in query
    assert "LIMIT 7" in query
    assert "VALUES ?e { wd:Q76 wd:P26 }" in render("labels", ids=["Q76", "P26"])


@pytest.mark.parametrize(
    "seeds",
    [
        ["Q76 } ?s ?p ?o . {"],
        ["wd:Q76"],
        ["q76"],
        ["Q076"],
        ["P26"],
        ["Q76\n"],
        ["http://www.wikidata.org/entity/Q76"],
        "Q76",
        [],
        [f"Q{i}" for i in range(1, MAX_IDS + 2)],
    ],
)
def test_bad_seeds_never_reach_a_query(seeds: object) -> None:
    with pytest.raises(BadInputError):
        render("neighbours_out", seeds=seeds)  # type: ignore[arg-type]


@pytest.mark.parametrize("pids", [["Q26"], ['P26" }'], [], "P26"])
def test_bad_properties(pids: object) -> None:
    with pytest.raises(BadInputError):
        render("follow_out", seeds=["Q76"], pids=pids)  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [0, -1, MAX_LIMIT + 1, True, 2.5])
def test_bad_limits(limit: object) -> None:
    with pytest.raises(BadInputError, match="limit"):
        render("neighbours_in", seeds=["Q76"], limit=limit)  # type: ignore[arg-type]


def test_template_for_each_step() -> None:
    assert template_for("neighbours", "out") == "neighbours_out"
    assert template_for("relations", "in") == "relations_in"
    assert template_for("follow", "in") == "follow_in"
    with pytest.raises(BadInputError):
        render("describe", seeds=["Q76"])  # type: ignore[arg-type]
