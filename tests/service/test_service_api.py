"""The HTTP API over a scripted fake executor: submitting, waiting, errors, keys, limits.

The checks themselves are a fake's (tests/service/conftest.py): what is tested is the API's
contract: statuses, the one error shape, what is stored and what is never shown.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fastapi.testclient import TestClient

from verity.service.app import create_app
from verity.service.keys import KeyRing, RateLimiter, hash_key, new_key

CLAIM = {"claim": "The Eiffel Tower is in Paris."}


def error_of(response: Any, status: int) -> dict[str, Any]:
    """The error body of a response, after checking its status and its shape."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"status", "code", "message", "field", "valid"}
    assert body["error"]["status"] == status
    return body["error"]


def test_a_claim_is_queued_with_its_links_then_done_with_the_cli_verdict(
    api: TestClient, fake_executor
) -> None:
    answer = api.post("/v1/checks", json=CLAIM)
    assert answer.status_code == 202, answer.text
    job = answer.json()
    assert job["status"] in ("queued", "running", "done")
    assert job["links"] == {
        "self": f"/v1/checks/{job['id']}",
        "events": f"/v1/checks/{job['id']}/events",
        "page": f"/checks/{job['id']}",
    }
    assert answer.headers["location"] == job["links"]["self"]
    done = api.post("/v1/checks?wait=30", json=CLAIM).json()
    assert done["status"] == "done"
    # The same JSON as `verity check --json`: Verdict.to_json_dict of the fake's verdict.
    expected = fake_executor(fake_executor.requests[-1], lambda e: None).to_json_dict()
    assert done["verdict"] == expected
    assert done["verdict"]["label"] == "SUPPORTED" and done["label"] == "SUPPORTED"
    later = api.get(done["links"]["self"]).json()
    assert later["verdict"] == expected and later["runs"] == 1


def test_wait_answers_200_when_done_in_time_and_202_when_not(make_service, scripted) -> None:
    fake = scripted(gated=True)
    with TestClient(create_app(make_service(fake))) as api:
        pending = api.post("/v1/checks?wait=0.2", json=CLAIM)
        assert pending.status_code == 202 and pending.json()["status"] in ("queued", "running")
        fake.open()
        done = api.post("/v1/checks?wait=30", json={"claim": "Paris is in France."})
        assert done.status_code == 200 and done.json()["status"] == "done"
        assert error_of(api.post("/v1/checks?wait=61", json=CLAIM), 422)["field"] == "wait"


def test_an_article_and_a_url_reach_the_executor_as_given(api: TestClient, fake_executor) -> None:
    article = {"title": "Bridge vote", "text": "The council voted.", "date": "2024-03-05"}
    done = api.post("/v1/checks?wait=30", json={"article": article, "method": "direct"}).json()
    assert done["status"] == "done" and done["method"] == "direct"
    assert done["verdict"]["article"] == {"title": "Bridge vote", "url": None}
    url = "https://news.example.org/2024/03/05/bridge-vote"
    done = api.post("/v1/checks?wait=30", json={"url": url, "date": "2024-03-06"}).json()
    assert done["status"] == "done" and done["method"] == "zofia"  # the article default
    assert fake_executor.requests[-1].url == url
    assert str(fake_executor.requests[-1].date) == "2024-03-06"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"claim": "   "}, "claim"),
        ({"article": {"title": "T", "text": ""}}, "article.text"),
        ({"claim": "x", "colour": "red"}, None),  # a name not taken is not repeated
        ({"url": "ftp://example.org/file"}, "url"),
        ({"claim": "x", "date": "soon"}, "date"),
        ({"claim": "x", "sources": ["a"] * 11}, "sources"),
        ({"claim": "x" * 2_001}, "claim"),  # over the server's claim limit (verity.limits)
        ({"claim": "x", "method": "rag", "settings": {"k": 0}}, "settings.k"),
        ({"claim": "x", "method": "rag", "settings": {"no_such": 1}}, "settings"),
    ],
)
def test_an_invalid_body_is_422_naming_the_field(
    api: TestClient, body: dict, field: str | None
) -> None:
    assert error_of(api.post("/v1/checks", json=body), 422)["field"] == field


def test_a_body_that_is_not_json_or_names_no_subject_is_422(api: TestClient) -> None:
    json_type = {"content-type": "application/json"}
    bad_json = api.post("/v1/checks", content=b"{nope", headers=json_type)
    assert error_of(bad_json, 422)["code"] == "invalid_json"
    none = error_of(api.post("/v1/checks", json={"method": "rag"}), 422)
    assert "exactly one of claim, article or url" in none["message"] and none["field"] is None
    assert error_of(api.post("/v1/checks", json=[1, 2]), 422)["code"] == "invalid"


