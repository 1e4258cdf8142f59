"""The web pages of the service: the check form, a check's page, the history, the trace.

    app.include_router(ui.router)            # done by verity.service.app.create_app
    # GET  /                       the form: claim, article, URL or document; method, model
    # POST /checks                 the form sent: 303 to the check's page, or the form again
    # GET  /checks/{id}            the permalink: progress live, then the verdict and reasoning
    #                              (a document: its text with each claim marked, the cards)
    # GET  /checks/{id}/result     the verdict part alone (the page's script fetches it)
    # GET  /checks/{id}/trace.json the verdict with its whole trace, as a download
    # GET  /history?page=N         past checks, newest first

The pages are rendered on the server from the `Service` on ``app.state.service`` and work
without script; a small script (static/check.js) follows a running check through the
API's event stream. Every text from outside is escaped by the templates, the pages allow
only this server's own scripts and styles (Content-Security-Policy), and links out are
http(s) only. With a key file, the pages take the key once (a form field) and keep it in
an HttpOnly cookie, the same one the API reads. A route that changes anything (the form
sent) takes a request from this server's own pages only (`verity.service.auth.same_origin`):
another site's page cannot make a server with no keys run checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.concurrency import run_in_threadpool

from verity.errors import VerityError
from verity.jsonl import json_text
from verity.service import requests as limits
from verity.service.auth import (
    COOKIE,
    MAX_KEY_CHARS,
    caller,
    rate_limited,
    same_origin,
    service_of,
)
from verity.service.core import Service
from verity.service.errors import ApiError, api_error
from verity.service.jobs import Job
from verity.service.middleware import BodyTooLarge
from verity.service.pool import QueueFull
from verity.service.requests import ErrorDetail
from verity.service.views import verdict_view
from verity.service.views_documents import document_progress, document_view
from verity.service.views_form import Fields, FormError, check_request, form_view, parse_form
from verity.service.views_jobs import (
    FormView,
    error_view,
    event_rows,
    history_row,
    job_view,
    pages,
)

HERE = Path(__file__).parent
PAGE_SIZE = 20
MAX_PAGE = 100_000
# The pages load this server's own stylesheet and script and nothing else: an injected
# tag, if one ever got past the escaping, could neither run nor load anything.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_CAPS = {
    "claim": limits.MAX_CLAIM_CHARS,
    "article": limits.MAX_ARTICLE_CHARS,
    "title": limits.MAX_TITLE_CHARS,
    "url": limits.MAX_URL_CHARS,
    "name": limits.MAX_NAME_CHARS,
}

templates = Jinja2Templates(
    env=Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
)
router = APIRouter(include_in_schema=False)


def _page(request: Request, name: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    response = templates.TemplateResponse(request, name, context, status_code=status)
    response.headers["Content-Security-Policy"] = CSP
    response.headers["Cache-Control"] = "no-store"
    return response


def _problem(request: Request, error: ApiError) -> HTMLResponse:
    """An error as a page of its own (a check that does not exist, a key that is missing)."""
    titles = {401: "An API key is needed", 403: "Sent from another site", 404: "No such check"}
    title = titles.get(error.status, "Error")
    message = error.message
    if error.status == 401:
        # The API's words name a header, which a browser user cannot send.
        message = "This server needs an API key: enter it on the New check page once."
    elif error.code == "cross_site":
        message = (
            "A page of another site sent this form here, so nothing was run. To check "
            "something, use this server's own New check page."
        )
    response = _page(
        request, "missing.html", {"title": title, "message": message, "page": ""}, error.status
    )
    response.headers.update(error.headers)
    return response


def _key_name(request: Request) -> str | None:
    """The caller's key name (None with keys off); `ApiError` 401 without a valid key."""
    return caller(request)


def _has_key(request: Request) -> bool:
    try:
        _key_name(request)
    except ApiError:
        return False
    return True


