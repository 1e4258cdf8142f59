"""LoCal (Ma et al., WWW 2025): decompose, reason per sub-task, evaluate, update confidence.

    method = load_method("local", models=models, sources=[OfflineWiki()])
    verdict = method.verify(Claim(text="..."))                     # open book
    verdict = method.verify(claim, evidence=gold_passages)          # gold evidence
    verdict.trace.model_dump()["iterations"]                        # every solution

Per iteration (Algorithm 1, at most ``max_iterations``): the decomposing agent writes a
program (section 3.2.1); evidence is gathered per sub-task (3.2.2); the reasoning agents
answer its sub-tasks, each once the answers it references exist (3.2.3); v = f(a_1..a_k); the
evaluating agents see d, the sub-tasks and their answers without the deduction or v:
the logically evaluating agent gives L(d), p_l = not (L(d) XOR v), and the
counterfactually evaluating agent answers C(d, not v) = p_c (3.2.4); the confidence
updater counts (3.2.5, `updater.py`). The first iteration runs at the models' own
temperature; later ones resample the decomposer and reasoners at
``resample_temperature`` with a new seed, since at temperature 0 they would only repeat
the first solution. The evaluators always judge at the models' own settings.

Within an iteration, what does not depend on another answer is asked at once
(`verity.schedule`): the sub-tasks of a round (`program.waves`: a sub-task waits only for
the questions it references), each with its own retrieval, and the two evaluators, which
Algorithm 1 gives the same d and v and nothing of each other's. The decomposition comes
before its sub-tasks, the evaluators after v, and an iteration after the counts of the
one before it (Algorithm 1 recurses only when no solution was final). A sequential run
(``parallel = False``) asks the same calls in the same order the trace shows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import Field

from verity import schedule
from verity.domain import Article, Claim, Evidence, Label, Reference, Verdict
from verity.errors import (
    BudgetExceededError,
    ContextOverflowError,
    ModelOutputError,
    VerityError,
)
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import MethodBase, MethodConfig
from verity.methods.common import numbered, require_claim, retrieve, unique_evidence
from verity.methods.local import agents
from verity.methods.local.decompose import decompose
from verity.methods.local.program import Program, SubTask, resolve, waves
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
from verity.methods.local.references import cited_results, subtask_references
from verity.methods.local.render import explanation, markdown, summary
from verity.methods.local.updater import ConfidenceUpdater
from verity.methods.settings import OperatorPath
from verity.sources.base import Source

T = TypeVar("T")

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
    # A file on the server: the operator's, not a request's (verity.methods.settings).
    demos_file: OperatorPath | None = Field(
        default=None,
        description='JSON file {"demos": [...]} replacing the built-in set, e.g. 20 '
        "decompositions from a dataset's training split",
    )
    # 4.3: "the top 5 paragraphs provided by the retrieval tool" (at most 50: verity's
    # bound, as for the baselines' k).
    k: int = Field(default=5, ge=1, le=50, description="passages per sub-task in the open setting")
    max_chars: int = Field(
        default=600, ge=100, le=20_000, description="characters kept per passage"
    )
    # 4.3: "The maximum number of iterations is set to 3." At most 10 is verity's bound,
    # over three times the paper's, which every experiment of the paper (5.2, 5.6) keeps.
    max_iterations: int = Field(default=3, ge=1, le=10)
    logical_eval: bool = True
    counterfactual_eval: bool = True
    resample_temperature: float = Field(default=0.7, ge=0.0, le=2.0)


class LocalMethod(MethodBase):
    """LoCal with its five agent roles, three evidence settings and ablation switches."""

    name: ClassVar[str] = "local"
    paper: ClassVar[str] = "LoCal: Logical and Causal Fact-Checking with LLM based Multi-Agents"
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    # The paper's ablations (section 5.2, Table 2), as ``local/NAME``. Each keeps the
    # iteration budget ("up to 3 iterations", 5.2). no-logical and no-counterfactual: the
    # remaining evaluator's acceptance is final, its rejection counts not v; no-eval: every
    # solution counts its own v (`iterations_rule`, `updater.py`).
    variants: ClassVar[dict[str, dict[str, Any]]] = {
        "no-eval": {"logical_eval": False, "counterfactual_eval": False},
        "no-logical": {"logical_eval": False},
        "no-counterfactual": {"counterfactual_eval": False},
    }
    config: LocalConfig

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

    @staticmethod
    def demonstration_claims() -> set[str]:
        """The built-in demonstrations' claims: a benchmark leaves out their near copies."""
        return agents.demonstration_claims()

    def excluded_ids(self) -> set[tuple[str, str]]:
        """Examples of a demonstrations file, to leave out of evaluation too."""
        return agents.ids_of(self._file_demos) if self._file_demos else set()

    def excluded_claims(self) -> set[str]:
        """The claims of a demonstrations file, whose near copies are left out too."""
        return agents.claims_of(self._file_demos) if self._file_demos else set()

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
        return {
            "method": self.name,
            **cfg.model_dump(),
            "demo_set_used": self.demo_set,
            "iterations_rule": iterations_rule(cfg),
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

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
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
            log.milestone(
                "local.iteration",
                f"iteration {index + 1} of {cfg.max_iterations}",
                iteration=index + 1,
                of=cfg.max_iterations,
            )
            solution: Solution | None = None
            try:
                solution = await self._solve(claim, setting, evidence or (), index, log)
                judged = await self._judge(claim, solution, log)
            except (ModelOutputError, ContextOverflowError) as exc:
                # An answer that cannot be read, or a prompt over the model's context (a
                # repair round on top of 20 demonstrations, long gold evidence): the
                # iteration is spent; the counts already earned stay (3.2.5).
                updater.failed()
                errors.append(str(exc))
                log.milestone(
                    "local.failed",
                    f"iteration {index + 1} gave no evaluated solution",
                    iteration=index + 1,
                )
                record: dict[str, Any] = {"iteration": index + 1, "error": str(exc)}
                if solution is not None:
                    record |= solution_record(solution)
                iterations.append(record)
                continue
            p_l = judged_p_l(judged, solution.v)
            step = updater.update(v=solution.v, p_l=p_l, p_c=judged.conflict)
            log.milestone(
                "local.evaluated",
                f"iteration {index + 1}: v = {str(solution.v).lower()}, {step.accepted} of "
                f"{step.evaluators} evaluator(s) accept" + (", final" if step.final else ""),
                iteration=index + 1,
                v=solution.v,
                accepted=step.accepted,
                final=step.final,
            )
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
        used = unique_evidence(ev for r in chosen.results for ev in r.evidence)
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
            # Each sub-task line names its record, [S1].. (`references`), for the check.
            explanation=explanation(
                chosen.program, cited_results(chosen.results), chosen.v, counts
            ),
            evidence=tuple(used),
            usage=log.usage(),
            trace=log.trace(
                **trace_parts,
                markdown=markdown(claim.text, iterations, label, confidence, deciding),
            ),
            method=self.name,
            subject=claim,
        )

    def references(self, verdict: Verdict) -> list[Reference]:
        """The deciding sub-tasks as ``[S1]``..``[Sn]``, then the passages as ``[1]``..``[n]``."""
        return subtask_references(verdict)

    # -- one iteration -----------------------------------------------------------------------

    def _params(self, role: str, index: int) -> GenParams | None:
        if index == 0:
            return None
        base = self.agents[role].params
        seed = (base.seed or 0) + index
        return base.model_copy(
            update={"temperature": self.config.resample_temperature, "seed": seed}
        )

    async def _solve(
        self,
        claim: Claim,
        setting: str,
        gold: Sequence[Evidence],
        index: int,
        log: CallLog,
    ) -> Solution:
        program, sent = await self._decompose(claim, index, log)
        log.milestone(
            "local.program",
            f"program of {len(program.subtasks)} sub-task(s)",
            iteration=index + 1,
            subtasks=len(program.subtasks),
        )
        answers: dict[str, str] = {}
        done: dict[str, SubTaskResult] = {}
        for wave in waves(program.subtasks):
            found = await settle(
                *(
                    self._reason(
                        task, resolve(task.text, answers), claim, setting, gold, index, log
                    )
                    for task in wave
                )
            )
            # Merged by name after the round, so no order of finishing shows anywhere.
            for result in found:
                done[result.var] = result
                if isinstance(result.answer, str):
                    answers[result.var] = result.answer
        results = [done[task.var] for task in program.subtasks]
        facts = {r.var: r.answer for r in results if isinstance(r.answer, bool)}
        return Solution(program, results, program.deduction.evaluate(facts), sent)

    async def _reason(
        self,
        task: SubTask,
        text: str,
        claim: Claim,
        setting: str,
        gold: Sequence[Evidence],
        index: int,
        log: CallLog,
    ) -> SubTaskResult:
        """One sub-task, references resolved in ``text``: its evidence, then its agent (3.2.3)."""
        passages = await self._evidence_for(text, claim, setting, gold, log)
        shown = numbered(passages, self.config.max_chars) if passages else "(none)"
        if task.type == "fact":
            fact = await agents.VERIFY_FACT.arun(
                self.agents["fact_verifier"],
                log=log,
                params=self._params("fact_verifier", index),
                evidence=shown,
                statement=text,
            )
            log.milestone(
                "local.subtask",
                f"iteration {index + 1}: fact {task.var} judged {str(fact.answer).lower()}",
                iteration=index + 1,
                subtask=task.var,
                kind="fact",
                answer=fact.answer,
            )
            return SubTaskResult(task.var, "fact", text, fact.answer, fact.reason, passages)
        qa = await agents.ANSWER_QUESTION.arun(
            self.agents["question_answerer"],
            log=log,
            params=self._params("question_answerer", index),
            evidence=shown,
            question=text,
        )
        answer = qa.answer.strip() or "(no answer)"
        log.milestone(
            "local.subtask",
            f"iteration {index + 1}: question {task.var} answered",
            iteration=index + 1,
            subtask=task.var,
            kind="question",
        )
        return SubTaskResult(task.var, "question", text, answer, "", passages)

    async def _decompose(self, claim: Claim, index: int, log: CallLog) -> tuple[Program, int]:
        """The decomposing agent (3.2.1): a checked program and the demonstrations sent."""
        # The first use reads the demonstrations file: off the event loop.
        shots = await asyncio.to_thread(agents.shots, self._demos(), self.config.demos)
        params = self._params("decomposer", index)
        return await decompose(self.agents["decomposer"], claim.text, shots, params, log)

    async def _evidence_for(
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
            # Sources block (an index, a network call): in a worker thread.
            found = await asyncio.to_thread(
                retrieve, self.sources, text, self.config.k, before=claim.date, log=log
            )
            return found[: self.config.k]
        return []

    async def _judge(self, claim: Claim, solution: Solution, log: CallLog) -> Judged:
        """The evaluating agents (3.2.4) on d, which holds neither the deduction nor v.

        Both at once (Algorithm 1 computes p_l and p_c side by side, and the updater reads
        both). Each sees the claim and d; the logical agent nothing of v, the
        counterfactual agent not v as the verdict to assume. Each fills its own fields.
        """
        d = summary(solution.results)
        judged = Judged()

        async def logical() -> None:
            found = await agents.LOGICAL_EVAL.arun(
                self.agents["logical_evaluator"], log=log, claim=claim.text, solution=d
            )
            judged.logical, judged.logical_reason = found.claim_is_true, found.reason

        async def counterfactual() -> None:
            tested = await agents.COUNTERFACTUAL_EVAL.arun(
                self.agents["counterfactual_evaluator"],
                log=log,
                claim=claim.text,
                solution=d,
                assumed="false" if solution.v else "true",  # not v
            )
            judged.conflict, judged.conflict_reason = tested.contradiction, tested.reason

        asked = [
            ask()
            for ask, wanted in (
                (logical, self.config.logical_eval),
                (counterfactual, self.config.counterfactual_eval),
            )
            if wanted
        ]
        await settle(*asked)
        return judged


def iterations_rule(cfg: LocalConfig) -> str:
    """How the run's evaluators turn solutions into a label, as `ConfidenceUpdater` counts.

    Algorithm 1 with both evaluators; the 5.2 ablations keep its budget: one evaluator's
    acceptance is final and its rejection counts not v; with none, every solution counts
    its own v. After the budget, #POS > #NEG gives True, else False, in every variant.
    """
    end = (
        f"after {cfg.max_iterations} iteration(s): #POS > #NEG -> True, else False (a tie is False)"
    )
    if cfg.logical_eval and cfg.counterfactual_eval:
        return (
            "Algorithm 1: both evaluators accept -> v final (confidence 1); "
            f"one accepts -> count v; none accepts -> count not v; {end}"
        )
    if cfg.logical_eval or cfg.counterfactual_eval:
        which = "logical" if cfg.logical_eval else "counterfactual"
        return (
            f"{which} evaluator alone (5.2): it accepts -> v final (confidence 1); "
            f"it rejects -> count not v; {end}"
        )
    return (
        f"majority of {cfg.max_iterations} resampled solutions, no evaluators (5.2): "
        f"each counts its own v, none is final; {end}"
    )


async def settle(*steps: Awaitable[T]) -> list[T]:
    """Run independent steps (at once unless the check is sequential); results in order.

    Unlike a bare `schedule.gather`, every step runs to its end even when another fails
    (a `VerityError`: an unreadable answer, a prompt over the context, no source), and
    then the first failure in the steps' order is raised. A failed iteration then asks
    the same calls, and leaves the same trace, whichever finished first, and whether the
    run is parallel or sequential. Any other error is a bug: it cancels the rest.
    """
    if not steps:  # no evaluator (the no-eval ablation); gather needs at least one step
        return []
    outcomes = await schedule.gather(*(_caught(step) for step in steps))
    failed = [outcome.error for outcome in outcomes if isinstance(outcome, _Failed)]
    # A spent budget comes first, whichever step met it: an iteration that fails on an
    # unreadable answer is retried, a check whose budget is spent must stop.
    spent = [e for e in failed if isinstance(e, BudgetExceededError)]
    spent = [e for e in spent if not isinstance(e, ContextOverflowError)]
    if spent or failed:
        raise (spent or failed)[0]
    return [outcome for outcome in outcomes if not isinstance(outcome, _Failed)]


class _Failed:
    def __init__(self, error: VerityError) -> None:
        self.error = error


async def _caught(step: Awaitable[T]) -> T | _Failed:
    try:
        return await step
    except VerityError as exc:  # raised again by `settle`, in the steps' order
        return _Failed(exc)
