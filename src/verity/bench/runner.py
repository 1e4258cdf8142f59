"""One benchmark run: the same sample for every method, stored as it goes, then a report.

    config = BenchConfig(dataset="feverous-s", methods=("direct", "local"), setting="gold",
                         sample=100, seed=0, out=Path("results/feverous"))
    results = run_bench(config, build=build, sources=sources)  # a rerun resumes

Settings: ``gold`` gives each method the dataset's gold evidence and no source; ``open``
gives it the configured sources (plus the dataset's own corpus where it ships one);
``closed`` gives it neither. On the datasets made of fact-checks (`verity.bench.leakage`),
``open`` reports each retrieving method twice, ``paper-faithful`` and ``guarded``, unless
``leakage`` picks one. On ``advfact`` every source a method uses puts the example's
poisoned passages first (`verity.sources.poisoned`); a method that does not retrieve gets
them in the statement's text instead (`subject_for`). On the article datasets, ``open``
with no web source among the configured ones adds the ``bench-news`` stand-in for the
web (`verity.bench.news_standin`) unless ``web_standin=False``. The sample leaves out every
example any registered method shows as a demonstration, and every near copy of one
(`verity.bench.holdout`), whichever methods run: every run on a dataset, and every method
of a run, scores the same pool.

A method may say what is wrong with its setup through ``warnings() -> list[str]``: the run
collects them (``run.warnings``), announces them when it starts, and stores them in the
manifest and the report.

``budget`` bounds each example's check and ``run_budget`` the whole run (`verity.llm.budget`).
An example over its own budget is stored as a failed example with what it spent (rerun
with ``retry_errors`` to try it again). Once the run's budget is spent, the run stops:
the examples it stopped are not stored, so a rerun (with a larger budget) checks them, and
`BenchRun.run` raises the `BudgetExceededError` after writing the report of what is done.

``grounding`` (``off``, ``on``, ``strict``) checks each verdict's explanation against what
it cites (`verity.grounding`), one more call per example, counted apart from the method's
(``extra["grounding"]`` of each stored row, `GroundingScore` in the report). Off unless
asked: a benchmark measures the methods, and pays for the check only when it is wanted.

``engine`` (``thread`` or ``ray``, `verity.engines`) says where the examples are checked;
the driver stores each result as it arrives, whatever the engine, so the store, the
resumption and the report are the same. On Ray each worker builds the method again from
the run's ``build`` and ``sources`` (they must then be picklable, `ExampleChecks`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

from verity.bench.base import DatasetSplit, Example
from verity.bench.datasets import data_dir, load_dataset
from verity.bench.estimate import UsageRecord, record_run
from verity.bench.heatmap import summarize_actions
from verity.bench.holdout import NearCopy, holdout_of
from verity.bench.holdout import excluded_ids as excluded_ids  # for callers of the runner
from verity.bench.leakage import (
    SETTINGS,
    LeakageSetting,
    guard_sources,
    leaks,
    search_context,
)
from verity.bench.memory import PeakMemory
from verity.bench.metrics import Outcome, compute_metrics, usage_per_claim
from verity.bench.news_standin import NEWS_DATASETS, WebStandin, has_web_source, news_standin
from verity.bench.report import write_report
from verity.bench.report_compare import check_paper_figures
from verity.bench.results import GroundingScore, GroupScore, MethodResult
from verity.bench.store import ResultRow, ResultStore
from verity.domain import Article, Claim, Evidence, Grounding, Label, Usage, Verdict
from verity.engines import Engine, engine_for
from verity.errors import BadInputError, BudgetExceededError, ConfigError
from verity.grounding import MODES, Mode
from verity.llm.budget import Budget, Spend, spending
from verity.llm.spec import ModelSet, ModelSettings
from verity.methods.base import Method, method_class
from verity.sources.base import Source
from verity.sources.context import searching_for
from verity.sources.kg import GraphSource
from verity.sources.poisoned import PoisonedSource, is_poisoned
from verity.sources.registry import SUBSTITUTIONS

Setting = Literal["gold", "open", "closed"]
ADVFACT = "advfact"
Leakage = Literal["both", "paper-faithful", "guarded"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BenchConfig:
    """Everything that defines a run; the same config is the same run (and resumes)."""

    dataset: str
    methods: tuple[str, ...]
    out: Path
    setting: Setting = "open"
    sample: int | None = 100
    seed: int = 0
    hops: int | None = None
    model: ModelSettings = field(default_factory=ModelSettings)
    roles: Mapping[str, ModelSettings] = field(default_factory=dict)
    sources: tuple[str, ...] = ("offline-wiki",)
    method_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    concurrency: int = 1
    data_dir: Path | None = None
    retry_errors: bool = False
    # Article datasets, open setting, no web source configured: add the bench-news corpus.
    web_standin: bool = True
    # Exactly these examples, in this order, instead of a seeded sample: to rerun the
    # sample of an earlier run after the demonstrations (hence the pool) changed.
    ids: tuple[str, ...] | None = None
    # On datasets made of fact-checks, open setting: which leakage settings to report.
    leakage: Leakage = "both"
    # Check-COVID: the arXiv stand-in never returns a claim's own gold abstracts.
    gold_guard: bool = True
    # Where examples are checked (thread | ray) and the Ray cluster's address; neither
    # changes a result, so neither is in the run id: a run resumes on either engine.
    engine: str = "thread"
    address: str | None = None
    # What each example, and the whole run, may spend. Not in the run id either: a rerun
    # with a larger budget goes on with the same run (and --retry-errors redoes the
    # examples that ran out of their own).
    budget: Budget = field(default_factory=Budget)
    run_budget: Budget = field(default_factory=Budget)
    # Each verdict's explanation checked against what it cites (`verity.grounding`): one
    # more call per example, so off unless asked. Not in the run id: it never changes a
    # verdict. The manifest says what was asked, each stored row whether it ran.
    grounding: Mode = "off"

    def __post_init__(self) -> None:
        if self.grounding not in MODES:
            raise BadInputError(
                f"grounding must be one of {', '.join(MODES)}, not {self.grounding!r}"
            )


Progress = Callable[[str, int, int, float | None], None]
Warn = Callable[[str], None]
# Published figures by reported method name, then metric name, on the 0-1 scale.
PaperFigures = Mapping[str, Mapping[str, float]]


def select_sample(
    split: DatasetSplit, n: int | None, seed: int, exclude: set[tuple[str, str]]
) -> list[Example]:
    """A seeded sample without the excluded examples, in a stable order."""
    pool = [ex for ex in split.examples if (split.name, ex.id) not in exclude]
    if n is None or n >= len(pool):
        return pool
    return random.Random(seed).sample(pool, n)


def pick_sample(
    split: DatasetSplit,
    ids: Sequence[str],
    exclude: set[tuple[str, str]],
    near: Mapping[str, NearCopy] | None = None,
) -> list[Example]:
    """The examples named by ``ids``; an unknown id, a demonstration or a near copy is an error.

    The error names the example, so that a rerun of an older run's ids (``BenchConfig.ids``)
    can leave it out.
    """
    by_id = {ex.id: ex for ex in split.examples}
    for example_id in ids:
        if example_id not in by_id:
            raise BadInputError(f"{split.name} has no example {example_id!r}")
        if near and example_id in near:
            raise BadInputError(
                f"{split.name} example {example_id!r} is a near copy of a demonstration "
                f"(word overlap {near[example_id].overlap:.2f}); it cannot be scored"
            )
        if (split.name, example_id) in exclude:
            raise BadInputError(
                f"{split.name} example {example_id!r} is a demonstration; it cannot be scored"
            )
    return [by_id[example_id] for example_id in ids]


def code_version() -> str:
    """The package version, with the git commit when run from a checkout."""
    try:
        base = version("verity")
    except PackageNotFoundError:  # pragma: no cover - always installed in practice
        base = "0"
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
            cwd=Path(__file__).parent, timeout=5, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return base
    return f"{base}+{sha}" if sha else base


# Model settings added after runs were stored, which cannot change an answer: left out
# of the run id so that those runs still resume.
_NOT_IN_RUN_ID = {"retry_backoff", "max_response_bytes"}


def run_id_of(
    config: BenchConfig,
    sample_ids: Sequence[str],
    checksum: str,
    web_standin: str | None = None,
) -> str:
    """A stable id for everything that decides the results of a run.

    ``web_standin`` is the version of the stand-in corpus when the run uses one. Without
    one the key is left out, so runs stored before the stand-in existed still resume.
    """
    key = {
        "dataset": config.dataset,
        "hops": config.hops,
        "setting": config.setting,
        "seed": config.seed,
        "sample": list(sample_ids),
        "checksum": checksum,
        "model": config.model.model_dump(exclude=_NOT_IN_RUN_ID),
        "roles": {k: v.model_dump(exclude=_NOT_IN_RUN_ID) for k, v in sorted(config.roles.items())},
        "sources": list(config.sources),
        "method_settings": {k: dict(v) for k, v in sorted(config.method_settings.items())},
    }
    if web_standin is not None:
        key["web_standin"] = web_standin
    # Only where the settings apply, so that other runs stored before them still resume.
    if config.setting == "open" and leaks(config.dataset):
        key["leakage"] = {"report": config.leakage, "gold_guard": config.gold_guard}
    blob = json.dumps(key, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _row(
    example: Example, split: DatasetSplit, verdict: Verdict, wall: float, *, poison_in_text: bool
) -> ResultRow:
    pred = split.map_prediction(verdict.label)
    trace = verdict.trace.model_dump(mode="json")
    extra: dict[str, Any] = {
        k: trace[k] for k in ("iterations_used", "action_counts", "masked_actions") if k in trace
    }
    # ToE's search actions are drawn per claim category (its Fig. 5): the dataset's
    # category groups them, the one the method saw for itself is kept beside it.
    if trace.get("category") is not None:
        extra["method_category"] = trace["category"]
    if example.meta.get("category") is not None:
        extra["dataset_category"] = example.meta["category"]
    if example.meta.get("poison"):
        # Whether the verdict rests on an injected passage, as far as its citations tell;
        # a method that got them in its input text cites nothing and is counted apart.
        extra["poison_in_text"] = poison_in_text
        extra["cites_poison"] = any(is_poisoned(ev) for ev in verdict.evidence)
    debate = trace.get("debate")
    if isinstance(debate, dict) and "ended_early" in debate:
        extra["debate_rounds"] = debate["rounds"]
        extra["debate_ended_early"] = debate["ended_early"]
    if verdict.grounding is not None:
        extra["grounding"] = grounding_summary(verdict.grounding)
    # Wall time beside the time inside model calls (usage.seconds): the difference is the
    # framework's own cost (retrieval, parsing, bookkeeping).
    extra["wall_seconds"] = wall
    return ResultRow(
        example_id=example.id, gold=example.label.value, pred=pred.value,
        confidence=verdict.confidence, error=None, error_type=None,
        usage=verdict.usage.model_dump(), extra=extra, verdict=verdict.to_json_dict(),
    )  # fmt: skip


def grounding_summary(grounding: Grounding) -> dict[str, Any]:
    """What a report reads of a verdict's grounding (the verdict's JSON keeps all of it)."""
    return {
        "mode": grounding.mode,
        "grounded_share": grounding.grounded_share,
        "consistent_with_label": grounding.consistent_with_label,
        "flags": list(grounding.flags),
        "error": grounding.error,
        "usage": grounding.usage.model_dump(),
    }


def checker_usage(row: ResultRow) -> Usage:
    """What the grounding checker spent on a stored row (nothing when it did not run)."""
    found = row.extra.get("grounding")
    return Usage(**found["usage"]) if isinstance(found, dict) and found.get("usage") else Usage()


def _overhead(rows: Sequence[ResultRow]) -> tuple[float, float] | None:
    """The share of the wall time outside model calls, and the seconds per example.

    A verdict that reports its time outside model calls (`Usage.non_model_seconds`,
    measured while none of its calls was in flight) is read as it is; an older stored
    one counts its wall time minus its time inside calls, which holds for checks that
    made their calls one at a time.
    """
    walls: list[tuple[float, float]] = []
    for r in rows:
        if not r.usage or "wall_seconds" not in r.extra:
            continue
        wall = float(r.extra["wall_seconds"])
        if r.usage.get("wall_seconds"):
            own = float(r.usage["non_model_seconds"])
        else:
            own = wall - float(r.usage["seconds"])
        walls.append((wall, own))
    total = sum(w for w, _ in walls)
    if total <= 0:
        return None
    return sum(o for _, o in walls) / total, total / len(walls)


# The error type of an example the run's budget stopped: never stored, checked on rerun.
RUN_BUDGET_SPENT = "RunBudgetSpent"


def _failed(example: Example, exc: Exception) -> ResultRow:
    run_spent = isinstance(exc, BudgetExceededError) and exc.scope == "run"
    spent = getattr(exc, "usage", None)  # what the example cost before it failed
    return ResultRow(
        example_id=example.id, gold=example.label.value, pred=None, confidence=None,
        error=str(exc) or type(exc).__name__,
        error_type=RUN_BUDGET_SPENT if run_spent else type(exc).__name__,
        usage=spent.model_dump() if isinstance(spent, Usage) else {}, extra={}, verdict=None,
    )  # fmt: skip


def check_example(
    method: Method,
    example: Example,
    split: DatasetSplit,
    setting: str,
    budget: Budget | None = None,
) -> ResultRow:
    """One method's result on one example, within its budget; a failure is its error row."""
    evidence = example.gold if setting == "gold" else None
    subject, in_text = subject_for(method, example, split)
    started = time.perf_counter()
    try:
        # The example under test, for the sources that guard or poison per example.
        with searching_for(search_context(split.name, example)), spending(budget):
            verdict = method.verify(subject, evidence=evidence)
        wall = time.perf_counter() - started
        return _row(example, split, verdict, wall, poison_in_text=in_text)
    except Exception as exc:  # noqa: BLE001 - one failed example is a counted error
        return _failed(example, exc)


