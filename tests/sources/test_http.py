"""The HTTP layer: retries, the on-disk cache and the client they make up."""

from __future__ import annotations

import gzip
import json
import sqlite3
import threading
from pathlib import Path

import httpx
import pytest

from verity import paths
from verity.http import USER_AGENT, CacheTransport, RetryTransport, make_http_client

URL = "https://api.example.org/v1/search"


class Recorder:
    """A MockTransport handler that answers from a script and remembers every request."""

    def __init__(self, *responses: httpx.Response) -> None:
        self.script = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if len(self.script) > 1:
            return self.script.pop(0)
        return self.script[0]

    @property
    def calls(self) -> int:
        return len(self.requests)


def ok(payload: object = None) -> httpx.Response:
    return httpx.Response(200, json=payload if payload is not None else {"results": [1, 2]})


def retry_client(
    handler: Recorder,
    sleeps: list[float],
    *,
    retries: int = 3,
    backoff: float = 0.5,
    max_delay: float = 30.0,
) -> httpx.Client:
    transport = RetryTransport(
        httpx.MockTransport(handler), retries, backoff, sleeps.append, max_delay=max_delay
    )
    return httpx.Client(transport=transport)


# --- retries -------------------------------------------------------------------------


def test_retry_on_429_honours_retry_after_then_succeeds() -> None:
    handler = Recorder(httpx.Response(429, headers={"Retry-After": "2"}), ok())
    sleeps: list[float] = []
    with retry_client(handler, sleeps) as client:
        response = client.get(URL)
    assert response.status_code == 200
    assert response.json() == {"results": [1, 2]}
    assert handler.calls == 2
    assert sleeps == [2.0]


def test_retry_on_5xx_backs_off_exponentially() -> None:
    handler = Recorder(httpx.Response(503), httpx.Response(502), httpx.Response(500), ok())
    sleeps: list[float] = []
    with retry_client(handler, sleeps, retries=3, backoff=0.5) as client:
        assert client.get(URL).status_code == 200
    assert handler.calls == 4
    assert sleeps == [0.5, 1.0, 2.0]


def test_retry_gives_up_and_returns_the_last_answer() -> None:
    handler = Recorder(httpx.Response(500, text="still down"))
    sleeps: list[float] = []
    with retry_client(handler, sleeps, retries=2, backoff=1.0) as client:
        response = client.get(URL)
    assert response.status_code == 500
    assert response.text == "still down"
    assert handler.calls == 3
    assert sleeps == [1.0, 2.0]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_no_retry_on_client_errors(status: int) -> None:
    handler = Recorder(httpx.Response(status), ok())
    sleeps: list[float] = []
    with retry_client(handler, sleeps) as client:
        assert client.get(URL).status_code == status
    assert handler.calls == 1
    assert sleeps == []


def test_retry_after_is_capped() -> None:
    handler = Recorder(httpx.Response(429, headers={"Retry-After": "86400"}), ok())
    sleeps: list[float] = []
    with retry_client(handler, sleeps, max_delay=7.5) as client:
        assert client.get(URL).status_code == 200
    assert sleeps == [7.5]


def test_retry_after_as_http_date_in_the_past_waits_nothing() -> None:
    past = "Wed, 21 Oct 2015 07:28:00 GMT"
    handler = Recorder(httpx.Response(503, headers={"Retry-After": past}), ok())
    sleeps: list[float] = []
    with retry_client(handler, sleeps) as client:
        assert client.get(URL).status_code == 200
    assert sleeps == [0.0]


def test_retry_resends_the_same_post_body() -> None:
    handler = Recorder(httpx.Response(429), ok())
    sleeps: list[float] = []
    with retry_client(handler, sleeps) as client:
        client.post(URL, json={"q": "eiffel"})
    assert [json.loads(r.content) for r in handler.requests] == [{"q": "eiffel"}] * 2


def test_negative_retries_are_rejected() -> None:
    with pytest.raises(ValueError):
        RetryTransport(httpx.MockTransport(Recorder(ok())), retries=-1)


# --- cache ---------------------------------------------------------------------------


