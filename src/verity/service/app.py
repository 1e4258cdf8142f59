"""The FastAPI app of `verity serve`: the API, the web pages, and the one error shape.

    service = Service(ServiceSettings(workers=2))
    app = create_app(service)            # starting the app starts the service's workers
    uvicorn.run(app, host="127.0.0.1", port=8000)

Routes live in `routes_checks` (submit, get, cancel, list), `routes_documents` (a
document's result and report), `sse` (the event stream) and `routes_info` (methods,
sources, models, health); the web pages are
`verity.service.ui.router`, included when it is installed, and ``/static`` its files.
OpenAPI is at ``/openapi.json``, its browsable form at ``/docs``.

Every answer that is not a success, whoever raised it (a route, the request validation,
the framework's 404 and 405, the body cap, the Host check), has the body of
`verity.service.requests.ErrorBody`; an unexpected exception is a 500 whose message says
nothing of it (the log has the traceback). CORS is closed unless origins are configured.
A request whose Host is not one of ``ServiceSettings.allowed_hosts`` is answered 421
before any route sees it.
"""

from __future__ import annotations

import logging
import typing
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Match

from verity.errors import VerityError
from verity.service import routes_checks, routes_documents, routes_info, sse
from verity.service.core import Service
from verity.service.errors import ApiError, api_error, problem, status_code_name
from verity.service.middleware import AllowedHosts, BodyLimit, SafeHeaders
from verity.service.pool import QueueFull
from verity.service.requests import CheckRequest

log = logging.getLogger("verity.service")
STATIC = Path(__file__).with_name("static")


def create_app(service: Service) -> FastAPI:
    """The app over a service; its lifespan starts the service, unless it runs already.

    The lifespan stops only a service it started: `verity serve` starts the service
    itself (so that its errors are the command's) and stops it once uvicorn is done.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        started_here = not service.pool.started
        if started_here:
            await run_in_threadpool(service.start)
        try:
            yield
        finally:
            if started_here:
                await run_in_threadpool(service.stop)

    app = FastAPI(
        title="verity",
        version=_version(),
        description="Fact-checking as a service: submit a claim, an article, a URL or a "
        "document to check claim by claim; "
        "follow its progress; read the verdict with its evidence and trace.",
        lifespan=lifespan,
    )
    app.state.service = service
    routers = [
        routes_checks.router,
        routes_documents.router,
        sse.router,
        routes_info.router,
        routes_info.health,
    ]
    for router in routers:
        app.include_router(router)
    pages = _add_pages(app)
    app.state.routers = routers if pages is None else [*routers, pages]
    _add_error_handlers(app)
    app.add_middleware(BodyLimit, max_bytes=service.settings.max_body_bytes)
    if service.settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(service.settings.cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "X-API-Key", "Content-Type", "Last-Event-ID"],
        )
    # Outside everything but the headers: a page of another site that got its name to
    # resolve here (DNS rebinding) reaches no route, not even a CORS answer.
    app.add_middleware(AllowedHosts, hosts=service.settings.allowed_hosts)
    app.add_middleware(SafeHeaders)
    return app


def _add_pages(app: FastAPI) -> APIRouter | None:
    """The web pages, when their module is installed (they check keys themselves)."""
    if STATIC.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC), name="static")
    try:
        ui = import_module("verity.service.ui")
    except ModuleNotFoundError as exc:
        if exc.name != "verity.service.ui":
            raise
        ui = None
    if ui is not None:
        # The pages are for people, not part of the API's schema. With keys on, a page
        # asks for the key itself (the form takes it once and keeps it in a cookie).
        app.include_router(ui.router, include_in_schema=False)
        router: APIRouter = ui.router
        return router

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/docs")

    return None


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def on_api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _answer(exc)

    @app.exception_handler(QueueFull)
    async def on_queue_full(request: Request, exc: QueueFull) -> JSONResponse:
        return _answer(
            ApiError(429, "queue_full", str(exc), headers={"Retry-After": str(exc.retry_after)})
        )

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and isinstance(exc.__cause__, (ValueError, RecursionError)):
            # FastAPI gives a bare 400 for a JSON body it cannot decode at all (bytes that
            # are not UTF-8, nesting past the parser's depth): the same mistake as any
            # other body that is not JSON, so the same answer.
            return _answer(not_json())
        message = exc.detail if isinstance(exc.detail, str) else "the request failed"
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request))
        return _answer(
            ApiError(exc.status_code, status_code_name(exc.status_code), message, headers=headers)
        )

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _answer(validation_error(exc.errors()))

    @app.exception_handler(VerityError)
    async def on_verity(request: Request, exc: VerityError) -> JSONResponse:
        return _answer(api_error(exc))

    @app.exception_handler(Exception)
    async def on_bug(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return _answer(ApiError(500, "internal", "internal error; the server log has it"))


def allowed_methods(request: Request) -> list[str]:
    """Every method some route takes at this path.

    The framework's own 405 names the methods of the first route at the path only, and
    ``/v1/checks`` is two routes (GET and POST).
    """
    found: set[str] = set()
    for router in request.app.state.routers:
        for route in router.routes:
            match, _ = route.matches(request.scope)
            if match is not Match.NONE:
                found.update(getattr(route, "methods", None) or ())
    return sorted(found)


def validation_error(problems: Any) -> ApiError:
    """422 naming the first field at fault (``article.text``, ``wait``) and what is wrong.

    The values sent are never echoed, nor a field name or a key the model does not have:
    they may be large, or secret (`verity.service.errors.problem`).
    """
    found = list(problems)
    if not found:
        return ApiError(422, "invalid", "the request is invalid")
    first = found[0]
    if first.get("type") == "json_invalid":
        return not_json()
    location, message = problem(first)
    if location and location[0] in ("body", "query", "path", "header", "cookie"):
        location = location[1:]
    field = ".".join(location) or None
    valid = None
    if first.get("type") == "extra_forbidden":
        part = _part_of_request(location)
        valid = sorted(part.model_fields) if part is not None else None
    where = field or ("the request" if valid else None)
    more = f" (and {len(found) - 1} more problem(s))" if len(found) > 1 else ""
    text = f"{where}: {message}{more}" if where else message + more
    return ApiError(422, "invalid", text, field=field, valid=valid)


def _part_of_request(path: list[str]) -> type[BaseModel] | None:
    """The model at ``path`` of a check request (``[]``: the request, ``["article"]``)."""
    part: type[BaseModel] = CheckRequest
    for name in path:
        found = part.model_fields.get(name)
        if found is None:
            return None
        # `ArticleInput | None`: the model among the annotation's arguments, or itself.
        kinds = typing.get_args(found.annotation) or (found.annotation,)
        models = [k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)]
        if not models:
            return None
        part = models[0]
    return part


def not_json() -> ApiError:
    """422 for a body that is not JSON at all."""
    return ApiError(422, "invalid_json", "the body is not valid JSON")


def _answer(error: ApiError) -> JSONResponse:
    return JSONResponse(
        error.body().model_dump(mode="json"), status_code=error.status, headers=error.headers
    )


def _version() -> str:
    try:
        return version("verity")
    except PackageNotFoundError:
        return "0"
