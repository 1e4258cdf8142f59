"""Claims and articles from what users hand in: an article file, a JSON record.

    article = read_article(Path("news.json"))
    article = parse_article(sys.stdin.read(), "<stdin>")
    subject = subject_from_record({"claim": "Paris is in France.", "date": "2020-01-01"})

An article file is JSON when its content, stripped, starts with ``{``: an object with
``text`` and optional ``title``, ``url`` and ``date`` (YYYY-MM-DD); other keys are
ignored. Anything else is plain text: the whole of it is the article's text, with no
title. A record (a batch line, an article file) is an article when it has ``text`` and
no ``claim``, else a claim with optional ``date`` and ``speaker``. A batch line with
``document`` is a whole text to check claim by claim (`document_from_record`).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from verity.domain import Article, Claim
from verity.errors import BadInputError
from verity.extraction.types import Document
from verity.limits import Limits, check_document_size

_RULES = {
    "claim": "a non-empty string",
    "text": "a non-empty string",
    "document": "a non-empty string",
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


def document_from_record(record: Mapping[str, Any], max_chars: int | None = None) -> Document:
    """The document a batch line ``{"document": TEXT, "title", "url", "date"}`` describes.

    ``max_chars`` is the article limit, which the text and title together must keep to.
    """
    try:
        document = Document(
            text=record["document"] if record.get("document") is not None else "",
            title=record["title"] if record.get("title") is not None else "",
            url=record.get("url"),
            date=record.get("date"),
        )
    except ValidationError as exc:
        raise _invalid(exc, {"text": "document"}) from exc
    if max_chars is not None:
        check_document_size(document.text, document.title, Limits(article_chars=max_chars))
    return document


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
    except RecursionError as exc:
        raise BadInputError(f"article {name} is JSON nested too deeply to read") from exc
    except json.JSONDecodeError as exc:
        raise BadInputError(
            f"article {name} starts with '{{' but is not valid JSON: {exc.msg} "
            f"(line {exc.lineno}, column {exc.colno})"
        ) from exc
    try:
        return article_from_record(record)
    except BadInputError as exc:
        raise BadInputError(f"article {name}: {exc}") from exc


def read_article(path: Path, max_chars: int | None = None) -> Article:
    """The article in a UTF-8 file, plain text or JSON (see `parse_article`).

    With ``max_chars``, a file too large to hold an article of that length is refused
    before it is read whole.
    """
    with open_regular_file(path, "article") as fh:
        blob = _read_capped(fh, max_chars, f"article {path}")
    return parse_article(decode_utf8(blob, f"article {path}"), str(path))


def read_article_stream(stream: IO[bytes], name: str, max_chars: int | None = None) -> Article:
    """The article on a byte stream (standard input), read with the same rules as a file."""
    try:
        blob = _read_capped(stream, max_chars, f"the article on {name}")
    except OSError as exc:
        raise BadInputError(f"cannot read the article from {name}: {exc}") from exc
    return parse_article(decode_utf8(blob, f"the article on {name}"), name)


def decode_utf8(blob: bytes, what: str) -> str:
    """Bytes as UTF-8 text (a leading byte-order mark dropped); `BadInputError` naming the byte.

    The byte-order mark would otherwise hide a JSON file's leading brace.
    """
    try:
        return blob.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{what} is not valid UTF-8 (byte {exc.start + 1})") from exc


def _read_capped(fh: IO[bytes], max_chars: int | None, what: str) -> bytes:
    if max_chars is None:
        return fh.read()
    # A character is at most 4 bytes in UTF-8; JSON fields and escapes add some more.
    cap = 6 * max_chars + 65_536
    blob = fh.read(cap + 1)
    if len(blob) > cap:
        raise BadInputError(
            f"{what} is larger than {cap:,} bytes, too large for the article limit of "
            f"{max_chars:,} characters (raise it with [limits] article_chars)"
        )
    return blob


@contextmanager
def open_regular_file(path: Path, what: str) -> Iterator[IO[bytes]]:
    """Open a regular file for reading; `BadInputError` for a folder, pipe or device.

    A pipe or a device (``/dev/zero``) would block or never end; a regular file is
    what a user means to hand in.
    """
    try:
        # Non-blocking, so that opening a pipe with no writer returns instead of waiting.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise BadInputError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    # Checked on the descriptor before it becomes a file object, which a folder cannot.
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a pipe or a device?)"
        raise BadInputError(f"{what} {path} is {kind}")
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as fh:
        yield fh


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
