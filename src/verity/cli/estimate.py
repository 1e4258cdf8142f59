"""``--estimate`` of ``verity bench`` and ``verity reproduce``: the bill before the run.

    verity bench --dataset liar --methods direct,toe --sample 50 --estimate
    verity reproduce toe-t2 --model openai:gpt-4o-mini --estimate

Nothing runs and no model is called: the datasets are read for their sizes, and each
method's expected calls, tokens and cost come from measured figures per example
(`verity.bench.estimate`) at the model's price (`verity.llm.prices`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from verity.cli import output
from verity.cli.output import say

if TYPE_CHECKING:
    from verity.bench.estimate import Estimate, UsageBook
    from verity.bench.recipes.configs import Options
    from verity.bench.recipes.plan import Plan
    from verity.bench.runner import BenchConfig
    from verity.llm.prices import Price
    from verity.llm.spec import ModelSettings


@dataclass
class Line:
    """One line of the table: a method's examples and its estimate (summed over runs)."""

    method: str
    examples: int
    calls: list[float]
    prompt: list[float]
    completion: list[float]
    cost: list[float] | None
    priced: bool
    sources: set[str]

    def add(self, found: Estimate) -> None:
        """Add one run's estimate of this method."""
        cost = list(found.cost) if found.cost is not None else None
        calls, prompt, completion = found.calls, found.prompt_tokens, found.completion_tokens
        self._sum(found.examples, calls, prompt, completion, cost, {found.source})

    def absorb(self, other: Line) -> None:
        """Add another line (a method's, into the total)."""
        cost = other.cost if other.priced else None
        self._sum(other.examples, other.calls, other.prompt, other.completion, cost, set())

    def _sum(
        self,
        examples: int,
        calls: Sequence[float],
        prompt: Sequence[float],
        completion: Sequence[float],
        cost: Sequence[float] | None,
        sources: set[str],
    ) -> None:
        self.examples += examples
        for mine, theirs in (
            (self.calls, calls),
            (self.prompt, prompt),
            (self.completion, completion),
        ):
            for i in range(3):
                mine[i] += theirs[i]
        if cost is None:
            self.priced = False
        elif self.cost is not None:
            for i in range(3):
                self.cost[i] += cost[i]
        self.sources |= sources


def _line(method: str) -> Line:
    return Line(method, 0, [0.0] * 3, [0.0] * 3, [0.0] * 3, [0.0] * 3, True, set())


def print_bench_estimate(cfg: BenchConfig, repeats: int) -> None:
    """The estimate of a `verity bench` run (every repeat), on stdout."""
    from verity.bench.estimate import UsageBook, estimate_cost
    from verity.bench.runner import leakage_settings

    book = UsageBook.load()
    size = _size(cfg.dataset, cfg.data_dir, cfg.hops)
    examples = size if cfg.sample is None else min(cfg.sample, size)
    price = cfg.model.known_price()
    twice = bool(leakage_settings(cfg, cfg.dataset)) and cfg.leakage == "both"
    lines: dict[str, Line] = {}
    for method in cfg.methods:
        found = book.figures(method, dataset=cfg.dataset, setting=cfg.setting, model=cfg.model.spec)
        runs = repeats * (2 if twice and _retrieves(method) else 1)
        line = lines.setdefault(method, _line(method))
        for _ in range(runs):
            line.add(estimate_cost(found, examples=examples, price=price))
    title = (
        f"estimate: {cfg.dataset}, setting {cfg.setting}, {examples} examples"
        + (f" x {repeats} repeats" if repeats > 1 else "")
        + f", model {cfg.model.spec}"
    )
    _table(title, list(lines.values()), [cfg.model], book)
    if cfg.grounding != "off":
        verdicts = sum(line.examples for line in lines.values())
        say(
            "default",
            f"grounding {cfg.grounding}: one more call per verdict, {verdicts:,} calls beside "
            "the table's (their tokens are not in the estimate)",
        )
    if twice:
        say("default", "retrieving methods are counted twice: paper-faithful and guarded")


