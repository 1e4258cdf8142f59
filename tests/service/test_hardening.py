"""The faults an attack on ``verity serve`` found, each held to its fix.

Audit rows (docs of the attack: /work/shared/audits/service-security.md): 41 and 45
(bodies that are not JSON at all), 73 to 75 (error messages that repeated the names
sent), 153 (a form posted by another site's page ran a check), 156 (any Host header was
answered, the precondition of DNS rebinding), 90 (headers sent slowly held a connection
for ever). The last two are also tested over a real socket: uvicorn on a loopback port,
in this process and as the ``verity serve`` command.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from verity.errors import ConfigError
from verity.service.app import create_app

OUTER_LIMIT = 60.0
SECRET = "sk_live_7Yq2Xv9SECRET"
CLAIM = {"claim": "The Eiffel Tower is in Paris."}
FORM = {"kind": "claim", "claim": "The Eiffel Tower is in Paris."}
CROSS_SITE = {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}


def error_of(response: Any, status: int) -> dict[str, Any]:
    """The error of a JSON error answer, after checking its status and its shape."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"status", "code", "message", "field", "valid"}
    assert body["error"]["status"] == status
    return body["error"]


def form_error(page: str) -> str:
    """The error box above the form."""
    found = re.search(r'<div class="error" role="alert" id="form-error">(.*?)</div>', page, re.S)
    assert found, page
    return found.group(1)


# -- rows 41, 45: a body that is not JSON at all ------------------------------------------


def test_invalid_utf8_in_a_json_body_is_422_invalid_json(api: TestClient) -> None:
    body = b'{"claim": "caf\xe9 \xff\xfe"}'
    answer = api.post("/v1/checks", content=body, headers={"content-type": "application/json"})
    assert error_of(answer, 422)["code"] == "invalid_json"


def test_json_nested_past_the_parsers_depth_is_422_invalid_json(api: TestClient) -> None:
    deep = b'{"claim": "x", "settings": {"k": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    answer = api.post("/v1/checks", content=deep, headers={"content-type": "application/json"})
    assert error_of(answer, 422)["code"] == "invalid_json"
    assert api.get("/healthz").status_code == 200


# -- rows 73-75: no answer repeats a name that was sent --------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "code", "field", "a_valid_one"),
    [
        ({**CLAIM, "method": SECRET}, 400, "unknown_method", "method", "rag"),  # row 73
        ({**CLAIM, "method": f"local/{SECRET}"}, 400, "unknown_variant", "method", "local/no-eval"),
        ({**CLAIM, "sources": [SECRET]}, 400, "unknown_source", "sources", "offline-wiki"),  # 74
        (
            {**CLAIM, "sources": [f"searxng:http://{SECRET}.example/"]},
            400,
            "unknown_source",
            "sources",
            "searxng",
        ),
        ({**CLAIM, "model": f"openai:{SECRET}"}, 400, "unknown_model", "model", "local"),  # 75
        ({**CLAIM, "model": f"local:/home/{SECRET}.gguf"}, 400, "unknown_model", "model", "local"),
        ({**CLAIM, "method": "rag", "settings": {SECRET: 1}}, 422, "invalid", "settings", "k"),
        ({**CLAIM, "settings": {SECRET * 12: 1}}, 422, "invalid", "settings", None),  # too long
        ({**CLAIM, SECRET: 1}, 422, "invalid", None, "claim"),
        ({"article": {"text": "x", SECRET: 1}}, 422, "invalid", "article", "text"),
    ],
)
def test_an_error_names_the_field_and_the_valid_names_never_the_value_sent(
    api: TestClient,
    body: dict[str, Any],
    status: int,
    code: str,
    field: str | None,
    a_valid_one: str | None,
) -> None:
    answer = api.post("/v1/checks", json=body)
    error = error_of(answer, status)
    assert (error["code"], error["field"]) == (code, field)
    if a_valid_one is not None:
        assert a_valid_one in error["valid"]
    assert SECRET not in answer.text
    assert api.get("/v1/checks").json()["total"] == 0


