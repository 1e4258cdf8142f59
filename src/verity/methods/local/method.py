"""LoCal (Ma et al., WWW 2025): decompose, reason per sub-task, evaluate, update confidence.

    method = load_method("local", models=models, sources=[OfflineWiki()])
    verdict = method.verify(Claim(text="..."))                     # open book
    verdict = method.verify(claim, evidence=gold_passages)          # gold evidence
    verdict.trace.model_dump()["iterations"]                        # every solution

Per iteration (Algorithm 1, at most ``max_iterations``): the decomposing agent writes a
program (section 3.2.1); evidence is gathered per sub-task (3.2.2); the reasoning agents
answer its sub-tasks in order, with references resolved (3.2.3); v = f(a_1..a_k); the
evaluating agents see d, the sub-tasks and their answers without the deduction or v:
the logically evaluating agent gives L(d), p_l = not (L(d) XOR v), and the
counterfactually evaluating agent answers C(d, not v) = p_c (3.2.4); the confidence
updater counts (3.2.5, `updater.py`). The first iteration runs at the models' own
temperature; later ones resample the decomposer and reasoners at
``resample_temperature`` with a new seed, since at temperature 0 they would only repeat
the first solution. The evaluators always judge at the models' own settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field

from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.errors import BudgetExceededError, ModelOutputError
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import MethodConfig
from verity.methods.common import numbered, require_claim, retrieve
from verity.methods.local import agents
from verity.methods.local.decompose import decompose
from verity.methods.local.program import (
    Program,
    resolve,
)
from verity.methods.local.records import (
    Judged,
    Solution,
    SubTaskResult,
    counts_line,
    deciding_iteration,
    evaluated_record,
    judged_p_l,
    solution_record,
)
from verity.methods.local.render import explanation, markdown, summary
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
    # 4.3: "only 20 samples from HOVER or FEVEROUS".
    demos: int = Field(default=20, ge=0, le=20, description="decomposer demonstrations")
    demo_set: Literal["auto", "hover", "feverous", "general"] = Field(
        default="auto",
        description="built-in demonstrations; auto = the benchmark dataset's own set "
        "(hover, feverous-s), else the general set",
    )
    demos_file: str | None = Field(
        default=None,
        description='JSON file {"demos": [...]} replacing the built-in set, e.g. 20 '
        "decompositions from a dataset's training split",
    )
    # 4.3: "the top 5 paragraphs provided by the retrieval tool".
    k: int = Field(default=5, ge=1, description="passages per sub-task in the open setting")
    max_chars: int = Field(default=600, ge=100, description="characters kept per passage")
    # 4.3: "The maximum number of iterations is set to 3."
    max_iterations: int = Field(default=3, ge=1)
    logical_eval: bool = True
    counterfactual_eval: bool = True
    resample_temperature: float = Field(default=0.7, ge=0.0, le=2.0)


class LocalMethod:
    """LoCal with its five agent roles, three evidence settings and ablation switches."""

    name: ClassVar[str] = "local"
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    # The paper's ablations (section 5.2, Table 2), as ``local/NAME``. Each keeps the
    # iteration budget ("up to 3 iterations", 5.2); see `updater.py` for how they count.
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
        self._file_demos = (
            agents.load_demos_file(self.config.demos_file) if self.config.demos_file else None
        )
        self.dataset: str | None = None

    @staticmethod
    def demonstration_ids() -> set[tuple[str, str]]:
        """Benchmark examples used as built-in demonstrations, to leave out of evaluation."""
        return agents.demonstration_ids()

    def excluded_ids(self) -> set[tuple[str, str]]:
        """Examples of a demonstrations file, to leave out of evaluation too."""
        return agents.ids_of(self._file_demos) if self._file_demos else set()

    def use_dataset(self, name: str) -> None:
        """Told by the benchmark harness which dataset it runs: picks the demonstrations."""
        self.dataset = name

    @property
    def demo_set(self) -> str:
        """The demonstrations in use: a file, or a built-in set."""
        if self._file_demos is not None:
            return f"file:{self.config.demos_file}"
        if self.config.demo_set != "auto":
            return self.config.demo_set
        return agents.set_for(self.dataset)

    def _demos(self) -> list[dict[str, Any]]:
        if self._file_demos is not None:
            return self._file_demos
        return agents.demos(self.demo_set)

    def to_dict(self) -> dict[str, Any]:
        """Configuration for run manifests."""
        cfg = self.config
        evaluators = int(cfg.logical_eval) + int(cfg.counterfactual_eval)
        rule = (
            f"majority of {cfg.max_iterations} resampled solutions, no evaluators (5.2)"
            if evaluators == 0
            else "Algorithm 1: both evaluators accept -> final; else #POS/#NEG, tie False"
        )
        return {
            "method": self.name,
            **cfg.model_dump(),
            "demo_set_used": self.demo_set,
            "iterations_rule": rule,
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
        solutions: dict[int, Solution] = {}
        errors: list[str] = []
        while not updater.done:
            index = updater.iterations
            solution: Solution | None = None
            try:
                solution = self._solve(claim, setting, evidence or (), index, log)
                judged = self._judge(claim, solution, log)
            except (ModelOutputError, BudgetExceededError) as exc:
                # An answer that cannot be read, or a prompt over the model's context (a
                # repair round on top of 20 demonstrations, long gold evidence): the
                # iteration is spent; the counts already earned stay (3.2.5).
                updater.failed()
                errors.append(str(exc))
                record: dict[str, Any] = {"iteration": index + 1, "error": str(exc)}
                if solution is not None:
                    record |= solution_record(solution)
                iterations.append(record)
                continue
            p_l = judged_p_l(judged, solution.v)
            step = updater.update(v=solution.v, p_l=p_l, p_c=judged.conflict)
            solutions[index + 1] = solution
            iterations.append(evaluated_record(index, solution, judged, step))
        try:
            label, confidence = updater.result()
        except ValueError:
            raise ModelOutputError(
                "LoCal produced no evaluated solution in "
                f"{cfg.max_iterations} iteration(s): {'; '.join(errors)}"
            ) from None
        deciding = deciding_iteration(iterations, label)
        chosen = solutions[deciding]
        used = _unique(ev for r in chosen.results for ev in r.evidence)
        counts = counts_line(updater, label, deciding)
        trace_parts = {
            "setting": setting,
            "demo_set": self.demo_set,
            "iterations": iterations,
            "pos": updater.pos,
            "neg": updater.neg,
            "iterations_used": updater.iterations,
            "deciding_iteration": deciding,
        }
        return Verdict(
            label=Label.SUPPORTED if label else Label.REFUTED,
            confidence=confidence,
            explanation=explanation(chosen.program, chosen.results, chosen.v, counts),
            evidence=tuple(used),
            usage=log.usage(),
            trace=log.trace(
                **trace_parts,
                markdown=markdown(claim.text, iterations, label, confidence, deciding),
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
        program, sent = self._decompose(claim, index, log)
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
        return Solution(program, results, program.deduction.evaluate(facts), sent)

    def _decompose(self, claim: Claim, index: int, log: CallLog) -> tuple[Program, int]:
        """The decomposing agent (3.2.1): a checked program and the demonstrations sent."""
        shots = agents.shots(self._demos(), self.config.demos)
        params = self._params("decomposer", index)
        return decompose(self.agents["decomposer"], claim.text, shots, params, log)

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

    def _judge(self, claim: Claim, solution: Solution, log: CallLog) -> Judged:
        """The evaluating agents (3.2.4) on d, which holds neither the deduction nor v."""
        d = summary(solution.results)
        judged = Judged()
        if self.config.logical_eval:
            found = agents.LOGICAL_EVAL.run(
                self.agents["logical_evaluator"], log=log, claim=claim.text, solution=d
            )
            judged.logical, judged.logical_reason = found.claim_is_true, found.reason
        if self.config.counterfactual_eval:
            tested = agents.COUNTERFACTUAL_EVAL.run(
                self.agents["counterfactual_evaluator"],
                log=log,
                claim=claim.text,
                solution=d,
                assumed="false" if solution.v else "true",  # not v
            )
            judged.conflict, judged.conflict_reason = tested.contradiction, tested.reason
        return judged


def _unique(evidence: Any) -> list[Evidence]:
    seen: set[tuple[str, str]] = set()
    kept: list[Evidence] = []
    for ev in evidence:
        key = (ev.source, ev.ref or ev.text[:200])
        if key not in seen:
            seen.add(key)
            kept.append(ev)
    return kept
