"""Connections pinned to the checked address, against real loopback servers.

A rebinding resolver answers a public address to the first lookup (the check) and
127.0.0.1 to every later one (the connect). The loopback server counts the connections it
accepts, not only the requests: a refused request must not even open a socket. Names that
must reach the loopback server on purpose are allowed hosts that an injected resolver maps
to 127.0.0.1; nothing here leaves the machine.
"""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpcore
import httpx
import pytest

from faults import FaultServer, redirect, source
from verity.errors import BadInputError
from verity.http import (
    AsyncPinnedTransport,
    AsyncRedirectTransport,
    BlockedTargetError,
    PinnedTransport,
    RedirectTransport,
    TargetGuard,
    make_http_client,
)
from verity.pages import fetch_article, make_page_client
from verity.sources.websearch.searxng import SearxngSearch

PUBLIC = "93.184.215.14"
PAGE = (
    b"<html><head><title>Bridge</title></head><body><article><p>The council voted to "
    b"rebuild the old river bridge, closed since the flood of last spring.</p><p>Work "
    b"starts in the autumn and lasts eighteen months, the engineering office says.</p>"
    b"</article></body></html>"
)


class Rebinding:
    """A name server under an attacker's control: public first, loopback afterwards."""

    def __init__(self, first: str = PUBLIC, then: str = "127.0.0.1") -> None:
        self.answers = (first, then)
        self.calls: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        return [self.answers[0] if len(self.calls) == 1 else self.answers[1]]


class Table:
    """A resolver from a fixed table that counts its lookups."""

    def __init__(self, names: dict[str, list[str]]) -> None:
        self.names = names
        self.calls: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.calls.append(host)
        return self.names.get(host, [])


