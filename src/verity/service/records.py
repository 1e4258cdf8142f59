"""What the job store keeps of a job: its status, its request, its verdict, its events.

    job.status            # queued | running | done | failed | cancelled
    job.final             # done, failed or cancelled
    job.verdict           # the JSON of `verity check --json`, once done

`verity.service.jobs.JobStore` makes and reads these; the API shows them with their links
(`verity.service.responses`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from verity.service.errors import JobError

Status = Literal["queued", "running", "done", "failed", "cancelled"]
FINAL: tuple[Status, ...] = ("done", "failed", "cancelled")
CANCELLED = JobError(code="cancelled", message="cancelled by the client")


class JobSummary(BaseModel):
    """A job without its request and verdict: what a history list shows."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    status: Status
    method: str | None
    summary: str
    label: str | None = None
    error: JobError | None = None
    created: dt.datetime
    started: dt.datetime | None = None
    finished: dt.datetime | None = None
    runs: int = 0
    key: str | None = None

    @property
    def final(self) -> bool:
        """Whether the job has ended (done, failed or cancelled)."""
        return self.status in FINAL


class Job(JobSummary):
    """A job whole: the request as it was sent and, once done, the verdict.

    ``verdict`` is the JSON ``verity check --json`` prints (`Verdict.to_json_dict`); for
    a document, its result (`DocumentVerdict.to_json_dict`, typed as
    `verity.service.responses_documents.DocumentResult`).
    ``partial`` is what a failed check had done before it stopped (its budget spent, a
    model that gave no valid answer): ``{"usage": ..., "trace": ...}``, else None.
    """

    request: dict[str, Any]
    verdict: dict[str, Any] | None = None
    partial: dict[str, Any] | None = None


class StoredEvent(NamedTuple):
    """One progress event as stored: its number, its kind and the `Event` as JSON text."""

    seq: int
    kind: str
    json: str
