"""The check routes: submit, look up, cancel, list (the event stream is in `sse`).

POST   /v1/checks?wait=SECONDS      202 + the queued job; 200 + the ended job if in time
GET    /v1/checks/{id}              the job, with its verdict once done
DELETE /v1/checks/{id}              cancel it (again: 200; 409 once done or failed)
GET    /v1/checks?limit=&offset=    the history, newest first
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from verity.service.auth import Caller, rate_limited, service_of
from verity.service.core import Service
from verity.service.errors import ApiError
from verity.service.jobs import Job
from verity.service.requests import CheckRequest, ErrorBody
from verity.service.responses import JobList, JobSummaryView, JobView

# The longest a POST may hold its connection waiting for the verdict.
MAX_WAIT_SECONDS = 60.0
MAX_PAGE = 100
MAX_ID_CHARS = 64

router = APIRouter(prefix="/v1", tags=["checks"])


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for error answers, all with the one error body."""
    said = {
        400: "A name the server does not offer, or a request it cannot run",
        401: "An API key is needed, or the one sent is not valid",
        404: "No check with this id (for this key)",
        409: "The check has already ended (done or failed), or has no such result",
        413: "The request body is over the size limit",
        422: "The request is invalid; `field` names where",
        429: "Too many checks: the queue is full or the key's rate is spent; see Retry-After",
        503: "The server is shutting down",
    }
    return {s: {"model": ErrorBody, "description": said[s]} for s in statuses}


JobId = Annotated[str, Path(max_length=MAX_ID_CHARS, description="The id the check was given")]


@router.post(
    "/checks",
    status_code=202,
    response_model=JobView,
    responses={
        200: {"model": JobView, "description": "The check ended within `wait` seconds"},
        **errors(400, 401, 413, 422, 429, 503),
    },
)
async def submit_check(
    body: CheckRequest,
    request: Request,
    response: Response,
    caller: Caller,
    wait: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_WAIT_SECONDS,
            description="Seconds to wait for the check to end before answering",
        ),
    ] = 0.0,
) -> JobView:
    """Queue a check of a claim, an article, a URL or a document; 202 with the job.

    A document's claims are extracted and each checked with a claim method; the job's
    ``verdict`` is then the document's result (as ``GET /v1/checks/{id}/document``).
    """
    service = service_of(request)
    rate_limited(service, caller)
    job = await run_in_threadpool(lambda: service.submit(body, key=caller))
    response.headers["Location"] = f"/v1/checks/{job.id}"
    if wait > 0:
        job = await wait_for_end(service, job.id, wait)
    if job.final:
        response.status_code = 200
    return JobView.of(job)


async def wait_for_end(service: Service, job_id: str, seconds: float) -> Job:
    """The job once it has ended, or as it is after ``seconds``; woken when a run ends."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    # Woken by the end of a run only: each progress event would be a read of the job
    # in a worker thread, several per check, to learn that it has not ended.
    async with service.changes.awatch(job_id, ends_only=True) as watcher:
        while True:
            job = await run_in_threadpool(service.job, job_id)
            left = deadline - loop.time()
            if job.final or left <= 0 or service.stopping:
                return job
            await watcher.wait(left)


@router.get("/checks/{job_id}", response_model=JobView, responses=errors(401, 404, 422))
def get_check(job_id: JobId, request: Request, caller: Caller) -> JobView:
    """The check: its status and, once done, its verdict (as ``verity check --json``)."""
    return JobView.of(service_of(request).job(job_id, key=caller))


@router.delete("/checks/{job_id}", response_model=JobView, responses=errors(401, 404, 409, 422))
def cancel_check(job_id: JobId, request: Request, caller: Caller) -> JobView:
    """Cancel a queued or running check (a running one stops at its next step).

    Cancelling a cancelled check again answers 200 with it, as the first time did: a
    client that retries a DELETE whose answer it lost gets the same answer. A check that
    ended otherwise (done, failed) is 409.
    """
    service = service_of(request)
    job = service.job(job_id, key=caller)
    if not job.final:
        job = service.pool.cancel(job_id, key=caller) or job
    if job.status != "cancelled":
        raise ApiError(409, "ended", f"the check has already ended ({job.status})")
    return JobView.of(job)


@router.get("/checks", response_model=JobList, responses=errors(401, 422))
def list_checks(
    request: Request,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> JobList:
    """Past and current checks, newest first (with keys on, the caller's own)."""
    store = service_of(request).store
    return JobList(
        items=[JobSummaryView.of(j) for j in store.history(limit=limit, offset=offset, key=caller)],
        total=store.count(key=caller),
        limit=limit,
        offset=offset,
    )
