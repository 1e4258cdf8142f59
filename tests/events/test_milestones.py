"""Each method's own milestones arrive in the order the method takes its steps.

The models are scripted fakes (control flow only); each script is the smallest that walks
a method through the steps whose milestones are checked. What is checked is the stream a
watcher sees: which milestones, with which flat details, in which order relative to one
another and to the check's end.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from verity import events
from verity.domain import Article, Claim, Event, Evidence
from verity.kg.local import LocalGraph
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.sources.base import apply_filters
from verity.sources.kg import GraphSource
from verity.testing import FakeChatModel

Answer = Callable[[Sequence[Any], dict[str, Any] | None], str]


def run(method_name: str, script: Answer, subject: Claim | Article, **kw: Any) -> list[Event]:
    """Every event of one check of ``subject`` by a method on the scripted fake."""
    models = ModelSet(ModelClient(FakeChatModel(script), cache=None))
    setup = kw.pop("setup", None)
    evidence = kw.pop("evidence", None)
    method = load_method(method_name, models=models, **kw)
    if setup is not None:
        setup(method)
    seen: list[Event] = []
    with events.listening(seen.append):
        method.verify(subject, evidence=evidence)
    assert seen[-1].kind == "check.end"
    return seen


def steps(seen: list[Event], prefix: str) -> list[tuple[str, dict[str, Any]]]:
    """The milestones named ``prefix...``, in arrival order, with their details."""
    return [
        (e.name or "", dict(e.data))
        for e in seen
        if e.kind == "milestone" and (e.name or "").startswith(prefix)
    ]


def last_before_end(seen: list[Event]) -> Event:
    """The last milestone of a check (the end comes after it, and nothing else may)."""
    milestones = [i for i, e in enumerate(seen) if e.kind == "milestone"]
    assert milestones, "no milestone at all"
    return seen[milestones[-1]]


# -- LoCal --------------------------------------------------------------------------------

PROGRAM = {
    "questions": [{"text": "Who directed Alien?"}],
    "facts": [{"text": "{q1} was born in England."}],
    "deduction": "f1",
}
GOLD = [Evidence(text="Ridley Scott, born in England, directed Alien.", source="gold")]


def local_script(messages: Sequence[Any], schema: dict[str, Any] | None) -> str:
    """One evaluator accepts in iteration 1 (so a second runs); both in iteration 2."""
    title = schema["title"] if schema else "text"
    local_script.calls[title] = local_script.calls.get(title, 0) + 1  # type: ignore[attr-defined]
    if title == "Decomposition":
        return json.dumps(PROGRAM)
    if title == "QuestionAnswer":
        return json.dumps({"answer": "Ridley Scott"})
    if title == "FactAnswer":
        return json.dumps({"reason": "r", "answer": True})
    if title == "LogicalJudgement":
        return json.dumps({"reason": "l", "claim_is_true": True})
    second = local_script.calls[title] > 1  # type: ignore[attr-defined]
    return json.dumps({"reason": "c", "contradiction": second})


def test_local_reports_each_iteration_before_its_sub_tasks_and_its_evaluation() -> None:
    local_script.calls = {}  # type: ignore[attr-defined]
    claim = Claim(text="The director of Alien was born in England.")
    seen = run("local", local_script, claim, evidence=GOLD, parallel=False)
    got = [(name, data["iteration"], data.get("subtask")) for name, data in steps(seen, "local.")]
    assert got == [
        ("local.iteration", 1, None),
        ("local.program", 1, None),
        ("local.subtask", 1, "q1"),
        ("local.subtask", 1, "f1"),
        ("local.evaluated", 1, None),
        ("local.iteration", 2, None),
        ("local.program", 2, None),
        ("local.subtask", 2, "q1"),
        ("local.subtask", 2, "f1"),
        ("local.evaluated", 2, None),
    ]
    assert steps(seen, "local.iteration")[0][1]["of"] == 3
    (_, q1), (_, f1) = steps(seen, "local.subtask")[:2]
    assert (q1["kind"], f1["kind"], f1["answer"]) == ("question", "fact", True)
    evaluated = [data for _, data in steps(seen, "local.evaluated")]
    assert [(d["accepted"], d["final"]) for d in evaluated] == [(1, False), (2, True)]
    # Each sub-task's milestone follows its own model call.
    kinds = [(e.kind, e.step or e.name) for e in seen]
    assert kinds.index(("milestone", "local.subtask")) > kinds.index(
        ("call.end", "local.answer_question")
    )


def test_local_reports_an_iteration_that_gave_no_solution() -> None:
    unreadable = {"left": 2}  # the fact agent's first answer and its repair round

    def script(messages: Sequence[Any], schema: dict[str, Any] | None) -> str:
        title = schema["title"] if schema else "text"
        if title == "FactAnswer" and unreadable["left"]:
            unreadable["left"] -= 1
            return "not json"
        if title == "CounterfactualJudgement":
            return json.dumps({"reason": "c", "contradiction": True})
        return local_script(messages, schema)

    local_script.calls = {}  # type: ignore[attr-defined]
    claim = Claim(text="The director of Alien was born in England.")
    seen = run("local", script, claim, evidence=GOLD, parallel=False)
    got = [(name, data["iteration"]) for name, data in steps(seen, "local.")]
    assert got[:4] == [
        ("local.iteration", 1),
        ("local.program", 1),
        ("local.subtask", 1),
        ("local.failed", 1),
    ]
    assert got[4] == ("local.iteration", 2) and got[-1] == ("local.evaluated", 2)


# -- ZoFia --------------------------------------------------------------------------------

ARTICLE = Article(
    title="Senate passes the health law repeal",
    text=(
        "The Senate voted on Tuesday to repeal the health law. "
        "Senator Mitch McConnell said the vote kept a promise to voters in Kentucky. "
        "Analysts expect millions to lose coverage."
    ),
)
WEB = [
    Evidence(
        text="The Senate vote on the health law failed. Mitch McConnell called it sad.",
        title="Vote report",
        source="web",
        url="https://example.org/vote",
    )
]


class FakeLetterEncoder:
    """A fake sentence encoder: letter counts, normalised (so every text is similar)."""

    def encode(self, texts: Sequence[str], **_: Any) -> np.ndarray:
        rows = np.zeros((len(texts), 26), dtype=np.float32)
        for i, text in enumerate(texts):
            for ch in text.lower():
                if "a" <= ch <= "z":
                    rows[i, ord(ch) - 97] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms == 0, 1.0, norms)


class WebSource:
    """A web-kind source with fixed passages."""

    name = "web"

    def search(self, query, k=5, *, before=None, exclude_domains=()):  # type: ignore[no-untyped-def]
        return apply_filters(WEB, k, before=before, exclude_domains=exclude_domains)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}


def zofia_script(rulings: list[str]) -> Answer:
    point = {"evidence": "the vote failed", "source": "web", "reason": "it says so"}
    answers = {
        "DimensionJudgement": {"analysis": "plain", "lean": "FAKE"},
        "DomainChoice": {"domain": "politics", "expert_role": "a Senate historian"},
        "ExpertJudgement": {"knowledge_concordance": "no", "logical_integrity": "yes"},
        "ExtractedClaims": {
            "core_claim": "The Senate repealed the law.",
            "sub_claims": ["McConnell spoke.", "The vote failed."],
        },
        "ClaimCheck": {"reasoning": "it failed", "quotes": [], "label": "Refutes"},
        "Argument": {"rebuttal": "no", "points": [point]},
    }

    def answer(messages: Sequence[Any], schema: dict[str, Any] | None) -> str:
        title = schema["title"] if schema else "text"
        if title == "JudgeRuling":
            return json.dumps({"ruling": rulings.pop(0)})
        return json.dumps(answers[title])

    return answer


def test_zofia_reports_keywords_agents_rounds_in_order_and_the_ruling_last() -> None:
    def fake_encoder(method: Any) -> None:
        method.encoder = FakeLetterEncoder()

    seen = run(
        "zofia",
        zofia_script(["I", "I", "F"]),
        ARTICLE,
        sources=[WebSource()],
        keywords="tfidf",
        composition="or",
        wikipedia=False,
        setup=fake_encoder,
    )
    names = [name for name, _ in steps(seen, "zofia.")]
    (keywords,) = [data for name, data in steps(seen, "zofia.keywords")]
    assert keywords["count"] >= 1 and keywords["construction"] == "tfidf"
    agents = [data["agent"] for _, data in steps(seen, "zofia.agent")]
    assert sorted(agents) == ["claim verifier", "domain expert", "linguist"]
    first_round = names.index("zofia.round")
    # Every report is in before the debate starts (the pool holds them all).
    assert all(i < first_round for i, n in enumerate(names) if n == "zofia.agent")
    # The claim verifier reads the web results, which the keywords found.
    said = [data.get("agent", name) for name, data in steps(seen, "zofia.")]
    assert said.index("zofia.keywords") < said.index("claim verifier")
    rounds = [data["round"] for _, data in steps(seen, "zofia.round")]
    assert rounds == [1, 2, 3]
    rulings = [(d["round"], d["decision"], d["final"]) for _, d in steps(seen, "zofia.ruling")]
    assert rulings == [(1, "Insufficient", False), (2, "Insufficient", False), (3, "Fake", True)]
    # Each round's ruling comes after its round starts and before the next one does.
    debate = [
        (n, d["round"]) for n, d in steps(seen, "zofia.") if n in ("zofia.round", "zofia.ruling")
    ]
    assert debate == [(n, r) for r in (1, 2, 3) for n in ("zofia.round", "zofia.ruling")]
    last = last_before_end(seen)
    assert (last.name, last.data["final"]) == ("zofia.ruling", True)


def test_zofia_without_debate_reports_one_forced_ruling() -> None:
    def forced(messages: Sequence[Any], schema: dict[str, Any] | None) -> str:
        return json.dumps({"ruling": "R"})

    seen = run(
        "zofia/no-debate",
        forced,
        ARTICLE,
        linguist=False,
        expert=False,
        claim_verification=False,
        web=False,
        wikipedia=False,
        keywords="tfidf",
    )
    assert [name for name, _ in steps(seen, "zofia.")] == ["zofia.keywords", "zofia.ruling"]
    (ruling,) = [data for _, data in steps(seen, "zofia.ruling")]
    assert (ruling["decision"], ruling["forced"], ruling["final"]) == ("Real", True, True)


def test_zofia_reports_an_agent_without_a_valid_report() -> None:
    def script(messages: Sequence[Any], schema: dict[str, Any] | None) -> str:
        title = schema["title"] if schema else "text"
        if title == "DomainChoice":
            return json.dumps({"domain": "politics", "expert_role": "a historian"})
        if title == "ExpertJudgement":
            return "not json"
        return json.dumps({"ruling": "F"})

    seen = run(
        "zofia/no-debate",
        script,
        ARTICLE,
        linguist=False,
        claim_verification=False,
        web=False,
        wikipedia=False,
        keywords="tfidf",
    )
    (expert,) = [data for _, data in steps(seen, "zofia.agent")]
    assert (expert["agent"], expert["ok"]) == ("domain expert", False)


# -- WKGFC --------------------------------------------------------------------------------

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
LABELS = {"Q1": "Alice Smith", "Q3": "Springfield", "Q4": "Freedonia", "P19": "place of birth"}
LABELS |= {"P17": "country"}
FACTS = [("Q1", "P19", "Q3"), ("Q3", "P17", "Q4")]


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> GraphSource:
    folder: Path = tmp_path_factory.mktemp("milestone-graph")
    lines = [f'<{WD}{i}> <{LABEL}> "{label}"@en .' for i, label in LABELS.items()]
    lines += [f"<{WD}{s}> <{WDT}{p}> <{WD}{o}> ." for s, p, o in FACTS]
    path = folder / "family.nt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return GraphSource(LocalGraph("family", file=path, root=folder / "kg"))


def wkgfc_script(actions: list[dict[str, Any]]) -> Answer:
    verdict = {
        "justification": "see [T1]",
        "label": "SUPPORTED",
        "confidence": 0.8,
        "cited_facts": [1],
        "cited_passages": [],
    }

    def answer(messages: Sequence[Any], schema: dict[str, Any] | None) -> str:
        title = schema["title"] if schema else "text"
        if title in ("RelationChoice", "FactChoice"):
            return json.dumps({"reasoning": "r", "chosen": [1]})
        if title == "Action":
            return json.dumps({"reasoning": "because", **actions.pop(0)})
        if title == "PassageChoice":
            return json.dumps({"kept": [1], "confidence": [0.9]})
        if title == "Statements":
            return json.dumps({"statements": []})
        return json.dumps(verdict)

    return answer


def test_wkgfc_reports_each_hop_each_action_and_each_search_in_turn(family) -> None:
    actions = [
        {"action": "expandKG"},
        {"action": "webSearch", "query": "Alice Smith birth"},
        {"action": "verdict"},
    ]
    claim = Claim(text="Alice Smith was born in Freedonia.")
    seen = run("wkgfc", wkgfc_script(actions), claim, sources=[family, WebSource()], k=2, hops=1)
    got = [
        (name, data.get("hop") or data.get("action") or "search")
        for name, data in steps(seen, "wkgfc.")
    ]
    assert got == [
        ("wkgfc.hop", 1),  # the first observation
        ("wkgfc.action", "expandKG"),
        ("wkgfc.hop", 2),
        ("wkgfc.action", "webSearch"),
        ("wkgfc.search", "search"),
        ("wkgfc.action", "verdict"),
    ]
    assert [d["step"] for n, d in steps(seen, "wkgfc.action")] == [1, 2, 3]
    (search,) = [d for _, d in steps(seen, "wkgfc.search")]
    assert (search["found"], search["kept"], search["failed"]) == (1, 1, False)
    # The search milestone follows its retrieval and its filter call.
    order = [(e.kind, e.source or e.step or e.name) for e in seen]
    assert order.index(("retrieval", "web")) < order.index(("milestone", "wkgfc.search"))


def test_wkgfc_says_when_the_step_limit_forces_the_verdict(family) -> None:
    actions = [{"action": "webSearch", "query": "Alice"}]
    claim = Claim(text="Alice Smith was born in Freedonia.")
    seen = run(
        "wkgfc",
        wkgfc_script(actions),
        claim,
        sources=[family, WebSource()],
        k=2,
        hops=1,
        max_steps=1,
    )
    acts = [(d["step"], d["action"], d["forced"]) for _, d in steps(seen, "wkgfc.action")]
    assert acts == [(1, "webSearch", False), (1, "verdict", True)]


# -- ToE ----------------------------------------------------------------------------------

TOE_CLAIM = Claim(text="The city council cut the library budget by half in 2019.")
ANALYSIS = {
    "category": "political",
    "locale": "local",
    "recent_event": False,
    "historical_fact": False,
    "factual_statement": True,
    "opinion": False,
    "prediction": False,
    "background_query": "library budget council",
    "supporting_query": "council halves library budget",
    "counter_query": "library budget rose",
}
TWO = {
    "subclaims": [
        {"text": "The council cut the budget.", "dimension": "core event", "weight": 0.6},
        {"text": "The cut was half.", "dimension": "quantitative accuracy", "weight": 0.2},
    ]
}


class NewsSource:
    """Fresh documents for every query."""

    name = "news"

    def __init__(self) -> None:
        self.served = 0

    def search(self, query, k=5, *, before=None, exclude_domains=()):  # type: ignore[no-untyped-def]
        found = []
        for _ in range(min(k, 2)):
            self.served += 1
            found.append(
                Evidence(
                    text=f"report {self.served} on {query}",
                    title=f"news {self.served}",
                    source=self.name,
                    url=f"https://news.example/{self.served}",
                )
            )
        return found

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}


def toe_script(messages: Sequence[Any], schema: dict[str, Any] | None) -> str:
    """The root is uncertain (so it is decomposed); both sub-claims are reliable."""
    title = schema["title"] if schema else "text"
    if title == "NodeAnalysis":
        return json.dumps(ANALYSIS)
    if title == "Cleaned":
        return json.dumps({"statements": ["a relevant fact"]})
    if title == "Assessment":
        return json.dumps(
            {"explanation": "e", "stance": "support", "authoritative": False, "primary": True,
             "relevance": 0.7, "credibility": 0.6}
        )  # fmt: skip
    if title == "Judgement":
        statement = messages[-1].content.split("<claim>", 1)[1].split("</claim>", 1)[0]
        v, r = (0.5, 0.5) if statement == TOE_CLAIM.text else (0.5, 0.9)
        return json.dumps({"explanation": "j", "veracity": v, "reliability": r})
    if title == "Decomposition":
        return json.dumps(TWO)
    raise AssertionError(title)


def test_toe_reports_nodes_actions_decomposition_and_the_stop_last() -> None:
    seen = run("toe", toe_script, TOE_CLAIM, sources=[NewsSource()], parallel=False)
    nodes = [(d["iteration"], d["node"], d["depth"]) for _, d in steps(seen, "toe.node")]
    assert nodes == [(1, 0, 1), (2, 1, 2), (3, 2, 2)]
    names = [(n, d.get("node")) for n, d in steps(seen, "toe.")]
    # Node 0's actions and its decomposition come after it is taken, before node 1 is.
    assert names.index(("toe.node", 0)) < names.index(("toe.action", 0))
    assert names.index(("toe.action", 0)) < names.index(("toe.decomposition", 0))
    assert names.index(("toe.decomposition", 0)) < names.index(("toe.node", 1))
    (decomposed,) = [d for _, d in steps(seen, "toe.decomposition")]
    assert decomposed["subclaims"] == 2
    actions = [d["action"] for _, d in steps(seen, "toe.action") if d["node"] == 0]
    assert actions[-1] == "stop" and len(actions) >= 2  # at least one search, then stop
    # Each search action is announced before the retrieval it makes.
    order = [(e.kind, e.name) for e in seen]
    assert order.index(("milestone", "toe.action")) < order.index(("retrieval", None))
    last = last_before_end(seen)
    assert (last.name, last.data["reason"], last.data["iterations"]) == (
        "toe.stop",
        "root converged",
        3,
    )
