"""LoCal's confidence updater (section 3.4): counting verdicts across evaluated solutions.

    updater = ConfidenceUpdater(max_iterations=3)
    step = updater.update(v=True, p_l=True, p_c=False)   # one acceptance: count v, go on
    step = updater.update(v=True, p_l=True, p_c=True)    # two acceptances: final
    updater.result()                                     # (True, 1.0)

Each iteration produces a solution with verdict v and the evaluators' acceptances
p_l = not (L(d) XOR v) and p_c = C(d, not v):

- every enabled evaluator accepts (two of two): v is final, confidence 1;
- some but not all accept (one of two): #POS or #NEG is raised for v; iterate;
- none accepts: the count of (not v) is raised; iterate.

After ``max_iterations`` without a final solution, the label with the larger count wins,
with confidence max(#POS, #NEG) / (#POS + #NEG).

Choices the paper leaves open, decided here:

- With one evaluator ablated, "every enabled evaluator accepts" means that one accepts,
  and there is no "some but not all" case. With both ablated there is nothing to count:
  the first solution's v is the verdict, with no confidence (None).
- An iteration that produced no solution (an invalid program after its repair round)
  counts for neither label.
- A tie (possible only when an iteration failed, e.g. #POS = #NEG = 1) goes to the verdict
  of the last iteration that produced a solution, with confidence 0.5. With no solution
  at all, there is no verdict: `result` raises `ValueError`.
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
        self.last_v: bool | None = None

    @property
    def done(self) -> bool:
        """True when a solution was final or the iteration budget is spent."""
        return self.final is not None or self.iterations >= self.max_iterations

    def update(self, *, v: bool, p_l: bool | None, p_c: bool | None) -> UpdateStep:
        """Count one evaluated solution; ``None`` marks an ablated evaluator."""
        if self.done:
            raise ValueError("the updater is done; no more iterations")
        self.iterations += 1
        self.last_v = v
        accepted = int(bool(p_l)) + int(bool(p_c))
        if self.evaluators == 0:
            self.final = v  # nothing to evaluate: the solution's verdict stands
            return UpdateStep(accepted, 0, None, self.pos, self.neg, True)
        if accepted == self.evaluators:
            self.final = v
            return UpdateStep(accepted, self.evaluators, None, self.pos, self.neg, True)
        counted = v if accepted > 0 else not v
        if counted:
            self.pos += 1
        else:
            self.neg += 1
        return UpdateStep(accepted, self.evaluators, counted, self.pos, self.neg, False)

    def failed(self) -> None:
        """An iteration that produced no solution: it spends budget and counts nothing."""
        if self.done:
            raise ValueError("the updater is done; no more iterations")
        self.iterations += 1

    def result(self) -> tuple[bool, float | None]:
        """The final label (True = supported) and its confidence."""
        if self.final is not None:
            return self.final, (None if self.evaluators == 0 else 1.0)
        if self.pos == self.neg:
            if self.last_v is None:
                raise ValueError("no iteration produced a solution")
            return self.last_v, 0.5
        label = self.pos > self.neg
        return label, max(self.pos, self.neg) / (self.pos + self.neg)