Build = Callable[[str, Sequence[Source]], Method]
SourcesOf = Callable[[DatasetSplit], list[Source]]


@dataclass(frozen=True)
class ExampleChecks:
    """One method's work on a run's examples, for an engine (`verity.engines`).

    ``method`` gives the method for the split: the run's own, or a `Rebuild` that builds
    it again in a Ray worker (where this object arrives pickled, with the split's
    description but not its examples, which come one per call).
    """

    method: Callable[[DatasetSplit], Method]
    split: DatasetSplit
    setting: str
    budget: Budget | None = None

    def build(self) -> Callable[[Example], ResultRow]:
        """The function that checks one example."""
        return partial(
            check_example,
            self.method(self.split),
            split=self.split,
            setting=self.setting,
            budget=self.budget,
        )

    def failed(self, example: Example, error: Exception) -> ResultRow:
        """The error row of an example that could not be checked at all."""
        return _failed(example, error)


@dataclass(frozen=True)
class Rebuild:
    """Builds a run's method ``name`` again, as `prepare` did, in another process.

    ``origin`` is the configured method behind a reported name (``rag`` for
    ``rag [guarded]``): only that one is built. Its models take ``concurrency``
    examples at once, as the driver's did.
    """

    config: BenchConfig
    name: str
    origin: str
    build: Build
    sources: SourcesOf

    def __call__(self, split: DatasetSplit) -> Method:
        """The method, built from the run's config and the split."""
        config = replace(self.config, methods=(self.origin,))
        method = build_methods(config, split, build=self.build, sources=self.sources).methods[
            self.name
        ]
        models = getattr(method, "models", None)
        if isinstance(models, ModelSet):
            models.follow(self.config.concurrency)
        return method


