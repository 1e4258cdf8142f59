"""What each method gives the grounding check to read its explanation against.

Every registered method, run on a scripted fake model with grounding on, gets a grounding
whose sentences sit where they are in its explanation; then, one method at a time, the
references' ids and texts are checked by hand against what its prompts showed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from faults.checkpoints import bert
from faults.latency import instance
from verity.domain import Article, Claim, Evidence, Message
from verity.kg.local import LocalGraph
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method, method_names
from verity.sources.base import apply_filters
from verity.sources.kg import GraphSource
from verity.testing import FakeChatModel

CLAIM = Claim(text="The Eiffel Tower is in Paris.")
ARTICLE = Article(
    title="Tower news",
    text="The Eiffel Tower is in Paris. Paris is the capital of France. It opened in 1889.",
)
PASSAGES = [
    Evidence(
        text="The Eiffel Tower is a tower in Paris, France.",
        title="Eiffel Tower",
        source="list",
        url="https://example.org/eiffel",
    ),
    Evidence(
        text="Paris is the capital of France.",
        title="Paris",
        source="list",
        url="https://example.org/paris",
    ),
]
# Methods that need a setting to run at all: nli a checkpoint folder (a tiny one, built here).
NEEDS_CHECKPOINT = {"nli"}
# Methods that check against given evidence only.
GIVEN = {"graphcheck"}

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
LABELS = {
    "Q1": "Eiffel Tower",
    "Q2": "Paris",
    "Q3": "France",
    "P131": "located in",
    "P17": "country",
}
FACTS = [("Q1", "P131", "Q2"), ("Q2", "P17", "Q3")]


class ListSource:
    """The same passages for every query (a fake source)."""

    name = "list"

    def __init__(self, passages: Sequence[Evidence] = PASSAGES) -> None:
        self.passages = list(passages)

    def search(self, query, k=5, *, before=None, exclude_domains=()):  # type: ignore[no-untyped-def]
        return apply_filters(self.passages, k, before=before, exclude_domains=exclude_domains)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> GraphSource:
    folder = tmp_path_factory.mktemp("tower-graph")
    lines = [f'<{WD}{i}> <{LABEL}> "{label}"@en .' for i, label in LABELS.items()]
    lines += [f"<{WD}{s}> <{WDT}{p}> <{WD}{o}> ." for s, p, o in FACTS]
    path = folder / "tower.nt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return GraphSource(LocalGraph("tower", file=path, root=folder / "kg"))


def checker_answer(statuses: Sequence[str] = ("no_claim",)) -> str:
    """The fake checker's answer: the first sentences' statuses, nothing cited."""
    sentences = [{"n": n, "status": s, "references": []} for n, s in enumerate(statuses, 1)]
    return json.dumps({"sentences": sentences, "argues_for_label": "yes"})


def any_step(messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
    """A fake model that answers any step minimally, by the schema it is given.

    Where a schema's shape is not enough (a LoCal program's deduction, ProgramFC's program
    text), the smallest valid program is given.
    """
    if schema is None:
        if messages[0].content.startswith("You turn a claim"):  # ProgramFC's program
            return 'fact_1 = Verify("The Eiffel Tower is in Paris.")\nlabel = Predict(fact_1)'
        return "SUPPORTED. The tower stands in Paris."
    if schema.get("title") == "GroundingAnswer":
        return checker_answer()
    if "deduction" in schema.get("properties", {}):  # LoCal's program
        return json.dumps({"facts": [{"text": "The tower is in Paris."}], "deduction": "f1"})
    return json.dumps(instance(schema))


@pytest.mark.parametrize("name", method_names())
def test_every_method_grounds_its_explanation_against_its_own_references(
    name: str, graph: GraphSource, tmp_path: Path
) -> None:
    models = ModelSet(ModelClient(FakeChatModel(any_step, model=f"fake-any-{name}")))
    sources: list[Any] = [graph, ListSource()] if name == "wkgfc" else [ListSource()]
    settings: dict[str, Any] = {}
    if name in NEEDS_CHECKPOINT:
        pytest.importorskip("transformers")
        settings["checkpoint"] = bert(tmp_path / "nli", [5.0, 0.0, 0.0], words=["tower"])
    method = load_method(name, models=models, sources=sources, **settings)
    method.grounding = "on"  # type: ignore[attr-defined]
    subject = CLAIM if Claim in method.accepts else ARTICLE
    verdict = method.verify(subject, evidence=PASSAGES if name in GIVEN else None)

    found = verdict.grounding
    assert found is not None and found.mode == "on" and found.error is None
    text = verdict.explanation
    for sentence in found.sentences:
        assert text[sentence.start : sentence.end] == sentence.text
    if text.strip():
        # The fake checker's word on sentence 1 was read onto it.
        assert found.sentences and found.sentences[0].status == "no_claim"
        assert found.usage.llm_calls == 1
    # What was checked against is what the method gives, each id once.
    given = method.references(verdict)  # type: ignore[attr-defined]
    assert list(found.references) == given[: len(found.references)]
    ids = [ref.id.upper() for ref in given]
    assert len(ids) == len(set(ids))


# -- LoCal: the deciding solution's sub-tasks, then its passages -------------------------

ALIEN = [
    Evidence(text="Alien was directed by Ridley Scott.", title="Alien", source="gold"),
    Evidence(text="Ridley Scott was born in South Shields, England.", title="Scott", source="gold"),
]


class LocalScript:
    """A fake LoCal model: programs, fact answers and evaluations in order of asking."""

    def __init__(self, programs: list[dict[str, Any]], logical: list[bool], conflict: list[bool]):
        self.programs, self.logical, self.conflict = programs, logical, conflict

    def __call__(self, messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
        title = schema["title"] if schema else ""
        if title == "GroundingAnswer":
            return checker_answer()
        if title == "Decomposition":
            return json.dumps(self.programs.pop(0))
        if title == "QuestionAnswer":
            return json.dumps({"answer": "Ridley Scott"})
        if title == "FactAnswer":
            return json.dumps({"reason": "the passage names his birthplace", "answer": True})
        if title == "LogicalJudgement":
            return json.dumps({"reason": "l", "claim_is_true": self.logical.pop(0)})
        return json.dumps({"reason": "c", "contradiction": self.conflict.pop(0)})


def test_local_references_are_the_deciding_subtasks_then_the_passages() -> None:
    first = {"facts": [{"text": "Alien is a film."}], "deduction": "f1"}
    second = {
        "questions": [{"text": "Who directed Alien?"}],
        "facts": [{"text": "{q1} was born in England."}],
        "deduction": "f1",
    }
    # Iteration 1: v true, both evaluators reject; iteration 2: both accept, final. The
    # explanation and its references are iteration 2's, not the first one's.
    script = LocalScript([first, second], logical=[False, True], conflict=[False, True])
    models = ModelSet(ModelClient(FakeChatModel(script, model="fake-local-refs")))
    method = load_method("local", models=models)
    method.grounding = "on"  # type: ignore[attr-defined]
    verdict = method.verify(
        Claim(text="The director of Alien was born in England."), evidence=ALIEN
    )

    assert verdict.trace.model_dump()["deciding_iteration"] == 2
    refs = [(r.id, r.kind, r.title, r.text) for r in verdict.grounding.references]  # type: ignore[union-attr]
    assert refs == [
        ("S1", "subtask", "q1", "Question: Who directed Alien? Answer: Ridley Scott"),
        (
            "S2",
            "subtask",
            "f1",
            "Statement: Ridley Scott was born in England. Answer: true. "
            "Reason: the passage names his birthplace",
        ),
        ("1", "passage", "Alien", "Alien was directed by Ridley Scott."),
        ("2", "passage", "Scott", "Ridley Scott was born in South Shields, England."),
    ]
    # Each sub-task line of the explanation names its record; the prompts did not change.
    lines = verdict.explanation.splitlines()
    assert lines[0] == "[S1] q1 (question) Who directed Alien? -> Ridley Scott"
    assert lines[1] == "[S2] f1 (fact) Ridley Scott was born in England. -> true"
    assert lines[2] == "Deduction: f1 = true"
    cites = [s.cites for s in verdict.grounding.sentences]  # type: ignore[union-attr]
    assert cites[0] == ("S1",) and ("S2",) in cites


# -- ZoFia: found quotes, the pool's Wikipedia and web passages, the debate's points -----

SENATE = Article(
    title="Senate passes the Affordable Care Act repeal",
    text=(
        "The United States Senate voted on Tuesday to repeal the Affordable Care Act. "
        "Senator Mitch McConnell said the vote fulfilled a promise to voters in Kentucky."
    ),
)
WEB = [
    Evidence(
        text="The Senate vote on the Affordable Care Act failed 49 to 51. Mitch McConnell "
        "called it a disappointment.",
        title="Vote report",
        source="web",
        url="https://example.org/vote",
    ),
    Evidence(
        text="Mitch McConnell is the Senate majority leader from Kentucky.",
        title="McConnell profile",
        source="web",
        url="https://example.org/mcconnell",
    ),
]
WIKI = [
    Evidence(
        text="The Affordable Care Act is a landmark US federal statute enacted in 2010.",
        title="The Affordable Care Act",
        source="wiki",
    )
]


class WebSource(ListSource):
    """A web-kind source: no titled pages."""

    name = "web"


class WikiSource(ListSource):
    """A Wikipedia-kind source: titled pages, looked up by exact title."""

    name = "wiki"

    def lookup(self, title, *, fuzzy=True):  # type: ignore[no-untyped-def]
        return next((e for e in self.passages if e.title.casefold() == title.casefold()), None)


def zofia_step(messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
    """A fake ZoFia model: one quote found in the web passages and one invented."""
    title = schema["title"] if schema else ""
    answers: dict[str, Any] = {
        "GroundingAnswer": json.loads(checker_answer()),
        "DimensionJudgement": {"analysis": "plain wording", "lean": "REAL"},
        "DomainChoice": {"domain": "politics", "expert_role": "a Senate historian"},
        "ExpertJudgement": {"knowledge_concordance": "fits", "logical_integrity": "sound"},
        "ExtractedClaims": {
            "core_claim": "The Senate vote on the Affordable Care Act failed.",
            "sub_claims": ["Mitch McConnell is from Kentucky.", "McConnell called it a loss."],
        },
        "ClaimCheck": {
            "reasoning": "the report says so",
            "quotes": ["called it a disappointment", "a sentence no passage holds"],
            "label": "Supports",
        },
        "Argument": {
            "rebuttal": "",
            "points": [
                {"evidence": "The vote failed [S1]", "source": "web", "reason": "a report"},
                {"evidence": "He is a senator [W1]", "source": "Wikipedia", "reason": "bio"},
            ],
        },
        "JudgeRuling": {"ruling": "R"},
        "EntityList": {"entities": ["Mitch McConnell"]},
    }
    return json.dumps(answers[title]) if title in answers else json.dumps(instance(schema or {}))


@pytest.mark.integration  # the sentence encoder picks each claim's chunks (eq. 9)
def test_zofia_references_keep_the_pools_numbers() -> None:
    fake = FakeChatModel(zofia_step, model="fake-zofia-refs")
    models = ModelSet(ModelClient(fake))
    sources = [WikiSource(WIKI), WebSource(WEB)]
    method = load_method("zofia", models=models, sources=sources)
    method.grounding = "on"  # type: ignore[attr-defined]
    verdict = method.verify(SENATE)

    refs = {r.id: r for r in verdict.grounding.references}  # type: ignore[union-attr]
    # The pool showed Wikipedia as [W1].. and the web as [S1].. (material.passages_block).
    assert refs["W1"].text == WIKI[0].text and refs["W1"].kind == "passage"
    assert refs["S1"].text == WEB[0].text and refs["S1"].title == "Vote report"
    assert "W2" not in refs
    debater = next(m[-1].content for m, _, sc in fake.requests if sc and sc["title"] == "Argument")
    assert '[W1] <passage title="The Affordable Care Act"' in debater
    assert '[S1] <passage title="Vote report"' in debater
    web = verdict.trace.model_dump()["information_matrix"]["web"]
    assert sorted(r for r in refs if r.startswith("S")) == [f"S{n}" for n in range(1, web + 1)]
    # Only the quote found word for word in a passage is evidence: one per checked claim.
    quotes = [r for r in refs.values() if r.kind == "quote"]
    assert quotes and all(q.text == "called it a disappointment" for q in quotes)
    assert [q.id for q in quotes] == [f"Q{n}" for n in range(1, len(quotes) + 1)]
    assert quotes[0].title == "core claim: The Senate vote on the Affordable Care Act failed."
    # The debate: pro's two points, then con's, in the order argued.
    assert refs["D1"].text == "The vote failed [S1] (from web): a report"
    assert refs["D1"].title == "round 1, pro" and refs["D3"].title == "round 1, con"
    assert refs["D2"].text == "He is a senator [W1] (from Wikipedia): bio"
    assert "D5" not in refs
    # The explanation repeats pro's last points, and so cites what the debater cited.
    cites = {c for s in verdict.grounding.sentences for c in s.cites}  # type: ignore[union-attr]
    assert {"S1", "W1"} <= cites


# -- WKGFC: the judge's numbered facts [T<n>] and passages [W<n>] ------------------------


def wkgfc_step(messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
    """A fake WKGFC model: takes the first relations and facts, keeps both passages."""
    title = schema["title"] if schema else ""
    answers: dict[str, Any] = {
        "GroundingAnswer": json.loads(checker_answer()),
        "RelationChoice": {"reasoning": "r", "chosen": [1, 2, 3]},
        "FactChoice": {"reasoning": "f", "chosen": [1, 2]},
        "PassageChoice": {"kept": [1, 2], "confidence": [0.9, 0.8]},
        "Statements": {"statements": []},
        "KGVerdict": {
            "justification": "The tower stands in Paris [T2]. The web agrees [W2].",
            "label": "SUPPORTED",
            "confidence": 0.9,
            "cited_facts": [1],
            "cited_passages": [2],
        },
    }
    return json.dumps(answers[title])


def test_wkgfc_references_are_the_judges_numbered_facts_and_passages(graph: GraphSource) -> None:
    fake = FakeChatModel(wkgfc_step, model="fake-wkgfc-refs")
    method = load_method(
        "wkgfc",
        models=ModelSet(ModelClient(fake)),
        sources=[graph, ListSource()],
        mode="kg-web",
        k=3,
        hops=2,
    )
    method.grounding = "on"  # type: ignore[attr-defined]
    verdict = method.verify(CLAIM)

    judge = next(m[-1].content for m, _, s in fake.requests if s and s["title"] == "KGVerdict")
    # Each numbered line of the judge's prompt, by its id.
    shown = {
        m.group(1): line for line in judge.splitlines() if (m := re.search(r"\[([TW]\d)\] ", line))
    }
    refs = verdict.grounding.references  # type: ignore[union-attr]
    # The ids the justification cites first, then the judge's list, then a fact and a
    # passage in turn.
    assert [r.id for r in refs] == ["T2", "W2", "T1", "W1"]
    facts = {r.id: r.text for r in refs if r.kind == "fact"}
    assert all(f"[{n}] {text}" in shown[n] for n, text in facts.items())
    assert set(facts.values()) == {
        "Eiffel Tower (Q1) | located in (P131) | Paris (Q2)",
        "Paris (Q2) | country (P17) | France (Q3)",
    }
    web = {r.id: (r.text, r.title) for r in refs if r.kind == "passage"}
    assert web == {
        "W1": ("The Eiffel Tower is a tower in Paris, France.", "Eiffel Tower"),
        "W2": ("Paris is the capital of France.", "Paris"),
    }
    assert 'title="Paris">Paris is the capital of France.</passage>' in shown["W2"]
    first, second = verdict.grounding.sentences  # type: ignore[union-attr]
    assert (first.cites, second.cites) == (("T2",), ("W2",))


# -- ToE: one reference per evaluated node, n_i as N<i> ----------------------------------

BUDGET = Claim(text="The city council cut the library budget by half in 2019.")
SUBCLAIMS = [
    {"text": "The council cut the budget.", "dimension": "core event", "weight": 0.6},
    {"text": "The cut was half.", "dimension": "quantitative accuracy", "weight": 0.4},
]


def toe_step(messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
    """A fake ToE model: the claim is unsure (0.5, 0.5), each sub-claim likely (0.9, 0.8)."""
    title = schema["title"] if schema else ""
    if title == "Judgement":
        statement = messages[-1].content.split("<claim>", 1)[1].split("</claim>", 1)[0]
        v, r = (0.5, 0.5) if statement == BUDGET.text else (0.9, 0.8)
        return json.dumps({"explanation": "j", "veracity": v, "reliability": r})
    answers: dict[str, Any] = {
        "GroundingAnswer": json.loads(checker_answer()),
        "Cleaned": {"statements": ["The council halved the budget."]},
        "Assessment": {
            "explanation": "e",
            "stance": "support",
            "authoritative": False,
            "primary": True,
            "relevance": 0.7,
            "credibility": 0.6,
        },
        "Decomposition": {"subclaims": SUBCLAIMS},
        "Query": {"query": "library budget"},
    }
    return json.dumps(answers[title]) if title in answers else json.dumps(instance(schema or {}))


def test_toe_references_are_its_evaluated_nodes_with_their_evidence() -> None:
    models = ModelSet(ModelClient(FakeChatModel(toe_step, model="fake-toe-refs")))
    # T_max = 2: the claim and its first sub-claim are evaluated, the second is left pending.
    method = load_method("toe", models=models, sources=[ListSource()], max_iterations=2)
    method.grounding = "on"  # type: ignore[attr-defined]
    verdict = method.verify(BUDGET)

    tree = {n["id"]: n for n in verdict.trace.model_dump()["tree"]}
    nodes = [r for r in verdict.grounding.references if r.kind == "node"]  # type: ignore[union-attr]
    evaluated = [i for i, n in tree.items() if n["status"] == "evaluated"]
    assert [r.id for r in nodes] == [f"N{i}" for i in evaluated] == ["N0", "N1"]
    assert tree[2]["status"] == "pending"
    root, child = nodes[0], nodes[1]
    assert (root.id, root.title, child.title) == ("N0", "claim", "core event")
    assert root.text.startswith(BUDGET.text + " Own veracity 0.50, reliability 0.50; ")
    assert child.text.startswith(
        "The council cut the budget. Own veracity 0.90, reliability 0.80; "
    )
    # The explanation's figures are the root's aggregated ones, which its reference holds.
    figures = re.search(r"Root veracity (\d\.\d\d), reliability (\d\.\d\d)", verdict.explanation)
    assert figures is not None
    assert f"aggregated veracity {figures[1]}, reliability {figures[2]}." in root.text
    # The evidence as the judge read it: each document's statements and stance.
    items = len(tree[0]["evidence"])
    assert items >= 1
    assert root.text.endswith(
        " Evidence: " + " | ".join(["(support) The council halved the budget."] * items)
    )
    # The documents follow, numbered as passages.
    passages = [r for r in verdict.grounding.references if r.kind == "passage"]  # type: ignore[union-attr]
    assert [r.id for r in passages] == [str(n) for n in range(1, len(verdict.evidence) + 1)]


# -- Baselines whose prompt numbers differ from the verdict's evidence -------------------


class QuerySource(ListSource):
    """A fake source that finds the passages whose title's first word is in the query."""

    def __init__(self) -> None:
        engineer = Evidence(
            text="Gustave Eiffel was an engineer.", title="Eiffel (engineer)", source="list"
        )
        super().__init__([*PASSAGES, engineer])

    def search(self, query, k=5, *, before=None, exclude_domains=()):  # type: ignore[no-untyped-def]
        return [ev for ev in self.passages if ev.title.split()[0] in query][:k]