def _form_page(
    request: Request,
    form: FormView,
    error: ErrorDetail | None = None,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    service = service_of(request)
    defaults = service.settings.defaults
    sources = service.sources_info()
    context = {
        "page": "new",
        "form": form,
        "error": error_view(error) if error is not None else None,
        "methods": service.methods_info(),
        "claim_methods": [m for m in service.methods_info() if "claim" in m.accepts],
        "document_concurrency": service.settings.document_concurrency,
        "models": service.models_info().accepted,
        "sources": [s.name for s in sources.sources if s.requestable],
        "defaults": {
            "method": defaults.method or "rag for a claim, zofia for an article",
            "model": defaults.model.spec,
            "sources": list(defaults.sources) or ["none"],
        },
        "caps": _CAPS,
        "needs_key": service.keys is not None and not _has_key(request),
    }
    response = _page(request, "index.html", context, error.status if error else 200)
    response.headers.update(headers or {})
    return response


@router.get("/", response_class=HTMLResponse)
def index(request: Request) -> HTMLResponse:
    """The form."""
    return _form_page(request, FormView())


@router.post("/checks")
async def submit(request: Request) -> Response:
    """The form sent: queue the check and go to its page, or show the form with the error."""
    try:
        same_origin(request)
    except ApiError as exc:
        # Not the form filled in with what was sent: one click on it would send another
        # site's request from this server's own page.
        return _problem(request, exc)
    service = service_of(request)
    fields: Fields = {}
    headers: dict[str, str] = {}
    try:
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            raise ApiError(415, "unsupported_media_type", "send the form as a web form")
        fields = parse_form(await request.body())
        name, given_key = _form_key(request, service, fields)
        check = check_request(fields)
        rate_limited(service, name)
        job = await run_in_threadpool(service.submit, check, key=name)
    except FormError as exc:
        detail = exc.detail
    except ApiError as exc:
        detail, headers = exc.body().error, exc.headers
    except VerityError as exc:
        detail = api_error(exc).body().error
    except BodyTooLarge:
        detail = ErrorDetail(
            status=413, code="too_large", message="the form is larger than this server takes"
        )
    except QueueFull as exc:
        detail = ErrorDetail(status=429, code="queue_full", message=str(exc))
        headers = {"Retry-After": str(exc.retry_after)}
    else:
        response = RedirectResponse(f"/checks/{job.id}", status_code=303)
        if given_key is not None:
            response.set_cookie(
                COOKIE,
                given_key,
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
            )
        return response
    # Listing the methods and sources may load modules and read indexes: not on the loop.
    return await run_in_threadpool(_form_page, request, form_view(fields), detail, headers)


def _form_key(request: Request, service: Service, fields: Fields) -> tuple[str | None, str | None]:
    """The caller's key name, and the key itself when the form brought it (to keep it)."""
    typed = fields.get("api_key")
    if service.keys is None or not isinstance(typed, str) or not typed.strip():
        return _key_name(request), None
    key = typed.strip()
    name = service.keys.name_of(key) if len(key) <= MAX_KEY_CHARS else None
    if name is None:
        raise ApiError(401, "unauthorized", "this API key is not valid here", field="api_key")
    return str(name), key


def _job(request: Request, job_id: str) -> Job:
    if not (0 < len(job_id) <= 64 and job_id.isalnum()):
        raise ApiError(404, "not_found", "no check with this id")
    return service_of(request).job(job_id, key=_key_name(request))


def _result_context(job: Job) -> dict[str, Any]:
    page = job_view(job)
    done = job.verdict if job.status == "done" else None
    if page.kind == "document":
        view = document_view(done) if done else None
        return {"job": page, "verdict": None, "document": view}
    return {"job": page, "verdict": verdict_view(done) if done else None, "document": None}


@router.get("/checks/{job_id}", response_class=HTMLResponse)
def check_page(request: Request, job_id: str) -> HTMLResponse:
    """A check's page: what was asked, its progress, then its verdict."""
    try:
        job = _job(request, job_id)
    except ApiError as exc:
        return _problem(request, exc)
    stored = service_of(request).store.events(job.id)
    context = {**_result_context(job), "events": event_rows(stored), "page": ""}
    page = context["job"]
    context["progress"] = (
        document_progress(page.document, stored) if page.kind == "document" else None
    )
    return _page(request, "check.html", context)


@router.get("/checks/{job_id}/result", response_class=HTMLResponse)
def result_part(request: Request, job_id: str) -> HTMLResponse:
    """The verdict part of a check's page (or its error), for the page's script."""
    try:
        job = _job(request, job_id)
    except ApiError as exc:
        return _problem(request, exc)
    return _page(request, "_result.html", _result_context(job))


@router.get("/checks/{job_id}/trace.json")
def trace_download(request: Request, job_id: str) -> Response:
    """The verdict with its trace, as `verity check --json` writes it, to save."""
    try:
        job = _job(request, job_id)
        if job.status != "done" or job.verdict is None:
            raise ApiError(409, "not_done", f"the check is {job.status}: there is no trace yet")
    except ApiError as exc:
        body = json_text(exc.body().model_dump(mode="json"))
        return Response(body, status_code=exc.status, media_type="application/json")
    return Response(
        json_text(job.verdict, indent=2),
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="verity-{job.id}.json"'},
    )


@router.get("/history", response_class=HTMLResponse)
def history(request: Request, page: str = "1") -> HTMLResponse:
    """Past checks, newest first, a page at a time."""
    try:
        name = _key_name(request)
    except ApiError as exc:
        return _problem(request, exc)
    store = service_of(request).store
    number = min(max(int(page), 1), MAX_PAGE) if page.isdigit() and len(page) < 8 else 1
    offset = (number - 1) * PAGE_SIZE
    rows = [history_row(j) for j in store.history(limit=PAGE_SIZE, offset=offset, key=name)]
    context = {
        "page": "history",
        "rows": rows,
        "pages": pages(offset, PAGE_SIZE, store.count(key=name)),
    }
    return _page(request, "history.html", context)