def _same(method: Method, _split: DatasetSplit) -> Method:
    return method


def group_scores(rows: Sequence[ResultRow], sample: Sequence[Example]) -> dict[str, GroupScore]:
    """Accuracy per subset (an example's ``meta["group"]``), all examples first.

    Where a subset's examples were poisoned, the share of verdicts citing a poisoned
    passage among those whose method met the passages through its sources.
    """
    group_of = {ex.id: str(ex.meta["group"]) for ex in sample if ex.meta.get("group")}
    if not group_of:
        return {}
    members: dict[str, list[ResultRow]] = {"all": list(rows)}
    for row in rows:
        if row.example_id in group_of:
            members.setdefault(group_of[row.example_id], []).append(row)
    scores: dict[str, GroupScore] = {}
    for group, chosen in members.items():
        met = [r for r in chosen if "cites_poison" in r.extra and not r.extra["poison_in_text"]]
        scores[group] = GroupScore(
            n=len(chosen),
            accuracy=sum(r.pred == r.gold for r in chosen) / len(chosen) if chosen else 0.0,
            cites_poison=(
                sum(bool(r.extra["cites_poison"]) for r in met) / len(met) if met else None
            ),
            poison_in_text=sum(bool(r.extra.get("poison_in_text")) for r in chosen),
        )
    return scores