def cached_client(
    handler: Recorder, tmp_path: Path, *, cache: bool = True, retries: int = 3
) -> httpx.Client:
    return make_http_client(
        transport=httpx.MockTransport(handler),
        cache=cache,
        cache_path=tmp_path / "cache.sqlite",
        retries=retries,
        sleep=lambda _: None,
    )


def test_cache_hit_does_no_second_request(tmp_path: Path) -> None:
    handler = Recorder(ok({"answer": 42}))
    with cached_client(handler, tmp_path) as client:
        first = client.get(URL, params={"q": "eiffel"})
        second = client.get(URL, params={"q": "eiffel"})
    assert handler.calls == 1
    assert first.json() == second.json() == {"answer": 42}
    assert "verity_cache" not in first.extensions
    assert second.extensions["verity_cache"] == "hit"
    assert second.headers["content-type"] == "application/json"


def test_cache_survives_a_new_client(tmp_path: Path) -> None:
    handler = Recorder(ok({"answer": 42}))
    with cached_client(handler, tmp_path) as client:
        client.get(URL)
    with cached_client(handler, tmp_path) as client:
        assert client.get(URL).json() == {"answer": 42}
    assert handler.calls == 1


def test_cache_keys_on_query_string(tmp_path: Path) -> None:
    handler = Recorder(ok())
    with cached_client(handler, tmp_path) as client:
        client.get(URL, params={"q": "eiffel"})
        client.get(URL, params={"q": "louvre"})
    assert handler.calls == 2


def test_cache_post_same_body_hits_different_body_misses(tmp_path: Path) -> None:
    handler = Recorder(ok())
    with cached_client(handler, tmp_path) as client:
        client.post(URL, json={"q": "eiffel", "num": 5})
        client.post(URL, json={"q": "eiffel", "num": 5})
        assert handler.calls == 1
        client.post(URL, json={"q": "eiffel", "num": 10})
        assert handler.calls == 2
        # GET and POST of the same URL are different requests.
        client.get(URL)
        assert handler.calls == 3


def test_cache_keys_on_vary_headers_but_not_others(tmp_path: Path) -> None:
    handler = Recorder(ok())
    with cached_client(handler, tmp_path) as client:
        client.get(URL, headers={"X-API-KEY": "key-one", "X-Request-Id": "1"})
        client.get(URL, headers={"X-API-KEY": "key-one", "X-Request-Id": "2"})
        assert handler.calls == 1
        client.get(URL, headers={"X-API-KEY": "key-two"})
        assert handler.calls == 2
        client.get(URL, headers={"X-API-KEY": "key-one", "Accept-Language": "de"})
        assert handler.calls == 3


def test_cache_stores_no_api_key(tmp_path: Path) -> None:
    secrets = ["sk-live-0123456789abcdef", "tvly-secret-token-987", "query-param-secret-55"]
    handler = Recorder(ok({"organic": []}))
    with cached_client(handler, tmp_path) as client:
        client.post(URL, json={"q": "eiffel"}, headers={"X-API-KEY": secrets[0]})
        client.post(URL, json={"q": "eiffel"}, headers={"Authorization": f"Bearer {secrets[1]}"})
        client.get(URL, params={"q": "eiffel", "api_key": secrets[2]})
    assert handler.calls == 3
    files = list(tmp_path.glob("cache.sqlite*"))
    assert files
    stored = b"".join(f.read_bytes() for f in files)
    assert b"eiffel" in stored  # the file is really the one written
    for secret in secrets:
        assert secret.encode() not in stored
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:
        urls = [row[0] for row in db.execute("SELECT url FROM responses")]
    db.close()
    assert f"{URL}?q=eiffel&api_key=***" in urls


def test_cache_stores_only_200(tmp_path: Path) -> None:
    handler = Recorder(httpx.Response(404, json={"error": "not found"}))
    with cached_client(handler, tmp_path, retries=0) as client:
        client.get(URL)
        client.get(URL)
    assert handler.calls == 2
    handler = Recorder(httpx.Response(503))
    with cached_client(handler, tmp_path, retries=0) as client:
        client.get(URL + "/other")
        client.get(URL + "/other")
    assert handler.calls == 2