def test_steel_numbers_the_last_rounds_passages_as_its_prompt_did() -> None:
    rounds = [
        {"explanation": "unsure", "label": "NOT_ENOUGH_INFO", "confidence": 0.2,
         "established": "a tower", "next_query": "Paris"},
        {"explanation": "Paris is in France [1].", "label": "SUPPORTED", "confidence": 0.9},
    ]  # fmt: skip

    def script(messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
        if schema and schema["title"] == "GroundingAnswer":
            return checker_answer()
        return json.dumps(rounds.pop(0))

    fake = FakeChatModel(script, model="fake-steel-refs")
    method = load_method("steel", models=ModelSet(ModelClient(fake)), sources=[QuerySource()])
    method.grounding = "on"  # type: ignore[attr-defined]
    verdict = method.verify(Claim(text="Eiffel Tower stands tall."))

    # Round 1 showed the tower and the engineer as [1] and [2]; round 2, whose answer is
    # the verdict, showed only Paris, as [1]. The verdict keeps all three as shown.
    assert [ev.title for ev in verdict.evidence] == ["Eiffel Tower", "Eiffel (engineer)", "Paris"]
    last = fake.requests[1][0][-1].content
    assert (
        '[1] <passage title="Paris"' in last
        and "Eiffel Tower" not in last.split("New evidence")[-1]
    )
    refs = [(r.id, r.title) for r in verdict.grounding.references]  # type: ignore[union-attr]
    assert refs == [("1", "Paris"), ("P1", "Eiffel Tower"), ("P2", "Eiffel (engineer)")]


def test_graphcheck_numbers_the_claim_triples_as_its_verifier_did() -> None:
    def script(messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
        title = schema["title"] if schema else ""
        if title == "GroundingAnswer":
            return checker_answer()
        if title == "Extraction" and "a document into" in messages[0].content:
            triples = [["Eiffel Tower", "located in", "Paris"], ["Paris", "capital of", "France"]]
        elif title == "Extraction":
            triples = [["Eiffel Tower", "located in", "Paris"]]
        else:
            return json.dumps(
                {"explanation": "Triple [1] is stated.", "unsupported": [],
                 "label": "SUPPORTED", "confidence": 0.9}
            )  # fmt: skip
        return json.dumps(
            {
                "triples": [
                    dict(zip(("subject", "relation", "object"), t, strict=True)) for t in triples
                ]
            }
        )

    fake = FakeChatModel(script, model="fake-graphcheck-refs")
    method = load_method("graphcheck", models=ModelSet(ModelClient(fake)))
    method.grounding = "on"  # type: ignore[attr-defined]
    verdict = method.verify(CLAIM, evidence=PASSAGES)

    verifier = fake.requests[-2][0][-1].content  # the last call is the checker's
    assert (
        "[1] Eiffel Tower | located in | Paris\n  - Eiffel Tower | located in | Paris" in verifier
    )
    refs = verdict.grounding.references  # type: ignore[union-attr]
    assert [(r.id, r.kind) for r in refs] == [("1", "triple"), ("D1", "passage"), ("D2", "passage")]
    assert refs[0].text.startswith(
        "Claim triple: Eiffel Tower | located in | Paris. Document triples: "
        "Eiffel Tower | located in | Paris"
    )
    assert [r.text for r in refs[1:]] == [ev.text for ev in PASSAGES]