def outcome_of(row: ResultRow) -> Outcome:
    """A stored row as the report's per-example outcome (the prediction already mapped)."""
    return Outcome(
        example_id=row.example_id,
        gold=Label(row.gold),
        pred=Label(row.pred) if row.pred is not None else None,
        confidence=row.confidence,
    )


def method_warnings(methods: Mapping[str, Method], grounding: Mode = "off") -> dict[str, list[str]]:
    """What each method says is wrong with its setup, for the methods that say anything.

    ``warnings() -> list[str]`` is optional: a method without it has nothing to say. With
    ``grounding`` asked, a method without the grounding step (one not built on
    `verity.methods.base.MethodBase`) is named: its verdicts go unchecked.
    """
    found: dict[str, list[str]] = {}
    for name, method in methods.items():
        own = getattr(method, "warnings", None)
        said = (own() or ()) if callable(own) else ()
        lines = [text for text in (str(line).strip() for line in said) if text]
        if grounding != "off" and not hasattr(method, "grounding"):
            lines.append("no grounding step: its explanations are not checked")
        if lines:
            found[name] = lines
    return found


class BenchRun:
    """A prepared run: dataset loaded, sample drawn, methods built, store open.

    ``warnings`` maps a method's name to what it said was wrong with its setup (an
    empty web quadrant, say); ``warning_lines()`` gives them as lines ready to print.
    """

    def __init__(
        self,
        config: BenchConfig,
        split: DatasetSplit,
        methods: Mapping[str, Method],
        sample: Sequence[Example],
        manifest: dict[str, Any],
        *,
        ingredients: tuple[Build, SourcesOf] | None = None,
        origins: Mapping[str, str] | None = None,
    ) -> None:
        self.config, self.split, self.methods = config, split, methods
        # How `prepare` built the methods, for an engine that builds them again elsewhere;
        # ``origins`` maps a reported name ("rag [guarded]") to the method it runs.
        self.ingredients = ingredients
        self.origins = dict(origins or {})
        self.sample = list(sample)
        self.manifest = manifest
        self.warnings: dict[str, list[str]] = {
            name: list(lines) for name, lines in manifest.get("warnings", {}).items()
        }
        self.run_id = str(manifest["run_id"])
        self.store = ResultStore(config.out / "results.sqlite")
        # The most memory the process held while each method ran (this run's examples).
        self.peak_mb: dict[str, float] = {}
        # The report's results once the run ends, also when its budget stopped it.
        self.results: dict[str, MethodResult] = {}
        # What the examples the run's budget stopped had spent: not stored (they run
        # again), but paid for.
        self.unstored = Usage()
        self.store.save_run(self.run_id, manifest)
        (config.out / "manifest.json").write_text(
            json.dumps(manifest, indent=2, default=str), encoding="utf-8"
        )

    def follow_concurrency(self) -> list[str]:
        """Let the methods' models take ``concurrency`` examples at once; what caps it."""
        lines: list[str] = []
        for method in self.methods.values():
            models = getattr(method, "models", None)
            if isinstance(models, ModelSet):
                lines += [f"warning: {line}" for line in models.follow(self.config.concurrency)]
        return list(dict.fromkeys(lines))

    def warning_lines(self) -> list[str]:
        """Every method's warnings, one line each: ``warning: METHOD: sentence``."""
        return [
            f"warning: {name}: {line}" for name, lines in self.warnings.items() for line in lines
        ]

    def run(
        self,
        progress: Progress | None = None,
        *,
        warn: Warn | None = None,
        engine: Engine | None = None,
        paper_figures: PaperFigures | None = None,
        tally: Spend | None = None,
    ) -> dict[str, MethodResult]:
        """Run every method on every example not yet stored, then write the report.

        ``tally`` counts what this run spends toward a larger run's budget (a
        reproduction's many runs); without one the config's ``run_budget`` is the limit.

        The methods' warnings come first, each line given to ``warn``; without one they
        go to this module's logger at WARNING level, which reaches stderr even when the
        program configured no logging. ``engine`` is an engine already entered (one Ray
        cluster for several runs); without one, the config's engine is opened here.
        ``paper_figures`` goes to the report (`report`); it is checked before anything
        runs, so that a bad figure does not wait for the end of a long run to fail.
        """
        check_paper_figures(paper_figures)
        for line in [*self.warning_lines(), *self.follow_concurrency()]:
            if warn is not None:
                warn(line)
            else:
                log.warning("%s", line)
        if engine is not None:
            return self._run_all(progress, engine, paper_figures, tally)
        with engine_for(self.config.engine, address=self.config.address) as opened:
            return self._run_all(progress, opened, paper_figures, tally)

    def _run_all(
        self,
        progress: Progress | None,
        engine: Engine,
        paper_figures: PaperFigures | None,
        tally: Spend | None,
    ) -> dict[str, MethodResult]:
        budget = self.config.run_budget
        # Counted as results arrive (any engine); in this process each call is also
        # admitted by the run's spend, which stops the examples in flight on time.
        # A tally given is a larger run's (a reproduction, bench's repeats): whoever gave it
        # counts the calls in this process too.
        limited = tally is None and engine.local and not budget.unlimited
        tally = tally or Spend(budget, scope="run")
        within = spending(budget, scope="run") if limited else nullcontext()
        stopped: BudgetExceededError | None = None
        with within:
            for name, method in self.methods.items():
                if self.config.retry_errors:
                    self.store.forget_errors(self.run_id, name)
                try:
                    self._run_method(name, method, progress, engine, tally)
                except BudgetExceededError as exc:
                    if exc.scope != "run":
                        raise
                    stopped = exc
                    break
        self.results = self.report(paper_figures)
        if stopped is not None:
            raise stopped  # after the report: what was done is written, and in `results`
        return self.results

    def _run_method(
        self, name: str, method: Method, progress: Progress | None, engine: Engine, tally: Spend
    ) -> None:
        done = self.store.done(self.run_id, name)
        todo = [ex for ex in self.sample if ex.id not in done]
        total = len(self.sample)
        counts = {"finished": len(done), "right": self._right(name)}
        tally.refuse_if_spent()  # a run already spent starts no method

        def stored(_example: Example, row: ResultRow) -> None:
            # Called by the engine in this process, one result at a time.
            if row.error_type == RUN_BUDGET_SPENT:
                if row.usage:
                    self.unstored = self.unstored + Usage(**row.usage)
                raise BudgetExceededError(row.error or "the run's budget is spent", scope="run")
            self.store.put(self.run_id, name, row)
            counts["finished"] += 1
            counts["right"] += int(row.pred == row.gold)
            if progress:
                progress(name, counts["finished"], total, counts["right"] / counts["finished"])
            if row.usage:
                tally.finished(Usage(**row.usage))
            # The grounding checker spends from the run's budget too.
            tally.finished(checker_usage(row))
            if counts["finished"] < total:
                tally.refuse_if_spent()

        if progress:
            progress(name, counts["finished"], total, None)
        # Workers elsewhere get the split without its examples: each comes with its call.
        split = self.split if engine.local else replace(self.split, examples=())
        work = ExampleChecks(
            self._method_for(name, method, engine), split, self.config.setting, self.config.budget
        )
        with PeakMemory() as peak:
            engine.run(work, todo, stored, concurrency=self.config.concurrency)
        if todo and engine.local:  # elsewhere, this process's memory says nothing
            self.peak_mb[name] = peak.mb

    def _method_for(
        self, name: str, method: Method, engine: Engine
    ) -> Callable[[DatasetSplit], Method]:
        """The run's own method in this process; for workers elsewhere, how to rebuild it."""
        if engine.local:
            return partial(_same, method)
        if self.ingredients is None:
            raise ConfigError(
                f"method {name!r} cannot be rebuilt in a worker: the run was prepared "
                "without its build and sources"
            )
        build, sources = self.ingredients
        return Rebuild(self.config, name, self.origins.get(name, name), build, sources)

    def spent(self) -> Usage:
        """What this run's examples cost, failed ones and those its budget stopped included.

        The examples the budget stopped are not stored (they run again), but were paid for.
        """
        total = self.unstored
        for name in self.methods:
            for row in self.store.rows(self.run_id, name):
                if row.usage:
                    total = total + Usage(**row.usage)
                total = total + checker_usage(row)
        return total

    def _right(self, name: str) -> int:
        return sum(r.pred == r.gold for r in self.store.rows(self.run_id, name))

    def report(self, paper_figures: PaperFigures | None = None) -> dict[str, MethodResult]:
        """Metrics of everything stored for this run, written to the output folder.

        ``paper_figures[method][metric]`` is the figure a method's paper reports for this
        protocol (``accuracy``, ``macro_f1`` or ``balanced_accuracy``, on the 0-1 scale);
        the report shows it beside the measured one (`verity.bench.report.write_report`).
        It is keyed by the name the report gives the method or by the configured method:
        where a method is reported twice on fact-check datasets, a figure keyed by the
        configured name goes to its ``[paper-faithful]`` row only, the one run as the
        paper ran it. Each result keeps its
        per-example outcomes, from which the report compares the methods pairwise and
        gives their calibration, seeded with the run's seed.
        """
        results: dict[str, MethodResult] = {}
        spent: list[UsageRecord] = []
        # Rows in the sample's order, not the order they finished in: the bootstrap
        # resamples by position, so the intervals must not depend on the engine's timing.
        position = {ex.id: i for i, ex in enumerate(self.sample)}
        for name in self.methods:
            rows = sorted(
                (r for r in self.store.rows(self.run_id, name) if r.example_id in position),
                key=lambda r: position[r.example_id],
            )
            if not rows:
                continue
            metrics = compute_metrics(
                [Label(r.gold) for r in rows],
                [Label(r.pred) if r.pred is not None else None for r in rows],
                self.split.labels,
                seed=self.config.seed,
            )
            usages = [Usage(**r.usage) for r in rows if r.usage]
            origin = self.origins.get(name, name)
            config = self.config
            record = UsageRecord.of(
                origin, config.dataset, config.setting, config.model.spec, usages
            )
            spent.append(record)
            extra: dict[str, float] = {}
            iterations = [r.extra["iterations_used"] for r in rows if "iterations_used" in r.extra]
            if iterations:
                extra["iterations_per_claim"] = sum(iterations) / len(iterations)
            overhead = _overhead(rows)
            if overhead is not None:
                extra["overhead_share"], extra["seconds_per_example"] = overhead
            if name in self.peak_mb:
                extra["peak_rss_mb"] = self.peak_mb[name]
            early = [r.extra["debate_ended_early"] for r in rows if "debate_ended_early" in r.extra]
            if early:
                extra["debate_early_share"] = sum(early) / len(early)
            results[name] = MethodResult(
                name=name,
                metrics=metrics,
                usage_per_claim=usage_per_claim(usages),
                extra=extra,
                groups=group_scores(rows, self.sample),
                actions=summarize_actions(rows),
                examples=tuple(outcome_of(r) for r in rows),
                grounding=GroundingScore.of(
                    [r.extra["grounding"] for r in rows if "grounding" in r.extra]
                ),
            )
        record_run(f"{self.config.out}|{self.run_id}", spent)  # for later estimates
        if results:
            write_report(
                self.config.out,
                dataset=self.split.name
                + (f" ({self.config.hops}-hop)" if self.config.hops else ""),
                setting=self.config.setting,
                results=results,
                manifest=self.manifest,
                paper_figures=self._figures_by_reported_name(paper_figures),
                warnings={n: w for n, w in self.warnings.items() if n in results},
                seed=self.config.seed,
            )
        return results

    def _figures_by_reported_name(
        self, paper_figures: PaperFigures | None
    ) -> dict[str, Mapping[str, float]]:
        """Published figures under the names the report gives the methods."""
        given = paper_figures or {}
        found: dict[str, Mapping[str, float]] = {}
        for name in self.methods:
            origin = self.origins.get(name, name)
            if name in given:
                found[name] = given[name]
            elif origin in given and name in (origin, f"{origin} [paper-faithful]"):
                found[name] = given[origin]
        return found

    def close(self) -> None:
        """Close the store."""
        self.store.close()


