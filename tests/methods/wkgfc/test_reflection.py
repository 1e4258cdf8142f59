"""Self-reflection (paper section 4.4): the critic's prompt, the composite reward, r_t."""

from __future__ import annotations

import json
from typing import Any

import pytest

from verity.domain import Claim, Evidence, Label, Verdict
from verity.errors import BadInputError
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.wkgfc.context import free_tokens
from verity.methods.wkgfc.reflection import (
    CRITIC,
    Critique,
    StepCritique,
    Weights,
    critique,
    reward,
    score,
    step_rewards,
    steps_text,
)
from verity.testing import FakeChatModel

FACT = Evidence(text="Barack Obama (Q76) | spouse (P26) | Michelle Obama (Q13133)", source="toy")


def act(action: str, new: int = 1, taken: bool = True, **more: Any) -> dict[str, Any]:
    return {"action": action, "reason": f"why {action}", "summary": f"{new} new",
            "taken": taken, "new": new, **more}  # fmt: skip


# The first observation, three choices (the web search brings nothing new), the verdict.
ACTIONS = [
    act("initKGRetrieval", 12),
    act("expandKG", 3, entities=["Q76"]),
    act("webSearch", 0, query="Obama wife"),
    act("expandKG", 2),
    act("verdict", 0),
]


def verdict(
    label: Label = Label.SUPPORTED,
    actions: list[dict[str, Any]] | None = None,
    *,
    cited: int = 3,
    valid: int = 2,
    evidence: tuple[Evidence, ...] = (FACT,),
) -> Verdict:
    trace = {
        "actions": ACTIONS if actions is None else actions,
        "forced_verdict": False,
        "citations": {"cited": cited, "valid": valid},
    }
    return Verdict(label=label, evidence=evidence, explanation="Married in 1992.", trace=trace,
                   method="wkgfc", subject=Claim(text="Obama's wife is Michelle."))  # fmt: skip


def judged(sufficient: bool = True, redundant: tuple[int, ...] = ()) -> Critique:
    return Critique(
        critique="fine",
        error_type="none",
        sufficient=sufficient,
        steps=[StepCritique(step=t, critique="again", redundant=True) for t in redundant],
    )


def test_reward_by_hand() -> None:
    # Right, sufficient, 2 of 3 citations valid, 1 of 3 choices redundant (step 3 found
    # nothing): 0.6 + 0.15 + 0.1 * 2/3 + 0.15 * (1 - 1/3).
    assert reward(verdict(), "SUPPORTED", judged()) == pytest.approx(0.9166666, abs=1e-6)
    # Wrong and insufficient: only citations and efficiency count, 0.1 * 2/3 + 0.15 * 2/3.
    assert reward(verdict(Label.REFUTED), "SUPPORTED", judged(False)) == pytest.approx(
        0.1666666, abs=1e-6
    )
    # The critique failed: no sufficiency, no critic flags.
    assert reward(verdict(), "SUPPORTED", None) == pytest.approx(0.6 + 0.1 * 2 / 3 + 0.1)


def test_correctness_dominates_with_the_default_weights() -> None:
    # Every other term together weighs 0.15 + 0.1 + 0.15 = 0.4 < 0.6.
    best_wrong = verdict(Label.REFUTED, [act("verdict", 0)], cited=2, valid=2)
    worst_right = verdict(Label.SUPPORTED, [act("expandKG", 0), act("verdict", 0)], cited=0)
    assert reward(best_wrong, "SUPPORTED", judged()) == pytest.approx(0.4)
    assert reward(worst_right, "SUPPORTED", judged(False)) == pytest.approx(0.6)


def test_step_rewards_by_hand_sum_to_the_reward() -> None:
    rewards = step_rewards(verdict(), "SUPPORTED", judged())
    # The redundant search costs 0.15 / 3; the verdict earns 0.6 + 0.15 + 0.1 * 2/3 + 0.15.
    assert rewards == pytest.approx([0, 0, -0.05, 0, 0.9666666], abs=1e-6)
    assert sum(rewards) == pytest.approx(reward(verdict(), "SUPPORTED", judged()))
    weights = Weights(correctness=0.4, sufficiency=0.2, citation=0.2, efficiency=0.2)
    wrong = verdict(Label.REFUTED)
    assert sum(step_rewards(wrong, "SUPPORTED", judged(redundant=(2,)), weights)) == (
        pytest.approx(reward(wrong, "SUPPORTED", judged(redundant=(2,)), weights))
    )


