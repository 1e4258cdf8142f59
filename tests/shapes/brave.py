"""Brave Search API payloads in the shape of its documented `WebSearchApiResponse`."""

from __future__ import annotations

from typing import Any


def brave_result(
    title: str, url: str, description: str | None = None, **extra: Any
) -> dict[str, Any]:
    """One web result in the shape of Brave's `SearchResult`."""
    return {
        "type": "search_result",
        "title": title,
        "url": url,
        "is_source_local": False,
        "is_source_both": False,
        "description": f"About {title}." if description is None else description,
        "profile": {"name": "Example", "url": url, "long_name": "example.org", "img": ""},
        "language": "en",
        "family_friendly": True,
        "meta_url": {"scheme": "https", "netloc": "example.org", "path": "› wiki"},
        **extra,
    }


def brave_payload(*results: dict[str, Any]) -> dict[str, Any]:
    """A search response whose web results are ``results``."""
    return {
        "type": "search",
        "query": {"original": "eiffel tower", "show_strict_warning": False, "spellcheck_off": True},
        "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": False}]},
        "web": {"type": "search", "results": list(results), "family_friendly": True},
    }
