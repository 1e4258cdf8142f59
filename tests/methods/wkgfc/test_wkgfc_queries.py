"""WKGFC's graph queries per claim against section 5.6's count.

A scripted fake model (control flow only) over the small pyoxigraph family graph of
test_wkgfc.py.
"""

from __future__ import annotations

import asyncio

from test_wkgfc import CLAIM, Script, first_hops, graph, method

from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.wkgfc.expand import Beam, expand_hop
from verity.methods.wkgfc.subgraph import Subgraph
from verity.testing import FakeChatModel

__all__ = ["graph"]  # the module's graph fixture, imported so that pytest finds it here


def test_a_hop_costs_the_two_templates_and_one_read_per_kept_relation(graph) -> None:
    # k = 2, N = 2. Hop 1 keeps "child" and "place of birth" (two reads), hop 2 keeps
    # "country" (one read). By hand: (2 + 2) + (2 + 1) = 7 SPARQL queries, no label
    # lookup (the subgraph knows its entities' labels), within (k + 2) N = 8.
    script = Script(relations=[["P40", "P19"], ["P17"]], facts=["Q7", "Q8"])
    before = graph.graph.queries.mark()
    verdict = method(script, [graph], mode="kg-only", k=2, hops=2)[0].verify(CLAIM)
    assert len(first_hops(verdict)) == 2
    stats = graph.graph.queries.summary(since=before)
    assert verdict.trace.sparql_queries == stats.sparql == 7
    assert stats.by_template == {
        "link": 2, "relations_out": 2, "relations_in": 2, "follow_out": 3,
    }  # fmt: skip
    # The ranker is still told the beam's names.
    ranked = script.seen["RelationChoice"]
    assert "Entities reached: <entities>Alice Smith (Q1), Freedonia (Q4)" in ranked[0]
    assert "Dan Smith (Q7), Springfield (Q3)" in ranked[1]


def test_a_beam_entity_the_subgraph_never_saw_is_looked_up(graph) -> None:
    script = Script(relations=["P26"])
    beam = Beam(claim=CLAIM.text, graph=graph.graph, model=ModelClient(FakeChatModel(script)),
                relevance=lambda c, t: [0.0] * len(t), k=1, limit=50, log=CallLog())  # fmt: skip
    before = graph.graph.queries.mark()
    asyncio.run(expand_hop(Subgraph(), beam, start=["Q1"]))
    assert graph.graph.queries.summary(since=before).by_template["labels"] == 1
    [ranked] = script.seen["RelationChoice"]
    assert "Entities reached: <entities>Alice Smith (Q1)</entities>" in ranked
