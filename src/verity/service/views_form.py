"""The check form of the web page: its fields, and the API request they stand for.

    fields = parse_form(b"kind=claim&claim=The+Eiffel+Tower+is+in+Paris.&method=rag")
    form = form_view(fields)               # the values, to show the form again
    request = check_request(fields)        # a CheckRequest, or FormError(ErrorDetail)

The form sends exactly what a client of ``POST /v1/checks`` would: the tab chosen
(``kind``) says which of claim, article, URL or document is the subject, and only that
one is sent; empty fields are left out so that the server's defaults apply. A mistake is the
API's own error (status, code, message, field) so the page can show it by the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from pydantic import ValidationError

from verity.service.requests import CheckRequest, ErrorDetail
from verity.service.views_jobs import FormView

#: Fields the form has; anything else in a body is ignored.
FIELDS = (
    "kind",
    "claim",
    "speaker",
    "date",
    "article_title",
    "article_text",
    "article_url",
    "article_date",
    "url",
    "document_text",
    "document_title",
    "document_date",
    "document_method",
    "concurrency",
    "with_zofia",
    "method",
    "model",
    "api_key",
)
KINDS = ("claim", "article", "url", "document")
MAX_FIELDS = 64
_EMPTY = {
    "claim": "The claim is empty: write the sentence to check.",
    "article": "The article's text is empty: paste the text to check.",
    "url": "The URL is empty: give the address of a news page.",
    "document": "The document's text is empty: paste the text whose claims to check.",
}


class FormError(Exception):
    """A form that cannot become a request; ``detail`` is the API's error for it."""

    def __init__(self, detail: ErrorDetail) -> None:
        super().__init__(detail.message)
        self.detail = detail


Fields = Mapping[str, str | list[str]]


def parse_form(body: bytes) -> dict[str, str | list[str]]:
    """An ``application/x-www-form-urlencoded`` body as fields (``sources`` a list)."""
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FIELDS)
    except UnicodeDecodeError as exc:
        # The decoder's message quotes the bytes; what was sent is never repeated.
        raise FormError(
            ErrorDetail(status=400, code="bad_form", message="the form is not UTF-8 text")
        ) from exc
    except ValueError as exc:  # more fields than MAX_FIELDS
        raise FormError(
            ErrorDetail(
                status=400,
                code="bad_form",
                message=f"the form has more than {MAX_FIELDS} fields",
            )
        ) from exc
    fields: dict[str, str | list[str]] = {}
    sources: list[str] = []
    for name, value in pairs:
        if name == "sources":
            sources.append(value)
        elif name in FIELDS:
            fields[name] = value
    fields["sources"] = sources
    return fields


def _one(fields: Fields, name: str) -> str:
    value = fields.get(name, "")
    return value if isinstance(value, str) else ""


def form_view(fields: Fields) -> FormView:
    """The form as submitted, to show it again (the API key never shown back)."""
    kind = _one(fields, "kind")
    values = {n: _one(fields, n) for n in FIELDS if n not in ("kind", "api_key")}
    chosen = fields.get("sources", [])
    return FormView(
        kind=kind if kind in KINDS else "claim",
        values=values,
        sources=tuple(chosen) if isinstance(chosen, list) else (),
    )


def _optional(fields: Fields, name: str) -> str | None:
    value = _one(fields, name).strip()
    return value or None


def check_request(fields: Fields) -> CheckRequest:
    """The API request the form stands for; `FormError` with the API's error if none."""
    kind = _one(fields, "kind") or "claim"
    if kind not in KINDS:
        raise FormError(
            ErrorDetail(
                status=422,
                code="invalid",
                message="choose claim, article, URL or document",
                field="kind",
                valid=list(KINDS),
            )
        )
    main = {"claim": "claim", "article": "article_text", "url": "url", "document": "document_text"}
    if not _one(fields, main[kind]).strip():
        field = {"article": "article.text", "document": "document.text"}.get(kind, kind)
        raise FormError(ErrorDetail(status=422, code="invalid", message=_EMPTY[kind], field=field))
    body: dict[str, Any] = {}
    if kind == "claim":
        body["claim"] = _one(fields, "claim")
        body["speaker"] = _optional(fields, "speaker")
        body["date"] = _optional(fields, "date")
    elif kind == "article":
        body["article"] = {
            "title": _one(fields, "article_title").strip(),
            "text": _one(fields, "article_text"),
            "url": _optional(fields, "article_url"),
            "date": _optional(fields, "article_date"),
        }
    elif kind == "url":
        body["url"] = _one(fields, "url").strip()
    body["method"] = _optional(fields, "method")
    if kind == "document":
        body.update(_document(fields))
    body["model"] = _optional(fields, "model")
    sources = [s for s in fields.get("sources", []) if isinstance(s, str) and s.strip()]
    body["sources"] = sources or None
    try:
        return CheckRequest.model_validate(_drop_none(body))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        message = str(first["msg"]).removeprefix("Value error, ")
        raise FormError(
            ErrorDetail(status=422, code="invalid", message=message, field=where)
        ) from exc


def _document(fields: Fields) -> dict[str, Any]:
    """The document tab's fields: its own method select (claim methods only), the rest."""
    concurrency = _optional(fields, "concurrency")
    return {
        "document": {
            "title": _one(fields, "document_title").strip(),
            "text": _one(fields, "document_text"),
            "date": _optional(fields, "document_date"),
        },
        # The tab's own select lists claim methods; the shared one is not read for it.
        "method": _optional(fields, "document_method"),
        # Not a number: left to the request's validation, which names the field.
        "concurrency": concurrency,
        "with": "zofia" if _one(fields, "with_zofia") else None,
    }


def _drop_none(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in body.items():
        if isinstance(value, dict):
            value = _drop_none(value)
        if value is not None:
            out[key] = value
    return out
