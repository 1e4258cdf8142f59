"""WKGFC's control flow: a scripted fake model over a real (small) pyoxigraph store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from verity.domain import Claim, Evidence, Label
from verity.errors import ConfigError, SourceUnavailableError
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
    "Q9": "banana",
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
    # Bob's education is in the graph but not in the claim's subgraph.
    {"subject": "Bob Smith", "property": "educated at", "object": "State University"},
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
    """A scripted fake model (control flow only): answers by schema, follows a script.

    Relations and facts are chosen by number, or by id: "P26" picks the relation line
    naming (P26), "Q7" the fact line naming (Q7). ``relations`` is one choice for every
    ranking call, or a list of choices, one per call (the last repeats). An action is a
    name or a dict of the answer's fields.
    """

    def __init__(self, actions=("verdict",), relations=(1,), facts=(1, 2), passages=None,
                 verdict=None):  # fmt: skip
        self.actions = list(actions)
        self.relations = [list(relations)] if not _nested(relations) else list(relations)
        self.facts = list(facts)
        self.passages = passages or {"kept": [1], "confidence": [0.9]}
        self.verdict = verdict or {
            "justification": "see [T1]",
            "label": "SUPPORTED",
            "confidence": 0.8,
            "cited_facts": [1],
            "cited_passages": [1],
        }
        self.seen: dict[str, list[str]] = {}
        self.schemas: dict[str, list[dict]] = {}

    @staticmethod
    def pick(prompt: str, wanted: list) -> list[int]:
        lines = [line for line in prompt.splitlines() if line.startswith("[")]
        chosen = []
        for w in wanted:
            if isinstance(w, int):
                chosen.append(w)
            else:
                chosen += [i for i, line in enumerate(lines, 1) if f"({w})" in line][:1]
        return chosen

    def __call__(self, messages, schema) -> str:
        title = schema["title"]
        prompt = messages[-1].content
        self.seen.setdefault(title, []).append(prompt)
        self.schemas.setdefault(title, []).append(schema)
        if title == "RelationChoice":
            wanted = self.relations.pop(0) if len(self.relations) > 1 else self.relations[0]
            return json.dumps({"reasoning": "r", "chosen": self.pick(prompt, wanted)})
        if title == "FactChoice":
            return json.dumps({"reasoning": "f", "chosen": self.pick(prompt, self.facts)})
        if title == "Action":
            action = self.actions.pop(0) if self.actions else "expandKG"
            answer = action if isinstance(action, dict) else {"action": action}
            return json.dumps({"reasoning": "because", "query": "Alice birth", **answer})
        if title == "PassageChoice":
            return json.dumps(self.passages)
        if title == "Statements":
            return json.dumps({"statements": STATEMENTS})
        return json.dumps(self.verdict)


def _nested(choices) -> bool:
    return bool(choices) and not isinstance(next(iter(choices)), int | str)


def method(script, sources, **config):
    fake = FakeChatModel(script)
    return WkgfcMethod(models=ModelSet(ModelClient(fake)), sources=sources, **config), fake


def allowed(schema: dict, name: str) -> list:
    """The values a schema property allows (pydantic writes one value as a const)."""
    prop = schema["properties"][name]
    prop = prop.get("items", prop)
    return prop["enum"] if "enum" in prop else [prop["const"]]


def facts_of(verdict) -> set[tuple[str, str, str]]:
    return {(f["subject"], f["pid"], f["object"]) for f in verdict.trace.subgraph["facts"]}


def first_hops(verdict) -> list[dict]:
    first = verdict.trace.actions[0]
    assert first["action"] == "initKGRetrieval"
    return first["observation"]["hops"]


def test_the_paper_constants_by_hand() -> None:
    from verity.methods.wkgfc import WkgfcConfig

    cfg = WkgfcConfig()
    # Section 5.6: "we set k = 4 and N = 4"; the call bound is N + kN + 1.
    assert (cfg.k, cfg.hops) == (4, 4)
    assert cfg.hops + cfg.k * cfg.hops + 1 == 4 + 16 + 1 == 21


def test_the_first_observation_is_the_pruned_n_hop_subgraph(graph) -> None:
    # Hop 1 starts from both seeds (Alice, Freedonia) and keeps "child" and "place of
    # birth"; "child" reaches three entities, more than k = 2, so the model prunes them
    # to Dan and Eve; the beam then takes k = 2 facts in turn: Dan, then Springfield.
    # Hop 2 starts from those two and keeps Springfield's country.
    script = Script(relations=[["P40", "P19"], ["P17"]], facts=["Q7", "Q8"])
    verdict = method(script, [graph], mode="kg-only", k=2, hops=2)[0].verify(CLAIM)
    hop1, hop2 = first_hops(verdict)
    assert hop1["from"] == ["Q1", "Q4"] and [r["pid"] for r in hop1["relations"]] == ["P40", "P19"]
    assert hop1["kept"] == [
        "Alice Smith (Q1) | child (P40) | Dan Smith (Q7)",
        "Alice Smith (Q1) | place of birth (P19) | Springfield (Q3)",
    ]
    assert hop1["next_frontier"] == ["Q7", "Q3"] and hop2["from"] == ["Q7", "Q3"]
    assert hop2["kept"] == ["Springfield (Q3) | country (P17) | Freedonia (Q4)"]
    assert facts_of(verdict) == {("Q1", "P40", "Q7"), ("Q1", "P19", "Q3"), ("Q3", "P17", "Q4")}
    assert [f["hop"] for f in verdict.trace.subgraph["facts"]] == [1, 1, 2]
    # Relation "child" was read whole: 3 statements of 3.
    assert hop1["relations"][0] | {"total": 3, "read": 3} == hop1["relations"][0]
    # One ranking per hop and one pruning (only "child" had more than k): 2 + 1 + verdict.
    calls = verdict.trace.model_calls
    assert calls["by_step"]["wkgfc.rank_relations"]["decisions"] == 2
    assert calls["by_step"]["wkgfc.prune_entities"]["decisions"] == 1
    assert calls["decisions"] == 4 and calls["repairs"] == 0
    assert "Action" not in script.seen


def test_a_hop_keeps_k_entities_not_k_per_relation(graph) -> None:
    # Three relations kept, each with a fact: k = 2 facts in all, in rank order.
    script = Script(relations=["P26", "P40", "P19"], facts=["Q6"])
    m, _ = method(script, [graph], mode="kg-only", k=2, hops=1)
    verdict = m.verify(Claim(text="Alice Smith has a child."))
    [hop] = first_hops(verdict)
    assert [r["pid"] for r in hop["relations"]] == ["P26", "P40"]  # at most k relations
    assert hop["kept"] == [
        "Alice Smith (Q1) | spouse (P26) | Bob Smith (Q2)",
        "Alice Smith (Q1) | child (P40) | Carol Smith (Q6)",
    ]
    assert hop["next_frontier"] == ["Q2", "Q6"]


def test_a_relation_whose_statements_are_all_held_is_not_offered(graph) -> None:
    # Hop 1 follows Alice's spouse; from Bob, "spouse" read backwards leads only to the
    # fact already held: it is not offered, so hop 2 reaches Bob's university.
    script = Script(relations=[["P26"], [1]])
    m, _ = method(script, [graph], mode="kg-only", k=1, hops=2)
    verdict = m.verify(Claim(text="Alice Smith's husband studied at State University."))
    first, second = first_hops(verdict)
    assert (
        first["held_relations"] == 0
        and "child (P40), outgoing, 3" in script.seen["RelationChoice"][0]
    )
    assert second["held_relations"] == 1
    assert "(P26)" not in script.seen["RelationChoice"][1]
    assert second["kept"] == ["Bob Smith (Q2) | educated at (P69) | State University (Q5)"]
    # From Carol, the one relation is "child" back to Alice, held: the schedule ends.
    script = Script(relations=["P40"], facts=["Q6"])
    verdict = method(script, [graph], mode="kg-only", k=1, hops=2)[0].verify(
        Claim(text="Alice Smith has a child.")
    )
    first, second = first_hops(verdict)
    assert first["kept"] == ["Alice Smith (Q1) | child (P40) | Carol Smith (Q6)"]
    assert (second["stopped"], second["held_relations"]) == ("no new relations", 1)
    assert len(script.seen["RelationChoice"]) == 1  # nothing left to rank at hop 2


def test_a_relation_shows_the_statements_not_yet_held(graph) -> None:
    from verity.kg.base import Triple
    from verity.llm.calllog import CallLog
    from verity.methods.wkgfc.expand import Beam, expand_hop
    from verity.methods.wkgfc.subgraph import Subgraph

    sub = Subgraph()
    sub.add([Triple("Q1", "Alice Smith", "P40", "child", "Q6", "Carol Smith")], hop=1)
    script = Script(relations=["P40"], facts=[1])
    beam = Beam(claim="Alice Smith has three children.", graph=graph.graph,
                model=ModelClient(FakeChatModel(script)), relevance=lambda c, t: [0.0] * len(t),
                k=1, limit=50, log=CallLog())  # fmt: skip
    record = asyncio.run(expand_hop(sub, beam, start=["Q1"]))
    # Alice has three "child" statements, one held: the line counts the other two.
    assert "child (P40), outgoing, 2" in script.seen["RelationChoice"][0]
    assert record["relations"][0] == {"pid": "P40", "label": "child", "direction": "out",
                                      "total": 3, "read": 3, "new": 2}  # fmt: skip


def test_the_fallback_keeps_the_most_used_relations(graph) -> None:
    script = Script(relations=[99])  # out of range: no usable ranking
    verdict = method(script, [graph], mode="kg-only", k=1, hops=1)[0].verify(
        Claim(text="Alice Smith has a child.")
    )
    [hop] = first_hops(verdict)
    assert hop["fallback"] == "most used relations"
    assert [r["pid"] for r in hop["relations"]] == ["P40"]  # three facts, the most


def test_decisions_and_repairs_are_counted_apart(graph) -> None:
    class Unreadable(Script):
        def __call__(self, messages, schema):
            if schema["title"] == "RelationChoice" and "RelationChoice" not in self.seen:
                self.seen["RelationChoice"] = []
                return "not json"
            return super().__call__(messages, schema)

    verdict = method(Unreadable(relations=["P19"]), [graph], mode="kg-only", k=1, hops=1)[0].verify(
        CLAIM
    )
    calls = verdict.trace.model_calls
    assert calls["by_step"]["wkgfc.rank_relations"] == {"decisions": 1, "repairs": 1}
    # The repair answer names no listed relation, so the fallback keeps "child", whose
    # three facts are pruned: ranking, pruning and the verdict are three decisions.
    assert (calls["decisions"], calls["repairs"]) == (3, 1)
    assert verdict.usage.llm_calls == 4  # usage counts every answer asked for


def test_facts_are_ranked_together_and_cut_only_to_fit(graph) -> None:
    from verity.methods.wkgfc.context import free_tokens
    from verity.methods.wkgfc.prompts import VERDICT
    from verity.nlp.embed import Encoder, default_encoder

    script = Script(relations=[["P40", "P26"], ["P69"]], facts=["Q6", "Q7"])
    full = method(script, [graph], mode="kg-only", k=3, hops=2)[0].verify(CLAIM)
    prompt = script.seen["KGVerdict"][0]
    shown = [line.split("] ", 1)[1] for line in prompt.splitlines() if line.startswith("[T")]
    encoder = default_encoder()
    scores = Encoder.cosine_matrix(encoder.encode([CLAIM.text]), encoder.encode(shown))[0]
    assert len(shown) == len(full.trace.subgraph["facts"]) and full.trace.facts_cut == 0
    assert list(scores) == sorted(scores, reverse=True)
    # A context that holds only part: the closest facts stay, whichever hop found them,
    # and the cut is recorded.
    small = Script(relations=[["P40", "P26"], ["P69"]], facts=["Q6", "Q7"])
    m, _ = method(small, [graph], mode="kg-only", k=3, hops=2)
    # The verdict prompt without facts, plus room for about two fact lines (~20 tokens
    # each by the estimate of a backend without a tokenizer).
    big = 10**6
    room = free_tokens(m.agents["judge"], VERDICT, context=big, claim=CLAIM.text, facts="",
                       web="(none)")  # fmt: skip
    m.config = m.config.model_copy(update={"context_tokens": big - room + 45})
    cut = m.verify(CLAIM)
    kept = [line for line in small.seen["KGVerdict"][0].splitlines() if line.startswith("[T")]
    assert 0 < len(kept) < len(shown) and cut.trace.facts_cut == len(shown) - len(kept)
    assert [line.split("] ", 1)[1] for line in kept] == shown[: len(kept)]


def test_noun_chunks_stand_in_when_no_entity_links(graph) -> None:
    verdict = method(Script(actions=["verdict"]), [graph])[0].verify(
        Claim(text="Zed Zyxx likes the banana.")
    )
    first = verdict.trace.actions[0]["observation"]
    assert first["seeds"] == ["Q9"]
    assert "Zed Zyxx" in first["unlinked"]


def test_the_agent_acts_until_its_verdict(graph) -> None:
    web = Web()
    script = Script(actions=[{"action": "expandKG", "entities": ["Q2"]}, "webSearch", "verdict"],
                    relations=[["P26"], ["P69"]])  # fmt: skip
    verdict = method(script, [graph, web], hops=1, k=1)[0].verify(CLAIM)
    names = [a["action"] for a in verdict.trace.actions]
    assert names == ["initKGRetrieval", "expandKG", "webSearch", "verdict"]
    hop = verdict.trace.actions[1]
    # The agent named Bob (reached by the first observation): the hop starts there.
    assert hop["entities"] == ["Q2"] and hop["observation"]["from"] == ["Q2"]
    assert hop["new"] == 1 and ("Q2", "P69", "Q5") in facts_of(verdict)
    assert web.asked == ["Alice birth"]
    assert len(verdict.trace.web) == 1  # one search, recorded once
    assert verdict.trace.web[0]["kept"][0]["ref"] == "https://example.org/alice"
    assert not verdict.trace.forced_verdict
    assert "Alice Smith was born in Springfield" in script.seen["KGVerdict"][0]


def test_the_agent_can_name_only_what_it_is_offered(graph) -> None:
    # kg-agent: no web search. The schema's enum holds only the legal actions and the
    # entities no hop has started from; a webSearch answer does not validate.
    script = Script(actions=["webSearch", "webSearch", "verdict"], relations=["P26"])
    verdict = method(script, [graph, Web()], mode="kg-agent", hops=1, k=1)[0].verify(CLAIM)
    schema = script.schemas["Action"][0]
    assert allowed(schema, "action") == ["expandKG", "verdict"]
    assert allowed(schema, "entities") == ["Q2"]
    assert "query" not in schema["properties"]
    assert "Actions available: expandKG, verdict." in script.seen["Action"][0]
    step = verdict.trace.actions[1]
    assert (step["action"], step["taken"]) == ("invalid", False)
    assert verdict.trace.web == []


def test_no_expansion_is_offered_when_the_agent_hops_are_used(graph) -> None:
    script = Script(actions=["expandKG", "verdict"], relations=[["P26"], ["P69"]])
    method(script, [graph], hops=1, k=1, agent_hops=1)[0].verify(CLAIM)
    first, second = (allowed(s, "action") for s in script.schemas["Action"])
    assert (first, second) == (["expandKG", "verdict"], ["verdict"])
    assert "Graph hops left: 0." in script.seen["Action"][1]


def test_the_step_limit_forces_a_verdict_with_its_own_prompt(graph) -> None:
    script = Script(actions=["expandKG"] * 10)
    m, fake = method(script, [graph], max_steps=3, hops=0, k=1)
    verdict = m.verify(CLAIM)
    assert verdict.trace.forced_verdict
    assert [a["action"] for a in verdict.trace.actions[1:4]] == ["expandKG"] * 3
    assert len(script.seen["Action"]) == 3
    assert verdict.trace.actions[-1]["reason"] == "step limit reached"
    steps = [call.step for call in verdict.trace.calls]
    assert steps[-1] == "wkgfc.forced_verdict" and "wkgfc.verdict" not in steps
    # 5.7: a verdict "based on the existing evidence". Running out of steps changes
    # neither the labels nor the open world (1, 2.2): no default label for a claim the
    # evidence leaves open, and a fact the graph lacks still does not refute.
    system = fake.requests[-1][0][0].content
    assert "no more evidence will come" in system
    assert "SUPPORTED or REFUTED on the balance of that evidence" in system
    assert "not by itself evidence against the claim" in system
    assert "answer REFUTED" not in system and "is REFUTED" not in system
    assert "ambiguous" not in system and "only part" not in system
    assert fake.requests[-1][2]["properties"]["label"]["enum"] == ["SUPPORTED", "REFUTED"]


def test_the_verdict_is_open_world(graph) -> None:
    m, fake = method(Script(actions=["verdict"]), [graph])
    verdict = m.verify(CLAIM)
    assert [c.step for c in verdict.trace.calls][-1] == "wkgfc.verdict"
    system = fake.requests[-1][0][0].content
    assert "not by itself evidence against the claim" in system
    assert "is REFUTED" not in system and "answer REFUTED" not in system
    assert fake.requests[-1][2]["properties"]["label"]["enum"] == ["SUPPORTED", "REFUTED"]


def test_a_confidence_over_100_is_clamped_and_recorded(graph) -> None:
    script = Script(verdict={"justification": "j", "label": "REFUTED", "confidence": 150,
                             "cited_facts": [], "cited_passages": []})  # fmt: skip
    verdict = method(script, [graph], mode="kg-only", hops=0)[0].verify(CLAIM)
    assert verdict.confidence == 1.0
    assert any("clamped" in note for note in verdict.trace.calls[-1].normalised)


def test_citations_are_counted_valid_or_not(graph) -> None:
    script = Script(verdict={"justification": "j", "label": "SUPPORTED", "confidence": 0.5,
                             "cited_facts": [1, 1, 99], "cited_passages": [3]})  # fmt: skip
    script.relations = [["P19"]]
    out = method(script, [graph], mode="kg-only", hops=1, k=1)[0].verify(CLAIM)
    assert out.trace.citations == {"cited": 4, "valid": 1}
    assert [e.id for e in out.evidence] == ["Q1|P19|Q3"]


def test_a_graph_is_required_and_an_optimised_prompt_is_loaded(graph, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="knowledge graph"):
        method(Script(), [Web()])
    saved = tmp_path / "policy.json"
    saved.write_text(json.dumps({"prompt": "Always check the birthplace first."}))
    m, fake = method(Script(actions=["verdict"]), [graph], policy_prompt=str(saved))
    m.verify(CLAIM)
    policy_calls = [msgs for msgs, _, s in fake.requests if s["title"] == "Action"]
    assert policy_calls[0][0].content.startswith("Always check the birthplace first.\n\n")
    assert m.excluded_ids() == set()  # written by hand: trained on nothing
    # A prompt from verity optimize keeps its examples out of a benchmark's sample, each
    # under its own dataset (the paper trains on FEVER and HOVER together, 4.4).
    saved.write_text(
        json.dumps(
            {
                "prompt": "p",
                "datasets": ["fever", "hover"],
                "train_ids": ["fever:7", "hover:u1"],
                "val_ids": ["fever:9"],
            }
        )
    )
    trained, _ = method(Script(), [graph], policy_prompt=str(saved))
    assert trained.excluded_ids() == {("fever", "7"), ("hover", "u1"), ("fever", "9")}
    saved.write_text("{broken")
    with pytest.raises(ConfigError, match="cannot read the policy prompt"):
        method(Script(), [graph], policy_prompt=str(saved))


def test_web_statements_are_aligned_and_never_override_the_graph(graph) -> None:
    script = Script(actions=["webSearch", "verdict"], relations=[["P26"], ["P69"]])
    verdict = method(script, [graph, Web()], facts_per_passage=5, k=1, hops=1)[0].verify(CLAIM)
    fused = verdict.trace.web_facts
    assert [f["status"] for f in fused] == [
        "already in graph",
        "web fact",
        "annotation",
        "dropped",
        "already in graph",
    ]
    spouse = fused[1]
    assert (spouse["subject_qid"], spouse["pid"], spouse["object_qid"]) == ("Q1", "P26", "Q6")
    assert spouse["graph_values"] == ["Bob Smith (Q2)"]
    # Birthplace and Bob's school are in the graph, not in the subgraph: skipped (4.3),
    # and the subgraph is not changed by the web either way.
    school = fused[4]
    assert (school["subject_qid"], school["pid"], school["object_qid"]) == ("Q2", "P69", "Q5")
    assert facts_of(verdict) == {("Q1", "P26", "Q2")}
    prompt = script.seen["KGVerdict"][0]
    assert "Carol Smith (Q6) [web: https://example.org/alice; graph has: Bob Smith (Q2)]" in prompt
    # The extractor knows the subgraph's entities, not only the seeds.
    assert "Bob Smith (Q2)" in script.seen["Statements"][0]


class ManyWeb(Web):
    """Seven passages, the one about Alice last in the source's order."""

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        self.asked.append(query)
        found = [Evidence(text=f"Fruit fact {i}: bananas.", title=f"F{i}", source="web",
                          url=f"https://example.org/f{i}") for i in range(6)]  # fmt: skip
        bio = "Alice Smith was born in Springfield, Freedonia."
        found.append(Evidence(text=bio, title="Bio", source="web", url="https://example.org/alice"))
        return apply_filters(found, k, before=before, exclude_domains=exclude_domains)