@pytest.mark.parametrize(
    ("fields", "kept_in_the_form"),
    [
        ({"method": SECRET}, False),  # the method list has only the server's methods
        ({"sources": SECRET}, False),  # so have the source boxes
        ({"model": SECRET}, True),  # a text field: kept, as typed, to be corrected
    ],
)
def test_the_forms_error_box_never_repeats_the_value_sent(
    api: TestClient, fields: dict[str, str], kept_in_the_form: bool
) -> None:
    page = api.post("/checks", data={**FORM, **fields})
    assert page.status_code == 400
    assert SECRET not in form_error(page.text)
    assert (SECRET in page.text) is kept_in_the_form


def test_a_form_that_is_not_utf8_is_refused_without_quoting_it(api: TestClient) -> None:
    kind = {"content-type": "application/x-www-form-urlencoded"}
    page = api.post("/checks", content=b"kind=claim&claim=\xff\xfe", headers=kind)
    assert page.status_code == 400
    assert "not UTF-8" in form_error(page.text) and "0xff" not in page.text


# -- row 153: a form posted by another site's page ------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        CROSS_SITE,  # row 153, as Chromium sends it
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},  # another port of localhost is the same site
        {"Origin": "https://evil.example"},  # a browser without Sec-Fetch-Site
        {"Origin": "http://testserver:8080"},  # another port
        {"Origin": "https://testserver"},  # another scheme
        {"Origin": "null"},  # a sandboxed page
        {"Sec-Fetch-Site": "cross-site", "Origin": "http://testserver"},
    ],
)
def test_a_form_another_sites_page_sends_is_403_and_runs_nothing(
    api: TestClient, headers: dict[str, str]
) -> None:
    page = api.post("/checks", data=FORM, headers=headers, follow_redirects=False)
    assert page.status_code == 403, page.text
    assert page.headers["content-type"].startswith("text/html")
    assert "Sent from another site" in page.text and 'name="claim"' not in page.text
    assert api.get("/v1/checks").json()["total"] == 0


@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Site": "same-origin", "Origin": "http://testserver"},  # current browsers
        {"Sec-Fetch-Site": "none"},  # what the user did themselves
        {"Origin": "http://testserver"},  # a browser without Sec-Fetch-Site
        {"Origin": "http://TestServer:80"},  # the same origin, written otherwise
        {},  # curl, a script
    ],
)
def test_a_form_from_the_servers_own_page_or_no_browser_is_taken(
    api: TestClient, headers: dict[str, str]
) -> None:
    sent = api.post("/checks", data=FORM, headers=headers, follow_redirects=False)
    assert sent.status_code == 303, sent.text
    assert sent.headers["location"].startswith("/checks/")


def test_every_page_route_that_changes_something_refuses_another_site(api: TestClient) -> None:
    from verity.service.ui import router

    changing = [
        (method, route.path)
        for route in router.routes
        for method in getattr(route, "methods", ()) or ()
        if method not in ("GET", "HEAD", "OPTIONS")
    ]
    assert changing  # the form, at least
    for method, path in changing:
        answer = api.request(method, path, data=FORM, headers=CROSS_SITE)
        assert answer.status_code == 403, (method, path)
    assert api.get("/v1/checks").json()["total"] == 0


def test_the_json_api_does_not_look_at_where_a_request_comes_from(api: TestClient) -> None:
    # A page cannot send JSON to another site without CORS, which is closed: the API is
    # not at risk, and a client (curl, a script) may send any header it likes.
    assert api.post("/v1/checks", json=CLAIM, headers=CROSS_SITE).status_code == 202


# -- row 156: the Host header ---------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/checks", "/history", "/", "/healthz", "/docs"])
def test_a_host_name_that_is_not_the_servers_is_421_before_any_route(
    api: TestClient, path: str
) -> None:
    api.post("/v1/checks", json=CLAIM)
    answer = api.get(path, headers={"Host": "evil.example"})
    error = error_of(answer, 421)
    assert error["code"] == "misdirected" and "evil.example" not in answer.text
    assert answer.headers["x-content-type-options"] == "nosniff"


