"""LoCal (Ma et al., WWW 2025): decompose, reason per sub-task, evaluate, update confidence.

    method = load_method("local", models=models, sources=[OfflineWiki()])
    verdict = method.verify(Claim(text="..."))                     # open book
    verdict = method.verify(claim, evidence=gold_passages)          # gold evidence
    verdict.trace.model_dump()["iterations"]                        # every solution

Per iteration (at most ``max_iterations``): the decomposing agent writes a program
(section 3.1); the reasoning agents answer its sub-tasks in order, with references
resolved (3.2); v = f(a_1..a_k); the logically evaluating agent gives L(d) without seeing
v, p_l = not (L(d) XOR v); the counterfactually evaluating agent answers C(d, not v) = p_c
(3.3); the confidence updater counts (3.4, `updater.py`). The first iteration runs at the
models' own temperature; later ones resample the decomposer and reasoners at
``resample_temperature`` with a new seed, since at temperature 0 they would only repeat
the first solution. The evaluators always judge at the models' own settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import Field

from verity.domain import Article, Claim, Evidence, Label, Message, Verdict
from verity.errors import ModelOutputError
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import MethodConfig
from verity.methods.common import numbered, require_claim, retrieve
from verity.methods.local import agents
from verity.methods.local.program import (
    Decomposition,
    Program,
    ProgramError,
    parse_program,
    resolve,
)
from verity.methods.local.render import markdown, solution_text
from verity.methods.local.updater import ConfidenceUpdater
from verity.sources.base import Source

ROLES = (
    "decomposer",
    "fact_verifier",
    "question_answerer",
    "logical_evaluator",
    "counterfactual_evaluator",
)


class LocalConfig(MethodConfig):
    """Settings of ``local``; the defaults follow the paper where it gives a value."""

    setting: Literal["auto", "gold", "open", "closed"] = Field(
        default="auto",
        description="evidence per sub-task; auto = gold when evidence is given, else open "
        "when sources are configured, else closed",
    )
    demos: int = Field(default=20, ge=0, le=20, description="decomposer demonstrations")
    k: int = Field(default=5, ge=1, description="passages per sub-task in the open setting")
    max_chars: int = Field(default=600, ge=100, description="characters kept per passage")
    max_iterations: int = Field(default=3, ge=1)
    logical_eval: bool = True
    counterfactual_eval: bool = True
    resample_temperature: float = Field(default=0.7, ge=0.0, le=2.0)


@dataclass
class SubTaskResult:
    """One sub-task as it ran."""

    var: str
    type: str
    text: str
    answer: bool | str
    reason: str = ""
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class Solution:
    """One iteration's program, its answers and v."""

    program: Program
    results: list[SubTaskResult]
    v: bool


