"""ToE's independent work runs at once, and a parallel check is the sequential one.

A scripted fake model (control flow only) answers by schema; its judge and decomposer
read the node's statement from a table, so each test grows a tree it names. The source
answers by query alone, as a search index does, so the order in which nodes search
cannot change what they find. Each node here searches twice (the warm-up heuristic on a
political factual claim with only web sources: the web, then the counter-evidence
search once a document supports it), each search bringing two one-chunk documents.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from verity.domain import Claim, Evidence, Label, Message, Verdict
from verity.errors import ModelOutputError
from verity.llm.base import GenParams, RawCompletion
from verity.llm.budget import Budget, current, spending
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import run_sync
from verity.methods.toe.ahead import room
from verity.methods.toe.config import ToeConfig
from verity.methods.toe.judge import NodeEvaluator
from verity.methods.toe.method import ToeMethod
from verity.methods.toe.nodework import NodeWorker, most_calls
from verity.methods.toe.tree import Tree
from verity.testing import FakeChatModel

CLAIM = Claim(text="The council cut the library budget by half in 2019.")
ROOT = CLAIM.text
# Per node: the analysis, two searches of two documents (a cleaning and an assessment
# each), the judge: 10 calls; 11 with a decomposition. On the path: 1 + 2 x 2 + 1 = 6;
# 7 with a decomposition after the judge, 6 for the root, whose decomposition and judge
# are asked together.
CALLS, DEPTH = 10, 6

# The usual path: the root is open, its first sub-claim is decomposed in turn, every
# other node is reliable and true.
TWO_LEVELS = {
    "judge": {ROOT: (0.5, 0.4), "Part 1": (0.7, 0.5)},
    "parts": {
        ROOT: [("Part 1", "core event", 0.6), ("Part 2", "entity identity", 0.4)],
        "Part 1": [("Part 1.1", "core event", 0.6), ("Part 1.2", "entity identity", 0.4)],
    },
}
# The root in four sub-claims, each false and reliable: after three of them the root has
# converged (and is decisive), and the fourth, run ahead, is never taken.
FOUR_SIDES = {
    "judge": {ROOT: (0.5, 0.4), **{f"Side {i}": (0.1, 0.95) for i in range(1, 5)}},
    "parts": {
        ROOT: [
            (f"Side {i}", dim, 0.25)
            for i, dim in enumerate(
                ("core event", "entity identity", "quantitative accuracy", "geographic accuracy"),
                start=1,
            )
        ]
    },
}
# Two sub-claims with the same statement: the second finds the first's documents assessed.
TWINS = {
    "judge": {ROOT: (0.5, 0.4)},
    "parts": {ROOT: [("Same part", "core event", 0.5), ("Same part", "entity identity", 0.5)]},
}


def statement(messages: Sequence[Message]) -> str:
    """The node's statement in a ToE prompt (a repair round asks after it)."""
    asked = next(
        m.content for m in reversed(messages) if m.role == "user" and "<claim>" in m.content
    )
    return asked.split("<claim>", 1)[1].split("</claim>", 1)[0]


