"""ZoFia's debate and judgment (section 4.4, Algorithm 1).

A pro debater (the article is real) and a con debater (it is fake) argue over the whole
evidence pool. Pro speaks first; each turn rebuts the opponent's last argument and adds a
new one. After every exchange the judge reads the history and answers Real, Fake or
Insufficient; Real or Fake ends the debate. At the round limit the judge must choose
between Real and Fake, so a verdict always comes out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verity.errors import ModelOutputError
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.zofia.agents import BUDGET, DEBATER, FINAL_JUDGE, JUDGE

NO_ARGUMENT = "(no valid argument)"

SIDES = {"pro": "real", "con": "fake"}


@dataclass(frozen=True)
class Turn:
    """One debater's turn."""

    round: int
    side: str
    rebuttal: str
    argument: str


@dataclass(frozen=True)
class Ruling:
    """The judge's answer after one exchange."""

    round: int
    decision: str
    reason: str
    confidence: float
    forced: bool


@dataclass
class Debate:
    """The whole exchange and how it ended."""

    max_rounds: int
    turns: list[Turn] = field(default_factory=list)
    rulings: list[Ruling] = field(default_factory=list)

    @property
    def final(self) -> Ruling:
        """The ruling that ended the debate."""
        return self.rulings[-1]

    @property
    def ended_early(self) -> bool:
        """True when the judge decided before the round limit."""
        return self.final.round < self.max_rounds

    def history(self) -> str:
        """The turns as the debaters and the judge read them."""
        if not self.turns:
            return "(no arguments yet)"
        lines = []
        for t in self.turns:
            who = f"Round {t.round}, {t.side} (argues {SIDES[t.side]})"
            rebuttal = f" Rebuttal: {t.rebuttal}" if t.rebuttal.strip() else ""
            lines.append(f"{who}:{rebuttal} Argument: {t.argument}")
        return "\n".join(lines)

    def to_trace(self) -> dict[str, Any]:
        """The record kept in the verdict's trace."""
        return {
            "max_rounds": self.max_rounds,
            "rounds": self.final.round,
            "ended_early": self.ended_early,
            "turns": [t.__dict__ for t in self.turns],
            "rulings": [r.__dict__ for r in self.rulings],
        }


def _turn_instruction(debate: Debate, side: str) -> str:
    opponent = [t for t in debate.turns if t.side != side]
    if not opponent:
        return (
            "Give your opening argument; there is nothing to rebut yet, so leave the "
            "rebuttal empty."
        )
    return (
        f'First rebut your opponent\'s last argument ("{opponent[-1].argument}"), '
        "then add one new argument."
    )


def _params(model: ModelClient, step: str, cap: int | None) -> GenParams:
    return model.params.model_copy(update={"max_tokens": cap or BUDGET[step]})


def run_debate(
    material: str,
    *,
    pro: ModelClient,
    con: ModelClient,
    judge: ModelClient,
    max_rounds: int,
    max_tokens: int | None,
    log: CallLog,
    failures: list[dict[str, str]],
) -> Debate:
    """Algorithm 1: exchanges until the judge decides, forced at ``max_rounds``.

    A debater or an intermediate ruling that fails validation is recorded in ``failures``
    and the debate goes on (an empty turn, an Insufficient ruling); only the forced final
    ruling must succeed, since without it there is no verdict.
    """
    debate = Debate(max_rounds=max_rounds)
    for round_ in range(1, max_rounds + 1):
        for side, model in (("pro", pro), ("con", con)):
            try:
                said = DEBATER.run(
                    model,
                    log=log,
                    params=_params(model, DEBATER.name, max_tokens),
                    material=material,
                    history=debate.history(),
                    side=SIDES[side],
                    turn=_turn_instruction(debate, side),
                )
                turn = Turn(round_, side, said.rebuttal, said.argument)
            except ModelOutputError as exc:
                failures.append({"agent": f"debater {side}, round {round_}", "error": str(exc)})
                turn = Turn(round_, side, "", NO_ARGUMENT)
            debate.turns.append(turn)
        if round_ == max_rounds:
            debate.rulings.append(
                _final(material, debate.history(), judge, max_tokens, log, round_)
            )
            break
        try:
            ruling = JUDGE.run(
                judge,
                log=log,
                params=_params(judge, JUDGE.name, max_tokens),
                material=material,
                history=debate.history(),
            )
            said_ruling = Ruling(round_, ruling.decision, ruling.reason, ruling.confidence, False)
        except ModelOutputError as exc:
            failures.append({"agent": f"judge, round {round_}", "error": str(exc)})
            said_ruling = Ruling(round_, "Insufficient", "(no valid ruling)", 0.0, False)
        debate.rulings.append(said_ruling)
        if said_ruling.decision != "Insufficient":
            break
    return debate


def _final(
    material: str,
    history: str,
    judge: ModelClient,
    max_tokens: int | None,
    log: CallLog,
    round_: int = 0,
) -> Ruling:
    final = FINAL_JUDGE.run(
        judge,
        log=log,
        params=_params(judge, FINAL_JUDGE.name, max_tokens),
        material=material,
        history=history,
    )
    return Ruling(round_, final.decision, final.reason, final.confidence, forced=True)


def judge_without_debate(
    material: str, *, judge: ModelClient, max_tokens: int | None, log: CallLog
) -> Ruling:
    """The ablation without debate: the judge decides at once from the pool."""
    return _final(material, "(no debate held)", judge, max_tokens, log)
