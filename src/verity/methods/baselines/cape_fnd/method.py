"""Baseline ``cape-fnd``: CAPE-FND, context-aware prompting with veracity constraints.

    method = load_method("cape-fnd", models=models)
    verdict = method.verify(Article(title="Tower sold for scrap", text="..."))
    verdict.trace.model_dump()["background"]   # what the model set the news against
    load_method("cape-fnd", models=models, optimise_on="gossipcop")   # with the bootstrap

Weiqiang Jin, Yang Gao, Tao Tao, Xiujun Wang, Ningwei Wang, Baohai Wu and Biao Zhao,
"Veracity-Oriented Context-Aware Large Language Models-Based Prompting Optimization for
Fake News Detection", International Journal of Intelligent Systems 2025 (article
5920142). The repository it names, github.com/albert-jin/CAPE-FND, holds only a README
("code will be available soon"), and only the abstract could be read here: this is built
from the abstract, and docs/baselines.md lists what that leaves open.

The model first writes the background of the news from its own knowledge and recalls
analogous cases whose veracity is known (two independent calls, run at once); then it
judges the news under veracity-oriented constraints, reading both. With ``optimise_on``
naming a labelled dataset, the prompt is first refined by the bootstrap random search of
`verity.methods.baselines.cape_fnd.bootstrap` (once, at the first check), and the chosen
demonstrations precede every judgement; ZoFia ran CAPE-FND zero-shot, the default here.
Given evidence is not read: CAPE-FND judges from the model's own knowledge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import cached_property
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from verity import schedule
from verity.bench.base import DatasetSplit, Example
from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.llm.step import Shot
from verity.methods.baselines.agentloop import Once, Pair, shots_that_fit, subject_block
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.baselines.cape_fnd.bootstrap import (
    Demo,
    Material,
    Optimised,
    optimise,
    split_examples,
)
from verity.methods.baselines.cape_fnd.steps import ANALOGY, BACKGROUND, JUDGE, PLAIN
from verity.methods.settings import OperatorDataset
from verity.sources.base import Source

SKIPPED = "(not used in this run)"


class CapeFndConfig(BaselineConfig):
    """Settings of ``cape-fnd``."""

    background: bool = Field(default=True, description="write the news's background first")
    analogy: bool = Field(default=True, description="recall analogous cases first")
    constraints: bool = Field(default=True, description="judge under the veracity constraints")
    # A dataset's name, which may name a folder (advfact:DIR): the operator's, not a
    # request's (verity.methods.settings).
    optimise_on: OperatorDataset | None = Field(
        default=None,
        description="labelled dataset for the bootstrap random search; unset: zero-shot",
    )
    # Ours, kept small: the abstract gives no sizes; the upper bounds are ours too.
    train: int = Field(default=16, ge=1, le=500, description="training examples bootstrapped")
    valid: int = Field(
        default=16, ge=1, le=500, description="validation examples scoring candidates"
    )
    # DSPy's BootstrapFewShotWithRandomSearch: max_bootstrapped_demos = 4 (at most 16:
    # four times that, verity's bound).
    demos: int = Field(default=4, ge=1, le=16, description="most demonstrations in a candidate")
    # Ours (DSPy's default is 16 candidates, at most 64 here): each costs one call per
    # validation example.
    candidates: int = Field(
        default=8, ge=1, le=64, description="candidate prompts, zero-shot included"
    )
    seed: int = Field(default=0, ge=0, le=2**32 - 1)


class CapeFnd(Baseline):
    """Background and analogies from the model, then a judgement under veracity constraints."""

    name: ClassVar[str] = "cape-fnd"
    paper: ClassVar[str] = (
        "Jin et al. 2025, Veracity-Oriented Context-Aware LLM-Based Prompting Optimization "
        "for Fake News Detection (Int. J. Intelligent Systems)"
    )
    # What stands in for the published method (see the module docstring and docs/baselines.md).
    substitute: ClassVar[str] = (
        "rebuilt from the abstract alone (no code or prompts published); zero-shot "
        "unless optimise_on names a dataset"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)
    Config: ClassVar[type[BaselineConfig]] = CapeFndConfig
    variants: ClassVar[dict[str, dict[str, Any]]] = {
        "no-background": {"background": False},
        "no-analogy": {"analogy": False},
        "no-constraints": {"constraints": False},
        # For a model with a small context window (the embedded one).
        "lite": {"max_article_words": 300},
    }
    config: CapeFndConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        super().__init__(models=models, sources=sources, **config)
        self._optimised: Once[Optimised] = Once()

    @cached_property
    def _examples(self) -> tuple[DatasetSplit, list[Example], list[Example]]:
        from verity.bench.datasets import load_dataset

        name = self.config.optimise_on or ""
        split = load_dataset(name)
        train, valid = split_examples(
            split, train=self.config.train, valid=self.config.valid, seed=self.config.seed
        )
        return split, train, valid

    def excluded_ids(self) -> set[tuple[str, str]]:
        """The examples the bootstrap learns from, to leave out of evaluation."""
        if not self.config.optimise_on:
            return set()
        split, train, valid = self._examples
        return {(split.name, ex.id) for ex in [*train, *valid]}

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Background and analogies at once, then the constrained judgement."""
        log = CallLog()
        chosen: Optimised | None = None
        if self.config.optimise_on:
            chosen = await self._optimised.get(lambda: self._optimise(log))
        demos = [d for d in (chosen.demos if chosen else ()) if type(d.subject) is type(subject)]
        material = await self._material(subject, log)
        judgement = await self._judge(subject, material, demos, log)
        trace: dict[str, Any] = {
            "background": material.background,
            "analogies": material.analogies,
            "demos": len(demos),
        }
        if chosen is not None:
            trace["optimisation"] = {
                "dataset": self.config.optimise_on,
                "bootstrapped": chosen.bootstrapped,
                "scores": list(chosen.scores),
            }
        return self.verdict(subject, judgement, log, **trace)

    async def _material(self, subject: Claim | Article, log: CallLog) -> Material:
        block = subject_block(subject, self.config.max_article_words)

        async def background() -> str:
            if not self.config.background:
                return SKIPPED
            return (await BACKGROUND.arun(self.model, log=log, subject=block)).background

        async def analogies() -> str:
            if not self.config.analogy:
                return SKIPPED
            return (await ANALOGY.arun(self.model, log=log, subject=block)).analogies

        written, recalled = await schedule.gather(background(), analogies())
        log.milestone("cape_fnd.context", "background and analogous cases written")
        return Material(background=written, analogies=recalled)

    async def _judge(
        self, subject: Claim | Article, material: Material, demos: Sequence[Demo], log: CallLog
    ) -> BaseModel:
        pair: Pair[Any, Any] = JUDGE if self.config.constraints else PLAIN
        step = pair.pick(subject)
        inputs = self._inputs(subject, material)
        shots = [self._shot(d) for d in demos]
        # All demonstrations, unless the model's context cannot hold them (the last go).
        shots = shots[: shots_that_fit(self.model, step, shots, **inputs)]
        judgement: BaseModel = await step.arun(self.model, log=log, shots=shots, **inputs)
        return judgement

    def _inputs(self, subject: Claim | Article, material: Material) -> dict[str, Any]:
        return {
            "subject": subject_block(subject, self.config.max_article_words),
            # Written by the model about an untrusted text: tagged as data, like it.
            "background": material.background.strip() or "(none)",
            "analogies": material.analogies.strip() or "(none)",
        }

    def _shot(self, demo: Demo) -> Shot:
        return (self._inputs(demo.subject, demo.material), demo.answer)

    async def _optimise(self, log: CallLog) -> Optimised:
        split, train, valid = await asyncio.to_thread(lambda: self._examples)

        def correct(example: Example, label: Label) -> bool:
            return split.map_prediction(label) == example.label

        log.milestone(
            "cape_fnd.optimise",
            f"bootstrap on {len(train)} and random search on {len(valid)} examples",
            train=len(train),
            valid=len(valid),
        )
        chosen = await optimise(
            lambda s: self._material(s, log),
            lambda s, m, d: self._judge(s, m, d, log),
            correct,
            train,
            valid,
            demos=self.config.demos,
            candidates=self.config.candidates,
            seed=self.config.seed,
        )
        log.milestone(
            "cape_fnd.optimised",
            f"{len(chosen.demos)} demonstration(s) chosen, best accuracy {max(chosen.scores):.2f}",
            demos=len(chosen.demos),
        )
        return chosen
