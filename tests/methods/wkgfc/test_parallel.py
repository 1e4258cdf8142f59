"""WKGFC's independent steps run at once, and a parallel check is the sequential one.

A scripted fake model (control flow only) over a small layered graph in which every
relation out of a beam reaches more items than the beam keeps, so that each relation a
hop keeps costs one pruning decision, as at the paper's bound (5.6).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from verity import schedule
from verity.domain import Claim, Evidence, Label, Message
from verity.llm.base import GenParams, RawCompletion
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.common import numbered
from verity.methods.wkgfc import WkgfcMethod
from verity.methods.wkgfc.context import free_tokens
from verity.methods.wkgfc.prompts import FILTER_PASSAGES
from verity.methods.wkgfc.web import WebSearch, coarse, fine
from verity.sources.base import apply_filters
from verity.sources.kg import GraphSource
from verity.testing import FakeChatModel

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
WIDTH, PER = 20, 5  # items per layer; statements of each relation out of one item
PROPS = {"P1": "alpha link", "P2": "beta link", "P3": "gamma link", "P4": "delta link"}
CLAIM = Claim(text="Rootland borders the sea.")  # links to Rootland through a noun chunk


def node(layer: int, j: int) -> str:
    return f"Q{1000 * layer + j}"


@pytest.fixture(scope="module")
def layers(tmp_path_factory: pytest.TempPathFactory) -> GraphSource:
    """Rootland, then four layers of 20 items; each item reaches 5 of the next layer by
    each of 4 relations. Seaville and Hilltown stand alone, for linking."""
    labels = {"Q100": "Rootland", "Q101": "Seaville", "Q102": "Hilltown", **PROPS}
    labels |= {node(layer, j): f"Node {layer}-{j}" for layer in range(1, 5) for j in range(WIDTH)}
    facts = [("Q100", pid, node(1, PER * p + i)) for p, pid in enumerate(PROPS) for i in range(PER)]
    facts += [
        (node(layer, j), pid, node(layer + 1, (j + PER * p + i) % WIDTH))
        for layer in range(1, 4)
        for j in range(WIDTH)
        for p, pid in enumerate(PROPS)
        for i in range(PER)
    ]
    folder = tmp_path_factory.mktemp("wkgfc-layers")
    lines = [f'<{WD}{q}> <{LABEL}> "{label}"@en .' for q, label in labels.items()]
    lines += [f"<{WD}{s}> <{WDT}{p}> <{WD}{o}> ." for s, p, o in facts]
    path = folder / "layers.nt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    from verity.kg.local import LocalGraph

    return GraphSource(LocalGraph("layers", file=path, root=folder / "kg"))


class Web:
    """A web-kind source with fixed passages; ``wait`` seconds per search, timed."""

    name = "web"

    def __init__(self, passages: int = 2, wait: float = 0.0) -> None:
        self.passages, self.wait = passages, wait
        self.spans: list[tuple[float, float]] = []

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        start = time.perf_counter()
        time.sleep(self.wait)
        found = [
            Evidence(text=f"Rootland borders the sea at Node 1-{i}; report {i} of the coast.",
                     title=f"Coast {i}", source="web", url=f"https://example.org/c{i}")
            for i in range(self.passages)
        ]  # fmt: skip
        self.spans.append((start, time.perf_counter()))
        return apply_filters(found, k, before=before, exclude_domains=exclude_domains)

    def to_dict(self):
        return {"type": "fixed-web"}


def script(actions: Sequence[str] = ()) -> Any:
    """Answers by schema: every outgoing relation, the first facts, the given actions."""
    moves = list(actions)

    def answer(messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
        assert schema is not None
        title, prompt = schema["title"], messages[-1].content
        lines = [line for line in prompt.splitlines() if line.startswith("[")]
        if title == "RelationChoice":
            out = [i for i, line in enumerate(lines, 1) if ", outgoing, " in line]
            return json.dumps({"reasoning": "r", "chosen": out})
        if title == "FactChoice":
            # A choice that depends on the relation: a swapped answer would show.
            chosen = [2, 1, 3, 4, 5] if "(P1)" in prompt else [1, 2, 3, 4, 5]
            return json.dumps({"reasoning": "f", "chosen": chosen})
        if title == "Action":
            return json.dumps({"reasoning": "a", "action": moves.pop(0), "query": "Rootland sea"})
        if title == "PassageChoice":
            return json.dumps({"kept": [1, 2], "confidence": [0.8, 0.9]})
        if title == "Statements":
            said = [{"subject": "Rootland", "property": "alpha link", "object": "Node 1-0"}]
            return json.dumps({"statements": said})
        return json.dumps({"justification": "[T1]", "label": "SUPPORTED", "confidence": 0.7,
                           "cited_facts": [1], "cited_passages": [1]})  # fmt: skip

    return answer


class SlowFakeChatModel(FakeChatModel):
    """A scripted fake whose answers take time, each call's span recorded by schema.

    ``reverse``: of calls with one schema, each later one answers sooner (1, 3/4, 1/2,
    1/4 of ``delay`` in turn), so calls sent together finish in the reverse order.
    """

    def __init__(self, answers: Any, *, delay: float, reverse: bool = False) -> None:
        super().__init__(answers)
        self.delay, self.reverse = delay, reverse
        self.sent: Counter[str] = Counter()
        self.spans: list[tuple[str, float, float]] = []

    async def acomplete(
        self,
        messages: Sequence[Message],
        params: GenParams,
        schema: dict[str, Any] | None = None,
    ) -> RawCompletion:
        title = schema["title"] if schema else "text"
        turn = self.sent[title]
        self.sent[title] += 1
        start = time.perf_counter()
        await asyncio.sleep(self.delay * ((4 - turn % 4) / 4 if self.reverse else 1))
        self.spans.append((title, start, time.perf_counter()))
        return self.complete(messages, params, schema)


def method(fake: FakeChatModel, sources: list[Any], **config: Any) -> WkgfcMethod:
    return WkgfcMethod(models=ModelSet(ModelClient(fake)), sources=sources, **config)


def pruning_by_hop(spans: list[tuple[str, float, float]]) -> list[list[tuple[float, float]]]:
    """The pruning calls' spans, grouped by the ranking that opened their hop."""
    hops: list[list[tuple[float, float]]] = []
    for title, start, end in sorted(spans, key=lambda s: s[1]):
        if title == "RelationChoice":
            hops.append([])
        elif title == "FactChoice":
            hops[-1].append((start, end))
    return hops