def test_what_counts_as_a_redundant_choice() -> None:
    # The critic flags step 2 (it found facts, yet was not needed): 2 of 3 redundant.
    assert score(verdict(), "SUPPORTED", judged(redundant=(2,))).redundant == (2, 3)
    # Flags on the first observation or the verdict are not choices and cost nothing.
    assert score(verdict(), "SUPPORTED", judged(redundant=(1, 5))).efficiency == pytest.approx(
        2 / 3
    )
    wasted = [act("initKGRetrieval"), act("invalid", 0, False), act("expandKG", 4, False),
              act("webSearch", 2), act("verdict", 0)]  # fmt: skip
    terms = score(verdict(actions=wasted), "SUPPORTED", judged())
    assert (terms.choices, terms.redundant) == (3, (2, 3))
    # An invalid step is wasted even when the trace says nothing of what it found.
    bare = [{"action": "invalid", "reason": "x", "summary": "no valid action"}, act("verdict")]
    assert score(verdict(actions=bare), "SUPPORTED", judged()).redundant == (1,)
    # No choices at all: nothing was wasted.
    direct = verdict(actions=[act("initKGRetrieval"), act("verdict", 0)])
    assert score(direct, "SUPPORTED", judged()).efficiency == 1.0
    assert step_rewards(direct, "SUPPORTED", judged()) == pytest.approx(
        [0, 0.6 + 0.15 + 0.1 * 2 / 3 + 0.15]
    )


def test_citation_quality_is_the_share_of_valid_citations() -> None:
    assert score(verdict(cited=4, valid=1), "SUPPORTED", judged()).citation == 0.25
    assert score(verdict(cited=0, valid=0), "SUPPORTED", judged()).citation == 0.0


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ((0.7, 0.15, 0.1, 0.15), "sum to 1"),
        ((1.1, -0.1, 0.0, 0.0), "non-negative"),
        ((float("nan"), 0.5, 0.25, 0.25), "non-negative"),
    ],
)
def test_weights_must_be_a_distribution(values: tuple[float, ...], message: str) -> None:
    with pytest.raises(BadInputError, match=message):
        Weights(*values)


def test_weights_parse() -> None:
    assert Weights.parse("0.6, 0.15,0.1,0.15") == Weights()
    assert Weights.parse("1,0,0,0").correctness == 1.0
    for bad in ("0.6,0.4", "a,b,c,d", ""):
        with pytest.raises(BadInputError, match="four numbers"):
            Weights.parse(bad)


def test_the_critic_sees_steps_and_evidence_and_judges_each_step() -> None:
    step = {"step": 3, "critique": "the web added nothing", "redundant": True}
    answer = {"critique": "good", "error_type": "none", "sufficient": True, "steps": [step]}
    fake = FakeChatModel([json.dumps(answer)])  # a scripted fake: only the prompt is tested
    long = Evidence(text="y" * 1000, source="web")
    judged = critique(verdict(evidence=(FACT, long)), "SUPPORTED", ModelClient(fake), CallLog())
    assert judged.steps[0].redundant and judged.sufficient
    prompt = fake.requests[0][0][-1].content
    assert "True label: SUPPORTED" in prompt and "Agent's verdict: SUPPORTED" in prompt
    assert "3. webSearch('Obama wife'): 0 new (nothing new); reason: why webSearch" in prompt
    assert "2. expandKG(Q76): 3 new; reason: why expandKG" in prompt
    assert "5. verdict(SUPPORTED)" in prompt
    assert f"[1] (toy, cited) {FACT.text}" in prompt
    # Each text is cut to 300 characters (verity's choice), the cut marked.
    assert "y" * 297 + "..." in prompt and "y" * 298 not in prompt
    assert "Married in 1992." in prompt
    # The justification is read up to 800 characters (verity's choice).
    wordy = verdict().model_copy(update={"explanation": "j" * 1000})
    fake = FakeChatModel([json.dumps(answer)])
    critique(wordy, "SUPPORTED", ModelClient(fake), CallLog())
    prompt = fake.requests[0][0][-1].content
    assert "j" * 800 in prompt and "j" * 801 not in prompt