@pytest.mark.parametrize(
    ("body", "code", "field", "valid"),
    [
        ({"claim": "x", "method": "nope"}, "unknown_method", "method", "rag"),
        ({"claim": "x", "method": "zofia"}, "unsuitable_method", "method", "rag"),
        (
            {"article": {"text": "x"}, "method": "zofia/nah"},
            "unknown_variant",
            "method",
            "zofia/no-debate",
        ),
        ({"claim": "x", "model": "openai:gpt-4o"}, "unknown_model", "model", "local"),
        ({"claim": "x", "model": "local:/etc/passwd"}, "unknown_model", "model", "local"),
        ({"claim": "x", "sources": ["nope"]}, "unknown_source", "sources", "offline-wiki"),
        (
            {"claim": "x", "sources": ["searxng:http://169.254.169.254/"]},
            "unknown_source",
            "sources",
            "searxng",
        ),
        (
            {"claim": "x", "method": "toe", "settings": {"weights": "/tmp"}},
            "server_setting",
            "settings.weights",
            None,
        ),
    ],
)
def test_a_name_the_server_does_not_offer_is_400_with_the_valid_names(
    api: TestClient, body: dict, code: str, field: str, valid: str | None
) -> None:
    error = error_of(api.post("/v1/checks", json=body), 400)
    assert (error["code"], error["field"]) == (code, field)
    if valid is not None:
        assert valid in error["valid"]
    assert api.get("/v1/checks").json()["total"] == 0  # nothing was queued


def test_a_source_that_needs_a_missing_key_is_refused_before_queueing(
    api: TestClient, monkeypatch
) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    error = error_of(api.post("/v1/checks", json={"claim": "x", "sources": ["brave"]}), 400)
    assert error["field"] == "sources" and "BRAVE_API_KEY" in error["message"]


def test_a_body_over_the_cap_is_413_declared_or_not(make_service) -> None:
    with TestClient(create_app(make_service(max_body_bytes=1_000))) as api:
        big = {"claim": "x" * 2_000}
        assert error_of(api.post("/v1/checks", json=big), 413)["code"] == "too_large"

        def chunks():  # no Content-Length: the body is counted as it arrives
            yield b'{"claim": "'
            for _ in range(20):
                yield b"x" * 100
            yield b'"}'

        streamed = api.post(
            "/v1/checks", content=chunks(), headers={"content-type": "application/json"}
        )
        assert error_of(streamed, 413)["code"] == "too_large"
        assert api.post("/v1/checks", json=CLAIM).status_code == 202


def test_a_full_queue_is_429_with_retry_after(make_service, scripted) -> None:
    fake = scripted(gated=True)
    with TestClient(create_app(make_service(fake, workers=1, queue_size=1))) as api:
        api.post("/v1/checks", json=CLAIM)
        assert fake.entered.acquire(timeout=60)  # the first is running: the queue is empty
        assert api.post("/v1/checks", json=CLAIM).status_code == 202
        full = api.post("/v1/checks", json=CLAIM)
        assert error_of(full, 429)["code"] == "queue_full"
        assert int(full.headers["retry-after"]) >= 1
        fake.open()


def test_cancel_a_queued_check_then_409_for_an_ended_one(make_service, scripted) -> None:
    fake = scripted(gated=True)
    with TestClient(create_app(make_service(fake, workers=1))) as api:
        running = api.post("/v1/checks", json=CLAIM).json()
        assert fake.entered.acquire(timeout=60)
        queued = api.post("/v1/checks", json={"claim": "Paris is in France."}).json()
        cancelled = api.delete(f"/v1/checks/{queued['id']}")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        assert cancelled.json()["error"]["code"] == "cancelled"
        assert api.delete(f"/v1/checks/{queued['id']}").status_code == 200  # idempotent
        fake.open()
        done = api.post("/v1/checks?wait=30", json={"claim": "Rome is in Italy."}).json()
        assert done["status"] == "done"
        assert api.get(running["links"]["self"]).json()["status"] == "done"
        assert error_of(api.delete(running["links"]["self"]), 409)["code"] == "ended"
        assert len(fake.requests) == 2  # the cancelled one never ran
    assert error_of(api.delete("/v1/checks/0123"), 404)["code"] == "not_found"


def test_history_is_newest_first_and_paged(api: TestClient) -> None:
    ids = [api.post("/v1/checks", json={"claim": f"Claim {n}."}).json()["id"] for n in range(5)]
    page = api.get("/v1/checks?limit=2&offset=1").json()
    assert page["total"] == 5 and (page["limit"], page["offset"]) == (2, 1)
    assert [j["id"] for j in page["items"]] == [ids[3], ids[2]]
    assert page["items"][0]["summary"] == "Claim 3." and "verdict" not in page["items"][0]
    assert error_of(api.get("/v1/checks?limit=1000"), 422)["field"] == "limit"


