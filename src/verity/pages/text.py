"""The text of a fetched page: its bytes decoded, its main text, title and date extracted.

    html = decode_html(body, "text/html; charset=iso-8859-1")
    title, text, date = extract(html, url, shown_url)
    title, text = fit(title, text, limits)        # within verity's article limit

`verity.pages` fetches; this module only reads what was fetched (see its docstring for
the rules: which charset wins, what trafilatura keeps, how a long page is cut).
"""

from __future__ import annotations

import codecs
import datetime as dt
import re

from verity.errors import BadInputError, ConfigError
from verity.limits import Limits

_MAX_TITLE_CHARS = 500
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([a-z0-9_.:+-]+)", re.IGNORECASE)


def decode_html(body: bytes, content_type: str = "") -> str:
    """The page's text: decoded as its byte-order mark, header or ``<meta>`` says.

    Without any of them, UTF-8 when the bytes are valid UTF-8, else windows-1252.
    Undecodable bytes become U+FFFD rather than failing.

        decode_html("café".encode("latin-1"), "text/html; charset=iso-8859-1")   # 'café'
    """
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(encoding, "replace")
    declared = _known_encoding(_header_charset(content_type))
    if declared is None:
        found = _META_CHARSET.search(body[:1024])
        declared = _known_encoding(found.group(1).decode("ascii") if found else None)
        # A page cannot describe itself in UTF-16 in ASCII bytes: the tag is wrong.
        if declared is not None and declared.startswith("utf-16"):
            declared = "utf-8"
    if declared is not None:
        return body.decode(declared, "replace")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode("cp1252", "replace")


def _header_charset(content_type: str) -> str | None:
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("\"'")
    return None


def _known_encoding(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def extract(html: str, url: str, shown: str) -> tuple[str, str, dt.date | None]:
    """Title, main text and date of the page, by trafilatura; `BadInputError` if no text."""
    try:
        import trafilatura
    except ImportError as exc:
        raise ConfigError(
            "reading a web page needs trafilatura: pip install 'verity[service]'"
        ) from exc
    try:
        document = trafilatura.bare_extraction(
            html, url=url, with_metadata=True, include_comments=False
        )
    # The page is hostile input to a parser: whatever it makes lxml or trafilatura raise
    # means only that this page cannot be read.
    except Exception as exc:
        raise BadInputError(f"{shown} could not be read as HTML ({type(exc).__name__})") from exc
    text = (getattr(document, "text", None) or "").strip() if document is not None else ""
    if not text:
        raise BadInputError(f"found no article text at {shown}")
    title = getattr(document, "title", None) or ""
    return " ".join(str(title).split()), text, _date(getattr(document, "date", None))


def _date(value: object) -> dt.date | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        return None


def fit(title: str, text: str, limits: Limits) -> tuple[str, str]:
    """Title and text cut so that together they are within the article limit."""
    title = _cut(title, min(_MAX_TITLE_CHARS, limits.article_chars // 2))
    return title, _cut(text, limits.article_chars - len(title))


def _cut(text: str, size: int) -> str:
    """At most ``size`` characters, ending at a space when one is near the end."""
    if len(text) <= size:
        return text
    cut = text[:size]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    if space >= size * 0.9:
        cut = cut[:space]
    return cut.rstrip()
