"""What the server offers, and whether it is up: methods, sources, models, health.

GET /v1/methods     each method: one line, what it checks, its variants
GET /v1/sources     each source: offline or not, whether a request may name it
GET /v1/models      the default model and the specs a request may name
GET /healthz        200 while the process answers
GET /readyz         200 while it takes checks; 503 while it starts or stops
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from verity.service.auth import Caller, service_of
from verity.service.errors import ApiError
from verity.service.responses import Health, MethodInfo, ModelsInfo, Ready, SourcesInfo
from verity.service.routes_checks import errors

router = APIRouter(prefix="/v1", tags=["server"])
health = APIRouter(tags=["server"])


@router.get("/methods", response_model=list[MethodInfo], responses=errors(401))
def list_methods(request: Request, caller: Caller) -> list[MethodInfo]:
    """Every method a request may name, with what it checks (claims, articles)."""
    return service_of(request).methods_info()


@router.get("/sources", response_model=SourcesInfo, responses=errors(401))
def list_sources(request: Request, caller: Caller) -> SourcesInfo:
    """Every evidence source, and the ones a check uses when a request names none."""
    return service_of(request).sources_info()


@router.get("/models", response_model=ModelsInfo, responses=errors(401))
def list_models(request: Request, caller: Caller) -> ModelsInfo:
    """The model a check uses when a request names none, and the specs it may name."""
    return service_of(request).models_info()


@health.get("/healthz", response_model=Health)
def healthz() -> Health:
    """The process is up and answering."""
    return Health(status="ok")


@health.get("/readyz", response_model=Ready, responses=errors(503))
async def readyz(request: Request) -> Ready:
    """The server takes checks: its workers run and its job store answers."""
    service = service_of(request)
    if service.stopping or not service.pool.started:
        raise ApiError(503, "unavailable", "the server is starting or shutting down")
    counts = await run_in_threadpool(service.store.counts)
    return Ready(
        status="ready",
        queued=counts["queued"],
        running=counts["running"],
        workers=service.pool.workers,
        queue_size=service.pool.queue_size,
    )