def test_the_filter_sees_the_graph_and_every_candidate(graph) -> None:
    script = Script(
        actions=["webSearch", "verdict"], relations=["P19"],
        passages={"kept": [7, 1, 1, 2, 9], "confidence": [0.6, 0.9, 0.4, 0.95, 1.0]},
    )  # fmt: skip
    verdict = method(script, [graph, ManyWeb()], fuse_web=False, web_keep=2, k=1, hops=1)[0].verify(
        CLAIM
    )
    [prompt] = script.seen["PassageChoice"]
    assert prompt.count("<passage title=") == 7  # all candidates, not a BM25 shortlist
    assert "Alice Smith (Q1) | place of birth (P19) | Springfield (Q3)" in prompt
    kept = [(k["ref"], k["confidence"]) for k in verdict.trace.web[0]["kept"]]
    # Number 9 is out of range; 1 keeps its own 0.9; the two most confident, best first.
    refs = {f"https://example.org/f{i}" for i in range(6)}
    assert len(kept) == 2 and kept[0][1] == 0.95 and kept[1][1] == 0.9
    assert {r for r, _ in kept} <= refs | {"https://example.org/alice"}
    assert verdict.trace.web[0]["filter_calls"] == 1


def test_bm25_puts_the_passage_about_the_query_first() -> None:
    from verity.methods.wkgfc.web import bm25_rerank

    fruit = Evidence(text="Bananas are yellow.", title="Fruit", source="web")
    bio = Evidence(text="Alice Smith was born in Springfield.", title="Bio", source="web")
    other = Evidence(text="Rain fell in March.", title="Weather", source="web")
    assert bm25_rerank(CLAIM.text, [fruit, other, bio])[0] is bio


