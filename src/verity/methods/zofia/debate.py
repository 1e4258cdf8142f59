"""ZoFia's debate and judgment (section 4.2, Algorithm 1, prompts after B.5 and B.6).

A pro debater (the news is real) and a con debater (it is fake) argue over the whole
evidence pool. Pro speaks first; each later turn rebuts the opponent's last argument in
one paragraph and adds new evidence, each piece naming the material it comes from. After
every exchange the cautious judge reads the debate record, and only it (Algorithm 1:
Judge.Assess(H); B.6), and answers R (real), F (fake) or I (go on). The debate ends
at the first R or F; after ``max_rounds`` exchanges (B.6: 5) still at I, the outcome is
Insufficient, which the method reports as NOT_ENOUGH_INFO and the metrics count as wrong,
as the paper does. The judge answers with a letter only (B.6), so no ruling carries a
confidence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from verity.errors import ModelOutputError
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.methods.zofia.agents import BUDGET, DEBATER, FORCED_JUDGE, JUDGE

# Appendix B.6: at most 5 rounds; the judge still answering I after them ends the
# debate with an insufficient-evidence decision.
MAX_ROUNDS = 5

SIDES = {"pro": "real", "con": "fake"}
RULINGS = {"R": "Real", "F": "Fake", "I": "Insufficient"}


@dataclass(frozen=True)
class Turn:
    """One debater's turn: the rebuttal and the new points, kept apart for the report."""

    round: int
    side: str
    rebuttal: str
    points: tuple[dict[str, str], ...]
    failed: bool = False

    def argument(self) -> str:
        """The new points as one line each: evidence (material): reason."""
        if self.failed:
            return "(no valid argument)"
        return " ".join(
            f"- {p['evidence']} (from {p['source']}): {p['reason']}" for p in self.points
        )

    def to_dict(self) -> dict[str, Any]:
        """The turn as plain data."""
        return {
            "round": self.round,
            "side": self.side,
            "rebuttal": self.rebuttal,
            "points": [dict(p) for p in self.points],
            "failed": self.failed,
        }


@dataclass(frozen=True)
class Ruling:
    """The judge's answer after one exchange.

    ``forced``: the judge had to choose Real or Fake (the ablation without debate).
    ``defaulted``: the judge gave no valid answer and the debate went on as if it said I.
    """

    round: int
    decision: str
    forced: bool = False
    defaulted: bool = False


@dataclass
class Debate:
    """The whole exchange and how it ended."""

    max_rounds: int
    turns: list[Turn] = field(default_factory=list)
    rulings: list[Ruling] = field(default_factory=list)
    left_out: int = 0  # most earlier turns ever left out of a prompt to fit the context

    @property
    def final(self) -> Ruling:
        """The ruling that ended the debate."""
        return self.rulings[-1]

    @property
    def ended_early(self) -> bool:
        """True when the judge decided before the round limit."""
        return self.final.round < self.max_rounds

    def history(self, fits: Callable[[str], bool] | None = None) -> str:
        """The turns as the debaters and the judge read them.

        With ``fits``, the oldest turns are left out (and said to be) until the text fits.
        """
        if not self.turns:
            return "(no arguments yet)"
        lines = [_line(t) for t in self.turns]
        start = 0
        while fits is not None and start < len(lines) - 1:
            shown = _elided(start) + "\n".join(lines[start:])
            if fits(shown):
                break
            start += 1
        self.left_out = max(self.left_out, start)
        return _elided(start) + "\n".join(lines[start:])

    def to_trace(self) -> dict[str, Any]:
        """The record kept in the verdict's trace."""
        return {
            "max_rounds": self.max_rounds,
            "rounds": self.final.round,
            "ended_early": self.ended_early,
            "outcome": self.final.decision,
            "turns_left_out_of_prompts": self.left_out,
            "turns": [t.to_dict() for t in self.turns],
            "rulings": [r.__dict__ for r in self.rulings],
        }


def _line(t: Turn) -> str:
    who = f"Round {t.round}, {t.side} (argues {SIDES[t.side]})"
    rebuttal = f" Rebuttal: {t.rebuttal}" if t.rebuttal.strip() else ""
    return f"{who}:{rebuttal} Evidence: {t.argument()}"