@pytest.mark.parametrize("parallel", [True, False])
def test_the_prunings_of_a_hop_overlap(layers, parallel: bool) -> None:
    # k = 4 relations kept, each reaching 5 items: four pruning calls of 0.05 s each.
    fake = SlowFakeChatModel(script(), delay=0.05)
    method(fake, [layers], mode="kg-only", hops=1, parallel=parallel).verify(CLAIM)
    [prunings] = pruning_by_hop(fake.spans)
    assert len(prunings) == 4
    starts, ends = [s for s, _ in prunings], [e for _, e in prunings]
    wall, one_by_one = max(ends) - min(starts), sum(e - s for s, e in prunings)
    if parallel:
        # All four in flight at once: the last began before the first had answered.
        assert max(starts) < min(ends) and wall < one_by_one / 2
    else:
        assert all(b[0] >= a[1] for a, b in itertools.pairwise(prunings))


def test_the_entity_lookups_go_out_at_once(layers) -> None:
    class SlowLinks:
        """The layered graph, each lookup taking 0.1 s."""

        def __init__(self, graph: Any) -> None:
            self.graph = graph
            self.spans: list[tuple[float, float]] = []

        def __getattr__(self, name: str) -> Any:
            return getattr(self.graph, name)

        def link(self, text: str, k: int = 5) -> Any:
            start = time.perf_counter()
            time.sleep(0.1)
            found = self.graph.link(text, k)
            self.spans.append((start, time.perf_counter()))
            return found

    slow = SlowLinks(layers.graph)
    m = method(FakeChatModel(script()), [GraphSource(slow)], mode="kg-only", hops=0)  # type: ignore[arg-type]
    verdict = m.verify(Claim(text="Seaville is twinned with Hilltown."))
    assert verdict.trace.actions[0]["observation"]["seeds"] == ["Q101", "Q102"]  # mention order
    (a_start, a_end), (b_start, b_end) = slow.spans
    assert max(a_start, b_start) < min(a_end, b_end)


def test_kg_web_retrieves_beside_the_hops(layers) -> None:
    # Variant 4's query is the claim: its sources are asked while the graph is expanded.
    fake, web = SlowFakeChatModel(script(), delay=0.05), Web(wait=0.3)
    method(fake, [layers, web], mode="kg-web", hops=1, fuse_web=False).verify(CLAIM)
    [(search_start, _)] = web.spans
    kg_calls = [end for title, _, end in fake.spans if title in ("RelationChoice", "FactChoice")]
    assert search_start < min(kg_calls)
    # The filter reads the subgraph: it waits for the hop.
    [(_, filter_start, _)] = [s for s in fake.spans if s[0] == "PassageChoice"]
    assert filter_start > max(kg_calls)


