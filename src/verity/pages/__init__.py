"""A web page as an `Article`: fetched behind the address guard, its main text extracted.

    article = fetch_article("https://news.example.org/2024/03/05/bridge-vote")
    article.title, article.date, article.url     # url: where the redirects ended
    article.text                                 # plain text: no markup, scripts or menus

The URL comes from a user (or from anyone who can reach the service), so it is read as
hostile. What is refused, and how:

* The URL (`BadInputError`): a scheme other than http or https; a user name or password
  (``user:pass@``), which would be sent to the site; more than 2,048 characters; spaces or
  control characters; no host.
* Where it leads (`BadInputError`): the address of the host, and of every redirect's host,
  must be public: loopback, private, link-local (cloud metadata), shared, unique-local,
  multicast and reserved addresses are refused (`verity.http.guard`), with no allow-list.
  The connection is pinned (`verity.http.pinned`): it goes to an address vetted in the
  very lookup it connects by, and is refused before a socket is opened when that lookup
  answers a non-public address, so a name that resolves to a public address at the check
  and to a private one at the connect (DNS rebinding) gets no request at all. A redirect
  verity does not follow (to a non-http URL, a loop, more than 5) is refused too: trying
  again would end the same way.
* The answer: a 404 or 410 is a `BadInputError` (no page there); any other status that is
  not a success, a timeout or a failed connection is a `SourceUnavailableError` (the site,
  not the URL, failed). A body over 2 MB (after gzip) or a type other than ``text/html``
  and ``application/xhtml+xml`` is a `BadInputError`.
* Time: each request (the first, and each redirect) has 15 s for its whole answer, and no
  redirect is followed once 30 s have passed. Nothing is retried and nothing is cached:
  the user is waiting, and a page someone asks to check now is wanted as it is now.

The bytes are decoded with the charset of a byte-order mark, else of the Content-Type
header, else of a ``<meta>`` tag in the first 1,024 bytes, else as UTF-8 when they are
valid UTF-8, else as windows-1252 (what browsers assume). trafilatura then takes the main
text (comments, menus, scripts and styles left out) with its title and date. A page with
no main text is a `BadInputError`. Unlike a claim a user typed, which is refused when too
long, a page's text is cut to verity's article limit (`verity.limits.Limits`), at a space:
methods read an article's start. The article's ``url`` is the URL after redirects, with
credential-like query values masked (`verity.redact.redact_url`), since it is shown in
verdicts and traces.

``client`` replaces the client built for each call (`make_page_client`); it must carry the
guard, or nothing checks where requests go, and end in `verity.http.PinnedTransport`, or
the check can be rebound (`verity.http.make_http_client` without a ``transport`` does both).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import httpx

from verity.domain import Article
from verity.errors import BadInputError, SourceUnavailableError
from verity.http import (
    BlockedTargetError,
    DeadlineExceededError,
    PinnedTransport,
    RedirectError,
    ResponseTooLargeError,
    TargetGuard,
    make_http_client,
    no_lookup,
    resolve_host,
)
from verity.limits import Limits
from verity.pages.text import decode_html, extract, fit
from verity.redact import redact_url

__all__ = [
    "HTML_TYPES",
    "MAX_PAGE_BYTES",
    "MAX_URL_CHARS",
    "fetch_article",
    "make_page_client",
]

#: The longest URL accepted; what browsers and sitemaps keep to.
MAX_URL_CHARS = 2_048
#: The largest page accepted, after gzip or deflate decoding; news pages are far smaller.
MAX_PAGE_BYTES = 2 * 2**20
#: The media types read as HTML.
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_HOP_DEADLINE = 15.0
_CHAIN_DEADLINE = 30.0
_SHOWN_URL_CHARS = 200
_ACCEPT = "text/html,application/xhtml+xml;q=0.9"
# The request extension holding a `_Trail`. The redirect follower copies each hop's
# extensions into the next hop's, so the one object is shared by the whole chain.
_TRAIL = "verity_page_trail"
_UNSAFE_URL_CHARS = re.compile(r"[\x00-\x20\x7f]")


def fetch_article(
    url: str, *, client: httpx.Client | None = None, limits: Limits | None = None
) -> Article:
    """Fetch the page at ``url`` and return its main text, title and date as an `Article`.

    See the module documentation for what is refused; ``limits`` (default: the defaults
    with the environment's overrides) sets how much text is kept.

        article = fetch_article("https://news.example.org/2024/03/05/bridge-vote")
    """
    target = _checked_url(url)
    if client is None:
        with make_page_client() as own:
            response, final = _get(own, target)
    else:
        response, final = _get(client, target)
    html = decode_html(response.content, response.headers.get("content-type", ""))
    title, text, date = extract(html, str(final), _shown(final))
    title, text = fit(title, text, limits or Limits.from_env(os.environ))
    return Article(title=title, text=text, url=redact_url(str(final)), date=date)


def make_page_client(
    *,
    transport: httpx.BaseTransport | None = None,
    allowed_hosts: Iterable[str] = (),
    resolve: Callable[[str], Sequence[str]] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> httpx.Client:
    """The client `fetch_article` uses: the HTTP stack with the page limits, no cache.

    ``transport`` replaces the network (tests pass ``httpx.MockTransport``), and then
    names are not looked up unless ``resolve`` does it; ``allowed_hosts`` are hosts that
    may be non-public (a test's loopback server); ``clock`` times redirect chains. Each
    call of `fetch_article` builds a new one, so no cookie or address verdict passes from
    one user's page to another's.

        with make_page_client() as client:
            article = fetch_article(url, client=client)
    """
    allowed = tuple(allowed_hosts)
    lookup = resolve or (resolve_host if transport is None else no_lookup)
    # The hop notes sit under the limits, so the pinned network is built here, not by
    # make_http_client; its guard vets the address of each connection as it is made.
    network = transport or PinnedTransport(TargetGuard(allowed, resolve=lookup))
    return make_http_client(
        transport=_Hops(network, clock),
        cache=False,
        timeout=10.0,
        retries=0,
        max_bytes=MAX_PAGE_BYTES,
        deadline=_HOP_DEADLINE,
        allowed_hosts=allowed,
        resolve=lookup,
    )


@dataclass
class _Trail:
    """Where a request's redirect chain has gone so far, and when it started."""

    url: httpx.URL | None = None
    started: float | None = None


class _Hops(httpx.BaseTransport):
    """The innermost layer above the network: notes each hop's URL, ends long chains.

    It runs once per hop (the redirect follower is above it). The address an answer came
    from is not checked here: the pinned connection never reaches an address its lookup
    did not vet, and a check of the answer would come after the request had been sent.
    """

    def __init__(self, inner: httpx.BaseTransport, clock: Callable[[], float]) -> None:
        self._inner = inner
        self._clock = clock

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send one hop, after checking the chain's time."""
        trail = request.extensions.setdefault(_TRAIL, _Trail())
        if trail.started is None:
            trail.started = self._clock()
        if self._clock() - trail.started > _CHAIN_DEADLINE:
            raise DeadlineExceededError(
                f"{_shown(request.url)}: the page and its redirects took over "
                f"{_CHAIN_DEADLINE:g} s",
                request=request,
            )
        trail.url = request.url
        return self._inner.handle_request(request)

    def close(self) -> None:
        """Close the wrapped transport."""
        self._inner.close()


def _shown(url: httpx.URL | str) -> str:
    shown = redact_url(str(url))
    return shown if len(shown) <= _SHOWN_URL_CHARS else shown[:_SHOWN_URL_CHARS] + "..."


def _checked_url(raw: str) -> httpx.URL:
    """The URL, parsed, when it is one verity may fetch; else `BadInputError` saying why."""
    if not isinstance(raw, str) or not raw.strip():
        raise BadInputError("the URL is empty")
    text = raw.strip()
    if len(text) > MAX_URL_CHARS:
        raise BadInputError(
            f"the URL has {len(text):,} characters, more than the limit of {MAX_URL_CHARS:,}"
        )
    if _UNSAFE_URL_CHARS.search(text):
        raise BadInputError("the URL contains spaces or control characters")
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError) as exc:
        raise BadInputError(f"not a URL: {_shown(text)} ({exc})") from exc
    if not url.scheme and "://" not in text:
        raise BadInputError(f"the URL needs a scheme: https://{_shown(text.lstrip('/'))}")
    if url.scheme not in ("http", "https"):
        raise BadInputError(f"only http and https URLs can be fetched, not {url.scheme}:")
    if url.userinfo:
        raise BadInputError("a URL with a user name or password is refused")
    if not url.host:
        raise BadInputError(f"the URL has no host: {_shown(text)}")
    if url.port is not None and not 0 < url.port < 65536:
        raise BadInputError(f"the URL's port {url.port} is not a port number")
    return url.copy_with(fragment=None)


def _get(client: httpx.Client, url: httpx.URL) -> tuple[httpx.Response, httpx.URL]:
    """The answer to a GET of ``url`` and the URL it came from, its errors translated."""
    trail = _Trail()
    request = client.build_request(
        "GET", url, headers={"Accept": _ACCEPT}, extensions={_TRAIL: trail}
    )
    shown = _shown(url)
    try:
        response = client.send(request)
    except (BlockedTargetError, RedirectError) as exc:
        raise BadInputError(f"cannot fetch the page: {exc}") from exc
    except ResponseTooLargeError as exc:
        raise _too_large(shown) from exc
    except httpx.TimeoutException as exc:
        raise SourceUnavailableError(f"{shown} did not answer in time") from exc
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        raise BadInputError(f"cannot fetch {shown}: {exc}") from exc
    except httpx.HTTPError as exc:
        raise SourceUnavailableError(f"cannot fetch {shown}: {exc}") from exc
    final = trail.url or url  # None with a client that is not a page client
    _check_answer(response, _shown(final))
    return response, final


def _too_large(shown: str) -> BadInputError:
    return BadInputError(f"the page at {shown} is larger than {MAX_PAGE_BYTES:,} bytes")


def _check_answer(response: httpx.Response, shown: str) -> None:
    status = response.status_code
    if status in (404, 410):
        raise BadInputError(f"there is no page at {shown} (HTTP {status})")
    if not 200 <= status < 300:
        raise SourceUnavailableError(f"{shown} answered with HTTP {status}")
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in HTML_TYPES:
        raise BadInputError(
            f"{shown} is {kind or 'of no declared type'}, not an HTML page; "
            "give the text as an article instead"
        )
    # A client passed in may allow more than a page may have.
    if len(response.content) > MAX_PAGE_BYTES:
        raise _too_large(shown)
