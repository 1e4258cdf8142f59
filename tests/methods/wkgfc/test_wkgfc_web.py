"""WKGFC's web evidence across searches (paper 4.3, 4.4): what is new, what is read.

A scripted fake model (control flow only) over the small pyoxigraph family graph of
test_wkgfc.py.
"""

from __future__ import annotations

import asyncio

from test_wkgfc import CLAIM, STATEMENTS, Script, Web, graph, method

from verity.domain import Evidence
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.wkgfc.context import fit_text, free_tokens
from verity.methods.wkgfc.fusion import EXTRACT_STATEMENTS, fuse
from verity.methods.wkgfc.reflection import score
from verity.methods.wkgfc.subgraph import Subgraph
from verity.testing import FakeChatModel

__all__ = ["graph"]  # the module's graph fixture, imported so that pytest finds it here

SPOUSE_FACT = "Carol Smith (Q6) [web: https://example.org/alice"


def test_a_repeated_search_brings_nothing_new_and_is_not_read_again(graph) -> None:
    # Two searches with the same query keep the same passage: the second is redundant
    # (4.4), so it counts no new passage and its passage is not turned into statements
    # a second time.
    script = Script(actions=["webSearch", "webSearch", "verdict"], relations=["P26"])
    verdict = method(script, [graph, Web()], hops=1, k=1, facts_per_passage=5)[0].verify(CLAIM)
    steps = verdict.trace.actions
    assert [a["action"] for a in steps] == ["initKGRetrieval", "webSearch", "webSearch", "verdict"]
    assert (steps[1]["new"], steps[2]["new"]) == (1, 0)
    assert steps[2]["summary"] == "1 passages kept of 2, 0 new"
    # The efficiency term then flags it without the critic (steps numbered from 1).
    assert score(verdict, "SUPPORTED", None).redundant == (3,)
    assert len(script.seen["Statements"]) == 1
    assert len(verdict.trace.web_facts) == len(STATEMENTS)
    assert script.seen["KGVerdict"][0].count(SPOUSE_FACT) == 1


class TwoBios(Web):
    """Two pages about Alice, each read into the same statements by the fake extractor."""

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        self.asked.append(query)
        return [
            Evidence(text="Alice Smith was born in Springfield.", title="Bio", source="web",
                     url="https://example.org/alice"),
            Evidence(text="Alice Smith, born in Springfield.", title="Bio 2", source="web",
                     url="https://example.org/alice-2"),
        ][:k]  # fmt: skip


def test_a_statement_two_passages_give_is_kept_once(graph) -> None:
    script = Script(actions=["webSearch", "verdict"], relations=["P26"],
                    passages={"kept": [1, 2], "confidence": [0.9, 0.8]})  # fmt: skip
    verdict = method(script, [graph, TwoBios()], hops=1, k=1, facts_per_passage=5)[0].verify(CLAIM)
    assert len(script.seen["Statements"]) == 2  # two passages, two readings
    statuses = [f["status"] for f in verdict.trace.web_facts]
    first = ["already in graph", "web fact", "annotation", "dropped", "already in graph"]
    # The second passage's web fact and annotation repeat the first's.
    second = ["already in graph", "already read", "already read", "dropped", "already in graph"]
    assert statuses == first + second
    assert script.seen["KGVerdict"][0].count("Carol Smith (Q6) [web:") == 1
    assert script.seen["KGVerdict"][0].count("Alice Smith (Q1) | height | 170 cm") == 1


def test_passages_are_read_as_far_as_the_prompts_show_them(graph) -> None:
    # A given article is read up to given_chars (3,000 by default), past its first 800
    # characters; a web passage up to passage_chars.
    article = "Alice Smith grew up in Springfield. " * 30 + "MARKER near the end."
    assert article.index("MARKER") > 800
    script = Script(actions=["verdict"])
    m, _ = method(script, [graph])
    m.verify(CLAIM, evidence=[Evidence(text=article, title="Source", source="gold")])
    assert "MARKER near the end." in script.seen["Statements"][0]
    script = Script(actions=["verdict"])
    m, _ = method(script, [graph], given_chars=500)
    m.verify(CLAIM, evidence=[Evidence(text=article, title="Source", source="gold")])
    assert "MARKER" not in script.seen["Statements"][0]
    script = Script(actions=["webSearch", "verdict"], relations=["P26"])
    method(script, [graph, Web()], hops=1, k=1, passage_chars=20)[0].verify(CLAIM)
    # "Alice Smith was born in Springfield, Freedonia." cut at 20 characters.
    assert "<passage>Alice Smith was born</passage>" in script.seen["Statements"][0]


def test_a_passage_is_cut_to_fit_the_extractor_context() -> None:
    script = Script()
    model = ModelClient(FakeChatModel(script))
    text = "abcdefghijklmnopqrstuvwxyz0123456789"
    big = 10**6
    room = free_tokens(model, EXTRACT_STATEMENTS, context=big, claim=CLAIM.text,
                       entities="(none)", passage="", n=3)  # fmt: skip
    assert room is not None
    # Five tokens of room; a backend without a tokenizer counts 4 characters a token.
    context = big - room + 5
    asyncio.run(fuse([Evidence(text=text, source="web")], CLAIM.text, Subgraph(), None, model,
                     per_passage=3, chars=1000, log=CallLog(), context=context))  # fmt: skip
    prompt = script.seen["Statements"][0]
    assert text[:20] in prompt and text[:21] not in prompt


def test_fit_text_by_hand() -> None:
    model = ModelClient(FakeChatModel(Script()))
    # 4 characters a token (a backend without a tokenizer): 2 tokens hold 8 characters.
    assert fit_text("a" * 10, 2, model) == "a" * 8
    assert fit_text("a" * 10, 3, model) == "a" * 10
    assert fit_text("a" * 10, None, model) == "a" * 10
    assert fit_text("a" * 10, 0, model) == ""
