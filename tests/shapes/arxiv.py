"""arXiv API answers in the shape of the Atom feeds of its User's Manual.

Shape: https://info.arxiv.org/help/api/user-manual.html, §3.3 (feed and entry elements,
the ``opensearch`` and ``arxiv`` extension elements) and §3.4 (errors come as a feed with
one entry whose id is under ``http://arxiv.org/api/errors``).
"""

from __future__ import annotations

from xml.sax.saxutils import escape


def arxiv_entry(
    arxiv_id: str,
    title: str,
    summary: str,
    *,
    published: str = "2019-03-01T17:00:00Z",
    updated: str | None = None,
    authors: tuple[str, ...] = ("Ada Lovelace", "Alan Turing"),
    category: str = "cs.CL",
    doi: str | None = None,
    journal_ref: str | None = None,
) -> str:
    """One ``<entry>``; text is escaped as a server would, so markup arrives as text."""
    people = "".join(
        f"<author><name>{escape(name)}</name>"
        "<arxiv:affiliation>Somewhere</arxiv:affiliation></author>"
        for name in authors
    )
    extras = ""
    if doi is not None:
        extras += f"<arxiv:doi>{escape(doi)}</arxiv:doi>"
        extras += f'<link title="doi" href="https://doi.org/{escape(doi)}" rel="related"/>'
    if journal_ref is not None:
        extras += f"<arxiv:journal_ref>{escape(journal_ref)}</arxiv:journal_ref>"
    return (
        "<entry>"
        f"<id>http://arxiv.org/abs/{arxiv_id}</id>"
        f"<updated>{updated or published}</updated>"
        f"<published>{published}</published>"
        f"<title>{escape(title)}</title>"
        f"<summary>{escape(summary)}</summary>"
        f"{people}"
        "<arxiv:comment>12 pages, 3 figures</arxiv:comment>"
        f"{extras}"
        f'<link href="http://arxiv.org/abs/{arxiv_id}" rel="alternate" type="text/html"/>'
        f'<link title="pdf" href="http://arxiv.org/pdf/{arxiv_id}" rel="related"'
        ' type="application/pdf"/>'
        f'<arxiv:primary_category term="{category}" scheme="http://arxiv.org/schemas/atom"/>'
        f'<category term="{category}" scheme="http://arxiv.org/schemas/atom"/>'
        "</entry>"
    )


def arxiv_feed(*entries: str, total: int | None = None) -> bytes:
    """A whole feed holding ``entries``, as UTF-8 bytes."""
    count = len(entries) if total is None else total
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<feed xmlns="http://www.w3.org/2005/Atom"'
        ' xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"'
        ' xmlns:arxiv="http://arxiv.org/schemas/atom">'
        '<link href="http://arxiv.org/api/query?search_query%3Dall%3Aelectron" rel="self"'
        ' type="application/atom+xml"/>'
        '<title type="html">ArXiv Query: search_query=all:electron</title>'
        "<id>http://arxiv.org/api/cHxbiOdZaP56ODnBPIenZhzg5f8</id>"
        "<updated>2024-05-01T00:00:00-04:00</updated>"
        f"<opensearch:totalResults>{count}</opensearch:totalResults>"
        "<opensearch:startIndex>0</opensearch:startIndex>"
        f"<opensearch:itemsPerPage>{len(entries)}</opensearch:itemsPerPage>"
        + "".join(entries)
        + "</feed>"
    ).encode()


def arxiv_error_feed(message: str) -> bytes:
    """The feed arXiv answers a malformed request with (§3.4)."""
    return arxiv_feed(
        "<entry>"
        "<id>http://arxiv.org/api/errors#incorrect_id_format_for_1234.12345</id>"
        "<title>Error</title>"
        f"<summary>{escape(message)}</summary>"
        "<updated>2024-05-01T00:00:00-04:00</updated>"
        '<link href="http://arxiv.org/api/errors#incorrect_id_format" rel="alternate"'
        ' type="text/html"/>'
        "<author><name>arXiv api core</name></author>"
        "</entry>"
    )
