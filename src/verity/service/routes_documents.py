"""The routes of a document job: its typed result and its Markdown report.

GET /v1/checks/{id}/document     the result of a done document job (the job's verdict)
GET /v1/checks/{id}/report.md    its report as Markdown, to save (every text escaped)

A document is submitted like any check (``POST /v1/checks`` with ``document``) and its
progress is the job's event stream, where ``document.extracted`` and ``document.claim``
milestones say how many claims were found and each claim's outcome as it comes.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from verity.service.auth import Caller, service_of
from verity.service.errors import ApiError
from verity.service.jobs import Job
from verity.service.responses_documents import DocumentResult
from verity.service.routes_checks import JobId, errors

router = APIRouter(prefix="/v1", tags=["checks"])
_NOT_A_DOCUMENT = "this check is not of a document"


def done_document(job: Job) -> dict[str, object]:
    """A document job's result; `ApiError` 409 if it is not a document's, or not done."""
    if not isinstance(job.request.get("document"), dict):
        raise ApiError(409, "not_a_document", _NOT_A_DOCUMENT)
    if job.status != "done" or job.verdict is None:
        raise ApiError(409, "not_done", f"the check is {job.status}: there is no result yet")
    return job.verdict


@router.get(
    "/checks/{job_id}/document",
    response_model=DocumentResult,
    responses=errors(401, 404, 409, 422),
)
def get_document(job_id: JobId, request: Request, caller: Caller) -> DocumentResult:
    """A done document check's result: each claim with its spans and its verdict."""
    job = service_of(request).job(job_id, key=caller)
    return DocumentResult.model_validate(done_document(job))


@router.get(
    "/checks/{job_id}/report.md",
    response_class=Response,
    responses={
        200: {
            "description": "The Markdown report, as an attachment",
            "content": {"text/markdown": {"schema": {"type": "string"}}},
        },
        **errors(401, 404, 409, 422),
    },
)
def get_report(job_id: JobId, request: Request, caller: Caller) -> Response:
    """A done document check's report: the summary, then each claim where it was said."""
    service = service_of(request)
    job = service.job(job_id, key=caller)
    done_document(job)
    text = service.store.report(job.id, key=caller)
    if text is None:
        raise ApiError(409, "no_report", "this check kept no report")
    return Response(
        text,
        media_type="text/markdown; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="verity-{job.id}.md"'},
    )