def test_cache_is_outside_retries(tmp_path: Path) -> None:
    handler = Recorder(httpx.Response(429), ok({"n": 1}))
    with cached_client(handler, tmp_path) as client:
        assert client.get(URL).json() == {"n": 1}
        assert handler.calls == 2
        assert client.get(URL).json() == {"n": 1}
        assert handler.calls == 2


def test_cache_entries_expire_after_ttl(tmp_path: Path) -> None:
    now = [1000.0]
    handler = Recorder(ok({"v": 1}), ok({"v": 2}))
    transport = CacheTransport(
        httpx.MockTransport(handler), tmp_path / "c.sqlite", ttl=60, clock=lambda: now[0]
    )
    with httpx.Client(transport=transport) as client:
        assert client.get(URL).json() == {"v": 1}
        now[0] += 59
        assert client.get(URL).json() == {"v": 1}
        assert handler.calls == 1
        now[0] += 2
        assert client.get(URL).json() == {"v": 2}
        assert handler.calls == 2
        assert client.get(URL).json() == {"v": 2}
        assert handler.calls == 2


def test_cache_keeps_encoded_bodies_readable(tmp_path: Path) -> None:
    body = json.dumps({"title": "Tour Eiffel"}).encode()
    handler = Recorder(
        httpx.Response(200, headers={"Content-Encoding": "gzip"}, content=gzip.compress(body))
    )
    with cached_client(handler, tmp_path) as client:
        assert client.get(URL).json() == {"title": "Tour Eiffel"}
        hit = client.get(URL)
    assert hit.extensions["verity_cache"] == "hit"
    assert hit.json() == {"title": "Tour Eiffel"}
    assert handler.calls == 1


def test_cache_is_thread_safe(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"q": request.url.params["q"]})

    errors: list[BaseException] = []
    with make_http_client(
        transport=httpx.MockTransport(handler), cache_path=tmp_path / "t.sqlite"
    ) as client:

        def work(worker: int) -> None:
            try:
                for i in range(20):
                    q = f"{(worker + i) % 7}"
                    assert client.get(URL, params={"q": q}).json() == {"q": q}
            except BaseException as exc:  # collected and re-raised in the main thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    with sqlite3.connect(tmp_path / "t.sqlite") as db:
        assert db.execute("SELECT count(*) FROM responses").fetchone()[0] == 7
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_cache_default_path_is_under_the_cache_dir() -> None:
    transport = CacheTransport(httpx.MockTransport(Recorder(ok())))
    assert transport.path == paths.cache_path("http", "cache.sqlite")
    transport.close()


def test_cache_off_sends_every_request(tmp_path: Path) -> None:
    handler = Recorder(ok())
    with cached_client(handler, tmp_path, cache=False) as client:
        client.get(URL)
        client.get(URL)
    assert handler.calls == 2
    assert not (tmp_path / "cache.sqlite").exists()


def test_client_sends_descriptive_user_agent_and_follows_redirects(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["user-agent"] == USER_AGENT
        if request.url.path == "/old":
            return httpx.Response(301, headers={"Location": "/new"})
        return httpx.Response(200, json={"path": request.url.path})

    with make_http_client(transport=httpx.MockTransport(handler), cache=False) as client:
        assert client.get("https://api.example.org/old").json() == {"path": "/new"}
    assert USER_AGENT.startswith("verity/")
    assert "https://github.com/verity-fact-checking/verity" in USER_AGENT


def test_unusable_cache_file_degrades_to_no_cache(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    handler = Recorder(ok({"v": 1}))
    # A directory where the database file should be: SQLite cannot open it.
    transport = CacheTransport(httpx.MockTransport(handler), tmp_path)
    with httpx.Client(transport=transport) as client:
        assert client.get(URL).json() == {"v": 1}
        assert client.get(URL).json() == {"v": 1}
    assert handler.calls == 2
    assert "HTTP cache" in caplog.text