class Server:
    """A keep-alive HTTP/1.1 server on 127.0.0.1 that counts connections and requests."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.connections = 0
        self.hosts: list[str] = []  # the Host header of each request
        self.sni: list[str | None] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                owner.hosts.append(self.headers.get("Host", ""))
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(PAGE)))
                self.end_headers()
                self.wfile.write(PAGE)

            def log_message(self, format: str, *args: object) -> None:
                pass

        class Counting(ThreadingHTTPServer):
            daemon_threads = True

            def verify_request(self, request: object, client_address: object) -> bool:
                owner.connections += 1  # every accepted connection, before any request
                return True

        self.httpd = Counting(("127.0.0.1", 0), Handler)
        if tls is not None:
            tls.sni_callback = lambda _sock, name, _ctx: owner.sni.append(name)
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=30)


@pytest.fixture
def server() -> Iterator[Server]:
    with Server() as running:
        yield running


def source_client(resolve, allowed: tuple[str, ...] = ()) -> httpx.Client:
    return make_http_client(
        cache=False,
        resolve=resolve,
        allowed_hosts=allowed,
        sleep=lambda _s: None,
    )


# --- (1) a rebinding name gets no connection -------------------------------------------------


@pytest.mark.parametrize("host", ["localhost", "rebind.test"])
def test_a_rebinding_name_is_refused_before_any_connection(server: Server, host: str) -> None:
    rebinding = Rebinding()
    with source_client(rebinding) as client, pytest.raises(BlockedTargetError) as caught:
        client.get(f"http://{host}:{server.port}/a")
    assert f"refused to connect to {host}: {host} resolves to 127.0.0.1" in str(caught.value)
    assert caught.value.request.url.host == host
    assert server.connections == 0 and server.hosts == []
    # One lookup for the check, one for the connection; none behind the resolver's back.
    assert rebinding.calls == [host, host]


@pytest.mark.parametrize("host", ["localhost", "rebind.test"])
def test_a_rebinding_page_is_refused_before_any_connection(server: Server, host: str) -> None:
    rebinding = Rebinding()
    with (
        make_page_client(resolve=rebinding) as client,
        pytest.raises(BadInputError, match=rf"refused to connect to {host}: .* 127\.0\.0\.1"),
    ):
        fetch_article(f"http://{host}:{server.port}/a", client=client)
    assert server.connections == 0 and server.hosts == []
    assert rebinding.calls == [host, host]


def test_a_name_that_turns_private_after_a_redirect_is_refused_at_connect() -> None:
    # The redirect's target is checked at the redirect, and rebinds before its connect.
    rebinding = Rebinding()
    table = Table({"start.test": ["127.0.0.1"]})

    def resolve(host: str) -> list[str]:
        return table(host) if host == "start.test" else rebinding(host)

    with (
        FaultServer() as start,
        make_http_client(cache=False, resolve=resolve, allowed_hosts=["start.test"]) as client,
    ):
        start.script(redirect("http://rebind.test/x", status=302))
        with pytest.raises(BlockedTargetError, match=r"connect to rebind\.test"):
            client.get(f"http://start.test:{start.port}/go")
        assert start.count == 1
    assert rebinding.calls == ["rebind.test", "rebind.test"]


# --- (2) a name connects to exactly the address it resolved to -------------------------------


def test_a_name_connects_to_the_address_it_resolved_to_with_its_own_host_header(
    server: Server,
) -> None:
    # 127.0.0.2 is loopback too, but nothing listens there: the next address is tried.
    # The server listens on 127.0.0.1 alone, so a request that reaches it went there.
    table = Table({"news.test": ["127.0.0.2", "127.0.0.1"]})
    with source_client(table, allowed=("news.test",)) as client:
        assert client.get(f"http://news.test:{server.port}/a").status_code == 200
    assert server.connections == 1
    assert server.hosts == [f"news.test:{server.port}"]
    assert table.calls == ["news.test"]  # an allowed host needs no check: the connect's only


def test_two_requests_to_one_host_share_one_connection_and_one_lookup(server: Server) -> None:
    table = Table({"news.test": ["127.0.0.1"]})
    with source_client(table, allowed=("news.test",)) as client:
        for path in ("/a", "/b"):
            assert client.get(f"http://news.test:{server.port}{path}").status_code == 200
    assert server.connections == 1 and len(server.hosts) == 2
    assert table.calls == ["news.test"]


def test_the_socket_goes_to_the_vetted_public_address_by_number(server: Server) -> None:
    # A name that is not allowed and resolves to a public address. The pinned transport
    # is driven directly (no redirect layer, so the connect makes the only lookup), over a
    # socket opener that records the address it is given and opens the loopback server.
    table = Table({"news.test": [PUBLIC]})
    opened: list[str] = []

    class ToLoopback(httpcore.SyncBackend):
        def connect_tcp(self, host, port, *args, **kw):
            opened.append(host)
            return super().connect_tcp("127.0.0.1", server.port, *args, **kw)

    transport = PinnedTransport(TargetGuard(resolve=table), backend=ToLoopback())
    with httpx.Client(transport=transport) as client:
        for path in ("/a", "/b"):
            response = client.get(f"http://news.test{path}")
            assert response.status_code == 200
    assert opened == [PUBLIC]  # the socket went to the vetted address, by number
    assert table.calls == ["news.test"]
    assert server.connections == 1 and server.hosts == ["news.test", "news.test"]


def test_a_name_that_does_not_resolve_fails_to_connect(server: Server) -> None:
    with (
        source_client(Table({}), allowed=("nowhere.test",)) as client,
        pytest.raises(httpx.ConnectError, match=r"nowhere\.test does not resolve"),
    ):
        client.get(f"http://nowhere.test:{server.port}/a")


def test_http_proxy_variables_are_not_used(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    with Server() as proxy:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        table = Table({"news.test": ["127.0.0.1"]})
        with source_client(table, allowed=("news.test",)) as client:
            assert client.get(f"http://news.test:{server.port}/a").status_code == 200
        assert proxy.connections == 0
    assert server.hosts == [f"news.test:{server.port}"]


# --- (3) TLS goes by the name ----------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for the name ``pinned.test`` only (no address in it)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command to make a certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
            "-subj", "/CN=pinned.test", "-addext", "subjectAltName=DNS:pinned.test",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def test_tls_sends_the_name_for_sni_and_checks_the_certificate_against_it(
    certificate: tuple[Path, Path],
) -> None:
    cert, key = certificate
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(cert, key)
    trusting = ssl.create_default_context(cafile=str(cert))
    table = Table({"pinned.test": ["127.0.0.1"]})
    guard = TargetGuard(["pinned.test", "127.0.0.1"], resolve=table)
    with Server(tls=serving) as server:
        transport = RedirectTransport(PinnedTransport(guard, verify=trusting), guard=guard)
        with httpx.Client(transport=transport) as client:
            response = client.get(f"https://pinned.test:{server.port}/a")
            assert response.status_code == 200
            # The certificate names pinned.test, not 127.0.0.1: by address it fails.
            with pytest.raises(httpx.ConnectError, match=r"CERTIFICATE_VERIFY_FAILED|IP address"):
                client.get(f"https://127.0.0.1:{server.port}/a")
        assert server.sni[0] == "pinned.test"
        assert server.hosts == [f"pinned.test:{server.port}"]
    assert table.calls == ["pinned.test"]


# --- (4) a configured host on loopback still works -------------------------------------------


def test_a_configured_searxng_on_localhost_is_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real resolver and the real client of the source: localhost is allowed.
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path))
    with FaultServer(default=source.searx("Eiffel Tower")) as searx:
        hits = SearxngSearch(base_url=f"http://localhost:{searx.port}").search("Eiffel", k=1)
        assert [hit.title for hit in hits] == ["Eiffel Tower"]
        assert searx.requests[0].headers["host"] == f"localhost:{searx.port}"


def test_a_page_from_an_allowed_loopback_name(server: Server) -> None:
    table = Table({"news.test": ["127.0.0.1"]})
    with make_page_client(allowed_hosts=["news.test"], resolve=table) as client:
        article = fetch_article(f"http://news.test:{server.port}/a", client=client)
    assert "old river bridge" in article.text
    assert server.connections == 1 and table.calls == ["news.test"]


# --- (5) the async path ----------------------------------------------------------------------


def async_client(resolve, allowed: tuple[str, ...] = ()) -> httpx.AsyncClient:
    guard = TargetGuard(allowed, resolve=resolve)
    transport = AsyncRedirectTransport(AsyncPinnedTransport(guard), guard=guard)
    return httpx.AsyncClient(transport=transport)


@pytest.mark.parametrize("host", ["localhost", "rebind.test"])
def test_async_a_rebinding_name_is_refused_before_any_connection(server: Server, host: str) -> None:
    rebinding = Rebinding()

    async def run() -> None:
        async with async_client(rebinding) as client:
            await client.get(f"http://{host}:{server.port}/a")

    with pytest.raises(BlockedTargetError, match=rf"connect to {host}: .* 127\.0\.0\.1"):
        asyncio.run(run())
    assert server.connections == 0
    assert rebinding.calls == [host, host]


def test_async_one_host_shares_one_connection_and_one_lookup(server: Server) -> None:
    table = Table({"news.test": ["127.0.0.2", "127.0.0.1"]})

    async def run() -> list[int]:
        async with async_client(table, ("news.test",)) as client:
            return [
                (await client.get(f"http://news.test:{server.port}{path}")).status_code
                for path in ("/a", "/b")
            ]

    assert asyncio.run(run()) == [200, 200]
    assert server.connections == 1
    assert server.hosts == [f"news.test:{server.port}"] * 2
    assert table.calls == ["news.test"]
