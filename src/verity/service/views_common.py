"""Reading untrusted JSON for the web pages: typed values, capped, with safe fallbacks.

    text(record.get("title"), cap=200)        # '' for None or a non-string, cut with "…"
    number(record.get("confidence"))          # a float, or None for anything else
    safe_href("javascript:alert(1)")          # None: only http(s) links are drawn
    wikidata_href("Q76")                      # 'https://www.wikidata.org/wiki/Q76'
    wikidata_href("P26")                      # '.../wiki/Property:P26'

A verdict stored by the service went through a method's own code, but its texts came from
claims, web pages, knowledge graphs and model answers, and the stored JSON itself may be
from an older version: the views read it field by field with these helpers, so that a
missing key or a value of the wrong type shows as a blank, never as an error page. Texts
are only cut here; escaping them is the templates' job (Jinja2 autoescape).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from verity.redact import redact_url

#: Longest text of one field shown on a page (an explanation, a debate turn).
TEXT_CAP = 4000
#: Most items of one list shown (evidence, iterations, facts, calls).
LIST_CAP = 200
_ENTITY = re.compile(r"[QPL][1-9][0-9]{0,11}")


def text(value: object, cap: int = TEXT_CAP) -> str:
    """A string field as text, cut to ``cap`` characters; numbers as written; else ''."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and not isinstance(value, bool):
        shown = str(value)
    elif isinstance(value, str):
        shown = value
    else:
        return ""
    return shown if len(shown) <= cap else shown[: cap - 1] + "…"


def number(value: object) -> float | None:
    """A finite number, or None (booleans are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def integer(value: object) -> int:
    """A whole number, 0 for anything else."""
    found = number(value)
    return int(found) if found is not None else 0


def flag(value: object) -> bool | None:
    """A boolean, or None for anything else."""
    return value if isinstance(value, bool) else None


def fixed(value: object, places: int = 2) -> str:
    """A number with ``places`` decimals, or '-' when there is none."""
    found = number(value)
    return "-" if found is None else f"{found:.{places}f}"


def fraction(value: object) -> float | None:
    """A number between 0 and 1 (for a meter), or None."""
    found = number(value)
    return found if found is not None and 0.0 <= found <= 1.0 else None


def mapping(value: object) -> Mapping[str, Any]:
    """A JSON object, or an empty one."""
    return value if isinstance(value, Mapping) else {}


def records(value: object, cap: int = LIST_CAP) -> list[Mapping[str, Any]]:
    """The JSON objects of a list, at most ``cap`` of them; other items are skipped."""
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        return []
    return [item for item in value if isinstance(item, Mapping)][:cap]


def strings(value: object, cap: int = LIST_CAP, size: int = 300) -> list[str]:
    """The non-empty strings (or numbers) of a list, each cut to ``size``."""
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        return []
    found = [text(item, size) for item in value]
    return [item for item in found if item][:cap]


def safe_href(value: object) -> str | None:
    """The URL if a browser may follow it from our page: http or https with a host.

    Anything else (``javascript:``, ``data:``, a relative path, a malformed URL) is shown
    as text only. Credentials in the URL are masked, as everywhere verity shows a URL.
    """
    if not isinstance(value, str) or len(value) > 2000:
        return None
    candidate = value.strip()
    try:
        parts = urlsplit(candidate)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    if any(c.isspace() or ord(c) < 32 for c in candidate):
        return None
    return redact_url(candidate)


def wikidata_href(entity: object) -> str | None:
    """The Wikidata page of an item or property id, or None for anything else."""
    if not isinstance(entity, str) or not _ENTITY.fullmatch(entity):
        return None
    namespace = {"Q": "", "P": "Property:", "L": "Lexeme:"}[entity[0]]
    return f"https://www.wikidata.org/wiki/{namespace}{entity}"


def yes_no(value: object) -> str:
    """A boolean as 'yes' or 'no', '-' when unset."""
    found = flag(value)
    return "-" if found is None else ("yes" if found else "no")
