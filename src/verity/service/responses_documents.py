"""The shape of a document job's result, for the OpenAPI schema and ``GET .../document``.

    DocumentResult.model_validate(job.verdict)    # a done document job's verdict

A document job's ``verdict`` is `verity.documents.types.DocumentVerdict.to_json_dict`:
the document, the summary, a note per sentence and each claim with where it was said
(character offsets into the text), its status and its verdict (the JSON of ``verity
check --json``, or None when its check failed).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from verity.documents.types import DocumentSummary
from verity.domain import Usage
from verity.extraction.types import SentenceNote, Span


class DocumentHead(BaseModel):
    """The document as checked: its text, its title, URL and date, its checksum."""

    title: str
    url: str | None
    date: str | None
    text: str
    checksum: str


class ClaimRecord(BaseModel):
    """One claim: its text and spans, then what its check gave.

    ``spans`` are character offsets into the document's text: the sentences it was said
    in, then any that gave it context. ``status`` is ``checked`` or ``failed``; ``label``
    the verdict's label, or ``failed``; ``verdict`` the claim's verdict as ``verity check
    --json`` gives it.
    """

    # What extraction adds about a claim later (its sentence, its check-worthiness) is
    # passed on, not refused.
    model_config = ConfigDict(extra="allow")

    id: str
    text: str
    spans: list[Span]
    sentence_index: int
    sentences: list[int]
    status: str
    label: str
    error: str | None
    verdict: dict[str, Any] | None


class DocumentResult(BaseModel):
    """A document checked claim by claim with one claim method."""

    # Fields a later version adds are passed on, not dropped.
    model_config = ConfigDict(extra="allow")

    document: DocumentHead
    method: str
    extractor: str
    settings: dict[str, Any]
    summary: DocumentSummary
    sentences: list[SentenceNote]
    claims: list[ClaimRecord]
    article: dict[str, Any] | None
    article_error: str | None
    extraction_usage: Usage
    usage: Usage
    complete: bool
