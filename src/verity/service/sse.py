"""A check's progress as server-sent events: ``GET /v1/checks/{id}/events``.

    id: 3
    event: call.start
    data: {"seq": 3, "kind": "call.start", "at": 0.41, "message": "...", ...}

    event: end
    data: {"status": "done", "label": "SUPPORTED", "error": null}

Each `verity.domain.Event` of the check is sent with its number as the SSE id and its
kind as the SSE event name. A client that joins late gets every event from the first;
one that reconnects with ``Last-Event-ID`` gets those after it. The stream ends with an
``end`` event carrying the job's final status. While nothing happens, a comment line is
sent every `ServiceSettings.heartbeat_seconds`, so proxies keep the connection open.

The stream is woken by the job's changes (`verity.service.changes`), holding no thread
while it waits. When the server shuts down, open streams end at once, without an ``end``
event: a browser's ``EventSource`` then reconnects to the restarted server, which sends
the rest. (A job that ran again after a crash numbers its events from 1 again, so such a
client may miss the first events of the new run; the verdict is unaffected.)
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from verity.service.auth import Caller, service_of
from verity.service.core import Service
from verity.service.jobs import Job
from verity.service.routes_checks import JobId, errors

# A browser's EventSource waits this long before reconnecting to a dropped stream.
RETRY_MS = 2_000

router = APIRouter(prefix="/v1", tags=["checks"])


@router.get(
    "/checks/{job_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "Server-sent events: each progress event, then `end`",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        **errors(401, 404, 422),
    },
)
async def check_events(
    job_id: JobId,
    request: Request,
    caller: Caller,
    last_event_id: Annotated[
        str | None,
        Header(
            alias="Last-Event-ID",
            max_length=32,
            description="Resume after this event (what EventSource sends on reconnecting)",
        ),
    ] = None,
) -> StreamingResponse:
    """The check's progress, live, from the start (or after ``Last-Event-ID``)."""
    service = service_of(request)
    await run_in_threadpool(lambda: service.job(job_id, key=caller))  # 404 before streaming
    return StreamingResponse(
        stream(service, job_id, after=resume_point(last_event_id)),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def resume_point(last_event_id: str | None) -> int:
    """The event number to resume after; 0 (the start) for anything but a number."""
    try:
        return max(0, int((last_event_id or "0").strip()))
    except ValueError:
        return 0


async def stream(service: Service, job_id: str, *, after: int = 0) -> AsyncIterator[str]:
    """The SSE text of a job's events after ``after``, until it ends or the server stops."""
    yield f"retry: {RETRY_MS}\n\n"
    async with service.changes.awatch(job_id) as watcher:
        while not service.stopping:
            # The status is read before the events: events stored before it ended are
            # all in the read that follows, so `end` comes after the last of them.
            job = await run_in_threadpool(service.store.get, job_id)
            if job is None:
                return
            for found in await run_in_threadpool(service.store.events, job_id, after):
                yield f"id: {found.seq}\nevent: {found.kind}\ndata: {found.json}\n\n"
                after = found.seq
            if job.final:
                yield end_frame(job)
                return
            if not await watcher.wait(service.settings.heartbeat_seconds):
                yield ": still running\n\n"


def end_frame(job: Job) -> str:
    """The last frame of a stream: how the job ended."""
    data = {
        "status": job.status,
        "label": job.label,
        "error": job.error.model_dump() if job.error else None,
    }
    return f"event: end\ndata: {json.dumps(data)}\n\n"
