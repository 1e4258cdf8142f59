"""Self-reflection (paper section 4.4): the critic's prompt, the composite reward, r_t."""

from __future__ import annotations

import json
from typing import Any

import pytest

from verity.domain import Claim, Evidence, Label, Verdict
from verity.errors import BadInputError
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.wkgfc.reflection import (
    Critique,
    StepCritique,
    Weights,
    critique,
    reward,
    score,
    step_rewards,
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


def test_the_critic_sees_steps_cited_evidence_and_judges_each_step() -> None:
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
    assert f"[1] (toy) {FACT.text}" in prompt
    # Each cited text is cut to 300 characters (verity's choice), the cut marked.
    assert "y" * 297 + "..." in prompt and "y" * 298 not in prompt
    assert "Married in 1992." in prompt
    # The justification is read up to 800 characters (verity's choice).
    wordy = verdict().model_copy(update={"explanation": "j" * 1000})
    fake = FakeChatModel([json.dumps(answer)])
    critique(wordy, "SUPPORTED", ModelClient(fake), CallLog())
    prompt = fake.requests[0][0][-1].content
    assert "j" * 800 in prompt and "j" * 801 not in prompt