def test_unknown_routes_and_methods_answer_in_the_one_shape(api: TestClient) -> None:
    assert error_of(api.get("/v1/nothing"), 404)["code"] == "not_found"
    assert error_of(api.get("/v1/checks/" + "f" * 32), 404)["code"] == "not_found"
    wrong = api.put("/v1/checks", json=CLAIM)
    assert error_of(wrong, 405)["code"] == "method_not_allowed"
    assert "POST" in wrong.headers["allow"]


def test_an_unexpected_failure_is_500_and_says_nothing_of_it(make_service, caplog) -> None:
    service = make_service()

    def broken(**kw):
        raise RuntimeError("password=hunter2")

    service.store.history = broken
    with (
        TestClient(create_app(service), raise_server_exceptions=False) as api,
        caplog.at_level(logging.ERROR, logger="verity.service"),
    ):
        error = error_of(api.get("/v1/checks"), 500)
    assert error["code"] == "internal" and "hunter2" not in error["message"]
    assert "hunter2" in caplog.text  # the log has it, for whoever runs the server


def test_methods_sources_and_models_say_what_may_be_named(make_service) -> None:
    service = make_service(models=("openai:m",))
    with TestClient(create_app(service)) as api:
        methods = {m["name"]: m for m in api.get("/v1/methods").json()}
        assert methods["rag"]["accepts"] == ["claim", "article"]
        assert methods["rag"]["default_for"] == ["claim"]
        assert methods["zofia"]["accepts"] == ["article"] and methods["zofia"]["description"]
        assert "zofia/no-debate" in methods["zofia"]["variants"]
        sources = api.get("/v1/sources").json()
        assert sources["default"] == ["offline-wiki"]
        found = {s["name"]: s for s in sources["sources"]}
        assert found["offline-wiki"]["offline"] and found["offline-wiki"]["requestable"]
        assert not found["brave"]["offline"]
        assert not found["corpus:NAME"]["requestable"]
        models = api.get("/v1/models").json()
        assert models["default"] == "local" and models["accepted"] == ["local", "openai:m"]
        done = api.post("/v1/checks?wait=30", json={**CLAIM, "model": "openai:m"}).json()
        assert done["status"] == "done"


def test_health_and_readiness(api: TestClient) -> None:
    assert api.get("/healthz").json() == {"status": "ok"}
    ready = api.get("/readyz").json()
    assert ready["status"] == "ready" and ready["workers"] == 2


def test_readiness_is_503_once_shutting_down(make_service) -> None:
    service = make_service()
    with TestClient(create_app(service)) as api:
        service.begin_shutdown()
        assert error_of(api.get("/readyz"), 503)["code"] == "unavailable"
        assert error_of(api.post("/v1/checks", json=CLAIM), 503)["code"] == "unavailable"


def test_cors_is_closed_unless_origins_are_configured(make_service) -> None:
    origin = {"Origin": "https://elsewhere.example"}
    with TestClient(create_app(make_service())) as api:
        assert "access-control-allow-origin" not in api.get("/v1/methods", headers=origin).headers
    allowed = make_service(cors_origins=("https://elsewhere.example",))
    with TestClient(create_app(allowed)) as api:
        answer = api.get("/v1/methods", headers=origin)
        assert answer.headers["access-control-allow-origin"] == "https://elsewhere.example"


# -- keys ------------------------------------------------------------------------------------


@pytest.fixture
def keyed(make_service):
    """An app with two keys, alice's and bob's; a rate of 3 checks a minute each."""
    keys = {"alice": new_key(), "bob": new_key()}
    ring = KeyRing({name: hash_key(key) for name, key in keys.items()})
    service = make_service(keys=ring, limiter=RateLimiter(3), rate_per_minute=3)
    with TestClient(create_app(service)) as api:
        yield api, keys, service


def test_with_keys_every_api_route_needs_one(keyed) -> None:
    api, _, _ = keyed
    routes = [
        ("get", "/v1/checks"),
        ("get", "/v1/methods"),
        ("get", "/v1/models"),
        ("get", "/v1/sources"),
        ("get", "/v1/checks/abc"),
        ("get", "/v1/checks/abc/events"),
        ("delete", "/v1/checks/abc"),
    ]
    for method, path in routes:
        missing = getattr(api, method)(path)
        assert error_of(missing, 401)["code"] == "unauthorized", path
        assert missing.headers["www-authenticate"].startswith("Bearer")
    error_of(api.post("/v1/checks", json=CLAIM), 401)
    wrong = api.get("/v1/checks", headers={"Authorization": "Bearer vty_not-a-key"})
    assert "not valid" in error_of(wrong, 401)["message"]
    assert api.get("/healthz").status_code == 200 and api.get("/readyz").status_code == 200


