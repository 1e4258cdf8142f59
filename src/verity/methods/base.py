"""The method protocol and the registry that finds methods by name.

    method = load_method("rag", models=ModelSet(make_model(ModelSettings())),
                         sources=[OfflineWiki()], k=5)
    verdict = method.verify(Claim(text="The Eiffel Tower is in Paris."))

A method may offer named variants, presets of its own settings such as the paper's
ablations: ``load_method("zofia/no-debate", ...)`` is ``zofia`` with the settings its
``variants["no-debate"]`` names (explicit settings still win). A benchmark can then run
a method and its ablations side by side under distinct names.

Methods register as entry points in the ``verity.methods`` group; the built-in ones are
registered the same way in verity's own ``pyproject.toml``, so a third-party package adds
a method by declaring an entry point and nothing else.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verity import events, schedule
from verity.domain import Article, Claim, Evidence, Reference, Trace, Verdict
from verity.errors import ConfigError, UnknownNameError, VerityError
from verity.grounding.check import Mode, ground
from verity.grounding.cite import passages
from verity.grounding.nli import Judge, nli_ground
from verity.grounding.report import with_section
from verity.llm.calllog import collecting
from verity.llm.spec import ModelSet
from verity.sources.base import Source

GROUP = "verity.methods"
T = TypeVar("T")


class MethodConfig(BaseModel):
    """Base of every method's own settings; unknown keys are an error, not ignored."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    parallel: bool | None = Field(
        default=None,
        description="run a check's independent model calls at once; unset: yes, unless a "
        "model answers one call at a time (the embedded one), where it gains nothing",
    )


@runtime_checkable
class Method(Protocol):
    """Reaches a verdict on a claim (or an article) using models and sources."""

    name: ClassVar[str]
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]]

    def verify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Return the verdict with its evidence, usage and trace.

        ``evidence``, when given, is the evidence to use instead of the method's sources:
        a benchmark's gold evidence, or passages a user supplies. A method that judges
        from the model's knowledge alone ignores it.
        """
        ...

    async def averify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Async twin of `verify`."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """The exact configuration of the method, its models and its sources."""
        ...


class MethodBase:
    """What the built-in methods share: `check` is the method, the rest is derived once.

    `averify` runs `check` as one tracked check (`verity.schedule`): its independent
    steps run at once unless the method runs sequentially, and the verdict's usage gains
    the calls on the critical path, the wall time and the time outside model calls. A
    check that fails with a `VerityError` (its budget spent, a model that gave no valid
    answer) carries what it did so far: the error's ``usage`` and ``trace``.
    `verify` is `averify` in an event loop of its own. With ``grounding`` on, the verdict
    then gains its `Grounding` (`verity.grounding`), from one call of the ``grounding``
    role's model over `references`.
    """

    name: ClassVar[str]
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]]
    config: MethodConfig
    models: ModelSet
    # Whether each verdict's explanation is checked against what it cites
    # (`verity.grounding`); the caller sets it (`load_method(grounding=...)`).
    grounding: Mode = "off"
    # An NLI judge in place of the ``grounding`` role's model (``nli:DIR``), and its name.
    grounding_judge: Judge | None = None
    grounding_checker: str = ""

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None
    ) -> Verdict:  # pragma: no cover - every method defines it
        """The method itself."""
        raise NotImplementedError

    def verify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Return the verdict with its evidence, usage and trace (see `Method.verify`)."""
        return run_sync(self.averify(subject, evidence=evidence))

    async def averify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """The verdict, for callers that run an event loop."""
        started = time.perf_counter()
        events.check_started(self.name, _shown(subject))
        with collecting() as logs, schedule.tracked(parallel=self.runs_parallel()) as lane:
            try:
                verdict = await self.check(subject, evidence)
            except VerityError as exc:
                # Set again by each check it passes through: the outermost one has it all.
                exc.usage, exc.trace = logs.usage(), logs.trace()
                raise
            wall = time.perf_counter() - started
            usage = verdict.usage.model_copy(
                update={
                    "critical_calls": lane.depth,
                    "wall_seconds": wall,
                    "non_model_seconds": min(wall, lane.idle_seconds),
                }
            )
        events.check_ended(self.name, verdict.label, wall)
        verdict = verdict.model_copy(update={"usage": usage, "trace": self._named(verdict.trace)})
        if self.grounding == "off":
            return verdict
        # After the check, outside its call log: the method's usage and critical path stay
        # its paper's, and the checker's call is counted in the grounding's own usage.
        references = self.references(verdict)
        if self.grounding_judge is not None:
            found = await nli_ground(
                verdict, references, self.grounding_judge,
                checker=self.grounding_checker or "nli", mode=self.grounding,
            )  # fmt: skip
        else:
            found = await ground(
                verdict, references, self.models.for_role("grounding"), mode=self.grounding
            )
        # A method's Markdown trace report (LoCal, ZoFia, ToE) gains the grounding section.
        return with_section(verdict.model_copy(update={"grounding": found}))

    def references(self, verdict: Verdict) -> list[Reference]:
        """What the explanation may cite, by the ids the method's prompts show them by.

        By default the verdict's passages, numbered from 1 as ``[1]``; a method whose
        explanation leans on its own records (sub-task answers, graph facts, tree nodes)
        gives those too.
        """
        return passages(verdict)

    def _named(self, trace: Trace) -> Trace:
        """The trace, saying what ran when it is not the method as its paper ran it.

        A method that knows (``variant_kind()``: ToE untrained, a baseline with a
        substitute part) says so in every verdict, so a reader of one verdict, in the web
        UI or a JSON file, sees it without the run's manifest.
        """
        kind = getattr(self, "variant_kind", None)
        if not callable(kind) or "variant_kind" in (trace.model_extra or {}):
            return trace
        named = str(kind())
        return trace if named == "paper" else trace.model_copy(update={"variant_kind": named})

    def runs_parallel(self) -> bool:
        """Whether independent model calls run at once: the setting, else the models say."""
        if self.config.parallel is not None:
            return self.config.parallel
        return not any(client.one_at_a_time for client in self.models.clients())