@dataclass(frozen=True)
class BuiltMethods:
    """A run's methods by reported name, and what they were given."""

    methods: dict[str, Method]
    origins: dict[str, str]  # reported name -> configured method
    given: list[Source]
    standin: WebStandin | None
    reported: tuple[LeakageSetting, ...]


def build_methods(
    config: BenchConfig, split: DatasetSplit, *, build: Build, sources: SourcesOf
) -> BuiltMethods:
    """Every method of a run with its sources, named as the report names them.

    `prepare` calls it, and a worker of another engine calls it again (`Rebuild`), so
    that both run the same methods.
    """
    given = sources(split) if config.setting == "open" else []
    standin: WebStandin | None = None
    if wants_web_standin(config, split.name, given):
        standin = news_standin(split.name, data_dir(config.data_dir))
        given = [*given, standin.source]

    own_corpus = f"corpus:bench-{split.name}" if split.corpus is not None else None

    # A method that reads the gold passages beside sources of its own (WKGFC's graph)
    # keeps those sources in the gold setting; it names that in its warnings.
    def sources_of(name: str, leakage: LeakageSetting | None) -> list[Source]:
        if config.setting == "gold" and getattr(method_class(name), "sources_in_gold", False):
            chosen = sources(split)
        else:
            chosen = list(given)
        if leakage is not None:
            chosen = guard_sources(
                chosen, split.name, setting=leakage, gold_guard=config.gold_guard,
                own_corpus=own_corpus,
            )  # fmt: skip
        if split.name == ADVFACT:
            # The attack poisons text retrieval; a graph of facts is left as it is.
            chosen = [s if isinstance(s, GraphSource) else PoisonedSource(s) for s in chosen]
        return chosen

    methods: dict[str, Method] = {}
    origins: dict[str, str] = {}
    reported = leakage_settings(config, split.name)
    for name in config.methods:
        first = build(name, sources_of(name, reported[0] if reported else None))
        if not reported or not retrieves(first):
            methods[name] = first
            origins[name] = name
            continue
        # Each row named by its setting, so that no figure is read as the other's.
        methods[f"{name} [{reported[0]}]"] = first
        for leakage in reported[1:]:
            methods[f"{name} [{leakage}]"] = build(name, sources_of(name, leakage))
        origins |= {f"{name} [{leakage}]": name for leakage in reported}
    for method in methods.values():
        # A method with per-dataset material (LoCal's demonstrations) is told the dataset.
        use = getattr(method, "use_dataset", None)
        if callable(use):
            use(split.name)
        setting = getattr(method, "use_setting", None)
        if callable(setting):
            setting(config.setting)
        if hasattr(method, "grounding"):
            # Here, so that a worker that builds the method again grounds it as well.
            method.grounding = config.grounding
    return BuiltMethods(methods, origins, given, standin, reported)


