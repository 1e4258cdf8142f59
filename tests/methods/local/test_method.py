"""LoCal's control flow with a scripted fake model, then for real with the embedded one."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from verity.domain import Claim, Evidence, Label
from verity.errors import BadInputError, ModelOutputError, UnknownNameError
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.sources.base import apply_filters
from verity.testing import FakeChatModel

CLAIM = Claim(text="The director of Alien was born in England.")
GOOD = {
    "questions": [{"text": "Who directed Alien?"}],
    "facts": [{"text": "{q1} was born in England."}],
    "deduction": "f1",
}
GOLD = [
    Evidence(text="Alien was directed by Ridley Scott.", title="Alien", source="gold"),
    Evidence(text="Ridley Scott was born in South Shields, England.", title="Scott", source="gold"),
]


class Script:
    """Answers by the schema each step asks for; records what each step was shown.

    A list of values is consumed one call at a time; the value "bad" answers with text
    that is not JSON (the client's repair round asks again and takes the next value).
    """

    def __init__(
        self,
        decompositions: list[object],
        fact: bool | list[bool] = True,
        logical: bool | list[object] = True,
        conflict: bool | list[object] = True,
    ):
        self.decompositions = list(decompositions)
        self.fact, self.logical, self.conflict = fact, logical, conflict
        self.seen: dict[str, list[str]] = {}

    @staticmethod
    def _next(values):
        return values.pop(0) if isinstance(values, list) else values

    def __call__(self, messages, schema) -> str:
        title = schema["title"] if schema else "text"
        self.seen.setdefault(title, []).append(messages[-1].content)
        if title == "Decomposition":
            item = self.decompositions.pop(0)
            return item if isinstance(item, str) else json.dumps(item)
        if title == "Deduction":  # the repair of a deduction alone
            item = self.decompositions.pop(0)
            return item if isinstance(item, str) else json.dumps({"deduction": item["deduction"]})
        if title == "QuestionAnswer":
            return json.dumps({"answer": "Ridley Scott"})
        if title == "FactAnswer":
            return json.dumps({"reason": "r", "answer": self._next(self.fact)})
        if title == "LogicalJudgement":
            value = self._next(self.logical)
            return "bad" if value == "bad" else json.dumps({"reason": "l", "claim_is_true": value})
        value = self._next(self.conflict)
        return "bad" if value == "bad" else json.dumps({"reason": "c", "contradiction": value})


def method(script: Callable, sources=(), **config):
    models = ModelSet(ModelClient(FakeChatModel(script)))
    return load_method("local", models=models, sources=list(sources), **config)


class ListSource:
    name = "list"

    def __init__(self) -> None:
        self.queries: list[str] = []

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        self.queries.append(query)
        return apply_filters(GOLD, k, before=before, exclude_domains=exclude_domains)

    def to_dict(self):
        return {"name": "list"}


def test_gold_setting_resolves_references_and_accepts_on_first_iteration() -> None:
    script = Script([GOOD])
    verdict = method(script).verify(CLAIM, evidence=GOLD)
    assert verdict.label is Label.SUPPORTED and verdict.confidence == 1.0
    # The fact agent saw the question's answer substituted, and the gold passages.
    assert (
        "Statement: <statement>Ridley Scott was born in England.</statement>"
        in script.seen["FactAnswer"][0]
    )
    assert "South Shields" in script.seen["FactAnswer"][0]
    trace = verdict.trace.model_dump()
    assert trace["setting"] == "gold" and trace["iterations_used"] == 1
    (it,) = trace["iterations"]
    assert (it["predicted"], it["logical"], it["counterfactual_conflict"]) == (True, True, True)
    assert (it["p_l"], it["p_c"], it["pos"], it["neg"], it["final"]) == (True, True, 0, 0, True)
    # The counterfactual agent assumed the opposite of v.
    assert "Assume the claim is false." in script.seen["CounterfactualJudgement"][0]
    # Both evaluators see d (3.2.4): the sub-tasks and their answers, references
    # resolved, and neither the deduction nor v.
    d = (
        "1. Question: Who directed Alien? Answer: Ridley Scott\n"
        "2. Statement: Ridley Scott was born in England. Answer: true"
    )
    for seen in (script.seen["LogicalJudgement"][0], script.seen["CounterfactualJudgement"][0]):
        assert f"<solution>\n{d}\n</solution>" in seen
        assert "Deduction" not in seen and "f1" not in seen and "= true" not in seen
    # The explanation is the deciding solution with its deduction and the counts.
    assert verdict.explanation.splitlines()[2:] == [
        "Deduction: f1 = true",
        "Both evaluators accepted the solution of iteration 1; #POS = 0, #NEG = 0 before it.",
    ]
    assert "| q1: Who directed Alien? | question | Ridley Scott |" in trace["markdown"]
    assert [e.title for e in verdict.evidence] == ["Alien", "Scott"]


def test_open_setting_queries_sources_per_subtask() -> None:
    source = ListSource()
    verdict = method(Script([GOOD]), sources=[source]).verify(CLAIM)
    assert source.queries == ["Who directed Alien?", "Ridley Scott was born in England."]
    assert verdict.trace.model_dump()["setting"] == "open"
    assert verdict.trace.retrievals[1].query == "Ridley Scott was born in England."


def test_closed_setting_shows_no_evidence() -> None:
    script = Script([GOOD])
    verdict = method(script).verify(CLAIM)
    assert verdict.trace.model_dump()["setting"] == "closed"
    assert script.seen["FactAnswer"][0].startswith("Evidence:\n<evidence>(none)</evidence>")
    assert verdict.evidence == ()


def test_iterations_count_and_the_trace_recomputes_the_verdict() -> None:
    # v = False (fact false) each time. it1: L says True -> p_l False; C conflict True ->
    # one acceptance -> NEG 1. it2: no acceptance -> POS 1. it3: one -> NEG 2.
    script = Script(
        [GOOD] * 3, fact=False, logical=[True, True, True], conflict=[True, False, True]
    )
    verdict = method(script).verify(CLAIM, evidence=GOLD)
    iterations = verdict.trace.model_dump()["iterations"]
    assert [(i["p_l"], i["p_c"], i["pos"], i["neg"]) for i in iterations] == [
        (False, True, 0, 1),
        (False, False, 1, 1),
        (False, True, 1, 2),
    ]
    last = iterations[-1]
    recomputed = Label.SUPPORTED if last["pos"] > last["neg"] else Label.REFUTED
    assert verdict.label is recomputed is Label.REFUTED
    assert verdict.confidence == pytest.approx(2 / 3)


def test_later_iterations_resample_the_decomposer() -> None:
    fake = FakeChatModel(Script([GOOD] * 3, fact=False, conflict=False))
    models = ModelSet(ModelClient(fake))
    load_method("local", models=models, resample_temperature=0.9).verify(CLAIM, evidence=GOLD)
    temps = [
        params.temperature
        for msgs, params, schema in fake.requests
        if schema and schema["title"] == "Decomposition"
    ]
    assert temps == [0.0, 0.9, 0.9]


def test_invalid_program_gets_one_repair_round() -> None:
    bad = {"questions": [{"text": "Who?"}], "facts": [{"text": "{q2} is x."}], "deduction": "f1"}
    script = Script([bad, GOOD])
    verdict = method(script).verify(CLAIM, evidence=GOLD)
    assert verdict.label is Label.SUPPORTED
    # The feedback is delimited: the rule broken, quoting the model's text as data.
    assert (
        "That program breaks a rule: <error>sub-task f1 contains '{q2}'"
        in script.seen["Decomposition"][1]
    )
    steps = [c.step for c in verdict.trace.calls]
    assert steps[:2] == ["local.decompose", "local.decompose.repair"]


def test_a_reference_named_as_the_paper_writes_it_never_reaches_retrieval() -> None:
    # {a1} is the paper's notation, not the program's: the program is repaired, and no
    # query carries an unresolved reference.
    paper_style = {
        "questions": [{"text": "Who directed Alien?"}],
        "facts": [{"text": "{a1} was born in England."}],
        "deduction": "f1",
    }
    source = ListSource()
    script = Script([paper_style, GOOD])
    verdict = method(script, sources=[source]).verify(CLAIM)
    assert source.queries == ["Who directed Alien?", "Ridley Scott was born in England."]
    assert "contains '{a1}'" in script.seen["Decomposition"][1]
    assert verdict.trace.model_dump()["iterations"][0]["program"]["subtasks"][1]["text"] == (
        "{q1} was born in England."
    )


BROKEN = {"questions": [], "facts": [{"text": "{a1} is x."}], "deduction": "f1"}


def test_a_repair_that_repeats_the_feedback_is_never_the_program() -> None:
    bad = BROKEN
    parroted = {
        "questions": [],
        "facts": [{"text": "That program breaks a rule: sub-task f1 contains a1"}],
        "deduction": "f1",
    }
    script = Script([bad, parroted, GOOD])
    verdict = method(script, max_iterations=2).verify(CLAIM, evidence=GOLD)
    first, second = verdict.trace.model_dump()["iterations"]
    assert "a sub-task repeats the feedback" in first["error"]
    assert "subtasks" not in first
    assert second["final"] is True
    assert "That program" not in verdict.explanation


def test_still_invalid_after_repair_is_a_typed_error_in_the_trace() -> None:
    script = Script([BROKEN, BROKEN, GOOD])
    verdict = method(script, max_iterations=2).verify(CLAIM, evidence=GOLD)
    first, second = verdict.trace.model_dump()["iterations"]
    assert "invalid program after one repair round" in first["error"]
    assert "f1 contains '{a1}'" in first["error"]
    assert second["final"] is True


def test_a_wrong_deduction_alone_is_repaired_alone_over_the_facts_it_has() -> None:
    two = {"questions": [], "facts": [{"text": "x"}, {"text": "y"}], "deduction": "f1 and f3"}
    fake = FakeChatModel(Script([two, {"deduction": "f1 or f2"}]))
    verdict = load_method("local", models=ModelSet(ModelClient(fake))).verify(CLAIM)
    repair_messages, _, schema = fake.requests[1]
    # Two facts: the answer format can name f1 and f2 only.
    assert schema["properties"]["deduction"]["pattern"] == (
        "^(not )?f[1-2]( (and|or) (not )?f[1-2])*$"
    )
    assert "uses f3, but the facts are f1, f2" in repair_messages[-1].content
    assert "Write only the deduction again, over f1 to f2" in repair_messages[-1].content
    (it,) = verdict.trace.model_dump()["iterations"]
    assert it["program"] == {
        "subtasks": [
            {"var": "f1", "type": "fact", "text": "x"},
            {"var": "f2", "type": "fact", "text": "y"},
        ],
        "deduction": "f1 or f2",
    }


def test_a_repaired_deduction_is_checked_again() -> None:
    two = {"questions": [], "facts": [{"text": "x"}, {"text": "y"}], "deduction": "f1"}
    script = Script([two, {"deduction": "f2"}])
    with pytest.raises(
        ModelOutputError, match="after one repair round: the deduction leaves out f1"
    ):
        method(script, max_iterations=1).verify(CLAIM)


def test_every_iteration_invalid_raises() -> None:
    with pytest.raises(ModelOutputError, match="no evaluated solution in 1 iteration"):
        method(Script([BROKEN, BROKEN]), max_iterations=1).verify(CLAIM, evidence=GOLD)


@pytest.mark.parametrize(("fact", "assumed"), [(True, "false"), (False, "true")])
def test_the_counterfactual_agent_assumes_not_v(fact: bool, assumed: str) -> None:
    # v = f1 = the fact's answer; the agent is told to assume the opposite (3.2.4).
    script = Script([GOOD], fact=fact)
    method(script, max_iterations=1).verify(CLAIM, evidence=GOLD)
    assert f"Assume the claim is {assumed}." in script.seen["CounterfactualJudgement"][0]


@pytest.mark.parametrize(
    ("logical", "v", "p_l"),
    # p_l = not (L(d) XOR v), worked out by hand: accepted exactly when L(d) equals v.
    [(True, True, True), (True, False, False), (False, True, False), (False, False, True)],
)
def test_p_l_for_all_four_combinations(logical: bool, v: bool, p_l: bool) -> None:
    script = Script([GOOD], fact=v, logical=logical, conflict=True)
    verdict = method(script, max_iterations=1).verify(CLAIM, evidence=GOLD)
    (it,) = verdict.trace.model_dump()["iterations"]
    assert (it["predicted"], it["logical"], it["p_l"]) == (v, logical, p_l)
    # With p_c true: two acceptances are final with v; one counts v.
    assert it["final"] is p_l
    assert verdict.label is (Label.SUPPORTED if v else Label.REFUTED)


@pytest.mark.parametrize("parallel", [True, False])
def test_a_failed_evaluator_costs_its_iteration_not_the_counts(parallel: bool) -> None:
    # it1: v=F, L=F (p_l T), C=F -> one acceptance -> NEG 1.
    # it2: the logical agent answers no JSON twice -> the iteration is spent, no count.
    # The counterfactual agent was asked beside it (Algorithm 1 asks both), so it2 spends
    # one of its answers too, in a parallel run and a sequential one alike.
    # it3: v=F, L=F, C=F -> NEG 2. Result False with 2/2.
    script = Script(
        [GOOD] * 3,
        fact=False,
        logical=[False, "bad", "bad", False],
        conflict=[False, False, False],
    )
    verdict = method(script, parallel=parallel).verify(CLAIM, evidence=GOLD)
    first, second, third = verdict.trace.model_dump()["iterations"]
    assert (first["pos"], first["neg"]) == (0, 1)
    assert "error" in second and second["predicted"] is False and "pos" not in second
    assert (third["pos"], third["neg"]) == (0, 2)
    assert verdict.label is Label.REFUTED and verdict.confidence == 1.0
    assert len(script.seen["CounterfactualJudgement"]) == 3


def test_the_explanation_is_the_deciding_solution_not_the_last() -> None:
    # it1: v=F, L=F (p_l T), C=F -> NEG 1.   it2: same -> NEG 2.
    # it3: v=T, L=T (p_l T), C=F -> POS 1. #POS 1 < #NEG 2 -> REFUTED, 2/3.
    # The last solution says true; the verdict rests on iteration 2's.
    script = Script(
        [GOOD] * 3, fact=[False, False, True], logical=[False, False, True], conflict=False
    )
    verdict = method(script).verify(CLAIM, evidence=GOLD)
    assert verdict.label is Label.REFUTED and verdict.confidence == pytest.approx(2 / 3)
    trace = verdict.trace.model_dump()
    assert trace["iterations"][-1]["predicted"] is True
    assert trace["deciding_iteration"] == 2
    assert "Deduction: f1 = false" in verdict.explanation
    assert "#POS = 1, #NEG = 2, so the label is false; shown: iteration 2." in (verdict.explanation)


def test_a_tie_is_refuted() -> None:
    # it1: v=T, one acceptance -> POS 1; it2: the decomposer fails twice; it3: v=F, one
    # acceptance -> NEG 1. 1:1 is False (Algorithm 1), confidence 0.5.
    script = Script(
        [GOOD, BROKEN, BROKEN, GOOD], fact=[True, False], logical=[True, False], conflict=False
    )
    verdict = method(script).verify(CLAIM, evidence=GOLD)
    assert verdict.label is Label.REFUTED and verdict.confidence == 0.5
    assert "(a tie is False, Algorithm 1)" in verdict.explanation
    assert verdict.trace.model_dump()["deciding_iteration"] == 3


def test_ablations_skip_their_agents() -> None:
    script = Script([GOOD] * 3)
    method(script, logical_eval=False, counterfactual_eval=False).verify(CLAIM)
    assert "LogicalJudgement" not in script.seen and "CounterfactualJudgement" not in script.seen
    script = Script([GOOD])
    method(script, logical_eval=False).verify(CLAIM)
    assert "LogicalJudgement" not in script.seen and "CounterfactualJudgement" in script.seen


def test_without_evaluators_three_resampled_solutions_vote() -> None:
    # 5.2: "w/o Eval" keeps the budget of 3 iterations. v = T, F, F -> NEG 2 : POS 1.
    fake = FakeChatModel(Script([GOOD] * 3, fact=[True, False, False]))
    m = load_method("local/no-eval", models=ModelSet(ModelClient(fake)))
    verdict = m.verify(CLAIM, evidence=GOLD)
    trace = verdict.trace.model_dump()
    assert trace["iterations_used"] == 3 and (trace["pos"], trace["neg"]) == (1, 2)
    assert verdict.label is Label.REFUTED and verdict.confidence == pytest.approx(2 / 3)
    temps = [
        p.temperature for msgs, p, schema in fake.requests if schema["title"] == "Decomposition"
    ]
    assert temps == [0.0, 0.7, 0.7]
    assert m.to_dict()["iterations_rule"].startswith("majority of 3 resampled solutions")


def test_ablations_are_named_variants() -> None:
    models = ModelSet(ModelClient(FakeChatModel(Script([GOOD]))))
    plain = load_method("local", models=models).to_dict()
    assert (plain["logical_eval"], plain["counterfactual_eval"]) == (True, True)
    assert plain["iterations_rule"].startswith("Algorithm 1")
    both = load_method("local/no-eval", models=models).to_dict()
    assert (both["logical_eval"], both["counterfactual_eval"]) == (False, False)
    one = load_method("local/no-counterfactual", models=models).to_dict()
    assert (one["logical_eval"], one["counterfactual_eval"]) == (True, False)
    # An explicit setting wins over the variant's preset.
    assert load_method("local/no-eval", models=models, logical_eval=True).to_dict()["logical_eval"]
    with pytest.raises(UnknownNameError, match="no-eval"):
        load_method("local/no-such", models=models)


def test_the_paper_constants_are_the_defaults() -> None:
    # 4.3: 20 demonstrations, the top 5 paragraphs per sub-task, at most 3 iterations.
    m = method(Script([GOOD]))
    assert (m.config.demos, m.config.k, m.config.max_iterations) == (20, 5, 3)


def _decompose_turns(fake: FakeChatModel) -> list:
    return fake.requests[0][0]


@pytest.mark.parametrize(
    ("dataset", "expected"),
    [(None, "general"), ("hover", "hover"), ("feverous-s", "feverous"), ("fever", "general")],
)
def test_demonstrations_are_picked_by_the_benchmark_dataset(dataset, expected) -> None:
    from verity.methods.local import agents

    fake = FakeChatModel(Script([GOOD]))
    m = load_method("local", models=ModelSet(ModelClient(fake)))
    if dataset:
        m.use_dataset(dataset)
    assert m.demo_set == expected and m.to_dict()["demo_set_used"] == expected
    m.verify(CLAIM)
    turns = _decompose_turns(fake)
    assert [t.role for t in turns] == ["system"] + ["user", "assistant"] * 20 + ["user"]
    first = agents.demos(expected)[0]["claim"]
    assert first in turns[1].content


def test_an_explicit_demo_set_and_count_win() -> None:
    fake = FakeChatModel(Script([GOOD]))
    m = load_method("local", models=ModelSet(ModelClient(fake)), demo_set="hover", demos=3)
    m.use_dataset("feverous-s")
    m.verify(CLAIM)
    assert m.demo_set == "hover"
    assert [t.role for t in _decompose_turns(fake)] == ["system"] + ["user", "assistant"] * 3 + [
        "user"
    ]


def test_a_demonstrations_file_replaces_the_set_and_its_ids_are_excluded(tmp_path) -> None:
    demo = {"dataset": "hover", "id": "t-1", "claim": "A is B.", **GOOD}
    path = tmp_path / "demos.json"
    path.write_text(json.dumps({"demos": [demo]}))
    fake = FakeChatModel(Script([GOOD]))
    m = load_method("local", models=ModelSet(ModelClient(fake)), demos_file=str(path))
    m.verify(CLAIM)
    assert m.demo_set == f"file:{path}" and m.excluded_ids() == {("hover", "t-1")}
    assert "A is B." in _decompose_turns(fake)[1].content
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"demos": [{**demo, "deduction": "f1 and f2"}]}))
    with pytest.raises(BadInputError, match="demonstration 1 is not a valid program"):
        load_method("local", models=ModelSet(ModelClient(fake)), demos_file=str(bad))
    with pytest.raises(BadInputError, match="demonstrations file"):
        load_method("local", models=ModelSet(ModelClient(fake)), demos_file=str(tmp_path / "no"))


@pytest.mark.integration
@pytest.mark.parametrize("setting", ["gold", "open", "closed"])
def test_embedded_model_runs_end_to_end(setting: str) -> None:
    import verity

    sources = ("offline-wiki",) if setting == "open" else ()
    m = verity.load_method("local", sources=sources, setting=setting)
    claim = Claim(text="The Eiffel Tower is in Paris.")
    evidence = (
        [
            Evidence(
                text="The Eiffel Tower is a lattice tower in Paris, France.",
                title="Eiffel Tower",
                source="gold",
            )
        ]
        if setting == "gold"
        else None
    )
    try:
        verdict = m.verify(claim, evidence=evidence)
    except ModelOutputError as exc:
        pytest.fail(f"no valid LoCal solution from the embedded model: {exc}")
    trace = verdict.trace.model_dump()
    assert trace["setting"] == setting
    assert 1 <= trace["iterations_used"] <= 3
    assert {"local.decompose", "local.logical_eval", "local.counterfactual_eval"} <= {
        c.step for c in verdict.trace.calls
    }
    if setting == "open":
        assert verdict.trace.retrievals and verdict.trace.retrievals[0].source == "offline-wiki"
    else:
        assert not verdict.trace.retrievals


def test_settings_tables_apply_to_variants_under_their_preset() -> None:
    from verity.methods.base import settings_for

    table = {
        "local": {"k": 3, "logical_eval": True},
        "local/no-eval": {"demos": 2},
    }
    assert settings_for("local", table) == {"k": 3, "logical_eval": True}
    # The base table applies, the variant's preset wins over it, its own table over both.
    assert settings_for("local/no-eval", table) == {
        "k": 3,
        "logical_eval": False,
        "counterfactual_eval": False,
        "demos": 2,
    }
    assert settings_for("local/no-logical", {}) == {"logical_eval": False}


class SmallContext(FakeChatModel):
    """A fake model that states a context window and counts one token per word."""

    def __init__(self, script, context: int) -> None:
        super().__init__(script)
        self.context_tokens = context

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def _words(messages) -> int:
    # One token per word, plus 8 per message for the chat template's role markers.
    return sum(len(m.content.split()) + 8 for m in messages)


def test_demonstrations_that_do_not_fit_the_context_are_dropped_last_first() -> None:
    from verity.methods.local import agents

    shots = agents.shots(agents.demos("general"), 20)
    full = agents.DECOMPOSE.messages(shots=shots, claim=CLAIM.text)
    # Room for the prompt with exactly 12 demonstrations and a 512-token answer.
    twelve = agents.DECOMPOSE.messages(shots=shots[:12], claim=CLAIM.text)
    context = _words(twelve) + 512
    assert _words(full) + 512 > context
    fake = SmallContext(Script([GOOD]), context)
    verdict = load_method("local", models=ModelSet(ModelClient(fake))).verify(CLAIM)
    assert len(fake.requests[0][0]) == 1 + 2 * 12 + 1
    assert verdict.trace.model_dump()["iterations"][0]["demos_sent"] == 12
    # One token less and the twelfth no longer fits.
    fake = SmallContext(Script([GOOD]), context - 1)
    load_method("local", models=ModelSet(ModelClient(fake))).verify(CLAIM)
    assert len(fake.requests[0][0]) == 1 + 2 * 11 + 1


def test_the_repair_round_makes_room_for_the_answer_it_quotes() -> None:
    from verity.methods.local import agents

    bad = BROKEN
    shots = agents.shots(agents.demos("general"), 20)
    context = _words(agents.DECOMPOSE.messages(shots=shots, claim=CLAIM.text)) + 512
    fake = SmallContext(Script([bad, GOOD]), context)
    verdict = load_method("local", models=ModelSet(ModelClient(fake))).verify(CLAIM)
    first, repair = fake.requests[0][0], fake.requests[1][0]
    assert len(first) == 1 + 2 * 20 + 1
    # The repair adds the first answer and the feedback: demonstrations make way.
    assert _words(repair) + 512 <= context
    sent = verdict.trace.model_dump()["iterations"][0]["demos_sent"]
    assert sent < 20 and len(repair) == 1 + 2 * sent + 1 + 2


def test_a_solution_that_reached_the_label_is_preferred_to_one_rejected_into_it() -> None:
    # it1: v=F, L=F (p_l T), C=F -> one acceptance -> NEG 1 (its v is the label).
    # it2: v=T, L=F (p_l F), C=F -> no acceptance -> NEG 2 (counted by rejection).
    # it3: v=T, L=T (p_l T), C=F -> one acceptance -> POS 1. REFUTED 2:1.
    script = Script(
        [GOOD] * 3, fact=[False, True, True], logical=[False, False, True], conflict=False
    )
    verdict = method(script).verify(CLAIM, evidence=GOLD)
    assert verdict.label is Label.REFUTED
    assert verdict.trace.model_dump()["deciding_iteration"] == 1
    assert "Deduction: f1 = false" in verdict.explanation


def test_reasons_are_bounded_in_the_answer_format_but_not_on_reading() -> None:
    from verity.methods.local import agents

    for model in (agents.FactAnswer, agents.LogicalJudgement, agents.CounterfactualJudgement):
        assert model.model_json_schema()["properties"]["reason"]["maxLength"] == 800
    # A longer reason from a model that ignores the bound is still read.
    long = agents.LogicalJudgement.model_validate({"reason": "x" * 1000, "claim_is_true": True})
    assert len(long.reason) == 1000


def test_a_prompt_over_the_context_costs_its_iteration_not_the_claim() -> None:
    from verity.errors import ContextOverflowError

    # it1: v=F, L=F (p_l T), C=F -> NEG 1. it2: the fact verifier's prompt is over the
    # context. it3: NEG 2. REFUTED, 2/2, from iterations 1 and 3.
    calls = {"fact": 0}
    inner = Script([GOOD] * 3, fact=False, logical=False, conflict=False)

    def script(messages, schema):
        if schema and schema["title"] == "FactAnswer":
            calls["fact"] += 1
            if calls["fact"] == 2:
                raise ContextOverflowError("Requested tokens (4203) exceed context window of 4096")
        return inner(messages, schema)

    verdict = method(script).verify(CLAIM, evidence=GOLD)
    first, second, third = verdict.trace.model_dump()["iterations"]
    assert "exceed context window" in second["error"]
    assert (first["neg"], third["neg"]) == (1, 2)
    assert verdict.label is Label.REFUTED and verdict.confidence == 1.0
