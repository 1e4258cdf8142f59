"""Running a document request: its claims extracted, then each checked with a claim method.

    check_document_request(request, limits)          # ApiError 422/400 before it is queued
    result = run_document(executor, request, listener)   # a DocumentVerdict

The method (and, with ``"with": "zofia"``, the article method) comes from the executor's
cache as a claim's would (`verity.service.execute.LocalExecutor.method`), so a document
shares its models, sources and the calls they may have in flight with every other job;
the extractor is built over that method's models (`verity.api.load_extractor`). The
request's budget, the one the server settled on, bounds the whole document: extraction
and every claim's check together.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from verity import events
from verity.api import load_extractor, resolve_method
from verity.domain import Article
from verity.errors import BadInputError, UnknownNameError
from verity.events import Listener
from verity.extraction.types import Document
from verity.limits import Limits, check_document_size
from verity.llm.budget import spending
from verity.methods.base import run_sync, settings_for
from verity.service.errors import ApiError
from verity.service.plans import Plan
from verity.service.requests import CheckRequest

if TYPE_CHECKING:
    from verity.config import Settings
    from verity.documents.types import DocumentVerdict
    from verity.methods.base import Method

# Claims checked at once when a stored request says nothing (a job queued by an older
# server): the service's own default.
DEFAULT_CONCURRENCY = 4


def document_of(request: CheckRequest) -> Document:
    """The request's document; the request's ``date``, when given, wins over the document's."""
    given = request.document
    if given is None:
        raise BadInputError("the request has no document")
    return Document(
        text=given.text,
        title=given.title,
        url=given.url,
        date=request.date or given.date,
    )


def check_document_request(request: CheckRequest, limits: Limits) -> None:
    """What can be known of a document request before it runs: its size, its article method.

    A document is held to the article limit (its text and title), as ``verity check
    --document`` holds it.
    """
    doc = document_of(request)
    try:
        check_document_size(doc.text, doc.title, limits)
    except BadInputError as exc:
        raise ApiError(422, "too_long", str(exc), field="document.text") from exc
    if request.with_article is not None:
        try:
            resolve_method(request.with_article, Article)
        except (UnknownNameError, BadInputError) as exc:
            raise ApiError(
                400, "unsuitable_method", "with names an article method", field="with"
            ) from exc


@dataclass(frozen=True)
class DocumentOutcome:
    """A document's result as the job keeps it: its JSON record and its Markdown report."""

    result: DocumentVerdict

    def to_json_dict(self) -> dict[str, Any]:
        """`DocumentVerdict.to_json_dict`: what the API returns as the job's result."""
        return self.result.to_json_dict()

    def report(self) -> str:
        """The Markdown report (`verity.documents.report.markdown`), every text escaped."""
        from verity.documents.report import markdown

        return markdown(self.result)


class Runner(Protocol):
    """What runs a document: the executor's settings, its methods by plan, its encoder rule."""

    defaults: Settings
    merge: bool

    def method(self, chosen: Plan) -> Method:
        """The method a plan builds (kept, and shared with every job on that plan)."""
        ...


def run_document(
    executor: Runner, request: CheckRequest, listener: Listener, chosen: Plan
) -> DocumentOutcome:
    """Check the request's document claim by claim within its budget, with its events.

    ``chosen`` is the request's plan (`verity.service.plans.plan`).
    """
    from verity.documents import check_document

    budget = request.budget or executor.defaults.budget
    method = executor.method(chosen)
    article_method = None
    if request.with_article is not None:
        name = resolve_method(request.with_article, Article)
        article_plan = replace(
            chosen, method=name, settings=settings_for(name, executor.defaults.methods)
        )
        article_method = executor.method(article_plan)
    # The method's own models when it has them; else (a plug-in without a model set) the
    # request's model, never a default the request did not choose.
    extractor = load_extractor(
        method,
        model=chosen.model,
        roles=chosen.roles,
        variant=request.extractor or "claimify",
        merge=executor.merge,
    )
    with events.listening(listener), spending(budget, scope="run"):
        result = run_sync(
            check_document(
                document_of(request),
                method,
                extractor,
                concurrency=request.concurrency or DEFAULT_CONCURRENCY,
                article_method=article_method,
            )
        )
    return DocumentOutcome(result)