def test_a_key_by_bearer_header_or_cookie_sees_its_own_checks_only(keyed) -> None:
    api, keys, _ = keyed
    alice = {"Authorization": f"Bearer {keys['alice']}"}
    bob = {"X-API-Key": keys["bob"]}
    job = api.post("/v1/checks?wait=30", json=CLAIM, headers=alice).json()
    assert job["status"] == "done" and job["key"] == "alice"
    assert api.get(job["links"]["self"], headers=alice).status_code == 200
    assert error_of(api.get(job["links"]["self"], headers=bob), 404)["code"] == "not_found"
    assert error_of(api.delete(job["links"]["self"], headers=bob), 404)
    assert api.get("/v1/checks", headers=bob).json() == {
        "items": [],
        "total": 0,
        "limit": 20,
        "offset": 0,
    }
    assert [j["id"] for j in api.get("/v1/checks", headers=alice).json()["items"]] == [job["id"]]
    api.cookies.set("verity_key", keys["alice"])
    assert api.get("/v1/checks").json()["total"] == 1


def test_each_key_has_its_own_rate(keyed) -> None:
    api, keys, _ = keyed
    alice = {"Authorization": f"Bearer {keys['alice']}"}
    for _ in range(3):
        assert api.post("/v1/checks", json=CLAIM, headers=alice).status_code == 202
    limited = api.post("/v1/checks", json=CLAIM, headers=alice)
    assert error_of(limited, 429)["code"] == "rate_limited"
    assert int(limited.headers["retry-after"]) >= 1
    assert api.get("/v1/checks", headers=alice).status_code == 200  # reading is not counted
    bob = {"Authorization": f"Bearer {keys['bob']}"}
    assert api.post("/v1/checks", json=CLAIM, headers=bob).status_code == 202


def test_a_key_never_appears_in_what_is_stored_or_logged(keyed, caplog) -> None:
    api, keys, service = keyed
    with caplog.at_level(logging.DEBUG):
        job = api.post(
            "/v1/checks?wait=30", json=CLAIM, headers={"Authorization": f"Bearer {keys['alice']}"}
        ).json()
    assert job["status"] == "done"
    stored = service.store.path
    with open(stored, "rb") as db:
        raw = db.read()
    with open(stored + "-wal", "rb") as wal:
        raw += wal.read()
    for key in keys.values():
        assert key.encode() not in raw
        assert key not in caplog.text
        assert key not in str(api.get(job["links"]["self"], headers={"X-API-Key": key}).json())


# -- verity serve: what it refuses before it starts -------------------------------------------


def test_serve_refuses_a_public_address_without_keys(cli) -> None:
    code, _, err = cli(["serve", "--host", "0.0.0.0"])
    assert code == 3 and "without API keys" in err and "--api-key-file" in err
    code, _, err = cli(["serve", "--host", "192.168.1.5", "--port", "1"])
    assert code == 3 and "without API keys" in err


@pytest.mark.parametrize(
    ("argv", "code", "said"),
    [
        (["--engine", "spark"], 2, "thread or ray"),
        (["--address", "ray://head:10001"], 2, "--engine ray"),
        (["--db", "postgres://db/jobs"], 3, "sqlite:///PATH"),
        (["--api-key-file", "/no/such/keys.txt"], 3, "keys.txt"),
    ],
)
def test_serve_refuses_bad_options_with_their_exit_code(cli, argv, code, said) -> None:
    got, _, err = cli(["serve", *argv])
    assert got == code and said in err


def test_serve_without_the_service_extra_says_how_to_install_it(cli, monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn now fails
    code, _, err = cli(["serve"])
    assert code == 3 and "pip install 'verity[service]'" in err


def test_loopback_addresses() -> None:
    from verity.cli.serve import is_loopback

    assert all(is_loopback(h) for h in ("127.0.0.1", "::1", "localhost", "127.8.0.1", "[::1]"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "example.org", ""))


def test_two_servers_cannot_share_a_job_store(make_service, tmp_path) -> None:
    from verity.errors import ConfigError
    from verity.service.core import Service
    from verity.service.jobs import JobStore

    first = make_service()
    first.start()
    with JobStore(first.store.path) as same:
        second = Service(store=same, executor=lambda request, listener: None)
        with pytest.raises(ConfigError, match="another verity server uses the job store"):
            second.start()
    first.stop()
    with JobStore(first.store.path) as same:  # released by the first's stop
        third = Service(store=same, executor=lambda request, listener: None)
        third.start()
        third.stop()