def prepare(
    config: BenchConfig,
    *,
    load: Callable[..., DatasetSplit],
    build: Build,
    sources: SourcesOf,
) -> BenchRun:
    """Load, sample and build everything a run needs; nothing runs yet."""
    split = load(config.dataset, data_dir=config.data_dir, hops=config.hops)
    if config.setting == "gold" and not split.has_gold:
        raise BadInputError(
            f"dataset {config.dataset!r} carries no gold evidence; use --setting open or closed"
        )
    built = build_methods(config, split, build=build, sources=sources)
    methods, given, standin, reported = built.methods, built.given, built.standin, built.reported
    for name, method in methods.items():
        kinds = {type(ex.subject) for ex in split.examples[:1]}
        if not kinds <= set(method.accepts) and not claims_as_articles(method, split):
            kind = next(iter(kinds)).__name__.lower()
            raise BadInputError(f"method {name!r} does not check {kind}s ({config.dataset})")
    held = holdout_of(split, methods)
    excluded = held.ids()
    sample = (
        pick_sample(split, config.ids, excluded, held.near)
        if config.ids is not None
        else select_sample(split, config.sample, config.seed, excluded)
    )
    run_id = run_id_of(
        config,
        [ex.id for ex in sample],
        split.checksum,
        web_standin=standin.version if standin is not None else None,
    )
    manifest = {
        "run_id": run_id,
        "code_version": code_version(),
        "seed": config.seed,
        "setting": config.setting,
        "dataset": {
            "name": split.name,
            "hops": config.hops,
            "files": [str(p) for p in split.files],
            "checksum": split.checksum,
            "size": len(split.examples),
            "labels": [label.value for label in split.labels],
            "label_map": split.label_map,
            "prediction_map": {k.value: v.value for k, v in split.prediction_map.items()},
            # The class a lab scores alone (CheckThat's check-worthy sentences), if any.
            "positive": split.positive.value if split.positive is not None else None,
        },
        "sample": {"n": len(sample), "requested": config.sample, "ids": [ex.id for ex in sample]},
        "excluded_demonstrations": sorted(f"{split.name}:{i}" for i in held.demonstrations),
        "excluded_near_copies": [held.near[i].to_dict() for i in sorted(held.near)],
        "methods": {name: method.to_dict() for name, method in methods.items()},
        "sources": [s.to_dict() for s in given],
        "web_standin": standin.manifest if standin is not None else None,
        "substitutions": {s.name: SUBSTITUTIONS[s.name] for s in given if s.name in SUBSTITUTIONS},
        "leakage": (
            {"reported": list(reported), "gold_guard": config.gold_guard} if reported else None
        ),
        "poisoned": split.name == ADVFACT,
        "grounding": config.grounding,
        "warnings": method_warnings(methods, config.grounding),
    }
    return BenchRun(
        config, split, methods, sample, manifest,
        ingredients=(build, sources), origins=built.origins,
    )  # fmt: skip