def script(tree: dict[str, Any]) -> Any:
    """Answers by schema; the judge and decomposer look the statement up in ``tree``."""

    def answer(messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
        assert schema is not None
        title = schema["title"]
        if title == "NodeAnalysis":
            said = statement(messages)
            return json.dumps(
                {"category": "political", "locale": "local", "recent_event": False,
                 "historical_fact": False, "factual_statement": True, "opinion": False,
                 "prediction": False, "background_query": f"{said} background",
                 "supporting_query": f"{said} support", "counter_query": f"{said} against"}
            )  # fmt: skip
        if title == "Cleaned":
            asked = next(m.content for m in messages if m.role == "user")
            chunk = asked.split("<chunk>", 1)[1].split("</chunk>", 1)[0]
            return json.dumps({"statements": [f"kept: {chunk}"]})
        if title == "Assessment":
            return json.dumps(
                {"explanation": "e", "stance": "support", "authoritative": False,
                 "primary": True, "relevance": 0.7, "credibility": 0.6}
            )  # fmt: skip
        if title == "Judgement":
            v, r = tree["judge"].get(statement(messages), (0.8, 0.8))
            return json.dumps({"explanation": "j", "veracity": v, "reliability": r})
        if title == "Decomposition":
            parts = tree["parts"].get(statement(messages), [])
            subs = [{"text": t, "dimension": d, "weight": w} for t, d, w in parts]
            return json.dumps({"subclaims": subs})
        raise AssertionError(title)

    return answer


class SlowFakeChatModel(FakeChatModel):
    """A scripted fake whose answers take time; each call's span recorded with its title.

    ``reverse``: of calls with one schema, each later one answers sooner (1, 3/4, 1/2,
    1/4 of ``delay`` in turn), so that calls sent together finish in the reverse order.
    """

    def __init__(self, answers: Any, *, delay: float, reverse: bool = False) -> None:
        super().__init__(answers)
        self.delay, self.reverse = delay, reverse
        self.sent: Counter[str] = Counter()
        self.spans: list[tuple[str, str, float, float]] = []

    async def acomplete(
        self, messages: Sequence[Message], params: GenParams, schema: dict[str, Any] | None = None
    ) -> RawCompletion:
        title = schema["title"] if schema else "text"
        turn = self.sent[title]
        self.sent[title] += 1
        start = time.perf_counter()
        await asyncio.sleep(self.delay * ((4 - turn % 4) / 4 if self.reverse else 1))
        self.spans.append((title, statement(messages), start, time.perf_counter()))
        return self.complete(messages, params, schema)


class QuerySource:
    """A web-kind source whose two documents depend on the query alone, as an index's do."""

    name = "news"

    def search(self, query, k=5, *, before=None, exclude_domains=()):  # type: ignore[no-untyped-def]
        slug = "-".join(query.lower().split())
        return [
            Evidence(
                text=f"Report {i} on {query}.",
                title=f"{query} {i}",
                source=self.name,
                url=f"https://news.example/{slug}/{i}",
            )
            for i in (1, 2)
        ][:k]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}


def toe(model: FakeChatModel, **settings: Any) -> ToeMethod:
    return ToeMethod(models=ModelSet(ModelClient(model)), sources=[QuerySource()], **settings)


def check(tree: dict[str, Any], *, parallel: bool, **settings: Any) -> Verdict:
    return toe(FakeChatModel(script(tree)), parallel=parallel, **settings).verify(CLAIM)


def same_check(par: Verdict, seq: Verdict) -> None:
    """The same verdict, tree, calls (prompts and answers, in order) and retrievals."""
    a, b = par.trace.model_dump(), seq.trace.model_dump()
    assert par.label == seq.label and par.confidence == seq.confidence
    assert par.explanation == seq.explanation
    assert [(c["step"], c["messages"], c["output"]) for c in a["calls"]] == [
        (c["step"], c["messages"], c["output"]) for c in b["calls"]
    ]
    assert a["retrievals"] == b["retrievals"]
    for part in ("tree", "markdown", "root_history", "stop_reason", "action_counts"):
        assert a[part] == b[part], part
    assert [e.model_dump() for e in par.evidence] == [e.model_dump() for e in seq.evidence]


def test_the_usual_path_gives_the_sequential_verdict_and_trace() -> None:
    # Calls sent together finish in the reverse order: a merge by arrival would show.
    def run(parallel: bool) -> Verdict:
        fake = SlowFakeChatModel(script(TWO_LEVELS), delay=0.02, reverse=True)
        return toe(fake, parallel=parallel).verify(CLAIM)

    par, seq = run(True), run(False)
    same_check(par, seq)
    assert par.label == Label.SUPPORTED and len(par.trace.model_dump()["tree"]) == 5
    assert par.usage.llm_calls == seq.usage.llm_calls == len(par.trace.calls)
    assert par.usage.critical_calls < seq.usage.critical_calls == seq.usage.llm_calls


def test_the_critical_path_by_hand() -> None:
    # Root (11 calls, 6 on the path); then node 1 (decomposed: 11, 7) and node 2 (10, 6)
    # at once; node 2 is taken in at iteration 3 without a call; then 1.1 and 1.2 at once
    # (10 and 6 each). 52 calls, 6 + 7 + 6 = 19 on the path; sequentially all 52.
    par = check(TWO_LEVELS, parallel=True)
    trace = par.trace.model_dump()
    texts = [n["text"] for n in trace["tree"]]
    assert texts == [ROOT, "Part 1", "Part 1.1", "Part 1.2", "Part 2"]
    assert trace["stop_reason"] == "root converged" and trace["iterations_used"] == 5
    assert (par.usage.llm_calls, par.usage.critical_calls) == (52, 19)
    assert trace["unused_calls"] == 0
    seq = check(TWO_LEVELS, parallel=False)
    assert seq.usage.critical_calls == seq.usage.llm_calls == 52