def test_sufficiency_is_judged_on_everything_retrieved_not_only_on_the_citations() -> None:
    # 4.4: sufficiency is "whether retrieved information adequately supports or refutes
    # the claim". The verdict cites one fact; a second fact and a passage were retrieved
    # but not cited, and the critic must see them too, each once.
    episode = retrieved_episode()
    answer = {"critique": "c", "error_type": "none", "sufficient": True, "steps": []}
    fake = FakeChatModel([json.dumps(answer)])  # a scripted fake: only the prompt is tested
    critique(episode, "SUPPORTED", ModelClient(fake), CallLog())
    system, prompt = fake.requests[0][0][0].content, fake.requests[0][0][-1].content
    assert "the information the episode retrieved" in system
    assert "whether the verdict cited it or not" in system
    assert "evidence it cited is enough" not in system
    block = prompt.split("Evidence retrieved (items the verdict cited are marked):\n")[1]
    lines = block.split("\n\nJustification given:")[0].splitlines()
    assert lines == [
        "<evidence>",
        f"[1] (kg-local, cited) {FACT.text}",
        "[2] (graph) Michelle Obama (Q13133) | place of birth (P19) | Chicago (Q1297)",
        "[3] (web) They married in October 1992.",
        "</evidence>",
    ]


def test_the_retrieved_list_is_cut_to_fit_the_critic_keeping_the_citations() -> None:
    episode = retrieved_episode()
    answer = {"critique": "c", "error_type": "none", "sufficient": True, "steps": []}
    fake = FakeChatModel([json.dumps(answer)])  # a scripted fake: only the prompt is tested
    model = ModelClient(fake)
    big = 10**6
    inputs = {"claim": episode.subject.text, "gold": "SUPPORTED", "predicted": "SUPPORTED",
              "steps": steps_text(episode), "justification": "j"}  # fmt: skip
    room = free_tokens(model, CRITIC, context=big, evidence="", **inputs)
    assert room is not None
    # Room for 25 tokens, 4 characters a token without a tokenizer: the cited line (84
    # characters with its newline, 21 tokens) fits, the next one does not.
    fake.context_tokens = big - room + 25  # type: ignore[attr-defined]
    critique(episode, "SUPPORTED", model, CallLog())
    prompt = fake.requests[0][0][-1].content
    assert f"<evidence>\n[1] (kg-local, cited) {FACT.text}\n(2 more left out" in prompt
    assert "(graph)" not in prompt and "October 1992" not in prompt


def retrieved_episode() -> Verdict:
    """An episode that cites one fact and retrieved another fact and a passage (twice)."""
    facts = [
        {"subject": "Q76", "subject_label": "Barack Obama", "pid": "P26",
         "property_label": "spouse", "object": "Q13133", "object_label": "Michelle Obama",
         "object_kind": "entity", "hop": 1},
        {"subject": "Q13133", "subject_label": "Michelle Obama", "pid": "P19",
         "property_label": "place of birth", "object": "Q1297", "object_label": "Chicago",
         "object_kind": "entity", "hop": 2},
    ]  # fmt: skip
    passage = {"ref": "https://example.org/wed", "title": "Wedding", "confidence": 0.9,
               "source": "web", "text": "They married in October 1992."}  # fmt: skip
    cited = Evidence(text=FACT.text, source="kg-local", id="Q76|P26|Q13133",
                     url="https://www.wikidata.org/wiki/Q76")  # fmt: skip
    trace = {
        "actions": ACTIONS, "forced_verdict": False, "citations": {"cited": 1, "valid": 1},
        "subgraph": {"facts": facts}, "web": [{"kept": [passage]}, {"kept": [passage]}],
    }  # fmt: skip
    return Verdict(label=Label.SUPPORTED, evidence=(cited,), explanation="j", trace=trace,
                   method="wkgfc", subject=Claim(text="Obama's wife is Michelle."))  # fmt: skip
