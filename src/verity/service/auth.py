"""Who is calling: the API key a request carries, and where a browser sent a form from.

    @router.get("/v1/checks/{job_id}")
    def get_check(job_id: str, caller: Caller) -> JobView: ...    # caller: key name or None
    same_origin(request)          # ApiError 403 for a form another site's page sent

With no key file (allowed on a loopback address only), no key is needed and the caller
is None. With one, a request carries its key as ``Authorization: Bearer KEY``, as
``X-API-Key: KEY``, or, for a browser on the web pages, in the ``verity_key`` cookie;
without a valid key the answer is 401. A key is only ever compared by its hash
(`verity.service.keys.KeyRing`), and never logged or stored with a job: a job keeps the
key's *name*, and each key sees its own jobs only.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, Request

from verity.service.core import Service
from verity.service.errors import ApiError
from verity.service.errors import rate_limited as too_many

COOKIE = "verity_key"
# No key is longer than this; a longer header is not worth hashing.
MAX_KEY_CHARS = 256


def service_of(request: Request) -> Service:
    """The `Service` of the app handling this request."""
    service: Service = request.app.state.service
    return service


def presented_key(request: Request) -> str | None:
    """The key the request carries, from the first place that has one."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()[: MAX_KEY_CHARS + 1]
    for found in (request.headers.get("x-api-key"), request.cookies.get(COOKIE)):
        if found and found.strip():
            return found.strip()[: MAX_KEY_CHARS + 1]
    return None


def caller(request: Request) -> str | None:
    """The name of the caller's key; None when the server needs none. 401 without one."""
    service = service_of(request)
    if service.keys is None:
        return None
    presented = presented_key(request)
    name = (
        service.keys.name_of(presented)
        if presented is not None and len(presented) <= MAX_KEY_CHARS
        else None
    )
    if name is None:
        raise ApiError(
            401,
            "unauthorized",
            "this server needs an API key: send it as 'Authorization: Bearer KEY'"
            if presented is None
            else "this API key is not valid here",
            headers={"WWW-Authenticate": 'Bearer realm="verity"'},
        )
    return str(name)


def rate_limited(service: Service, name: str | None) -> None:
    """Count a check against its key's rate; 429 with Retry-After when over it."""
    if service.limiter is None or name is None:
        return
    wait = service.limiter.allow(name)
    if wait is not None:
        raise too_many(wait, "checks")


def same_origin(request: Request) -> None:
    """403 ``cross_site`` unless a browser sent this request from this server's own pages.

    A page of any site can post a form here, and a server with no keys (loopback) would
    run the check and spend its model calls. A browser says where a request comes from,
    in headers a page cannot set: ``Sec-Fetch-Site`` when it sends it (``same-origin``,
    or ``none`` for what the user did themselves, are this server's own), else
    ``Origin``, which must be this server's origin. Current browsers send one or both
    with every form they post, so a request with neither is curl's, a script's or a
    browser's from years ago: it is let through. The ``Referer`` is not used: the pages
    ask browsers not to send it.
    """
    site = request.headers.get("sec-fetch-site")
    origin = request.headers.get("origin")
    if site is not None:
        allowed = site.strip().lower() in ("same-origin", "none")
    elif origin is not None:
        sent = _origin(origin)
        allowed = sent is not None and sent == _own_origin(request)
    else:
        allowed = True
    if not allowed:
        raise ApiError(
            403,
            "cross_site",
            "this form was sent from a page of another site; send it from this server's own page",
        )


def _origin(value: str) -> tuple[str, str, int] | None:
    """Scheme, host and port of an origin (the port the scheme's default if not given)."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None  # "null" (a sandboxed or privacy-sensitive page) is no origin
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


def _own_origin(request: Request) -> tuple[str, str, int] | None:
    host = request.headers.get("host")
    return _origin(f"{request.url.scheme}://{host}") if host else None


Caller = Annotated[str | None, Depends(caller)]
