"""LoCal's confidence updater (section 3.2.5, Algorithm 1): counting verdicts across solutions.

    updater = ConfidenceUpdater(max_iterations=3)
    step = updater.update(v=True, p_l=True, p_c=False)   # one acceptance: count v, go on
    step = updater.update(v=True, p_l=True, p_c=True)    # two acceptances: final
    updater.result()                                     # (True, 1.0)

Each iteration produces a solution with verdict v and the evaluators' acceptances
p_l = not (L(d) XOR v) and p_c = C(d, not v):

- both accept: v is final, confidence 1 (3.2.5, "2 Acceptances");
- one accepts: the counter of v goes up (#POS for True, #NEG for False); iterate;
- none accepts: the counter of (not v) goes up; iterate.

After ``max_iterations`` (3, section 4.3) without a final solution, Algorithm 1 returns
True when #POS > #NEG and False otherwise, so a tie is False; the confidence is
max(#POS, #NEG) / (#POS + #NEG) (3.2.5).

Choices the paper leaves open, decided here:

- An iteration that produced no evaluated solution (an invalid program after its repair
  round, a reasoner or evaluator answer that could not be read) spends its budget and
  counts for neither label; the counts earned before it stay.
- With one evaluator ablated (section 5.2, "w/o L-Eval", "w/o C-Eval"), that evaluator's
  acceptance is final and its rejection counts (not v).
- With both ablated ("w/o Eval"), every solution counts its own v and all
  ``max_iterations`` solutions run: the ablation keeps the paper's iteration budget
  ("up to 3 iterations", 5.2), so the label is a majority of resampled solutions.
- No counted solution at all: no verdict; `result` raises `ValueError`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UpdateStep:
    """What one iteration did to the counters."""

    accepted: int
    evaluators: int
    counted: bool | None  # the label counted this iteration (True = POS), None if none
    pos: int
    neg: int
    final: bool


class ConfidenceUpdater:
    """The #POS / #NEG counters over at most ``max_iterations`` solutions."""

    def __init__(
        self, *, max_iterations: int = 3, logical: bool = True, counterfactual: bool = True
    ) -> None:
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        self.max_iterations = max_iterations
        self.evaluators = int(logical) + int(counterfactual)
        self.pos = 0
        self.neg = 0
        self.iterations = 0
        self.final: bool | None = None

    @property
    def done(self) -> bool:
        """True when a solution was final or the iteration budget is spent."""
        return self.final is not None or self.iterations >= self.max_iterations

    def update(self, *, v: bool, p_l: bool | None, p_c: bool | None) -> UpdateStep:
        """Count one evaluated solution; ``None`` marks an ablated evaluator."""
        if self.done:
            raise ValueError("the updater is done; no more iterations")
        self.iterations += 1
        accepted = int(bool(p_l)) + int(bool(p_c))
        if self.evaluators and accepted == self.evaluators:
            self.final = v
            return UpdateStep(accepted, self.evaluators, None, self.pos, self.neg, True)
        # No evaluator: the solution's own v counts. Otherwise one acceptance counts v
        # and none counts (not v) (3.2.5).
        counted = v if (accepted > 0 or not self.evaluators) else not v
        if counted:
            self.pos += 1
        else:
            self.neg += 1
        return UpdateStep(accepted, self.evaluators, counted, self.pos, self.neg, False)

    def failed(self) -> None:
        """An iteration that produced no evaluated solution: budget spent, nothing counted."""
        if self.done:
            raise ValueError("the updater is done; no more iterations")
        self.iterations += 1

    def result(self) -> tuple[bool, float]:
        """The final label (True = supported) and its confidence."""
        if self.final is not None:
            return self.final, 1.0
        total = self.pos + self.neg
        if total == 0:
            raise ValueError("no iteration produced an evaluated solution")
        # Algorithm 1: True only when #POS > #NEG; a tie is False.
        return self.pos > self.neg, max(self.pos, self.neg) / total