class DownWeb(Web):
    name = "down"

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        raise SourceUnavailableError("down: connection refused")


class DownGraph(LocalGraph):
    """The family graph, but relation queries fail as a remote endpoint can."""

    def relations(self, ids, direction, limit=None):
        raise SourceUnavailableError("query service timed out")


def test_failing_sources_cost_a_step_not_the_claim(graph, tmp_path: Path) -> None:
    source_file = Path(graph.graph.file)
    down = GraphSource(DownGraph("family-down", file=source_file, root=tmp_path / "kg"))
    script = Script(actions=["webSearch", "verdict"])
    verdict = method(script, [down, DownWeb()])[0].verify(CLAIM)
    steps = verdict.trace.actions
    assert [a["action"] for a in steps] == ["initKGRetrieval", "webSearch", "verdict"]
    # The first hop fails and the schedule stops there rather than retrying N times.
    [hop] = steps[0]["observation"]["hops"]
    assert hop["stopped"].startswith("graph unavailable: query service")
    assert "connection refused" in steps[1]["observation"]["error"]
    assert steps[1]["taken"] is False
    # Nothing left to expand: the policy was not offered expandKG.
    assert allowed(script.schemas["Action"][0], "action") == ["webSearch", "verdict"]
    assert verdict.label == Label.SUPPORTED