class LocalMethod:
    """LoCal with its five agent roles, three evidence settings and ablation switches."""

    name: ClassVar[str] = "local"
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    # The paper's ablations (section 5.4), as ``local/NAME``.
    variants: ClassVar[dict[str, dict[str, Any]]] = {
        "no-eval": {"logical_eval": False, "counterfactual_eval": False},
        "no-logical": {"logical_eval": False},
        "no-counterfactual": {"counterfactual_eval": False},
    }

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        self.config = LocalConfig(**config)
        self.models = models
        self.sources = list(sources)
        self.agents: dict[str, ModelClient] = {role: models.for_role(role) for role in ROLES}

    @staticmethod
    def demonstration_ids() -> set[tuple[str, str]]:
        """Benchmark examples used as demonstrations, to leave out of evaluation."""
        return agents.demonstration_ids()

    def to_dict(self) -> dict[str, Any]:
        """Configuration for run manifests."""
        return {
            "method": self.name,
            **self.config.model_dump(),
            "models": self.models.to_dict(),
            "sources": [s.to_dict() for s in self.sources],
        }

    def setting_for(self, evidence: Sequence[Evidence] | None) -> str:
        """The evidence setting a call runs in."""
        if self.config.setting != "auto":
            return self.config.setting
        if evidence is not None:
            return "gold"
        return "open" if self.sources else "closed"

    async def averify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Async twin of `verify` (the agents run one after another by design)."""
        return await asyncio.to_thread(self.verify, subject, evidence=evidence)

    def verify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Run up to ``max_iterations`` evaluated solutions and return the counted verdict."""
        claim = require_claim(subject, self.name)
        setting = self.setting_for(evidence)
        if setting == "gold" and evidence is None:
            raise ModelOutputError("the gold setting needs the gold evidence passed in")
        log = CallLog()
        cfg = self.config
        updater = ConfidenceUpdater(
            max_iterations=cfg.max_iterations,
            logical=cfg.logical_eval,
            counterfactual=cfg.counterfactual_eval,
        )
        iterations: list[dict[str, Any]] = []
        last: Solution | None = None
        errors: list[str] = []
        while not updater.done:
            index = updater.iterations
            try:
                solution = self._solve(claim, setting, evidence or (), index, log)
            except ModelOutputError as exc:
                updater.failed()
                errors.append(str(exc))
                iterations.append({"iteration": index + 1, "error": str(exc)})
                continue
            last = solution
            iterations.append(self._evaluate(claim, solution, updater, index, log))
        if last is None:
            raise ModelOutputError(
                "LoCal produced no valid solution in "
                f"{cfg.max_iterations} iteration(s): {'; '.join(errors)}"
            )
        label, confidence = updater.result()
        used = _unique(ev for r in last.results for ev in r.evidence)
        trace_parts = {
            "setting": setting,
            "iterations": iterations,
            "pos": updater.pos,
            "neg": updater.neg,
            "iterations_used": updater.iterations,
        }
        return Verdict(
            label=Label.SUPPORTED if label else Label.REFUTED,
            confidence=confidence,
            explanation=solution_text(last.program, last.results, with_value=True),
            evidence=tuple(used),
            usage=log.usage(),
            trace=log.trace(
                **trace_parts,
                markdown=markdown(claim.text, iterations, label, confidence),
            ),
            method=self.name,
            subject=claim,
        )

    # -- one iteration -----------------------------------------------------------------------

    def _params(self, role: str, index: int) -> GenParams | None:
        if index == 0:
            return None
        base = self.agents[role].params
        seed = (base.seed or 0) + index
        return base.model_copy(
            update={"temperature": self.config.resample_temperature, "seed": seed}
        )

    def _solve(
        self,
        claim: Claim,
        setting: str,
        gold: Sequence[Evidence],
        index: int,
        log: CallLog,
    ) -> Solution:
        program = self._decompose(claim, index, log)
        answers: dict[str, str] = {}
        facts: dict[str, bool] = {}
        results: list[SubTaskResult] = []
        for task in program.subtasks:
            text = resolve(task.text, answers)
            passages = self._evidence_for(text, claim, setting, gold, log)
            shown = numbered(passages, self.config.max_chars) if passages else "(none)"
            if task.type == "fact":
                fact = agents.VERIFY_FACT.run(
                    self.agents["fact_verifier"],
                    log=log,
                    params=self._params("fact_verifier", index),
                    evidence=shown,
                    statement=text,
                )
                facts[task.var] = fact.answer
                results.append(
                    SubTaskResult(task.var, "fact", text, fact.answer, fact.reason, passages)
                )
            else:
                qa = agents.ANSWER_QUESTION.run(
                    self.agents["question_answerer"],
                    log=log,
                    params=self._params("question_answerer", index),
                    evidence=shown,
                    question=text,
                )
                answers[task.var] = qa.answer.strip() or "(no answer)"
                results.append(
                    SubTaskResult(task.var, "question", text, answers[task.var], "", passages)
                )
        return Solution(program, results, program.deduction.evaluate(facts))

    def _decompose(self, claim: Claim, index: int, log: CallLog) -> Program:
        """The decomposing agent, with one repair round for an invalid program (3.1)."""
        model = self.agents["decomposer"]
        params = self._params("decomposer", index)
        shots = agents.demonstrations(self.config.demos)
        messages = agents.DECOMPOSE.messages(shots=shots, claim=claim.text)
        done = model.chat(
            messages, step="local.decompose", schema=Decomposition, params=params, log=log
        )
        try:
            return parse_program(_decomposition(done.parsed))
        except ProgramError as exc:
            error = exc
        repair = [
            *messages,
            Message(role="assistant", content=done.text),
            Message(
                role="user",
                content=f"That program is not valid: {error}. Write the corrected "
                "decomposition as JSON.",
            ),
        ]
        again = model.chat(
            repair, step="local.decompose.repair", schema=Decomposition, params=params, log=log
        )
        try:
            return parse_program(_decomposition(again.parsed))
        except ProgramError as exc:
            raise ProgramError(f"invalid program after one repair round: {exc}") from exc

    def _evidence_for(
        self,
        text: str,
        claim: Claim,
        setting: str,
        gold: Sequence[Evidence],
        log: CallLog,
    ) -> list[Evidence]:
        if setting == "gold":
            return list(gold)
        if setting == "open":
            found = retrieve(self.sources, text, self.config.k, before=claim.date, log=log)
            return found[: self.config.k]
        return []

    def _evaluate(
        self,
        claim: Claim,
        solution: Solution,
        updater: ConfidenceUpdater,
        index: int,
        log: CallLog,
    ) -> dict[str, Any]:
        """The evaluating agents (3.3) and the counters' update (3.4) for one solution."""
        d = solution_text(solution.program, solution.results, with_value=False)
        v = solution.v
        logical: bool | None = None
        logical_reason = ""
        conflict: bool | None = None
        conflict_reason = ""
        if self.config.logical_eval:
            judged = agents.LOGICAL_EVAL.run(
                self.agents["logical_evaluator"], log=log, claim=claim.text, solution=d
            )
            logical, logical_reason = judged.claim_is_true, judged.reason
        if self.config.counterfactual_eval:
            tested = agents.COUNTERFACTUAL_EVAL.run(
                self.agents["counterfactual_evaluator"],
                log=log,
                claim=claim.text,
                solution=d,
                assumed="false" if v else "true",
            )
            conflict, conflict_reason = tested.contradiction, tested.reason
        p_l = None if logical is None else not (logical ^ v)
        p_c = conflict
        step = updater.update(v=v, p_l=p_l, p_c=p_c)
        return {
            "iteration": index + 1,
            "program": solution.program.to_dict(),
            "subtasks": [
                {
                    "var": r.var,
                    "type": r.type,
                    "text": r.text,
                    "answer": r.answer,
                    "reason": r.reason,
                    "evidence": [ev.ref for ev in r.evidence],
                }
                for r in solution.results
            ],
            "solution": d,
            "predicted": v,
            "logical": logical,
            "logical_reason": logical_reason,
            "counterfactual_conflict": conflict,
            "counterfactual_reason": conflict_reason,
            "p_l": p_l,
            "p_c": p_c,
            "accepted": step.accepted,
            "counted": step.counted,
            "pos": step.pos,
            "neg": step.neg,
            "final": step.final,
        }


def _decomposition(parsed: Decomposition | None) -> Decomposition:
    # ModelClient raises ModelOutputError before returning an unparsed structured answer.
    if parsed is None:  # pragma: no cover - defended by ModelClient
        raise ModelOutputError("the decomposing agent gave no answer")
    return parsed


def _unique(evidence: Any) -> list[Evidence]:
    seen: set[tuple[str, str]] = set()
    kept: list[Evidence] = []
    for ev in evidence:
        key = (ev.source, ev.ref or ev.text[:200])
        if key not in seen:
            seen.add(key)
            kept.append(ev)
    return kept
