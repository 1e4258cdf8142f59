"""Baseline ``programfc``: generate reasoning programs, execute them, vote.

Pan, Wu, Lu, Luu, Wang, Kan and Nakov (2023), "Fact-Checking Complex Claims with
Program-Guided Reasoning", ACL 2023 (arXiv:2305.12744); code:
github.com/teacherpeterpan/ProgramFC (mirrored as mbzuai-nlp/ProgramFC).

    method = load_method("programfc", models=models)                # n = 1, closed book
    verdict = method.verify(claim, evidence=gold_passages)           # gold setting
    load_method("programfc/n5", models=models, sources=[OfflineWiki()])   # 5 programs, open
    verdict.trace.model_dump()["programs"]      # each program, its steps and its answer

Program generation (section 3.2, `generate.py`): with in-context demonstrations, the
model writes a program of ``answer_N = Question(...)``, ``fact_N = Verify(...)`` and a final
``label = Predict(...)`` (`program.py` parses it). Execution (3.3): the calls run in
order, each with earlier answers put in place of ``{answer_N}``, and each goes to its
handler (`handlers.py`) with the evidence of the setting: the gold passages, the top
passages a search returns for the call's own text (open book), or none (closed book).
``Predict`` evaluates its logical expression over the ``Verify`` results. With ``n`` > 1
(the ``programfc/n5`` variant), n programs are sampled and the majority is the verdict.

A program that cannot be parsed gets one repair round; one still invalid casts no vote,
where ProgramFC guessed at random, and the trace keeps its error. When no program can
vote, the check fails (`ModelOutputError`) and a benchmark counts the example as wrong.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from verity import schedule
from verity.domain import Article, Claim, Evidence, Verdict
from verity.errors import ContextOverflowError, ModelOutputError
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.baselines.base import BaselineConfig, Setting, SettingBaseline, SettingConfig
from verity.methods.baselines.programfc import handlers
from verity.methods.baselines.programfc.generate import DemoSet, demonstrations, generate
from verity.methods.baselines.programfc.program import Program
from verity.methods.common import numbered, require_claim, unique_evidence
from verity.sources.base import Source

# Benchmarks whose claims are of the FEVEROUS kind (one long sentence of several facts)
# get the ``facts`` demonstrations, as ProgramFC gave FEVEROUS its own prompt; every
# other dataset gets the ``multi-hop`` set, shaped like its HOVER prompt.
FACTS_DATASETS = ("feverous",)


class ProgramFcConfig(SettingConfig):
    """Settings of ``programfc``; the defaults follow the paper and its code."""

    # LoCal Table 1 reports ProgramFC (n=1) and (n=5); the code's default is one program.
    n: int = Field(default=1, ge=1, le=10, description="programs sampled and voted on")
    # program_generator.py: temperature 0 for one program, 0.7 when sampling several.
    sample_temperature: float = Field(
        default=0.7, ge=0.0, le=2.0, description="temperature of each program when n > 1"
    )
    # prompts.py holds 20 HOVER and 12 FEVEROUS examples; verity's own sets are smaller
    # (10 and 6), and all of a set is sent unless a smaller number is asked for.
    demos: int = Field(default=20, ge=0, le=20, description="program demonstrations (at most)")
    demo_set: Literal["auto", "multi-hop", "facts"] = Field(
        default="auto",
        description="verity's built-in demonstrations; auto = facts on FEVEROUS, else multi-hop",
    )
    # program_execution.py, --num_retrieved 5 (k below is the number per search).
    k: int = Field(default=5, ge=1, le=50, description="passages per call in the open setting")


class ProgramFc(SettingBaseline):
    """ProgramFC: reasoning programs executed call by call, n of them voted on."""

    name: ClassVar[str] = "programfc"
    paper: ClassVar[str] = (
        "Pan et al. 2023, Fact-Checking Complex Claims with Program-Guided Reasoning (ACL)"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    Config: ClassVar[type[BaselineConfig]] = ProgramFcConfig
    variants: ClassVar[dict[str, dict[str, Any]]] = {"n5": {"n": 5}}
    config: ProgramFcConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        super().__init__(models=models, sources=sources, **config)
        self.generator = models.for_role("program_generator")
        self.verifier = models.for_role("fact_verifier")
        self.answerer = models.for_role("question_answerer")
        self.dataset: str | None = None

    @staticmethod
    def demonstration_ids() -> set[tuple[str, str]]:
        """Benchmark examples among the demonstrations: none, they are invented claims."""
        return set()

    def use_dataset(self, name: str) -> None:
        """Told by the benchmark harness which dataset it runs: picks the demonstrations."""
        self.dataset = name

    @property
    def demo_set(self) -> DemoSet:
        """The built-in demonstration set in use."""
        if self.config.demo_set != "auto":
            return self.config.demo_set
        name = (self.dataset or "").lower()
        return "facts" if name.startswith(FACTS_DATASETS) else "multi-hop"

    def to_dict(self) -> dict[str, Any]:
        """Configuration for run manifests, with the demonstrations actually chosen."""
        return {**super().to_dict(), "demo_set_used": self.demo_set}

    async def check(self, subject: Claim | Article, evidence: Sequence[Evidence] | None) -> Verdict:
        """Sample ``n`` programs (at once unless sequential), execute each, count votes."""
        claim = require_claim(subject, self.name)
        setting = self.setting_for(evidence)
        log = CallLog()
        runs = await schedule.gather(
            *(self._sample(claim, setting, evidence, i, log) for i in range(self.config.n))
        )
        records = [record for record, _ in runs]
        used = [ev for _, found in runs for ev in found]
        votes = [r["prediction"] for r in records if "prediction" in r]
        if not votes:
            errors = "; ".join(str(r["error"]) for r in records)
            raise ModelOutputError(f"programfc: no program could be executed: {errors}")
        true, false = votes.count(True), votes.count(False)
        # program_execution.py: supports only when more programs say true than false.
        supported = true > false
        log.milestone(
            "programfc.vote",
            f"{true} program(s) say true, {false} false",
            true=true,
            false=false,
        )
        return self.verdict(
            claim,
            _Voted(
                explanation=explain(records, true, false),
                label="SUPPORTED" if supported else "REFUTED",
                confidence=max(true, false) / len(votes),
            ),
            log,
            evidence=unique_evidence(used),
            setting=setting,
            demo_set=self.demo_set,
            programs=records,
            votes={"true": true, "false": false},
        )

    # -- one program -------------------------------------------------------------------

    def _params(self, client: ModelClient, index: int) -> GenParams | None:
        """One program at the model's own settings; several sampled, each with its seed."""
        if self.config.n == 1:
            return None
        base = client.params
        return base.model_copy(
            update={"temperature": self.config.sample_temperature, "seed": (base.seed or 0) + index}
        )

    async def _sample(
        self,
        claim: Claim,
        setting: Setting,
        gold: Sequence[Evidence] | None,
        index: int,
        log: CallLog,
    ) -> tuple[dict[str, Any], list[Evidence]]:
        """Generate and execute program ``index``; an unusable one is recorded, not raised."""
        record: dict[str, Any] = {"sample": index + 1}
        try:
            # The first use reads the demonstrations file: off the event loop.
            demos = await asyncio.to_thread(demonstrations, self.demo_set)
            program, text, sent = await generate(
                self.generator,
                claim.text,
                demos[: self.config.demos],
                self._params(self.generator, index),
                log,
            )
            record |= {"demos_sent": sent, "text": text, "program": program.to_dict()}
            log.milestone(
                "programfc.program",
                f"program {index + 1}: {len(program.calls)} call(s)",
                sample=index + 1,
                calls=len(program.calls),
            )
            steps, found, prediction = await self._execute(program, claim, setting, gold, log)
        except (ModelOutputError, ContextOverflowError) as exc:
            log.milestone(
                "programfc.failed", f"program {index + 1} gave no prediction", sample=index + 1
            )
            return record | {"error": str(exc)}, []
        return record | {"steps": steps, "prediction": prediction}, found

    async def _execute(
        self,
        program: Program,
        claim: Claim,
        setting: Setting,
        gold: Sequence[Evidence] | None,
        log: CallLog,
    ) -> tuple[list[dict[str, Any]], list[Evidence], bool]:
        """Run the calls in order, each with its references resolved; then ``Predict``."""
        answers: dict[str, str] = {}
        facts: dict[str, bool] = {}
        steps: list[dict[str, Any]] = []
        found: list[Evidence] = []
        for call in program.calls:
            text = call.resolved(answers)
            passages = await self._evidence(text, claim, setting, gold, log)
            found += passages
            shown = numbered(passages, self.config.max_chars)
            if call.kind == "question":
                step = handlers.QUESTION if setting != "closed" else handlers.QUESTION_CLOSED
                reply = await step.arun(self.answerer, log=log, question=text, evidence=shown)
                # An answer fills later texts: capped, so one reply cannot swell every prompt.
                answer = reply.answer.strip()[: handlers.MAX_ANSWER_CHARS]
                answers[call.var] = answer or "(no answer)"
                result: str | bool = answers[call.var]
            else:
                check = handlers.VERIFY if setting != "closed" else handlers.VERIFY_CLOSED
                truth = await check.arun(self.verifier, log=log, statement=text, evidence=shown)
                facts[call.var] = result = truth.answer
            steps.append(
                {
                    "var": call.var,
                    "call": "Question" if call.kind == "question" else "Verify",
                    "text": text,
                    "answer": result,
                    "evidence": [ev.ref for ev in passages],
                }
            )
        return steps, found, program.predict.evaluate(facts)

    async def _evidence(
        self,
        text: str,
        claim: Claim,
        setting: Setting,
        gold: Sequence[Evidence] | None,
        log: CallLog,
    ) -> list[Evidence]:
        if setting == "closed":
            return []
        # Gold: the claim's own passages (ranked against the call, capped); open: a search.
        return await self.gather(text, claim, gold if setting == "gold" else None, log)


class _Voted(BaseModel):
    """The vote as a judgement; confidence is the winning share of the votes."""

    explanation: str
    label: Literal["SUPPORTED", "REFUTED"]
    confidence: float


def explain(records: Sequence[dict[str, Any]], true: int, false: int) -> str:
    """Each program's calls and answers, then the vote, as plain lines."""
    lines: list[str] = []
    for record in records:
        head = f"Program {record['sample']}"
        if "error" in record:
            lines.append(f"{head}: no prediction ({record['error']})")
            continue
        lines.append(f"{head}: Predict({record['program']['predict']}) = {record['prediction']}")
        for step in record["steps"]:
            lines.append(f"  {step['var']} = {step['call']}({step['text']!r}) -> {step['answer']}")
    lines.append(f"Votes: {true} true, {false} false.")
    return "\n".join(lines)