def test_work_run_ahead_and_never_taken_changes_nothing_but_the_usage() -> None:
    par, seq = check(FOUR_SIDES, parallel=True), check(FOUR_SIDES, parallel=False)
    same_check(par, seq)
    trace = par.trace.model_dump()
    assert par.label == Label.REFUTED and trace["iterations_used"] == 4
    # Side 4 ran ahead at iteration 2 and was pruned by the decisive root: in the tree
    # it is what a sequential run leaves, a pruned node with nothing read.
    side4 = trace["tree"][-1]
    assert (side4["text"], side4["status"]) == ("Side 4", "pruned")
    assert side4["features"] is None and side4["actions"] == [] and side4["evidence"] == []
    # Its 10 calls were spent: in the usage, not among the verdict's calls.
    assert trace["unused_calls"] == CALLS
    assert par.usage.llm_calls == seq.usage.llm_calls + CALLS == len(par.trace.calls) + CALLS
    assert seq.trace.model_dump()["unused_calls"] == 0
    # Root 6, then the four sides at once (6): 12 on the path.
    assert par.usage.critical_calls == 2 * DEPTH


def test_no_work_runs_ahead_past_the_last_iteration() -> None:
    # T_max = 3: root, Side 1, Side 2. Only Side 2 may start beside Side 1.
    par = check(FOUR_SIDES, parallel=True, max_iterations=3)
    seq = check(FOUR_SIDES, parallel=False, max_iterations=3)
    same_check(par, seq)
    assert par.usage.llm_calls == seq.usage.llm_calls
    assert par.trace.model_dump()["unused_calls"] == 0
    assert par.usage.critical_calls == 2 * DEPTH


def test_a_twin_statement_taken_first_sends_the_early_work_back() -> None:
    # Sequentially the second "Same part" finds the first one's four documents assessed:
    # its analysis and judge, no cleaning or assessment. Run ahead beside the first, it
    # had not; so it is done again at its turn, and the early work counted as unused.
    par, seq = check(TWINS, parallel=True), check(TWINS, parallel=False)
    same_check(par, seq)
    steps = [c.step for c in seq.trace.calls]
    assert steps[-2:] == ["toe.analyze", "toe.judge"] and steps.count("toe.assess") == 8
    assert par.trace.model_dump()["unused_calls"] == CALLS


def test_a_call_budget_that_fits_the_sequential_check_fits_the_parallel_one() -> None:
    seq = check(FOUR_SIDES, parallel=False)
    assert seq.usage.llm_calls == 11 + 3 * CALLS
    # Run ahead, Side 4 would take the check 10 calls past this budget.
    with spending(Budget(calls=seq.usage.llm_calls)):
        par = check(FOUR_SIDES, parallel=True)
    same_check(par, seq)
    assert par.usage.llm_calls == seq.usage.llm_calls
    # With room for the worst case of every node left, it runs ahead.
    with spending(Budget(calls=2000)):
        assert check(FOUR_SIDES, parallel=True).trace.model_dump()["unused_calls"] == CALLS


def test_room_counts_the_worst_case_of_what_may_still_run() -> None:
    per_node = most_calls(ToeConfig(), judge=True, judge_root=False)
    # The analysis, up to 10 documents of 4 cleaned chunks and an assessment, the judge,
    # the decomposition.
    assert per_node == 1 + 10 * (4 + 1) + 1 + 1 == 53
    lean = ToeConfig(clean=False, query_mode="per-action")
    # The analysis, five written queries, ten assessments, the root's judge, the
    # decomposition.
    assert most_calls(lean, judge=False, judge_root=True) == 1 + 5 + 10 + 1 + 1
    assert room(per_node, 2) is None  # no budget
    with spending(Budget(calls=300), scope="run"), spending(Budget(calls=250)):
        assert room(per_node, 2) == 250 // 53 - 2 == 2
        spend = current()
        assert spend is not None
        for _ in range(40):
            spend.admit()
        assert room(per_node, 2) == 210 // 53 - 2 == 1
        assert room(per_node, 4) == 0
    with spending(Budget(seconds=60)):
        assert room(per_node, 2) is None  # time is not spent by running ahead
    with spending(Budget(tokens=10**6)):
        assert room(per_node, 2) == 0