def test_full_mode_without_a_web_source_offers_no_search(graph) -> None:
    script = Script(actions=["verdict"])
    method(script, [graph])[0].verify(CLAIM)
    assert "webSearch" not in allowed(script.schemas["Action"][0], "action")
    script = Script(actions=["verdict"])
    method(script, [graph, Web()], hops=1, k=1)[0].verify(CLAIM)
    assert "Actions available: expandKG, webSearch, verdict." in script.seen["Action"][0]


def test_kg_web_runs_the_hops_then_one_search_without_the_agent(graph) -> None:
    web = Web()
    script = Script(relations=["P26"], facts=[1])
    verdict = method(script, [graph, web], mode="kg-web", hops=1, fuse_web=False)[0].verify(CLAIM)
    names = [a["action"] for a in verdict.trace.actions]
    assert names == ["initKGRetrieval", "webSearch"]
    assert len(first_hops(verdict)) == 1
    assert web.asked == [CLAIM.text] and "Action" not in script.seen


def test_web_only_reads_no_graph(graph) -> None:
    web = Web()
    script = Script()
    before = graph.graph.queries.mark()
    verdict = method(script, [graph, web], mode="web-only")[0].verify(CLAIM)
    assert [a["action"] for a in verdict.trace.actions] == ["webSearch"]
    assert verdict.trace.subgraph["facts"] == [] and verdict.trace.sparql_queries == 0
    assert graph.graph.queries.summary(since=before).queries == 0
    assert "[T" not in script.seen["KGVerdict"][0] and "Statements" not in script.seen
    assert len(verdict.trace.web) == 1 and verdict.trace.web_facts == []