def run_bench(
    config: BenchConfig,
    *,
    build: Build,
    sources: SourcesOf,
    load: Callable[..., DatasetSplit] = load_dataset,
    paper_figures: PaperFigures | None = None,
    progress: Progress | None = None,
    warn: Warn | None = None,
    engine: Engine | None = None,
) -> dict[str, MethodResult]:
    """Prepare a run, run it (resuming what is stored), write its report and close it.

    The same as `prepare` then `BenchRun.run`; ``paper_figures`` puts the published
    figures beside the measured ones (`BenchRun.report`).

        results = run_bench(config, build=build, sources=lambda split: [],
                            paper_figures={"zofia": {"accuracy": 0.80}})
    """
    check_paper_figures(paper_figures)
    run = prepare(config, load=load, build=build, sources=sources)
    try:
        return run.run(progress, warn=warn, engine=engine, paper_figures=paper_figures)
    finally:
        run.close()


def leakage_settings(config: BenchConfig, dataset: str) -> tuple[LeakageSetting, ...]:
    """The leakage settings a run reports, in order; none outside open runs on fact-checks."""
    if config.setting != "open" or not leaks(dataset):
        return ()
    return SETTINGS if config.leakage == "both" else (config.leakage,)


def retrieves(method: Method) -> bool:
    """Whether a method searches sources of its own (its configuration lists some)."""
    return bool(method.to_dict().get("sources"))


