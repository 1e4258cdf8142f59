"""Every row of the error table in docs/service.md: a request that causes it, and its answer.

Each status and code of the table has a cause below; the test sends it and checks the
status, the code and the body: the one JSON error shape for the API, a page with its
error shown for the web form (whose codes are not in the page: those are checked where
they are made). A first test checks that the table and the causes name the same pairs,
so a code added to either is added to both.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from verity.service.app import create_app
from verity.service.errors import STATUS_CODES
from verity.service.keys import KeyRing, RateLimiter, hash_key, new_key

DOCS = Path(__file__).parents[2] / "docs" / "service.md"
CLAIM = {"claim": "The Eiffel Tower is in Paris."}
FORM = {"kind": "claim", "claim": "The Eiffel Tower is in Paris."}
JSON = {"content-type": "application/json"}


class Lab:
    """What a cause needs: apps over fresh services, the fake's class, the environment."""

    def __init__(self, make_service: Any, scripted: Any, monkeypatch: Any) -> None:
        self.make_service, self.scripted, self.monkeypatch = make_service, scripted, monkeypatch
        self._open = contextlib.ExitStack()

    def client(self, service: Any = None, **settings: Any) -> TestClient:
        """A started TestClient over ``service`` (or a new one with ``settings``)."""
        service = service if service is not None else self.make_service(**settings)
        app = create_app(service)
        return self._open.enter_context(TestClient(app, raise_server_exceptions=False))

    def close(self) -> None:
        self._open.close()


Cause = Callable[[Lab], Any]
CAUSES: dict[tuple[int, str], tuple[str, Cause]] = {}


def cause(status: int, code: str, shape: str = "json") -> Callable[[Cause], Cause]:
    """Register the request that causes ``status`` ``code``; ``shape`` json or page."""

    def register(send: Cause) -> Cause:
        CAUSES[(status, code)] = (shape, send)
        return send

    return register


# -- 400 ------------------------------------------------------------------------------------


@cause(400, "unknown_method")
def _(lab: Lab) -> Any:
    return lab.client().post("/v1/checks", json={**CLAIM, "method": "nope"})


@cause(400, "unknown_variant")
def _(lab: Lab) -> Any:
    return lab.client().post("/v1/checks", json={**CLAIM, "method": "local/nope"})


@cause(400, "unsuitable_method")
def _(lab: Lab) -> Any:
    return lab.client().post("/v1/checks", json={**CLAIM, "method": "zofia"})


@cause(400, "unknown_model")
def _(lab: Lab) -> Any:
    return lab.client().post("/v1/checks", json={**CLAIM, "model": "openai:other"})


@cause(400, "unknown_source")
def _(lab: Lab) -> Any:
    return lab.client().post("/v1/checks", json={**CLAIM, "sources": ["nope"]})


@cause(400, "server_setting")
def _(lab: Lab) -> Any:
    body = {**CLAIM, "method": "toe", "settings": {"weights": "/etc/passwd"}}
    return lab.client().post("/v1/checks", json=body)


@cause(400, "config")
def _(lab: Lab) -> Any:
    lab.monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    return lab.client().post("/v1/checks", json={**CLAIM, "sources": ["brave"]})


@cause(400, "bad_request")
def _(lab: Lab) -> Any:
    headers = {**JSON, "content-length": "abc"}
    return lab.client().post("/v1/checks", content=b"{}", headers=headers)


@cause(400, "bad_form", "page")
def _(lab: Lab) -> Any:
    kind = {"content-type": "application/x-www-form-urlencoded"}
    return lab.client().post("/checks", content=b"kind=claim&claim=\xff", headers=kind)


# -- 401 to 415 -----------------------------------------------------------------------------


@cause(401, "unauthorized")
def _(lab: Lab) -> Any:
    keyed = lab.make_service(keys=KeyRing({"alice": hash_key(new_key())}))
    answer = lab.client(keyed).get("/v1/checks")
    assert answer.headers["www-authenticate"].startswith("Bearer")
    return answer


