"""The knowledge-graph value types, id checks and query accounting."""

from __future__ import annotations

import numpy as np
import pytest

from verity.errors import BadInputError
from verity.kg.base import (
    EntityMatch,
    QueryLog,
    QueryRecord,
    Relation,
    Triple,
    check_direction,
    check_entity_ids,
    check_qids,
    percentile,
)


def test_triple_text_uses_labels_then_ids() -> None:
    fact = Triple("Q76", "Barack Obama", "P26", "spouse", "Q13133", "Michelle Obama")
    assert fact.text() == "Barack Obama | spouse | Michelle Obama"
    bare = Triple("Q76", None, "P737", None, "Q25649", None)
    assert bare.text() == "Q76 | P737 | Q25649"
    value = Triple("Q1", "Alpha", "P3", "population", "12345", None, "literal", "xsd:integer")
    assert value.text() == "Alpha | population | 12345"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"subject": "P26"},
        {"subject": "Q76 "},
        {"pid": "Q26"},
        {"object": "not an id"},
    ],
)
def test_triple_validates_ids(kwargs: dict[str, str]) -> None:
    fields = {"subject": "Q76", "subject_label": None, "pid": "P26", "property_label": None}
    fields |= {"object": "Q13133"} | kwargs
    with pytest.raises(BadInputError):
        Triple(**fields)  # type: ignore[arg-type]


def test_objects_may_be_any_entity_or_a_value() -> None:
    for obj in ("Q5", "P1659", "L7", "L7-S1", "L7-F2"):
        assert Triple("Q76", None, "P31", None, obj).object == obj
    assert (
        Triple("Q76", None, "P18", None, "http://commons/x.jpg", None, "iri").object_kind == "iri"
    )


def test_match_and_relation_validate() -> None:
    with pytest.raises(BadInputError):
        EntityMatch("76", "x", None, 1.0, "label", "x")
    with pytest.raises(BadInputError):
        EntityMatch("Q76", "x", None, 1.5, "label", "x")
    with pytest.raises(BadInputError):
        Relation("26", "spouse", 1)


def test_id_checks() -> None:
    assert check_qids(["Q76", "Q30", "Q76"]) == ["Q76", "Q30"]
    assert check_entity_ids(["P26", "Q76"]) == ["P26", "Q76"]
    assert check_direction("in") == "in"
    with pytest.raises(BadInputError, match="direction"):
        check_direction("both")


@pytest.mark.parametrize("q", [0, 25, 50, 95, 100])
def test_percentile_matches_numpy(q: float) -> None:
    values = [0.3, 0.1, 0.9, 0.4, 0.2, 2.5, 0.05]
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_percentile_by_hand() -> None:
    # Rank (n - 1) * q / 100: 1.5 for the median of four values, 2.85 for p95.
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)
    assert percentile([], 50) == 0.0


def test_query_log_summary_since_a_mark() -> None:
    log = QueryLog()
    log.record(QueryRecord("link", "search", 0.5, 3))
    mark = log.mark()
    for seconds in (0.1, 0.2, 0.3, 0.4):
        log.record(QueryRecord("neighbours_out", "sparql", seconds, 10))
    log.record(QueryRecord("relations_in", "sparql", 1.0, 0, ok=False, cached=False))
    log.record(QueryRecord("labels", "sparql", 0.0, 2, cached=True))
    stats = log.summary(since=mark)
    assert (stats.queries, stats.sparql, stats.search, stats.failed, stats.cached) == (
        6,
        6,
        0,
        1,
        1,
    )
    assert stats.total_seconds == pytest.approx(2.0)
    assert stats.p50 == pytest.approx(0.25)
    assert stats.p95 == pytest.approx(0.85)
    assert dict(stats.by_template) == {"neighbours_out": 4, "relations_in": 1, "labels": 1}
    assert log.summary().queries == 7 and len(log) == 7
    log.reset()
    assert log.summary().queries == 0 and log.summary().p95 == 0.0


def test_checks_at_once_on_one_graph_count_only_their_own_queries() -> None:
    import asyncio

    from verity import schedule
    from verity.kg.base import QueryLog, QueryRecord

    log = QueryLog()
    mark = log.mark()

    async def check(n: int) -> int:
        with schedule.tracked(parallel=True):
            for _ in range(n):
                await asyncio.to_thread(log.record, QueryRecord("t", "sparql", 0.01, 1))
                await asyncio.sleep(0)
            return log.summary(since=mark, check=schedule.check_id()).sparql

    async def both() -> tuple[int, int]:
        a, b = await asyncio.gather(check(3), check(5))
        return a, b

    assert asyncio.run(both()) == (3, 5)
    assert log.summary(since=mark).sparql == 8
