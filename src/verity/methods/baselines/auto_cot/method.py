"""Baseline ``auto-cot``: Auto-CoT, demonstrations built from clustered unlabelled questions.

    method = load_method("auto-cot", models=models, pool="politifact")
    verdict = method.verify(Article(title="Tower sold for scrap", text="..."))
    verdict.trace.model_dump()["demos"]     # cluster, text, rationale and label of each demo

Zhuosheng Zhang, Aston Zhang, Mu Li and Alex Smola, "Automatic Chain of Thought Prompting
in Large Language Models", ICLR 2023 (arXiv 2210.03493); code at
github.com/amazon-science/auto-cot (``run_demo.py``).

Auto-CoT needs no labelled example. It clusters a pool of questions of the task with
k-means over Sentence-BERT vectors (all-MiniLM-L6-v2 in the paper's code, verity's
default encoder here), and from each cluster takes the question nearest its centre that
passes simple checks, asks the model to reason about it step by step (Zero-Shot-CoT), and
keeps question, reasoning and answer as one demonstration; the demonstrations, one per
cluster, then precede each question it answers. The checks are the paper's code's: a
question of at most 60 words and a reasoning of at most 5 steps ending with a full stop.

The pool: ``pool`` names a dataset (its texts are read without their labels); unset, it
is the dataset a benchmark runs, as the paper clustered the test questions themselves;
with neither (a single ``verity check``), or ``pool = "seen"``, it is what this method
checked so far, with the reasoning it gave (the paper's streaming Auto-CoT*, section 5.6),
so the first check runs as plain Zero-Shot-CoT. A news article is far longer than 60
words, so an article in a demonstration is cut to that many words instead of skipped.
A subject is never its own demonstration.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field

from verity import schedule
from verity.domain import Article, Claim, Evidence, Verdict
from verity.errors import ModelOutputError
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.llm.step import Shot
from verity.methods.article import ArticleJudgement, retrieval_query
from verity.methods.baselines.agentloop import (
    Once,
    clip,
    judge_pair,
    kind_of,
    shots_that_fit,
    subject_block,
)
from verity.methods.baselines.auto_cot.cluster import Vectors, cluster_orders
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.common import ClaimJudgement
from verity.methods.settings import OperatorDataset
from verity.nlp.embed import LONGEST_CHARS, Encoder, default_encoder
from verity.nlp.text import split_sentences
from verity.sources.base import Source

Answer = ClaimJudgement | ArticleJudgement

_TASK = (
    "Answer the question about the claim or news article shown. Think step by step: "
    "write your reasoning as a few short sentences, one step each, each ending with a "
    "full stop."
)
# The rationale of a demonstration and the final answer are the same Zero-Shot-CoT
# prompt; the final one comes after the demonstrations.
DEMO = judge_pair("auto_cot.demo", _TASK, "Q: {subject}\nA: Let's think step by step.")
ANSWER = judge_pair("auto_cot.answer", _TASK, "Q: {subject}\nA: Let's think step by step.")


@dataclass(frozen=True)
class Demo:
    """One demonstration: a cluster's representative and the model's reasoning about it."""

    subject: Claim | Article
    answer: Answer
    cluster: int
    size: int


class AutoCotConfig(BaselineConfig):
    """Settings of ``auto-cot``."""

    # run_demo.py: num_clusters = 8 for most tasks (4, 6 or 7 for a few); one demo each.
    clusters: int = Field(default=8, ge=1, le=50, description="clusters, so demonstrations")
    # run_demo.py: a demonstration's question has at most 60 tokens (words).
    max_question_words: int = Field(default=60, ge=1, le=1000, description="words of a demo's text")
    # run_demo.py --max_ra_len: at most 5 reasoning steps.
    max_rationale_steps: int = Field(
        default=5, ge=1, le=50, description="sentences of a demo's reasoning"
    )
    # run_demo.py --sampling: "center" tries the member nearest the centre first.
    sampling: Literal["center", "random"] = "center"
    # run_demo.py --random_seed.
    seed: int = Field(default=192, ge=0, le=2**32 - 1)
    # A dataset's name, which may name a folder (advfact:DIR): the operator's, not a
    # request's (verity.methods.settings).
    pool: OperatorDataset | None = Field(
        default=None,
        description="dataset whose texts are clustered; unset: the benchmark's dataset, "
        'else the subjects checked so far; "seen": always the subjects checked so far',
    )
    # Ours: the paper clusters a whole test set; a cap keeps the encoding cost bounded.
    # At most 10,000: a few times the largest test set the Auto-CoT paper clusters.
    max_pool: int = Field(default=1000, ge=1, le=10_000, description="texts sampled from the pool")
    # Ours: the paper's code reasoned about every question first; here only candidates
    # are reasoned about, up to this many per cluster.
    tries: int = Field(default=3, ge=1, le=20, description="candidates reasoned about per cluster")


class AutoCot(Baseline):
    """Clustered demonstrations with the model's own reasoning, then a step-by-step answer."""

    name: ClassVar[str] = "auto-cot"
    paper: ClassVar[str] = (
        "Zhang et al. 2022, Automatic Chain of Thought Prompting in Large Language Models "
        "(ICLR 2023)"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)
    Config: ClassVar[type[BaselineConfig]] = AutoCotConfig
    variants: ClassVar[dict[str, dict[str, Any]]] = {
        # For a model with a small context window (the embedded one): half the demos.
        "lite": {"clusters": 4, "max_article_words": 300},
        "streaming": {"pool": "seen"},
    }
    config: AutoCotConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        super().__init__(models=models, sources=sources, **config)
        self.dataset: str | None = None
        # Replaceable (tests pass a small fake); the default encoder loads on first use.
        self.encoder: Encoder | None = None
        self._built: dict[str, Once[list[Demo]]] = {"claim": Once(), "article": Once()}
        self._seen: list[tuple[Claim | Article, Answer]] = []
        self._seen_lock = threading.Lock()

    def use_dataset(self, name: str) -> None:
        """Told by the benchmark harness which dataset it runs: its texts are the pool."""
        self.dataset = name

    def warnings(self) -> list[str]:
        """What makes this run differ from the paper's: a pool of the subjects seen so far."""
        if self.pool_name() is None:
            return [
                "auto-cot: no pool dataset, so demonstrations come from the subjects checked "
                "so far (streaming Auto-CoT*; the first check has none)"
            ]
        return []

    def pool_name(self) -> str | None:
        """The dataset clustered, or None when the pool is the subjects checked so far."""
        if self.config.pool == "seen":
            return None
        return self.config.pool or self.dataset

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Build (once) or pick the demonstrations, then answer after them."""
        log = CallLog()
        pool = self.pool_name()
        if pool is None:
            demos = await asyncio.to_thread(self._from_seen, subject)
        else:
            demos = await self._built[kind_of(subject)].get(lambda: self._build(pool, subject, log))
        own = _text(subject)
        demos = [d for d in demos if _text(d.subject) != own]
        log.milestone(
            "auto_cot.demos",
            f"{len(demos)} demonstration(s) from {pool or 'the subjects checked so far'}",
            demos=len(demos),
        )
        step = ANSWER.pick(subject)
        block = subject_block(subject, self.config.max_article_words)
        shots = [self._shot(d) for d in demos]
        # All demonstrations, unless the model's context cannot hold them (the last go).
        fitting = shots_that_fit(self.model, step, shots, subject=block)
        left_out, demos = len(demos) - fitting, demos[:fitting]
        judgement = await step.arun(self.model, log=log, shots=shots[:fitting], subject=block)
        if pool is None:
            self._remember(subject, judgement)
        return self.verdict(
            subject,
            judgement,
            log,
            pool=pool or "seen",
            demos_left_out=left_out,
            demos=[
                {
                    "cluster": d.cluster,
                    "size": d.size,
                    "text": clip(_text(d.subject), 200),
                    "label": d.answer.label,
                    "rationale": d.answer.explanation,
                }
                for d in demos
            ],
        )

    def _shot(self, demo: Demo) -> Shot:
        return (
            {"subject": subject_block(demo.subject, self.config.max_question_words)},
            demo.answer,
        )

    async def _build(self, pool: str, like: Claim | Article, log: CallLog) -> list[Demo]:
        """Demonstrations from a dataset's texts: cluster, then reason about representatives."""
        from verity.bench.datasets import load_dataset

        split = await asyncio.to_thread(load_dataset, pool)
        subjects = [_as_kind(ex.subject, like) for ex in split.examples]
        if len(subjects) > self.config.max_pool:
            keep = sorted(
                random.Random(self.config.seed).sample(range(len(subjects)), self.config.max_pool)
            )
            subjects = [subjects[i] for i in keep]
        if not subjects:
            return []
        vectors = await asyncio.to_thread(self._encode, subjects)
        orders = cluster_orders(
            vectors, self.config.clusters, self.config.seed, sampling=self.config.sampling
        )
        picked = await schedule.gather(
            *(self._pick(n, order, subjects, log) for n, order in enumerate(orders))
        )
        demos = [d for d in picked if d is not None]
        log.milestone(
            "auto_cot.build",
            f"{len(demos)} demonstration(s) from {len(orders)} cluster(s) of {len(subjects)} texts",
            clusters=len(orders),
            pool=len(subjects),
        )
        return demos

    async def _pick(
        self, cluster: int, order: list[int], subjects: list[Claim | Article], log: CallLog
    ) -> Demo | None:
        """The first candidate of a cluster whose reasoning passes the paper's checks."""
        tried = 0
        for index in order:
            candidate = subjects[index]
            if self._too_long(candidate):
                continue
            if tried == self.config.tries:
                break
            tried += 1
            try:
                answer = await DEMO.pick(candidate).arun(
                    self.model,
                    log=log,
                    subject=subject_block(candidate, self.config.max_question_words),
                )
            except ModelOutputError as exc:
                # A reasoning cut off at the token limit, or not in the answer's shape,
                # fails the checks as an overlong one does: try the cluster's next text.
                log.milestone("auto_cot.rejected", str(exc)[:200], cluster=cluster)
                continue
            if self._passes(answer):
                return Demo(candidate, answer, cluster, len(order))
        return None

    def _too_long(self, candidate: Claim | Article) -> bool:
        """run_demo.py skips a question over 60 words; an article is cut instead (see above)."""
        return isinstance(candidate, Claim) and (
            len(candidate.text.split()) > self.config.max_question_words
        )

    def _passes(self, answer: Answer) -> bool:
        """run_demo.py's checks on a reasoning: few enough steps, ending with a full stop."""
        reasoning = answer.explanation.strip()
        steps = len(split_sentences(reasoning))
        return 0 < steps <= self.config.max_rationale_steps and reasoning.endswith(".")

    def _from_seen(self, subject: Claim | Article) -> list[Demo]:
        """Streaming Auto-CoT*: demonstrations from the subjects checked so far, no new calls."""
        with self._seen_lock:
            seen = [(s, a) for s, a in self._seen if type(s) is type(subject)]
        own = _text(subject)
        seen = [(s, a) for s, a in seen if _text(s) != own]
        if not seen:
            return []
        vectors = self._encode([s for s, _ in seen])
        orders = cluster_orders(
            vectors, self.config.clusters, self.config.seed, sampling=self.config.sampling
        )
        demos = []
        for n, order in enumerate(orders):
            for index in order:
                candidate, answer = seen[index]
                if not self._too_long(candidate) and self._passes(answer):
                    demos.append(Demo(candidate, answer, n, len(order)))
                    break
        return demos

    def _remember(self, subject: Claim | Article, answer: Answer) -> None:
        with self._seen_lock:
            self._seen.append((subject, answer))
            del self._seen[: -self.config.max_pool]

    def _encode(self, subjects: Sequence[Claim | Article]) -> Vectors:
        encoder = self.encoder or default_encoder()
        return encoder.encode([_text(s)[:LONGEST_CHARS] for s in subjects], remember=True)


def _text(subject: Claim | Article) -> str:
    """The text a subject is clustered and compared by: an article's title and text."""
    if isinstance(subject, Article):
        return f"{subject.title.strip()}\n{subject.text.strip()}".strip()
    return subject.text.strip()


def _as_kind(subject: Claim | Article, like: Claim | Article) -> Claim | Article:
    """A pool's subject in the kind being checked, so its demonstration has the right labels."""
    if isinstance(like, Article) and isinstance(subject, Claim):
        return Article(text=subject.text, date=subject.date)
    if isinstance(like, Claim) and isinstance(subject, Article):
        return Claim(text=retrieval_query(subject), date=subject.date)
    return subject
