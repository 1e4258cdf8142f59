"""The public Python API; the CLI and the benchmark harness are thin layers over it.

import verity
verdict = verity.check("The Eiffel Tower is in Paris.")
verdict = verity.check("...", method="direct", model="openai:gpt-4o-mini")
verdict = verity.check(verity.Article(title="...", text="..."))   # zofia: the article default
verdict = verity.check("...", on_event=lambda e: print(e.message))  # live progress
verdict = verity.check("...", budget=verity.Budget(calls=20, cost=0.05))  # spend at most
method = verity.load_method("rag", model="local", sources=("offline-wiki",), k=3)

With no method named, a claim is checked by ``rag`` and an article by ``zofia``.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from verity import events
from verity.config import DEFAULT_BUDGET, Settings
from verity.documents.types import DocumentVerdict
from verity.domain import Article, Claim, Verdict
from verity.errors import BadInputError
from verity.events import Listener
from verity.extraction import Document, Extractor
from verity.grounding import MODES, Mode
from verity.limits import Limits, check_document_size, check_subject_size
from verity.llm.budget import Budget, spending
from verity.llm.spec import ModelSet, ModelSettings
from verity.methods.base import Method, method_class, method_names, settings_for
from verity.methods.base import load_method as _load_registered
from verity.sources.base import Source
from verity.sources.registry import make_source

SubjectType = type[Claim] | type[Article]

DEFAULT_METHODS: Mapping[SubjectType, str] = {Claim: "rag", Article: "zofia"}

_sources: dict[str, Source] = {}
_sources_lock = threading.Lock()


def shared_source(spec: str) -> Source:
    """One instance per source spec per process, so indexes load once."""
    with _sources_lock:
        if spec not in _sources:
            _sources[spec] = make_source(spec)
        return _sources[spec]


def as_subject(value: str | Claim | Article, limits: Limits | None = None) -> Claim | Article:
    """A claim from plain text; claims and articles pass through; either within its limit.

    The limits are ``limits``, else the defaults with the environment's overrides.
    """
    if isinstance(value, Claim | Article):
        subject = value
    elif not isinstance(value, str) or not value.strip():
        raise BadInputError("the claim is empty: give a sentence to check")
    else:
        try:
            subject = Claim(text=value)
        except ValidationError as exc:
            raise BadInputError(f"the claim cannot be used: {exc.errors()[0]['msg']}") from exc
    check_subject_size(subject, limits or Limits.from_env(os.environ))
    return subject


def default_method(kind: SubjectType) -> str:
    """The method used when none is named: ``rag`` for claims, ``zofia`` for articles."""
    return DEFAULT_METHODS[kind]


def resolve_method(name: str | None, kind: SubjectType) -> str:
    """The method to run on a subject of this type: ``name``, else the type's default.

    The method's ``accepts`` is checked here, before any model or index loads.

        resolve_method(None, Claim)        # 'rag'
        resolve_method("local", Article)   # BadInputError naming the methods that do
    """
    chosen = default_method(kind) if name is None else name
    if not issubclass(kind, tuple(method_class(chosen).accepts)):
        others = ", ".join(_methods_accepting(kind)) or "none"
        raise BadInputError(
            f"method {chosen!r} does not check {kind.__name__.lower()}s; methods that do: {others}"
        )
    return chosen


def _methods_accepting(kind: SubjectType) -> list[str]:
    names = []
    for name in method_names():
        try:
            cls = method_class(name)
        except ImportError:
            continue  # a broken plug-in must not hide the answer about the chosen method
        if issubclass(kind, tuple(getattr(cls, "accepts", ()))):
            names.append(name)
    return names


def _model_settings(model: str | ModelSettings, base_url: str | None) -> ModelSettings:
    if isinstance(model, ModelSettings):
        return model if base_url is None else model.model_copy(update={"base_url": base_url})
    return ModelSettings(spec=model, base_url=base_url)


def load_method(
    name: str = "rag",
    *,
    model: str | ModelSettings = "local",
    base_url: str | None = None,
    sources: Sequence[str] = ("offline-wiki",),
    roles: Mapping[str, ModelSettings] | None = None,
    grounding: Mode = "off",
    grounding_checker: str = "model",
    **config: Any,
) -> Method:
    """A ready method: its models built from specs, its sources by name.

    ``grounding`` (off, on, strict) checks each verdict's explanation against what it
    cites (`verity.grounding`), with one more call of the ``grounding`` role's model, or,
    with ``grounding_checker="nli:DIR"``, a local NLI checkpoint in its place.
    """
    if grounding not in MODES:
        raise BadInputError(f"grounding must be one of {', '.join(MODES)}, not {grounding!r}")
    judge, checker = _grounding_checker(grounding_checker) if grounding != "off" else (None, "")
    models = ModelSet.from_settings(_model_settings(model, base_url), roles)
    method = _load_registered(
        name, models=models, sources=[shared_source(s) for s in sources], **config
    )
    method.grounding = grounding  # type: ignore[attr-defined]
    if judge is not None:
        method.grounding_judge = judge  # type: ignore[attr-defined]
        method.grounding_checker = checker  # type: ignore[attr-defined]
    return method


def _grounding_checker(spec: str) -> tuple[Any, str]:
    """``model`` (the grounding role's model: no judge), or ``nli:DIR``: its judge and name."""
    if spec == "model":
        return None, ""
    folder = spec.removeprefix("nli:").strip() if spec.startswith("nli:") else ""
    if not folder:
        raise BadInputError(f"the grounding checker is 'model' or 'nli:DIR', not {spec!r}")
    from verity.methods.baselines.nli.judge import checkpoint_judge

    return checkpoint_judge(folder), f"nli:{os.path.basename(folder.rstrip('/'))}"


def method_from_settings(settings: Settings, kind: SubjectType = Claim) -> Method:
    """The method that settings describe for subjects of this type (used by the CLI)."""
    name = resolve_method(settings.method, kind)
    return load_method(
        name,
        model=settings.model,
        sources=settings.sources,
        roles=settings.roles,
        grounding=settings.grounding,
        grounding_checker=settings.grounding_checker,
        **settings_for(name, settings.methods),
    )


def check(
    subject: str | Claim | Article,
    *,
    method: str | None = None,
    model: str | ModelSettings = "local",
    base_url: str | None = None,
    sources: Sequence[str] = ("offline-wiki",),
    on_event: Listener | None = None,
    budget: Budget | None = None,
    grounding: Mode = "off",
    **config: Any,
) -> Verdict:
    """Check one claim (or article) and return the verdict with its evidence and trace.

    ``grounding`` "on" or "strict" adds the verdict's `Grounding` (`verity.grounding`).

    ``method`` None is ``rag`` for a claim and ``zofia`` for an article. ``on_event`` is
    called with each `Event` of the check as it happens (`verity.events`). ``budget``
    bounds what the check may spend (`verity.llm.budget`; None: the default, 2,000 calls
    and 3,600 s): past it, `BudgetExceededError`, whose ``usage`` and ``trace`` say what
    the check had done. A method's own ``verify`` runs within whatever spend surrounds it.
    """
    target = as_subject(subject)
    name = resolve_method(method, type(target))
    built = load_method(
        name, model=model, base_url=base_url, sources=sources, grounding=grounding, **config
    )
    with events.listening(on_event), spending(budget or DEFAULT_BUDGET):
        return built.verify(target)


async def acheck(
    subject: str | Claim | Article,
    *,
    method: str | None = None,
    model: str | ModelSettings = "local",
    base_url: str | None = None,
    sources: Sequence[str] = ("offline-wiki",),
    on_event: Listener | None = None,
    budget: Budget | None = None,
    grounding: Mode = "off",
    **config: Any,
) -> Verdict:
    """Async twin of `check`."""
    target = as_subject(subject)
    name = resolve_method(method, type(target))
    built = load_method(
        name, model=model, base_url=base_url, sources=sources, grounding=grounding, **config
    )
    with events.listening(on_event), spending(budget or DEFAULT_BUDGET):
        return await built.averify(target)


def load_extractor(
    method: Method | None = None,
    *,
    model: str | ModelSettings = "local",
    base_url: str | None = None,
    roles: Mapping[str, ModelSettings] | None = None,
    variant: str = "claimify",
    merge: bool = True,
) -> Extractor:
    """The claim extractor for documents (`verity.extraction`), on the ``extract`` role.

    Given the method that will check the claims, it shares that method's models (one
    cache, one limit on calls in flight); else its models are built from ``model``.
    ``merge`` uses the sentence encoder to merge near copies (exact copies always are).
    """
    from verity.extraction import Extractor
    from verity.extraction.extract import DEFAULT_CONCURRENCY, PAPER_STAGES, VARIANTS
    from verity.llm.client import CALLS_PER_CHECK
    from verity.nlp.embed import default_encoder

    if variant not in VARIANTS:
        raise BadInputError(f"the extractor is one of {', '.join(VARIANTS)}, not {variant!r}")
    models = getattr(method, "models", None)
    if not isinstance(models, ModelSet):
        models = ModelSet.from_settings(_model_settings(model, base_url), roles)
        # Its own models take every answer the sentences read at once ask for together.
        most = max(stage.completions for stage in PAPER_STAGES.values())
        models.follow(math.ceil(DEFAULT_CONCURRENCY * most / CALLS_PER_CHECK))
    return Extractor(
        models.for_role("extract"),
        encoder=default_encoder() if merge else None,
        variant=variant,
    )


async def acheck_document(
    document: str | Document,
    *,
    method: str | None = None,
    model: str | ModelSettings = "local",
    base_url: str | None = None,
    sources: Sequence[str] = ("offline-wiki",),
    concurrency: int = 4,
    with_article: str | None = None,
    extractor: str = "claimify",
    budget: Budget | None = None,
    claim_budget: Budget | None = None,
    previous: DocumentVerdict | None = None,
    on_event: Listener | None = None,
    grounding: Mode = "off",
    **config: Any,
) -> DocumentVerdict:
    """Check every claim of a document with one claim method (``rag`` when none is named).

    ``budget`` bounds the whole document (extraction and every check); ``claim_budget``
    each claim's check. ``with_article`` names an article method (``zofia``) to label the
    whole text REAL or FAKE beside its claims. ``previous``, an earlier result for the same
    document, is reused: only claims not yet checked are checked.
    """
    from verity.documents import check_document

    doc = document if isinstance(document, Document) else as_document(document)
    name = resolve_method(method, Claim)
    built = load_method(
        name, model=model, base_url=base_url, sources=sources, grounding=grounding, **config
    )
    article = None
    if with_article is not None:
        article = load_method(
            resolve_method(with_article, Article), model=model, base_url=base_url,
            sources=sources,
        )  # fmt: skip
    chosen = load_extractor(built, model=model, base_url=base_url, variant=extractor)
    # The models take the calls of ``concurrency`` checks at once (as a batch's do).
    shared = getattr(built, "models", None)
    if isinstance(shared, ModelSet):
        shared.follow(concurrency)
    # Each claim's check has a budget (the default one's unless given); the document's
    # whole spend is bounded only when ``budget`` is given.
    with events.listening(on_event), spending(budget, scope="run"):
        return await check_document(
            doc, built, chosen, concurrency=concurrency,
            claim_budget=claim_budget or DEFAULT_BUDGET,
            article_method=article, previous=previous,
        )  # fmt: skip


def check_document(document: str | Document, **options: Any) -> DocumentVerdict:
    """Sync twin of `acheck_document`, for scripts and notebooks."""
    import asyncio

    return asyncio.run(acheck_document(document, **options))


def as_document(text: str, limits: Limits | None = None) -> Document:
    """A document from plain text, within the article limit; `BadInputError` if empty."""
    if not isinstance(text, str) or not text.strip():
        raise BadInputError("the document is empty: give the text to check")
    check_document_size(text, "", limits or Limits.from_env(os.environ))
    return Document(text=text)