@cause(403, "cross_site", "page")
def _(lab: Lab) -> Any:
    headers = {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
    return lab.client().post("/checks", data=FORM, headers=headers)


@cause(404, "not_found")
def _(lab: Lab) -> Any:
    api = lab.client()
    assert api.get("/v1/nope").json()["error"]["code"] == "not_found"  # a route, too
    return api.get("/v1/checks/0123456789abcdef")


@cause(405, "method_not_allowed")
def _(lab: Lab) -> Any:
    answer = lab.client().put("/v1/checks", json=CLAIM)
    assert answer.headers["allow"] == "GET, POST"
    return answer


@cause(409, "ended")
def _(lab: Lab) -> Any:
    api = lab.client()
    done = api.post("/v1/checks?wait=30", json=CLAIM).json()
    assert done["status"] == "done"
    return api.delete(done["links"]["self"])


@cause(409, "not_done")
def _(lab: Lab) -> Any:
    fake = lab.scripted(gated=True)
    api = lab.client(lab.make_service(fake))
    job = api.post("/v1/checks", json=CLAIM).json()
    try:
        return api.get(f"/checks/{job['id']}/trace.json")
    finally:
        fake.open()


@cause(413, "too_large")
def _(lab: Lab) -> Any:
    return lab.client(max_body_bytes=1_000).post("/v1/checks", json={"claim": "x" * 2_000})


@cause(415, "unsupported_media_type", "page")
def _(lab: Lab) -> Any:
    return lab.client().post("/checks", json=CLAIM)


# -- 421 to 503 -----------------------------------------------------------------------------


@cause(421, "misdirected")
def _(lab: Lab) -> Any:
    return lab.client().get("/v1/checks", headers={"Host": "evil.example"})


@cause(422, "invalid")
def _(lab: Lab) -> Any:
    return lab.client().post("/v1/checks", json={"claim": "   "})


@cause(422, "invalid_json")
def _(lab: Lab) -> Any:
    return lab.client().post("/v1/checks", content=b'{"claim": ', headers=JSON)


@cause(422, "too_long")
def _(lab: Lab) -> Any:
    return lab.client().post("/v1/checks", json={"claim": "x" * 2_001})


@cause(429, "queue_full")
def _(lab: Lab) -> Any:
    fake = lab.scripted(gated=True)
    api = lab.client(lab.make_service(fake, workers=1, queue_size=1))
    try:
        api.post("/v1/checks", json=CLAIM)
        assert fake.entered.acquire(timeout=60)  # running: the queue is empty again
        assert api.post("/v1/checks", json=CLAIM).status_code == 202
        answer = api.post("/v1/checks", json=CLAIM)
        assert int(answer.headers["retry-after"]) >= 1
        return answer
    finally:
        fake.open()


@cause(429, "rate_limited")
def _(lab: Lab) -> Any:
    key = new_key()
    ring = KeyRing({"alice": hash_key(key)})
    api = lab.client(lab.make_service(keys=ring, limiter=RateLimiter(1)))
    bearer = {"Authorization": f"Bearer {key}"}
    assert api.post("/v1/checks", json=CLAIM, headers=bearer).status_code == 202
    answer = api.post("/v1/checks", json=CLAIM, headers=bearer)
    assert int(answer.headers["retry-after"]) >= 1
    return answer


@cause(500, "internal")
def _(lab: Lab) -> Any:
    service = lab.make_service()

    def broken(**kw: Any) -> Any:
        raise RuntimeError("password=hunter2")

    service.store.history = broken
    answer = lab.client(service).get("/v1/checks")
    assert "hunter2" not in answer.text
    return answer


@cause(503, "unavailable")
def _(lab: Lab) -> Any:
    service = lab.make_service()
    api = lab.client(service)
    service.begin_shutdown()
    return api.post("/v1/checks", json=CLAIM)


# -- the tests ------------------------------------------------------------------------------


def documented() -> set[tuple[int, str]]:
    """Every (status, code) of the error table in docs/service.md."""
    text = DOCS.read_text(encoding="utf-8")
    table = text[text.index("| status | code | when |") :].split("\n\n")[0]
    pairs = set()
    for row in table.splitlines()[2:]:
        status, codes = row.split("|")[1:3]
        pairs |= {(int(status), code) for code in re.findall(r"`([a-z_]+)`", codes)}
    return pairs


def test_the_table_and_the_causes_name_the_same_codes() -> None:
    assert documented() == set(CAUSES)


def test_a_bare_status_has_the_code_the_table_gives_it() -> None:
    # The framework's own answers (a route not found, a method not allowed, the Host
    # check) take their codes from STATUS_CODES: those must be the table's.
    for status, code in documented():
        if status in (404, 405, 413, 421, 500, 503):
            assert STATUS_CODES[status] == code


@pytest.fixture
def lab(make_service, scripted, monkeypatch) -> Iterator[Lab]:
    made = Lab(make_service, scripted, monkeypatch)
    yield made
    made.close()


@pytest.mark.parametrize(("status", "code"), sorted(CAUSES))
def test_each_row_of_the_error_table(lab: Lab, status: int, code: str) -> None:
    shape, send = CAUSES[(status, code)]
    answer = send(lab)
    assert answer.status_code == status, answer.text
    if shape == "page":
        assert answer.headers["content-type"].startswith("text/html")
        assert 'role="alert"' in answer.text
        return
    assert answer.headers["content-type"].startswith("application/json")
    body = answer.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"status", "code", "message", "field", "valid"}
    assert (body["error"]["status"], body["error"]["code"]) == (status, code)
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