def test_the_calls_on_the_critical_path_by_hand(layers) -> None:
    # kg-only, k = 2, N = 2. A hop: one ranking, then two prunings at once (each kept
    # relation reaches 5 > 2 items). Calls: 2 x (1 + 2) + verdict = 7; on the path:
    # 2 x (1 + 1) + 1 = 5.
    kg_only = {"mode": "kg-only", "k": 2, "hops": 2}
    verdict = method(FakeChatModel(script()), [layers], **kg_only).verify(CLAIM)
    assert (verdict.usage.llm_calls, verdict.usage.critical_calls) == (7, 5)
    verdict = method(FakeChatModel(script()), [layers], parallel=False, **kg_only).verify(CLAIM)
    assert verdict.usage.critical_calls == verdict.usage.llm_calls == 7
    # The agent with the web, k = 2, N = 1: the hop (3 calls, 2 on the path), the policy's
    # webSearch (1), the filter (1 batch), two passages read at once (2 calls, 1 on the
    # path), the policy's verdict (1), the verdict (1): 9 calls, 7 on the path.
    full = {"k": 2, "hops": 1}
    moves = ["webSearch", "verdict"]
    verdict = method(FakeChatModel(script(moves)), [layers, Web()], **full).verify(CLAIM)
    assert (verdict.usage.llm_calls, verdict.usage.critical_calls) == (9, 7)
    assert verdict.trace.model_calls["by_step"]["wkgfc.extract_statements"]["decisions"] == 2
    sequential = method(FakeChatModel(script(moves)), [layers, Web()], parallel=False, **full)
    verdict = sequential.verify(CLAIM)
    assert verdict.usage.critical_calls == verdict.usage.llm_calls == 9


def test_the_papers_bound_holds_with_half_the_calls_on_the_path(layers) -> None:
    # k = N = 4 (5.6): every hop ranks once and prunes four relations, so the check takes
    # N + kN + 1 = 21 decisions; on the path only 2N + 1 = 9 of them.
    verdict = method(FakeChatModel(script()), [layers], mode="kg-only").verify(CLAIM)
    assert verdict.trace.model_calls["decisions"] == verdict.usage.llm_calls == 21
    assert verdict.usage.critical_calls == 9 <= verdict.usage.llm_calls / 2


def test_the_filter_batches_run_at_once() -> None:
    # A context that holds one passage per filter call: three candidates, three calls.
    fake = SlowFakeChatModel(script(), delay=0.05)
    model = ModelClient(fake)
    web = Web(passages=3)
    big = 10**6
    room = free_tokens(model, FILTER_PASSAGES, context=big, claim=CLAIM.text,
                       facts="(no facts yet)", passages="")  # fmt: skip
    one = model.count_tokens(numbered(web.search(CLAIM.text)[:1], 600) + "\n")[0]
    search = WebSearch([web], CLAIM.text, model, k=10, keep=5, passage_chars=600, before=None,
                       log=CallLog(), context=big - room + one + 2)  # fmt: skip

    async def run(parallel: bool) -> tuple[int, list[tuple[str, float]]]:
        with schedule.tracked(parallel=parallel) as lane:
            found = await fine(search, await coarse(search, CLAIM.text), [])
        assert found.batches == 3
        return lane.depth, [(e.ref, c) for e, c in found.kept]

    (depth, kept), (one_by_one, same) = asyncio.run(run(True)), asyncio.run(run(False))
    assert (depth, one_by_one) == (1, 3)
    # A batch holds one passage, so of the filter's numbers (1, 2) only its 1 is kept.
    assert kept == same and len(kept) == 3


@pytest.mark.parametrize("mode", ["full", "kg-web"])
def test_a_parallel_check_gives_the_sequential_verdict_and_trace(layers, mode: str) -> None:
    # Calls sent together finish in the reverse order: a merge by arrival would show.
    def run(parallel: bool):
        fake = SlowFakeChatModel(script(["expandKG", "webSearch", "verdict"]), delay=0.02,
                                 reverse=True)  # fmt: skip
        m = method(fake, [layers, Web(passages=3)], mode=mode, k=3, hops=2, parallel=parallel)
        return m.verify(CLAIM)

    par, seq = run(True), run(False)
    assert par.usage.critical_calls < seq.usage.critical_calls == seq.usage.llm_calls
    assert par.label == seq.label == Label.SUPPORTED
    assert par.trace.subgraph == seq.trace.subgraph  # the same facts in the same order
    assert [c.step for c in par.trace.calls] == [c.step for c in seq.trace.calls]
    assert [c.messages for c in par.trace.calls] == [c.messages for c in seq.trace.calls]
    assert par.trace.actions == seq.trace.actions and par.trace.web == seq.trace.web
    assert par.trace.web_facts == seq.trace.web_facts
    assert par.trace.sparql_queries == seq.trace.sparql_queries > 0
    assert [e.id or e.url for e in par.evidence] == [e.id or e.url for e in seq.evidence]
