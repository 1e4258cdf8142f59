"""Claims and articles from what users hand in: an article file, a JSON record.

    article = read_article(Path("news.json"))
    article = parse_article(sys.stdin.read(), "<stdin>")
    subject = subject_from_record({"claim": "Paris is in France.", "date": "2020-01-01"})

An article file is JSON when its content, stripped, starts with ``{``: an object with
``text`` and optional ``title``, ``url`` and ``date`` (YYYY-MM-DD); other keys are
ignored. Anything else is plain text: the whole of it is the article's text, with no
title. A record (a batch line, an article file) is an article when it has ``text`` and
no ``claim``, else a claim with optional ``date`` and ``speaker``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verity.domain import Article, Claim
from verity.errors import BadInputError

_RULES = {
    "claim": "a non-empty string",
    "text": "a non-empty string",
    "title": "a string",
    "url": "a string",
    "speaker": "a string",
    "date": "a date YYYY-MM-DD",
}


def subject_from_record(record: Mapping[str, Any]) -> Claim | Article:
    """The claim or article a JSON object describes; `BadInputError` says what is wrong."""
    if "claim" not in record and "text" in record:
        return article_from_record(record)
    if "claim" not in record:
        raise BadInputError("no 'claim' (for a claim) or 'text' (for an article)")
    try:
        return Claim(
            text=record["claim"] if record["claim"] is not None else "",
            date=record.get("date"),
            speaker=record.get("speaker"),
        )
    except ValidationError as exc:
        raise _invalid(exc, {"text": "claim"}) from exc


def article_from_record(record: Mapping[str, Any]) -> Article:
    """The article a JSON object with ``text`` and optional title, url, date describes."""
    if "text" not in record:
        raise BadInputError("no 'text': an article needs its text")
    try:
        return Article(
            title=record["title"] if record.get("title") is not None else "",
            text=record["text"] if record["text"] is not None else "",
            url=record.get("url"),
            date=record.get("date"),
        )
    except ValidationError as exc:
        raise _invalid(exc) from exc


def parse_article(content: str, name: str) -> Article:
    """An article from a file's content: JSON if it starts with ``{``, else plain text.

    ``name`` (a path, ``<stdin>``) is how errors refer to the content.

        parse_article('{"title": "T", "text": "Body."}', "news.json").title   # 'T'
    """
    stripped = content.strip()
    if not stripped:
        raise BadInputError(f"article {name} is empty")
    if not stripped.startswith("{"):
        return Article(text=stripped)
    try:
        record = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise BadInputError(
            f"article {name} starts with '{{' but is not valid JSON: {exc.msg} "
            f"(line {exc.lineno}, column {exc.colno})"
        ) from exc
    try:
        return article_from_record(record)
    except BadInputError as exc:
        raise BadInputError(f"article {name}: {exc}") from exc


def read_article(path: Path) -> Article:
    """The article in a UTF-8 file, plain text or JSON (see `parse_article`)."""
    try:
        # utf-8-sig: a byte-order mark would otherwise hide a JSON file's leading brace.
        content = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise BadInputError(f"cannot read article {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise BadInputError(f"article {path} is not valid UTF-8 (byte {exc.start})") from exc
    return parse_article(content, str(path))


def _invalid(exc: ValidationError, names: Mapping[str, str] | None = None) -> BadInputError:
    """One message naming each bad field, under the name the record gives it."""
    problems = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else "record"
        field = (names or {}).get(field, field)
        shown = repr(error.get("input"))
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        problems.append(f"'{field}' must be {_RULES.get(field, 'valid')}, not {shown}")
    return BadInputError("; ".join(dict.fromkeys(problems)))
