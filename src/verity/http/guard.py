"""Where requests may go: any public address, and non-public ones only when allowed.

A request or redirect to a loopback, private (RFC 1918), link-local (cloud metadata),
shared (CGNAT), unique-local, multicast, reserved or unspecified address, or to a name
that resolves to one, is refused with `BlockedTargetError`, unless its host is in
``allowed_hosts`` (a SearXNG instance the user configured at ``http://localhost:8888``).
An IPv6 address that carries an IPv4 one (mapped, 6to4, NAT64) is judged by the IPv4
one. `TargetGuard.check` judges a URL before its request is sent, resolving each name once
per guard; a name that does not resolve is let through, to fail at connect.
`TargetGuard.addresses` is the connect's own judgement (`verity.http.pinned`): a fresh
lookup whose every address must pass, and the addresses the socket may then go to.

    guard = TargetGuard(allowed_hosts=["localhost"])
    guard.check(httpx.URL("http://169.254.169.254/latest/"))   # BlockedTargetError
    guard.addresses("en.wikipedia.org")                        # ['185.15.59.224', ...]
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Iterable, Sequence

import httpx

from verity.http.errors import BlockedTargetError, shown_url

__all__ = ["TargetGuard", "no_lookup", "resolve_host"]

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _non_public(ip: _Address) -> str | None:
    """What kind of non-public address this is, or None for a public one."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            return _non_public(inner)
        if ip in _UNIQUE_LOCAL:
            return "a unique-local address"
    for test, kind in (
        (ip.is_loopback, "a loopback address"),
        (ip.is_link_local, "a link-local address (where cloud metadata services live)"),
        (ip.is_unspecified, "the unspecified address"),
        (ip.is_multicast, "a multicast address"),
        (ip in _CGNAT, "a shared (carrier-grade NAT) address"),
        (ip.is_reserved, "a reserved address"),
        (ip.is_private, "a private address"),
        (not ip.is_global, "not a public address"),
    ):
        if test:
            return kind
    return None


def _literal(host: str) -> _Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _host_key(host: str) -> str:
    return host.strip().strip("[]").lower().rstrip(".")


def no_lookup(host: str) -> list[str]:
    """Resolve nothing: for a transport that is not the network (a test's mock)."""
    return []


def resolve_host(host: str) -> list[str]:
    """The addresses a name resolves to, in the resolver's order; empty when it does not."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    # The resolver's order is the one to connect in (RFC 6724 preferences): keep it.
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _address_kind(address: str) -> str | None:
    """What kind of non-public address this answer is; None for a public one (or garbage)."""
    ip = _literal(address.partition("%")[0])
    return None if ip is None else _non_public(ip)


def _refusal(what: str, reason: str) -> BlockedTargetError:
    return BlockedTargetError(
        f"refused to {what}: {reason}; only a host configured explicitly (such as a "
        "SearXNG instance) may be non-public"
    )


class TargetGuard:
    """Decide whether a URL may be requested: any public address, others only if allowed.

    ``allowed_hosts`` are host names or addresses (no port) the user configured on
    purpose; they may be private. Other names are resolved with ``resolve`` (once per
    guard, for `check`) and refused when any address they resolve to is not public; a
    name that does not resolve is let through, to fail at connect. `addresses` is the
    check the connect makes, on a lookup of its own.

        guard = TargetGuard(allowed_hosts=["localhost"])
        guard.check(httpx.URL("http://localhost:8888/search"))     # allowed
        guard.check(httpx.URL("http://169.254.169.254/latest/"))   # BlockedTargetError
    """

    def __init__(
        self,
        allowed_hosts: Iterable[str] = (),
        *,
        resolve: Callable[[str], Sequence[str]] = resolve_host,
    ) -> None:
        self.allowed_hosts = frozenset(_host_key(h) for h in allowed_hosts if h.strip())
        self._resolve = resolve
        self._verdicts: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def needs_lookup(self, url: httpx.URL) -> bool:
        """Whether `check` would resolve a name (so an async caller runs it in a thread)."""
        host = _host_key(url.host)
        with self._lock:
            known = host in self._verdicts
        return not (known or host in self.allowed_hosts or _literal(host) is not None)

    def check(self, url: httpx.URL) -> None:
        """Raise `BlockedTargetError` when the URL's host is not public and not allowed."""
        host = _host_key(url.host)
        if host in self.allowed_hosts:
            return
        with self._lock:
            known = host in self._verdicts
            reason = self._verdicts.get(host)
        if not known:
            reason = self._judge(host)
            with self._lock:
                self._verdicts[host] = reason
        if reason is not None:
            raise _refusal(f"send a request to {shown_url(url)}", reason)

    def addresses(self, host: str) -> list[str]:
        """The addresses a connection to ``host`` may go to: looked up now, each one vetted.

        The connect's own check (`verity.http.pinned`): ``resolve`` is asked afresh, no
        verdict of `check` is reused, and when any address is not public and the host is
        not allowed, `BlockedTargetError`. An address literal is its own answer; an answer
        that is not an address is dropped; a name that does not resolve gives ``[]``.

            TargetGuard().addresses("en.wikipedia.org")   # ['185.15.59.224', ...]
            TargetGuard().addresses("localhost")          # BlockedTargetError
        """
        key = _host_key(host)
        literal = _literal(key.partition("%")[0]) is not None
        answers = [key] if literal else self._resolve(key)
        found = [a for a in answers if _literal(a.partition("%")[0]) is not None]
        if key in self.allowed_hosts:
            return found
        for address in found:
            kind = _address_kind(address)
            if kind is not None:
                said = f"{key} is {kind}" if literal else f"{key} resolves to {address}, {kind}"
                raise _refusal(f"connect to {key}", said)
        return found

    def _judge(self, host: str) -> str | None:
        literal = _literal(host)
        if literal is not None:
            kind = _non_public(literal)
            return None if kind is None else f"{host} is {kind}"
        for address in self._resolve(host):
            kind = _address_kind(address)
            if kind is not None:
                return f"{host} resolves to {address}, {kind}"
        return None