def claims_as_articles(method: Method, split: DatasetSplit) -> bool:
    """Whether a method that reads articles only is given this dataset's claims as articles.

    Only where the dataset counts an article's REAL and FAKE as its own labels.
    """
    return (
        Claim not in method.accepts
        and Article in method.accepts
        and Label.FAKE in split.prediction_map
    )


def subject_for(
    method: Method, example: Example, split: DatasetSplit
) -> tuple[Claim | Article, bool]:
    """What ``method`` is given to check for ``example``, and whether poison is in its text.

    A PoisonedRAG sample's passages reach a retrieving method through its sources; a
    method that does not retrieve would never meet them, while ToE prompts every method to
    judge "solely on the provided input", so for it they come with the statement, in its
    text. A claim given to an article-only method is an article whose text is the claim.
    """
    subject = example.subject
    poison = tuple(example.meta.get("poison") or ())
    in_text = False
    if poison and isinstance(subject, Claim) and not retrieves(method):
        subject = subject.model_copy(update={"text": with_passages(subject.text, poison)})
        in_text = True
    if isinstance(subject, Claim) and claims_as_articles(method, split):
        subject = Article(text=subject.text, date=subject.date)
    return subject, in_text


def with_passages(statement: str, passages: Sequence[Evidence]) -> str:
    """The statement followed by the passages that came with it, numbered."""
    lines = [statement, "", "Passages that came with this statement:"]
    lines += [f"[{number}] {ev.text}" for number, ev in enumerate(passages, 1)]
    return "\n".join(lines)


def wants_web_standin(config: BenchConfig, dataset: str, given: Sequence[Source]) -> bool:
    """True when a run gets the bench-news corpus in place of the web.

    Only in the open setting, only on the article datasets (where the paper searches the
    web), only when no configured source is a web source (a source that is not
    Wikipedia-like: a search provider or a ``corpus:NAME``), and only when not turned off.
    """
    return (
        config.web_standin
        and config.setting == "open"
        and dataset in NEWS_DATASETS
        and not has_web_source(given)
    )