def test_training_never_runs_ahead() -> None:
    # A collector of episodes (policy training) reads them in Algorithm 1's order, and a
    # sampling policy draws its actions in that order too.
    method = toe(FakeChatModel(script(FOUR_SIDES)), parallel=True)
    taken: list[str] = []
    method.on_episode = lambda node, records: taken.append(node.text)
    verdict = method.verify(CLAIM)
    assert taken == [ROOT, "Side 1", "Side 2", "Side 3"]
    assert verdict.trace.model_dump()["unused_calls"] == 0
    assert verdict.usage.llm_calls == 11 + 3 * CALLS


def test_siblings_work_and_a_searchs_documents_overlap_in_time() -> None:
    for parallel in (True, False):
        fake = SlowFakeChatModel(script(TWO_LEVELS), delay=0.05)
        toe(fake, parallel=parallel).verify(CLAIM)
        spans = {(t, s): (a, b) for t, s, a, b in fake.spans if t == "NodeAnalysis"}
        (a1, b1), (a2, b2) = spans["NodeAnalysis", "Part 1"], spans["NodeAnalysis", "Part 2"]
        assessed = sorted((a, b) for t, s, a, b in fake.spans if (t, s) == ("Assessment", ROOT))
        first_search = assessed[:2]  # the two documents of the root's first search
        if parallel:
            assert max(a1, a2) < min(b1, b2)  # both sub-claims analysed at once
            assert first_search[1][0] < first_search[0][1]
        else:
            assert b1 <= a2
            assert first_search[0][1] <= first_search[1][0]


def test_a_nodes_work_reaches_the_tree_and_the_cache_only_when_taken_in() -> None:
    method = toe(FakeChatModel(script(TWINS)))
    evaluator = NodeEvaluator("llm-judge", method.models.for_role("judge"), None)
    worker = NodeWorker(
        CLAIM, config=method.config, thresholds=method.thresholds, evaluator=evaluator,
        agent=method.retrieval_agent(evaluator), analyst=method.models.for_role("analyst"),
        decomposer=method.models.for_role("decomposer"),
    )  # fmt: skip
    tree = Tree(CLAIM.text)
    parts = [("Same part", "core event", 0.5), ("Same part", "entity identity", 0.5)]
    node, twin = tree.add_children(tree.root, parts)

    def assessed(work: Any) -> int:
        return sum(c.step == "toe.assess" for c in work.log.calls)

    first = run_sync(worker.run(node, started=0))
    # Not taken in: the node is as it was, and a twin's work reads none of it.
    assert (node.status, node.features, node.episode.items) == ("pending", None, [])
    assert assessed(first) == assessed(run_sync(worker.run(twin, started=0))) == 4
    worker.apply(node, first, None)
    assert node.status == "evaluated" and len(node.episode.items) == 4
    assert node.v_self == 0.8 and node.features is not None
    assert assessed(run_sync(worker.run(twin, started=1))) == 0


def test_a_failure_in_work_run_ahead_counts_only_if_its_node_is_taken() -> None:
    def failing(tree: dict[str, Any], broken: str) -> Any:
        answer = script(tree)

        def reply(messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
            is_judge = schema is not None and schema["title"] == "Judgement"
            return (
                "no JSON here"
                if is_judge and statement(messages) == broken
                else answer(messages, schema)
            )

        return reply

    # Side 4's judge never answers validly, but Side 4 is never taken: no error either way.
    verdicts = [
        toe(FakeChatModel(failing(FOUR_SIDES, "Side 4")), parallel=p).verify(CLAIM)
        for p in (True, False)
    ]
    same_check(*verdicts)
    # Side 3's is taken: both raise it, at its turn.
    for parallel in (True, False):
        with pytest.raises(ModelOutputError):
            toe(FakeChatModel(failing(FOUR_SIDES, "Side 3")), parallel=parallel).verify(CLAIM)