def _shown(subject: Claim | Article) -> str:
    """A subject in a progress line: the claim, or the article's title, else its opening."""
    if isinstance(subject, Claim):
        return repr(subject.text)
    return repr(subject.title or subject.text[:80])


def run_sync(work: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end from sync code, inside an event loop or not."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    # Called from a running loop (a notebook, an async server's sync handler): that loop
    # cannot be entered again, so the work gets a loop in a thread of its own, with the
    # caller's context variables (the example a benchmark's sources guard, say).
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, work).result()


@cache
def _registry() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def method_names() -> list[str]:
    """Names of every registered method."""
    return sorted(_registry())


@dataclass(frozen=True)
class MethodInfo:
    """What `verity methods` shows of a registered method."""

    name: str
    paper: str
    accepts: tuple[str, ...]
    variants: tuple[str, ...]
    error: str = ""


def method_catalog() -> list[MethodInfo]:
    """Every registered method with its paper, what it checks and its variants, by name.

    A method whose class cannot be imported (a broken plug-in) is listed with the error,
    so one bad package does not hide the others.
    """
    infos = []
    for name in method_names():
        try:
            cls = method_class(name)
        except (ImportError, AttributeError) as exc:
            infos.append(MethodInfo(name, "", (), (), error=f"cannot be loaded: {exc}"))
            continue
        infos.append(
            MethodInfo(
                name=name,
                paper=str(getattr(cls, "paper", "")),
                accepts=tuple(kind.__name__.lower() for kind in getattr(cls, "accepts", ())),
                variants=tuple(getattr(cls, "variants", {})),
            )
        )
    return infos


def method_class(name: str) -> type[Any]:
    """The class registered under a name (a variant name gives its method's class)."""
    base = name.partition("/")[0]
    try:
        entry = _registry()[base]
    except KeyError:
        raise UnknownNameError("method", base, method_names()) from None
    cls: type[Any] = entry.load()
    return cls


def variant_settings(name: str) -> dict[str, Any]:
    """The settings a ``method/variant`` name stands for; ``{}`` for a plain name."""
    base, _, variant = name.partition("/")
    if not variant:
        return {}
    variants: dict[str, dict[str, Any]] = getattr(method_class(base), "variants", {})
    if variant not in variants:
        raise UnknownNameError(f"variant of {base}", variant, list(variants))
    return dict(variants[variant])


def settings_for(name: str, table: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A method's settings from a ``[methods.*]`` table, for a plain or a variant name.

    For ``zofia/no-debate``: ``[methods.zofia]``, then the variant's preset over it (the
    variant is what was asked for), then ``[methods."zofia/no-debate"]`` over both.
    """
    base = name.partition("/")[0]
    merged = dict(table.get(base, {}))
    if name != base:
        merged |= variant_settings(name) | dict(table.get(name, {}))
    return merged


def load_method(
    name: str, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any
) -> Method:
    """Build a registered method (or a named variant) with its models, sources, settings."""
    cls = method_class(name)
    settings = {**variant_settings(name), **config}
    try:
        method: Method = cls(models=models, sources=sources, **settings)
    except ValidationError as exc:
        raise ConfigError(f"bad settings for method {name!r}: {exc}") from exc
    return method
