"""WKGFC's control flow: a scripted fake model over a real (small) pyoxigraph store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verity.domain import Claim, Evidence, Label
from verity.errors import ConfigError
from verity.kg.local import LocalGraph
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.wkgfc import WkgfcMethod
from verity.sources.base import apply_filters
from verity.sources.kg import GraphSource
from verity.testing import FakeChatModel

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"

LABELS = {
    "Q1": "Alice Smith",
    "Q2": "Bob Smith",
    "Q3": "Springfield",
    "Q4": "Freedonia",
    "Q5": "State University",
    "Q6": "Carol Smith",
    "Q7": "Dan Smith",
    "Q8": "Eve Smith",
    "P26": "spouse",
    "P19": "place of birth",
    "P17": "country",
    "P69": "educated at",
    "P40": "child",
}
FACTS = [
    ("Q1", "P26", "Q2"),
    ("Q1", "P19", "Q3"),
    ("Q3", "P17", "Q4"),
    ("Q2", "P69", "Q5"),
    ("Q1", "P40", "Q6"),
    ("Q1", "P40", "Q7"),
    ("Q1", "P40", "Q8"),
]
CLAIM = Claim(text="Alice Smith was born in Freedonia.")
STATEMENTS = [
    {"subject": "Alice Smith", "property": "place of birth", "object": "Springfield"},
    {"subject": "alice smith", "property": "Spouse", "object": "Carol Smith"},
    {"subject": "Alice Smith", "property": "height", "object": "170 cm"},
    {"subject": "Zed Unknown", "property": "knows", "object": "Yan"},
]


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> GraphSource:
    folder = tmp_path_factory.mktemp("wkgfc-graph")
    lines = [f'<{WD}{i}> <{LABEL}> "{label}"@en .' for i, label in LABELS.items()]
    lines += [f"<{WD}{s}> <{WDT}{p}> <{WD}{o}> ." for s, p, o in FACTS]
    path = folder / "family.nt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return GraphSource(LocalGraph("family", file=path, root=folder / "kg"))


class Web:
    """A web-kind source with fixed passages."""

    name = "web"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        self.asked.append(query)
        found = [
            Evidence(text="Alice Smith was born in Springfield, Freedonia.", title="Bio",
                     source="web", url="https://example.org/alice"),
            Evidence(text="Bananas are yellow.", title="Fruit", source="web",
                     url="https://example.org/fruit"),
        ]  # fmt: skip
        return apply_filters(found, k, before=before, exclude_domains=exclude_domains)

    def to_dict(self):
        return {"type": "fixed-web"}


class Script:
    """Answers by schema; the policy follows a list of actions."""

    def __init__(self, actions=("verdict",), relations=(1,), facts=(1, 2)):
        self.actions = list(actions)
        self.relations, self.facts = list(relations), list(facts)
        self.seen: dict[str, list[str]] = {}

    def __call__(self, messages, schema) -> str:
        title = schema["title"]
        self.seen.setdefault(title, []).append(messages[-1].content)
        if title == "RelationChoice":
            return json.dumps({"reasoning": "r", "chosen": self.relations})
        if title == "FactChoice":
            return json.dumps({"reasoning": "f", "chosen": self.facts})
        if title == "Action":
            action = self.actions.pop(0) if self.actions else "expandKG"
            return json.dumps({"reasoning": "because", "action": action, "query": "Alice birth"})
        if title == "PassageChoice":
            return json.dumps({"kept": [1], "confidence": [0.9]})
        if title == "Statements":
            return json.dumps({"statements": STATEMENTS})
        return json.dumps(
            {"justification": "see [T1]", "label": "SUPPORTED", "confidence": 0.8,
             "cited_facts": [1], "cited_passages": [1]}
        )  # fmt: skip


def method(script, sources, **config):
    fake = FakeChatModel(script)
    return WkgfcMethod(models=ModelSet(ModelClient(fake)), sources=sources, **config), fake


def test_initial_retrieval_links_the_claim_and_keeps_ids(graph) -> None:
    script = Script(actions=["verdict"])
    verdict = method(script, [graph])[0].verify(CLAIM)
    first = verdict.trace.actions[0]
    assert first["action"] == "initKGRetrieval" and first["observation"]["seeds"] == ["Q1", "Q4"]
    facts = {(f["subject"], f["pid"], f["object"]) for f in verdict.trace.subgraph["facts"]}
    assert {("Q1", "P26", "Q2"), ("Q1", "P19", "Q3")} <= facts
    assert verdict.label == Label.SUPPORTED
    assert verdict.evidence[0].id and verdict.evidence[0].id.startswith("Q1|")
    assert verdict.trace.sparql_queries >= 2


def test_kg_only_expands_n_hops_within_the_call_bound(graph) -> None:
    script = Script(relations=[1, 2], facts=[1])
    verdict = method(script, [graph], mode="kg-only", k=2, hops=2)[0].verify(CLAIM)
    hops = [a for a in verdict.trace.actions if a["action"] == "expandKG"]
    assert 1 <= len(hops) <= 2
    # N + kN + 1 with k = N = 2.
    assert verdict.usage.llm_calls <= 2 + 2 * 2 + 1
    assert "Action" not in script.seen


def test_pruning_keeps_at_most_k_facts_of_a_relation(graph) -> None:
    # From Alice, "child" has three facts; with k = 1 only the chosen one stays.
    script = Script(relations=[1], facts=[2])
    m, _ = method(script, [graph], mode="kg-only", k=1, hops=1, seed_limit=1)
    verdict = m.verify(Claim(text="Alice Smith has a child."))
    hop = next(a for a in verdict.trace.actions if a["action"] == "expandKG")["observation"]
    assert len(hop["kept"]) <= 1
    assert len(hop["relations"]) == 1


def test_the_agent_acts_until_its_verdict(graph) -> None:
    web = Web()
    script = Script(actions=["expandKG", "webSearch", "verdict"])
    verdict = method(script, [graph, web])[0].verify(CLAIM)
    names = [a["action"] for a in verdict.trace.actions]
    assert names == ["initKGRetrieval", "expandKG", "webSearch", "verdict"]
    assert web.asked == ["Alice birth"]
    assert verdict.trace.web[0]["kept"][0]["ref"] == "https://example.org/alice"
    assert not verdict.trace.forced_verdict
    assert "Alice Smith was born in Springfield" in script.seen["KGVerdict"][0]


def test_the_step_limit_forces_a_verdict(graph) -> None:
    script = Script(actions=["expandKG"] * 10)
    verdict = method(script, [graph], max_steps=3)[0].verify(CLAIM)
    assert verdict.trace.forced_verdict
    assert len(script.seen["Action"]) == 3
    assert verdict.trace.actions[-1]["reason"] == "step limit reached"


def test_a_graph_is_required_and_an_optimised_prompt_is_loaded(graph, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="knowledge graph"):
        method(Script(), [Web()])
    saved = tmp_path / "policy.json"
    saved.write_text(json.dumps({"prompt": "Always check the birthplace first."}))
    m, fake = method(Script(actions=["verdict"]), [graph], policy_prompt=str(saved))
    m.verify(CLAIM)
    policy_calls = [msgs for msgs, _, s in fake.requests if s["title"] == "Action"]
    assert policy_calls[0][0].content == "Always check the birthplace first."


def test_web_statements_are_aligned_and_never_override_the_graph(graph) -> None:
    script = Script(actions=["webSearch", "verdict"])
    verdict = method(script, [graph, Web()], facts_per_passage=4)[0].verify(CLAIM)
    fused = verdict.trace.web_facts
    assert [f["status"] for f in fused] == [
        "already in graph",
        "web fact",
        "annotation",
        "dropped",
    ]
    spouse = fused[1]
    assert (spouse["subject_qid"], spouse["pid"], spouse["object_qid"]) == ("Q1", "P26", "Q6")
    assert spouse["conflicts_with"] == ["Q2"]
    # The graph is unchanged: the web fact is shown beside it, marked, in the verdict prompt.
    facts = {(f["subject"], f["pid"], f["object"]) for f in verdict.trace.subgraph["facts"]}
    assert ("Q1", "P26", "Q6") not in facts and ("Q1", "P26", "Q2") in facts
    prompt = script.seen["KGVerdict"][0]
    assert "Carol Smith (Q6) [web: https://example.org/alice; conflicts with graph: Q2]" in prompt