def test_a_form_under_another_host_name_is_421_too(api: TestClient) -> None:
    headers = {"Host": "evil.example", "Origin": "http://evil.example"}
    assert error_of(api.post("/checks", data=FORM, headers=headers), 421)["code"] == "misdirected"
    assert api.get("/v1/checks").json()["total"] == 0


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("localhost", 200),
        ("localhost:8000", 200),
        ("LOCALHOST:1", 200),
        ("127.0.0.1:8000", 200),
        ("[::1]:8000", 200),
        ("[::1]", 200),
        ("::1", 421),  # an IPv6 address in a Host header has brackets
        ("localhost.", 421),
        ("localhost:http", 421),
        ("127.0.0.1.evil.example", 421),
        ("evil.example:8000", 421),
        ("", 421),
    ],
)
def test_a_loopback_server_answers_its_loopback_names_on_any_port(
    make_service, host: str, status: int
) -> None:
    from verity.service.core import LOOPBACK_HOSTS

    service = make_service(allowed_hosts=LOOPBACK_HOSTS)  # what a loopback server has
    with TestClient(create_app(service)) as api:
        assert api.get("/v1/checks", headers={"Host": host}).status_code == status


def test_the_settings_default_is_the_loopback_names() -> None:
    from verity.service.core import LOOPBACK_HOSTS, ServiceSettings

    assert ServiceSettings().allowed_hosts == LOOPBACK_HOSTS == ("localhost", "127.0.0.1", "::1")


def test_a_server_elsewhere_answers_the_names_it_was_given(make_service) -> None:
    named = make_service(allowed_hosts=("verity.example.org",))
    with TestClient(create_app(named)) as api:
        assert api.get("/healthz", headers={"Host": "verity.example.org:443"}).status_code == 200
        assert api.get("/healthz", headers={"Host": "127.0.0.1"}).status_code == 421
    anything = make_service(allowed_hosts=("*",))
    with TestClient(create_app(anything)) as api:
        assert api.get("/healthz", headers={"Host": "evil.example"}).status_code == 200


def test_serve_works_out_the_names_from_the_address_and_the_options() -> None:
    from verity.cli.serve import allowed_hosts

    assert allowed_hosts("127.0.0.1", []) == ("localhost", "127.0.0.1", "::1")
    assert allowed_hosts("127.0.0.2", ["dev.test"]) == (
        "localhost",
        "127.0.0.1",
        "::1",
        "127.0.0.2",
        "dev.test",
    )
    assert allowed_hosts("[::1]", []) == ("localhost", "127.0.0.1", "::1")
    assert allowed_hosts("10.0.0.5", []) == ("10.0.0.5",)
    assert allowed_hosts("0.0.0.0", ["verity.example.org"]) == ("verity.example.org",)
    assert allowed_hosts("::", ["*"]) == ("*",)
    for everywhere in ("0.0.0.0", "::", ""):
        with pytest.raises(ConfigError, match="--allowed-host"):
            allowed_hosts(everywhere, [])


def test_serve_on_every_address_without_names_refuses_to_start(cli, tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("")
    argv = ["serve", "--host", "0.0.0.0", "--port", "1", "--api-key-file", str(keys)]
    code, _, err = cli(argv)
    assert code == 3 and "--allowed-host" in err


# -- row 90: request headers sent slowly, over a real socket ----------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def trickle(connection: socket.socket, every: float, limit: float) -> float | None:
    """Send a header line every ``every`` s until the server closes; seconds taken, or None."""
    start = time.monotonic()
    n = 0
    while time.monotonic() - start < limit:
        try:
            connection.sendall(f"X-Slow-{n}: 1\r\n".encode())
            connection.settimeout(every)
            if connection.recv(65536) == b"":
                return time.monotonic() - start
        except TimeoutError:
            n += 1  # nothing yet: the server still waits for the rest
        except (ConnectionResetError, BrokenPipeError):
            return time.monotonic() - start
    return None


def read_answer(connection: socket.socket) -> bytes:
    """One HTTP answer with a Content-Length, read whole."""
    connection.settimeout(OUTER_LIMIT)
    data = b""
    while b"\r\n\r\n" not in data:
        data += connection.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        body += connection.recv(65536)
    return head + b"\r\n\r\n" + body


@pytest.fixture
def deadline_server(make_service, scripted, serve_live) -> Iterator[tuple[int, Any]]:
    """A server with a 1 s header deadline; its checks held until the test opens them."""
    fake = scripted(gated=True)
    with serve_live(make_service(fake), header_timeout=1.0) as url:
        yield httpx.URL(url).port, fake
        fake.open()


def test_headers_sent_a_line_at_a_time_are_cut_off_at_the_deadline(deadline_server) -> None:
    port, _ = deadline_server
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=OUTER_LIMIT) as connection:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        taken = trickle(connection, every=0.25, limit=10.0)
    assert taken is not None, "the server kept the connection open"
    assert 0.8 <= time.monotonic() - start <= 3.0


