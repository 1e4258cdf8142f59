"""What the API answers: jobs with their links, the history, and what the server offers.

    JobView.of(job)                  # a stored job with links to itself, its events, its page
    JobList(items=[...], total=42, limit=20, offset=0)

These are the response models of the routes, so the OpenAPI schema at ``/openapi.json``
describes every answer exactly (the API's fuzz test holds it to that).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from verity.service.jobs import Job, JobSummary

Kind = Literal["claim", "article"]


class Links(BaseModel):
    """Where to find a job: its JSON, its event stream, its web page."""

    model_config = ConfigDict(frozen=True)

    self: str
    events: str
    page: str

    @classmethod
    def of(cls, job_id: str) -> Links:
        """The links of the job with this id (paths on this server)."""
        return cls(
            self=f"/v1/checks/{job_id}",
            events=f"/v1/checks/{job_id}/events",
            page=f"/checks/{job_id}",
        )


class JobView(Job):
    """A job as the API shows it: the stored job and its links."""

    links: Links

    @classmethod
    def of(cls, job: Job) -> JobView:
        """The view of a stored job."""
        return cls(**job.model_dump(), links=Links.of(job.id))


class JobSummaryView(JobSummary):
    """A line of the history: the job without request and verdict, with its links."""

    links: Links

    @classmethod
    def of(cls, job: JobSummary) -> JobSummaryView:
        """The view of a stored job's summary."""
        return cls(**job.model_dump(), links=Links.of(job.id))


class JobList(BaseModel):
    """A page of the history, newest first."""

    items: list[JobSummaryView]
    total: int
    limit: int
    offset: int


class MethodInfo(BaseModel):
    """A method a request may name, and the settings a request may give it.

    ``settings`` maps each setting a request may set to its JSON schema (type, default,
    bounds, choices); the operator's own (files, datasets, templates) are not listed.
    """

    name: str
    description: str
    accepts: list[Kind]
    variants: list[str]
    default_for: list[Kind]
    settings: dict[str, dict[str, Any]] = Field(default_factory=dict)


class SourceInfo(BaseModel):
    """An evidence source: whether it works offline, whether a request may name it."""

    name: str
    description: str
    status: str
    offline: bool
    requestable: bool


class SourcesInfo(BaseModel):
    """The sources a check uses when none are named, and every source known."""

    default: list[str]
    sources: list[SourceInfo]


class ModelKind(BaseModel):
    """A form of model spec verity understands."""

    spec: str
    description: str


class ModelsInfo(BaseModel):
    """The model used when none is named, the specs a request may name, the spec forms."""

    default: str
    accepted: list[str]
    kinds: list[ModelKind]


class Health(BaseModel):
    """The server answers."""

    status: Literal["ok"]


class Ready(BaseModel):
    """The server takes checks: its queue and workers."""

    status: Literal["ready"]
    queued: int
    running: int
    workers: int
    queue_size: int
