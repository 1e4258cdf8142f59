"""What a client sends to ``POST /v1/checks``, and the one shape of every error answer.

    request = CheckRequest.model_validate({"claim": "The Eiffel Tower is in Paris."})
    request = CheckRequest.model_validate(
        {"article": {"title": "...", "text": "..."}, "method": "zofia"}
    )
    request = CheckRequest.model_validate({"url": "https://news.example/story"})
    request = CheckRequest.model_validate({"claim": "...", "budget": {"calls": 20}})
    request = CheckRequest.model_validate({"document": {"text": "..."}, "concurrency": 4})
    request.kind()          # Claim or Article: what the method will be given

A request names exactly one subject: a ``claim``, an ``article`` or a ``url`` to fetch,
or a ``document`` whose claims are extracted and checked one by one with a claim method
(`verity.service.requests_documents`).
Every text has a hard cap here, so a request that passes validation is small enough to
store; the server's own limits (`verity.limits`, which may be lower or higher) are checked
when the job is submitted. Nothing in a request is trusted: names are checked against the
registries before a job is queued, and the texts only ever reach a method as data.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from verity.domain import Article, Claim
from verity.llm.budget import Budget
from verity.redact import redact_url
from verity.service.requests_documents import (
    MAX_CONCURRENCY,
    DocumentInput,
    ExtractorName,
    one_subject_schema,
)

# Hard caps of the request itself; the body cap (1 MiB by default) bounds the whole.
MAX_CLAIM_CHARS = 100_000
MAX_ARTICLE_CHARS = 1_000_000
MAX_TITLE_CHARS = 2_000
MAX_URL_CHARS = 2_048
MAX_NAME_CHARS = 200
MAX_SOURCES = 10
MAX_SETTINGS = 50

Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]
Url = Annotated[
    str,
    StringConstraints(max_length=MAX_URL_CHARS, pattern=r"^[Hh][Tt][Tt][Pp][Ss]?://\S+$"),
]


def _not_blank(value: str | None, what: str) -> str | None:
    if value is not None and not value.strip():
        raise ValueError(f"{what} is empty")
    return value


class ArticleInput(BaseModel):
    """A news article given whole: its text, and its title, URL and date when known."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str = Field(default="", max_length=MAX_TITLE_CHARS)
    text: str = Field(min_length=1, max_length=MAX_ARTICLE_CHARS)
    url: Url | None = None
    date: dt.date | None = None

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        _not_blank(value, "the article's text")
        return value


class CheckRequest(BaseModel):
    """One check to run: a subject, and optionally the method, model, sources and settings.

    Unset names take the server's defaults (``GET /v1/methods``, ``/v1/models``,
    ``/v1/sources`` list what may be named). ``date`` is the retrieval cutoff (evidence
    published later is not used); ``speaker`` is for a claim only. ``settings`` are the
    method's own settings, as in a ``[methods.NAME]`` table of ``verity.toml``, those a
    request may set. ``grounding`` (off, on, strict) checks the explanation against what
    it cites. ``budget`` lowers what the check may spend below the server's
    ceiling for the caller (it may not raise it); the job keeps the budget it ran with.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra=one_subject_schema)

    claim: str | None = Field(default=None, min_length=1, max_length=MAX_CLAIM_CHARS)
    article: ArticleInput | None = None
    url: Url | None = None
    method: Name | None = None
    model: Name | None = None
    sources: list[Name] | None = Field(default=None, min_length=1, max_length=MAX_SOURCES)
    date: dt.date | None = None
    speaker: str | None = Field(default=None, max_length=MAX_NAME_CHARS)
    settings: dict[Name, Any] = Field(default_factory=dict, max_length=MAX_SETTINGS)
    budget: Budget | None = None
    # The explanation checked against what it cites (`verity.grounding`); unset: the
    # server's setting (on unless its verity.toml says otherwise).
    grounding: Literal["off", "on", "strict"] | None = None
    # A document's own settings: how many claims are checked at once (at most the
    # server's own limit, `ServiceSettings.document_concurrency`), an article method to
    # judge the whole text beside its claims, and the extractor's variant.
    document: DocumentInput | None = None
    concurrency: int | None = Field(default=None, ge=1, le=MAX_CONCURRENCY)
    with_article: Literal["zofia"] | None = Field(default=None, alias="with")
    extractor: ExtractorName | None = None

    @field_validator("claim")
    @classmethod
    def _claim(cls, value: str | None) -> str | None:
        return _not_blank(value, "the claim")

    @field_validator("speaker")
    @classmethod
    def _speaker(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("claim") is None:
            raise ValueError("speaker is for a claim; an article has no speaker")
        return value

    @model_validator(mode="after")
    def _one_subject(self) -> CheckRequest:
        given = [n for n in ("claim", "article", "url", "document") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of claim, article or url, or a document alone"
                + (f" (got {' and '.join(given)})" if given else "")
            )
        if self.document is None:
            extra = [n for n in ("concurrency", "with_article", "extractor") if getattr(self, n)]
            if extra:
                shown = "with" if extra[0] == "with_article" else extra[0]
                raise ValueError(f"{shown} is for a document only")
        return self

    def kind(self) -> type[Claim] | type[Article]:
        """The type of subject the method will check: a URL is fetched as an article.

        A document's claims are checked one by one, so its method is a claim method.
        """
        return Claim if self.claim is not None or self.document is not None else Article

    def method_name(self, default: str | None) -> str | None:
        """The method named, else the server's ``default`` (a document's default: rag's)."""
        if self.method is not None:
            return self.method
        # The server's default method may be an article method; a document's claims are
        # checked with the default claim method unless one is named.
        return None if self.document is not None else default

    def subject(self) -> Claim | Article | None:
        """The claim or article as given (None for a URL, which is fetched when the job runs).

        ``date``, when given, is the cutoff: for an article it wins over the article's own
        date, as ``verity check --date`` does.
        """
        if self.claim is not None:
            return Claim(text=self.claim, date=self.date, speaker=self.speaker)
        if self.article is not None:
            a = self.article
            return Article(title=a.title, text=a.text, url=a.url, date=self.date or a.date)
        return None  # a URL is fetched when the job runs; a document is checked claim by claim

    def summary(self, chars: int = 200) -> str:
        """One line naming the subject, for a history list: the claim, a title or the URL."""
        if self.claim is not None:
            line = self.claim
        elif self.article is not None:
            line = self.article.title or self.article.text
        elif self.document is not None:
            line = self.document.title or self.document.text
        else:
            line = redact_url(self.url or "")  # a history shows no token of the URL's
        line = " ".join(line.split())
        return line if len(line) <= chars else line[: chars - 1] + "…"


class ErrorDetail(BaseModel):
    """What went wrong: the HTTP status, a stable code, a message for people.

    ``field`` names the part of the request at fault (``claim``, ``article.text``,
    ``settings.k``), ``valid`` the names that would have been accepted.
    """

    status: int
    code: str
    message: str
    field: str | None = None
    valid: list[str] | None = None


class ErrorBody(BaseModel):
    """Every error answer of the API has this shape."""

    error: ErrorDetail