def test_given_evidence_is_read_with_the_first_observation(graph) -> None:
    # The gold setting (verity's extra on SummEval): read before the policy's first
    # move, and shown well past a web passage's 600 characters.
    article = "Alice Smith grew up in Springfield. " * 30 + "MARKER near the end."
    script = Script(actions=["verdict"])
    m, _ = method(script, [graph], fuse_web=False)
    verdict = m.verify(CLAIM, evidence=[Evidence(text=article, title="Source", source="gold")])
    names = [a["action"] for a in verdict.trace.actions]
    assert names == ["initKGRetrieval", "givenEvidence", "verdict"]
    assert "[W1] (given, confidence 1.00)" in script.seen["Action"][0]
    assert "MARKER near the end." in script.seen["KGVerdict"][0]
    assert "PassageChoice" not in script.seen  # no filter on given evidence


def test_the_gold_setting_keeps_the_graph_and_says_it_is_verity_s_extra(graph, tmp_path) -> None:
    from verity.bench.base import DatasetSplit, Example
    from verity.bench.runner import BenchConfig, prepare
    from verity.methods.base import load_method

    gold = (Evidence(text="Alice Smith was born in Springfield.", title="Src", source="gold"),)
    split = DatasetSplit(
        name="toy-gold", examples=(Example(id="1", subject=CLAIM, label=Label.SUPPORTED,
                                           gold=gold),),
        labels=(Label.SUPPORTED, Label.REFUTED), files=(), checksum="x", description="",
        label_map={}, has_gold=True,
    )  # fmt: skip
    fake = ModelClient(FakeChatModel(Script(actions=["verdict"])))
    config = BenchConfig(dataset="toy-gold", methods=("wkgfc", "direct"), out=tmp_path,
                         setting="gold", sample=None)  # fmt: skip
    built: dict[str, list] = {}

    def build(name, sources):
        built[name] = list(sources)
        return load_method(name, models=ModelSet(fake), sources=sources)

    run = prepare(config, load=lambda *a, **k: split, build=build, sources=lambda s: [graph])
    try:
        assert built == {"wkgfc": [graph], "direct": []}  # only wkgfc keeps its graph
        [warning] = run.manifest["warnings"]["wkgfc"]
        assert "verity's extra, not the paper's protocol" in warning
    finally:
        run.close()


def test_the_beam_takes_k_facts_in_turn_by_relation_rank() -> None:
    from verity.kg.base import Triple
    from verity.methods.wkgfc.expand import _round_robin

    a, b, c, d = (Triple("Q1", "", "P1", "", f"Q{i}", "") for i in range(10, 14))
    # Rank order first, one from each relation in turn, never more than k.
    assert _round_robin([[a, b], [c, d]], 3) == [a, c, b]
    assert _round_robin([[a], [c, d]], 4) == [a, c, d]