def print_reproduce_estimate(plan: Plan, options: Options) -> None:
    """The estimate of a `verity reproduce` run (every planned run and seed), on stdout."""
    from verity.bench.estimate import UsageBook, estimate_cost

    book = UsageBook.load()
    lines: dict[str, Line] = {}
    models: dict[str, ModelSettings] = {options.model.spec: options.model}
    sizes: dict[tuple[str, int | None], int] = {}
    for planned in plan.runs:
        key = (planned.dataset, planned.hops)
        if key not in sizes:
            sizes[key] = _size(planned.dataset, options.data_dir, planned.hops)
        size = sizes[key]
        examples = size if planned.sample is None else min(planned.sample, size)
        model = options.model
        if planned.model is not None:
            own = options.prices.get(planned.model)
            model = options.model.model_copy(update={"spec": planned.model, "price": own})
            models[model.spec] = model
        for method in planned.methods:
            found = book.figures(
                method, dataset=planned.dataset, setting=planned.setting, model=model.spec
            )
            line = lines.setdefault(method, _line(method))
            for _ in plan.seeds:
                line.add(estimate_cost(found, examples=examples, price=model.known_price()))
    title = (
        f"estimate: {plan.recipe.id}, {len(plan.runs)} runs x {len(plan.seeds)} seeds, "
        f"model {options.model.spec}; {len(plan.skipped)} cells not runnable here"
    )
    _table(title, list(lines.values()), list(models.values()), book)


def _size(dataset: str, data_dir: Path | None, hops: int | None) -> int:
    """How many examples the dataset has (the run's sample is at most that)."""
    from verity.bench.datasets import load_dataset

    return len(load_dataset(dataset, data_dir=data_dir, hops=hops).examples)


def _retrieves(method: str) -> bool:
    """Whether a method searches sources of its own, as a run would find (built cheaply)."""
    from verity.bench.runner import retrieves
    from verity.errors import VerityError
    from verity.llm.client import ModelClient
    from verity.llm.spec import ModelSet
    from verity.methods.base import load_method
    from verity.testing import FakeChatModel, NoSource

    models = ModelSet(ModelClient(FakeChatModel([])))
    try:
        built = load_method(method, models=models, sources=[NoSource()])
    except (VerityError, ImportError):
        return True  # what cannot be built here is counted as retrieving: the high side
    return retrieves(built)


def _range(values: Sequence[float], fmt: str = ",.0f") -> str:
    mean, low, high = values
    if round(low) == round(high):
        return format(mean, fmt)
    return f"{format(mean, fmt)} ({format(low, fmt)}-{format(high, fmt)})"


def _dollars(line: Line) -> str:
    if not line.priced or line.cost is None:
        return "price unknown"
    from verity.llm.prices import dollars

    mean, low, high = (dollars(value) for value in line.cost)
    return mean if low == high else f"{mean} ({low}-{high})"


def _table(title: str, lines: list[Line], models: Sequence[ModelSettings], book: UsageBook) -> None:
    from rich.table import Table

    from verity.render import text

    table = Table(
        "method", "examples", "calls", "prompt tokens", "completion tokens", "cost", "from",
        title=text(title),
    )  # fmt: skip
    total = _line("total")
    for line in lines:
        measured = "no measurement yet" not in line.sources
        table.add_row(
            text(line.method),
            f"{line.examples:,}",
            _range(line.calls) if measured else "?",
            _range(line.prompt) if measured else "?",
            _range(line.completion) if measured else "?",
            _dollars(line) if measured else "?",
            text("; ".join(sorted(line.sources))),
        )
        if measured:
            total.absorb(line)
    table.add_row(
        "total",
        f"{total.examples:,}",
        _range(total.calls),
        _range(total.prompt),
        _range(total.completion),
        _dollars(total),
        "",
        style="bold",
    )
    output.out.print(table)
    for model in models:
        say("default", _price_line(model.spec, model.known_price()))
    unmeasured = [line.method for line in lines if "no measurement yet" in line.sources]
    if unmeasured:
        say(
            "yellow",
            f"no usage measured yet for {', '.join(unmeasured)}: the totals leave them out; "
            "a run of a few examples (--sample 2) measures them",
        )


def _price_line(spec: str, price: Price | None) -> str:
    if price is None:
        return f'{spec}: price unknown (set one with [prices."{spec}"] in verity.toml)'
    read = f", read {price.read.isoformat()}" if price.read else ""
    source = f" from {price.source}" if price.source else ""
    cached = f", cached prompt ${price.cached_input:g}" if price.cached_input is not None else ""
    return (
        f"{spec}: ${price.input:g} per million prompt tokens, ${price.output:g} per million "
        f"completion tokens{cached}{read}{source}"
    )
