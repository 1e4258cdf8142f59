"""The document part of a check request: a text checked claim by claim.

    {"document": {"text": "...", "title": "...", "date": "2024-05-01"},
     "method": "rag", "concurrency": 4, "with": "zofia", "extractor": "single"}

A document's text is capped here as an article's is (the server's own limit,
``[limits] article_chars``, is checked when the job is submitted). Its claims are found by
the extractor (`verity.extraction`) and each is checked with a claim method.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

# The same hard caps as an article's (verity.service.requests): a document is an article
# read claim by claim.
MAX_TEXT_CHARS = 1_000_000
MAX_TITLE_CHARS = 2_000
MAX_URL_CHARS = 2_048
# Claims checked at once that a request may ask for at all; the server's own limit
# (`ServiceSettings.document_concurrency`) is lower and wins.
MAX_CONCURRENCY = 1_000

ExtractorName = Literal["claimify", "single"]
_Url = Annotated[
    str,
    StringConstraints(max_length=MAX_URL_CHARS, pattern=r"^[Hh][Tt][Tt][Pp][Ss]?://\S+$"),
]


class DocumentInput(BaseModel):
    """A text whose claims are checked one by one, with its title, URL and date if known.

    ``date`` is when it was written: the cutoff of every claim's retrieval.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    title: str = Field(default="", max_length=MAX_TITLE_CHARS)
    url: _Url | None = None
    date: dt.date | None = None

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the document's text is empty")
        return value


_SUBJECTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("claim", {"type": "string"}),
    ("article", {"type": "object"}),
    ("url", {"type": "string"}),
    ("document", {"type": "object"}),
)
_DOCUMENT_ONLY = ("concurrency", "with", "extractor")


def one_subject_schema(schema: dict[str, Any]) -> None:
    """Say in the JSON schema what the request checks: one subject, and whose options are whose.

    A speaker is for a claim only; concurrency, ``with`` and the extractor for a document.
    """
    null = {"type": "null"}
    choices = []
    for given, _ in _SUBJECTS:
        properties: dict[str, Any] = {
            name: (kind if name == given else null) for name, kind in _SUBJECTS
        }
        if given != "claim":
            properties["speaker"] = null
        if given != "document":
            properties.update({name: null for name in _DOCUMENT_ONLY})
        choices.append({"required": [given], "properties": properties})
    schema["oneOf"] = choices
