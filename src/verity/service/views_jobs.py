"""What the web pages show of jobs: a check's header, its events, the history, the form.

    job_view(job)                      # JobPageView: subject, status, links, error
    event_rows(store.events(job.id))   # the progress lines stored so far
    history_row(summary)               # one line of the history table
    form_values(fields)                # a submitted form, to show it again with its error

Like `verity.service.views`, these make plain data for the templates, which escape it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verity.service.jobs import Job, JobSummary, StoredEvent
from verity.service.requests import ErrorDetail
from verity.service.views_common import mapping, number, strings, text

_TONES = {
    "SUPPORTED": "good",
    "REAL": "good",
    "REFUTED": "bad",
    "FAKE": "bad",
    "CONFLICTING": "mixed",
}
# What the error box says above the server's own message, by status.
_TITLES = {
    400: "This cannot be checked here",
    401: "An API key is needed",
    403: "Not allowed",
    413: "Too large",
    422: "Something in the form is missing or wrong",
    429: "The server is busy",
    503: "The server is not taking checks",
}


@dataclass(frozen=True)
class JobError:
    """Why a job did not reach a verdict."""

    code: str
    message: str


@dataclass(frozen=True)
class JobPageView:
    """The head of a check's page: what was asked, how, its state and its links."""

    id: str
    short_id: str
    kind: str
    subject: str
    status: str
    final: bool
    method: str
    model: str
    sources: tuple[str, ...]
    created: str
    error: JobError | None
    href: str
    events_href: str
    result_href: str
    trace_href: str
    api_href: str
    # A document's text (its claims' rows are cut from it) and its report; '' otherwise.
    document: str = ""
    report_href: str = ""


@dataclass(frozen=True)
class EventRow:
    """One progress line."""

    seq: int
    css: str
    at: str
    message: str


@dataclass(frozen=True)
class HistoryRow:
    """One past check."""

    href: str
    summary: str
    method: str
    status: str
    label: str
    tone: str
    created: str
    created_iso: str
    error: str


@dataclass(frozen=True)
class Pages:
    """Where a paged list is, and the links to its neighbours."""

    number: int
    count: int
    previous: str | None
    next: str | None


@dataclass(frozen=True)
class ErrorView:
    """An error answer shown in the page: a title for people, then the server's words."""

    status: int
    title: str
    message: str
    field: str | None = None
    valid: tuple[str, ...] = ()


@dataclass(frozen=True)
class FormView:
    """The form's values, as submitted (to show them again) or empty."""

    kind: str = "claim"
    values: Mapping[str, str] = field(default_factory=dict)
    sources: tuple[str, ...] = ()

    def __getattr__(self, name: str) -> str:
        # form.claim, form.article_title ...: a field not given is empty. (Special names
        # are not fields: copy and the template engine probe for them.)
        if name.startswith("__"):
            raise AttributeError(name)
        return self.values.get(name, "")


def when(moment: dt.datetime | None) -> str:
    """A time as people read it, in UTC."""
    return "" if moment is None else moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _subject(request: Mapping[str, Any]) -> tuple[str, str]:
    if isinstance(request.get("claim"), str):
        return "claim", text(request.get("claim"), 2000)
    document = mapping(request.get("document"))
    if document:
        title = text(document.get("title"), 500)
        return "document", title or text(document.get("text"), 300)
    article = mapping(request.get("article"))
    if article:
        title = text(article.get("title"), 500)
        return "article", title or text(article.get("text"), 300)
    return "article from a web page", text(request.get("url"), 2048)


def job_view(job: Job) -> JobPageView:
    """The head of the page of this job."""
    kind, subject = _subject(job.request)
    error = JobError(job.error.code, job.error.message) if job.error is not None else None
    base = f"/checks/{job.id}"
    return JobPageView(
        id=job.id,
        short_id=job.id[:8],
        kind=kind,
        subject=subject,
        status=job.status,
        final=job.final,
        method=job.method or "",
        model=text(job.request.get("model"), 200),
        sources=tuple(strings(job.request.get("sources"), 10, 200)),
        created=when(job.created),
        error=error,
        href=base,
        events_href=f"/v1/checks/{job.id}/events",
        result_href=f"{base}/result",
        trace_href=f"{base}/trace.json",
        api_href=f"/v1/checks/{job.id}",
        document=_document_text(job.request),
        report_href=f"/v1/checks/{job.id}/report.md" if kind == "document" else "",
    )


def _document_text(request: Mapping[str, Any]) -> str:
    """A document request's whole text (capped by the request's own limit), else ''."""
    found = mapping(request.get("document")).get("text")
    return found if isinstance(found, str) else ""


def event_rows(stored: Sequence[StoredEvent]) -> list[EventRow]:
    """The stored events as progress lines."""
    rows = []
    for event in stored:
        try:
            body = mapping(json.loads(event.json))
        except ValueError:
            continue  # not written by the store: nothing to show
        at = number(body.get("at"))
        rows.append(
            EventRow(
                seq=event.seq,
                css=event.kind.replace(".", "-"),
                at="" if at is None else f"{at:.1f} s",
                message=text(body.get("message"), 400) or event.kind,
            )
        )
    return rows


def history_row(job: JobSummary) -> HistoryRow:
    """One line of the history table."""
    label = job.label or ""
    return HistoryRow(
        href=f"/checks/{job.id}",
        summary=job.summary or "(empty)",
        method=job.method or "",
        status=job.status,
        label=label,
        tone=_TONES.get(label, "unsure"),
        created=when(job.created),
        created_iso=job.created.isoformat(),
        error=job.error.message if job.error is not None else "",
    )


def pages(offset: int, limit: int, total: int, path: str = "/history") -> Pages:
    """Page number and the links of the pages before and after."""
    count = max(1, -(-total // limit))
    number_ = offset // limit + 1
    previous = f"{path}?page={number_ - 1}" if number_ > 1 else None
    following = f"{path}?page={number_ + 1}" if offset + limit < total else None
    return Pages(number=number_, count=count, previous=previous, next=following)


def error_view(detail: ErrorDetail) -> ErrorView:
    """The error box of a page, from the API's error body."""
    return ErrorView(
        status=detail.status,
        title=_TITLES.get(detail.status, "The check could not be started"),
        message=detail.message,
        field=detail.field,
        valid=tuple(detail.valid or ()),
    )