def test_a_connection_that_sends_nothing_is_closed_at_the_deadline(deadline_server) -> None:
    port, _ = deadline_server
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10.0) as connection:
        assert connection.recv(1) == b""
    assert 0.8 <= time.monotonic() - start <= 3.0


def test_a_kept_alive_connection_has_a_deadline_for_its_next_request(deadline_server) -> None:
    port, _ = deadline_server
    with socket.create_connection(("127.0.0.1", port), timeout=OUTER_LIMIT) as connection:
        time.sleep(0.7)  # most of the first deadline: the next one counts from the answer
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert read_answer(connection).startswith(b"HTTP/1.1 200")
        answered = time.monotonic()
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        taken = trickle(connection, every=0.25, limit=10.0)
    assert taken is not None
    assert 0.8 <= time.monotonic() - answered <= 3.0


def test_requests_in_time_are_answered_however_long_the_answer_takes(deadline_server) -> None:
    port, _ = deadline_server
    url = f"http://127.0.0.1:{port}"
    assert httpx.get(f"{url}/healthz", timeout=OUTER_LIMIT).status_code == 200
    with socket.create_connection(("127.0.0.1", port), timeout=OUTER_LIMIT) as connection:
        for part in (b"GET /healthz HTTP/1.1\r\n", b"Host: 127.0.0.1\r\n", b"\r\n"):
            connection.sendall(part)
            time.sleep(0.2)  # 0.6 s in all: slow, but within the deadline
        assert read_answer(connection).startswith(b"HTTP/1.1 200")
    # The check is held, so this answer comes after ?wait=, past the header deadline.
    started = time.monotonic()
    held = httpx.post(f"{url}/v1/checks?wait=2", json=CLAIM, timeout=OUTER_LIMIT)
    assert held.status_code == 202 and time.monotonic() - started >= 1.9


def test_a_real_socket_with_another_host_or_none_gets_421(deadline_server) -> None:
    port, _ = deadline_server
    for request in (
        b"GET /v1/checks HTTP/1.1\r\nHost: evil.example\r\n\r\n",
        b"GET /v1/checks HTTP/1.0\r\n\r\n",  # HTTP/1.0 may leave Host out
    ):
        with socket.create_connection(("127.0.0.1", port), timeout=OUTER_LIMIT) as connection:
            connection.sendall(request)
            answer = read_answer(connection)
        assert answer.split(b"\r\n")[0].startswith(b"HTTP/1.1 421"), answer
        assert b'"code": "misdirected"' in answer


def test_verity_serve_takes_its_header_timeout_and_allowed_hosts(tmp_path: Path) -> None:
    """The command itself: the options reach the server it runs."""
    port = free_port()
    command = Path(sys.executable).with_name("verity")
    env = {**os.environ, "VERITY_CACHE_DIR": str(tmp_path / "cache")}
    log = (tmp_path / "serve.log").open("w+")
    argv = f"serve --port {port} --header-timeout 1 --allowed-host verity.test".split()
    argv += ["--db", f"sqlite:///{tmp_path / 'jobs.sqlite'}", "--model", "openai:m"]
    argv += ["--base-url", "http://127.0.0.1:9/v1"]  # never asked: no check is sent
    server = subprocess.Popen(
        [str(command), *argv],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + OUTER_LIMIT
        while True:
            assert server.poll() is None, Path(log.name).read_text()
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200:
                    break
            assert time.monotonic() < deadline, "verity serve did not start"
            time.sleep(0.1)
        named = httpx.get(f"{url}/healthz", headers={"Host": "verity.test:80"})
        assert named.status_code == 200
        other = httpx.get(f"{url}/healthz", headers={"Host": "evil.example"})
        assert error_of(other, 421)["code"] == "misdirected"
        start = time.monotonic()
        with socket.create_connection(("127.0.0.1", port), timeout=OUTER_LIMIT) as connection:
            connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            assert trickle(connection, every=0.25, limit=10.0) is not None
        assert time.monotonic() - start <= 3.0
    finally:
        server.terminate()
        server.wait(OUTER_LIMIT)
        log.close()