def _elided(start: int) -> str:
    return f"({start} earlier turns left out for length)\n" if start else ""


def _turn_instruction(debate: Debate, side: str) -> str:
    opponent = [t for t in debate.turns if t.side != side]
    if not opponent:
        return "Open the debate: there is nothing to rebut yet, so leave the rebuttal empty."
    return (
        "First rebut, in one paragraph, the evidence and reasons of your opponent's last "
        "turn (the last turn of the other side above); then give the most valuable new "
        "evidence."
    )


def _params(model: ModelClient, step: str, cap: int | None) -> GenParams:
    return model.params.model_copy(update={"max_tokens": cap or BUDGET[step]})


async def run_debate(
    material: str,
    *,
    pro: ModelClient,
    con: ModelClient,
    judge: ModelClient,
    max_rounds: int,
    max_tokens: int | None,
    log: CallLog,
    failures: list[dict[str, str]],
    fits: Callable[[str], bool] | None = None,
) -> Debate:
    """Algorithm 1: exchanges until the judge rules R or F, at most ``max_rounds``.

    Every turn reads the turns before it, so the debate is sequential: pro, con, judge.

    A debater or an intermediate ruling that fails validation is recorded in ``failures``
    and the debate goes on (an empty turn; a ruling defaulted to I). The ruling after the
    last round must succeed: without it there is no verdict. ``fits`` tells whether a
    history text still fits the prompts (see `Debate.history`).
    """
    debate = Debate(max_rounds=max_rounds)
    for round_ in range(1, max_rounds + 1):
        log.milestone(
            "zofia.round", f"debate round {round_} of {max_rounds}", round=round_, of=max_rounds
        )
        for side, model in (("pro", pro), ("con", con)):
            try:
                said = await DEBATER.arun(
                    model,
                    log=log,
                    params=_params(model, DEBATER.name, max_tokens),
                    material=material,
                    history=debate.history(fits),
                    side=SIDES[side],
                    turn=_turn_instruction(debate, side),
                )
                points = tuple(p.model_dump() for p in said.points)
                turn = Turn(round_, side, said.rebuttal, points)
            except ModelOutputError as exc:
                failures.append({"agent": f"debater {side}, round {round_}", "error": str(exc)})
                turn = Turn(round_, side, "", (), failed=True)
            debate.turns.append(turn)
        last = round_ == max_rounds
        try:
            said_ruling = await JUDGE.arun(
                judge,
                log=log,
                params=_params(judge, JUDGE.name, max_tokens),
                # Algorithm 1: Judge.Assess(H) reads the debate history alone.
                history=debate.history(fits),
                max_rounds=str(max_rounds),
            )
            ruling = Ruling(round_, RULINGS[said_ruling.ruling])
        except ModelOutputError as exc:
            if last:
                raise
            failures.append({"agent": f"judge, round {round_}", "error": str(exc)})
            ruling = Ruling(round_, "Insufficient", defaulted=True)
        debate.rulings.append(ruling)
        _announce(ruling, log, final=last or ruling.decision != "Insufficient")
        if ruling.decision != "Insufficient":
            break
    return debate


async def judge_without_debate(
    material: str, *, judge: ModelClient, max_tokens: int | None, log: CallLog
) -> Ruling:
    """The ablation without debate (Table 2): the judge must decide at once from the pool."""
    said = await FORCED_JUDGE.arun(
        judge,
        log=log,
        params=_params(judge, FORCED_JUDGE.name, max_tokens),
        material=material,
    )
    ruling = Ruling(0, RULINGS[said.ruling], forced=True)
    _announce(ruling, log, final=True)
    return ruling


def _announce(ruling: Ruling, log: CallLog, *, final: bool) -> None:
    """The judge's answer as a progress milestone (``zofia.ruling``)."""
    if ruling.forced:
        said = f"judge, without a debate: {ruling.decision}"
    elif final:
        said = f"judge after round {ruling.round}: {ruling.decision}"
    else:
        said = f"judge after round {ruling.round}: go on" + (
            " (no valid answer)" if ruling.defaulted else ""
        )
    log.milestone(
        "zofia.ruling",
        said,
        round=ruling.round,
        decision=ruling.decision,
        final=final,
        forced=ruling.forced,
        defaulted=ruling.defaulted,
    )
