"""BlueskySource against answers in the shapes of the Bluesky lexicons."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date
from typing import Any

import httpx
import pytest

from shapes.bluesky import post_view, search_payload, session_payload, xrpc_error
from verity.errors import BadInputError, ConfigError, MissingKeyError, SourceUnavailableError
from verity.http import make_http_client
from verity.sources import social as social_module
from verity.sources.base import Source
from verity.sources.social import BlueskySource

CUTOFF = date(2024, 1, 1)
HANDLE = "alice.bsky.social"
PASSWORD = "abcd-efgh-ijkl-mnop"
Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def keyless(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BLUESKY_HANDLE", raising=False)
    monkeypatch.delenv("BLUESKY_APP_PASSWORD", raising=False)


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLUESKY_HANDLE", HANDLE)
    monkeypatch.setenv("BLUESKY_APP_PASSWORD", PASSWORD)


def source(handler: Handler, **kwargs: Any) -> BlueskySource:
    return BlueskySource(client=httpx.Client(transport=httpx.MockTransport(handler)), **kwargs)


def answer(payload: Any, status: int = 200) -> Handler:
    return lambda request: httpx.Response(status, json=payload)


def test_keyless_search_on_the_public_appview(keyless: None) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            json=search_payload(
                post_view(
                    "3kabc2xyz",
                    "Measles cases are up   this year.\nSee the CDC page.",
                    created_at="2023-06-01T12:00:00.000Z",
                    likes=42,
                    reposts=7,
                    replies=5,
                    quotes=2,
                ),
                post_view(
                    "3kdef",
                    "Another post",
                    handle="bob.example.com",
                    did="did:plc:bob",
                    display_name=None,
                ),
            ),
        )

    hits = source(handler).search(" measles outbreak ", k=2)
    (request,) = seen
    assert request.url.copy_with(query=None) == (
        "https://public.api.bsky.app/xrpc/app.bsky.feed.searchPosts"
    )
    assert dict(request.url.params) == {"q": "measles outbreak", "limit": "2", "sort": "top"}
    assert "Authorization" not in request.headers
    first, second = hits
    assert (first.text, first.title, first.url, first.published, first.score, first.source) == (
        "Measles cases are up this year. See the CDC page.",
        "Alice (@alice.bsky.social)",
        "https://bsky.app/profile/alice.bsky.social/post/3kabc2xyz",
        date(2023, 6, 1),
        1.0,
        "social",
    )
    assert first.id == "at://did:plc:abc123xyz/app.bsky.feed.post/3kabc2xyz"
    assert first.metadata == {
        "author_handle": "alice.bsky.social",
        "author_name": "Alice",
        "likes": 42,
        "reposts": 7,
        "replies": 5,
        "quotes": 2,
    }
    assert (second.title, second.metadata["author_name"]) == ("@bob.example.com", "")


def test_cutoff_is_sent_as_until_and_enforced_on_created_and_indexed(keyless: None) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.params["until"] == "2024-01-01"
        assert request.url.params["limit"] == "7"
        return httpx.Response(
            200,
            json=search_payload(
                post_view("late", "Late.", created_at="2024-01-01T00:00:00Z"),
                post_view(
                    "backdated",
                    "Claims 2020, seen 2024.",
                    created_at="2020-01-01T00:00:00Z",
                    indexed_at="2024-02-01T00:00:00Z",
                ),
                post_view("early", "Early.", created_at="2023-12-31T23:00:00Z"),
                post_view("earlier", "Earlier.", created_at="2023-01-01T00:00:00Z"),
            ),
        )

    hits = source(handler).search("x", k=2, before=CUTOFF)
    assert [h.url.rsplit("/", 1)[1] for h in hits if h.url] == ["early", "earlier"]


def test_exclusions(keyless: None) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise AssertionError("no request expected")

    assert source(refuse).search("x", exclude_domains=["bsky.app"]) == []
    payload = search_payload(
        post_view("a", "Linked in text.", link="https://www.politifact.com/factchecks/x"),
        post_view("b", "A card.", card="https://politifact.com/y"),
        post_view("c", "Other link.", link="https://example.org/z"),
        post_view("d", "No link."),
    )
    hits = source(answer(payload)).search("x", exclude_domains=["politifact.com"])
    assert [h.text for h in hits] == ["Other link.", "No link."]
    assert len(source(answer(payload)).search("x", k=3)) == 3


def test_keyless_refusal_says_how_to_sign_in(keyless: None) -> None:
    refused = answer(xrpc_error("AuthMissing", "Authentication Required"), status=403)
    with pytest.raises(SourceUnavailableError, match="BLUESKY_HANDLE and BLUESKY_APP_PASSWORD"):
        source(refused).search("x")


def test_with_an_account_a_session_is_made_once_and_used(account: None) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path.endswith("createSession"):
            return httpx.Response(200, json=session_payload("jwt-1"))
        return httpx.Response(200, json=search_payload(post_view("a", "Hello.")))

    bluesky = source(handler)
    assert bluesky.authenticated
    bluesky.search("hello")
    bluesky.search("hello again")
    session, search, again = seen
    assert session.method == "POST"
    assert session.url == "https://bsky.social/xrpc/com.atproto.server.createSession"
    assert json.loads(session.content) == {"identifier": HANDLE, "password": PASSWORD}
    assert search.url.copy_with(query=None) == (
        "https://bsky.social/xrpc/app.bsky.feed.searchPosts"
    )
    assert search.headers["Authorization"] == again.headers["Authorization"] == "Bearer jwt-1"


def test_an_expired_session_is_renewed_once(account: None) -> None:
    sessions = iter(["jwt-old", "jwt-new", "jwt-newer"])
    used: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("createSession"):
            return httpx.Response(200, json=session_payload(next(sessions)))
        used.append(request.headers["Authorization"])
        if request.headers["Authorization"] == "Bearer jwt-old":
            return httpx.Response(400, json=xrpc_error("ExpiredToken", "Token has expired"))
        return httpx.Response(200, json=search_payload())

    assert source(handler).search("x") == []
    assert used == ["Bearer jwt-old", "Bearer jwt-new"]

    def always_bad(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("createSession"):
            return httpx.Response(200, json=session_payload())
        return httpx.Response(400, json=xrpc_error("InvalidRequest", "bad query"))

    with pytest.raises(SourceUnavailableError, match="HTTP 400"):
        source(always_bad).search("x")


def test_wrong_password_and_half_an_account(account: None, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = answer(xrpc_error("AuthenticationRequired", "Invalid identifier or password"), 401)
    with pytest.raises(
        SourceUnavailableError, match="BLUESKY_HANDLE and BLUESKY_APP_PASSWORD"
    ) as info:
        source(wrong).search("x")
    assert PASSWORD not in str(info.value)
    monkeypatch.delenv("BLUESKY_APP_PASSWORD")
    with pytest.raises(MissingKeyError, match="BLUESKY_APP_PASSWORD"):
        BlueskySource()
    monkeypatch.delenv("BLUESKY_HANDLE")
    monkeypatch.setenv("BLUESKY_APP_PASSWORD", PASSWORD)
    with pytest.raises(MissingKeyError, match="BLUESKY_HANDLE"):
        BlueskySource()


def test_settings_are_checked(keyless: None) -> None:
    with pytest.raises(ConfigError, match="sort"):
        BlueskySource(sort="random")
    with pytest.raises(ConfigError, match="https"):
        BlueskySource(service="http://pds.local")
    latest = source(answer(search_payload()), sort="latest")
    assert latest.search("x") == []
    with pytest.raises(BadInputError):
        latest.search(" ")


@pytest.mark.parametrize(
    ("status", "payload", "message"),
    [
        (500, {"error": "InternalServerError"}, "HTTP 500"),
        (200, {"posts": "none"}, "unexpected shape"),
        (200, {"posts": [{"uri": "at://x", "record": "text"}]}, "unexpected shape"),
    ],
)
def test_failures(keyless: None, status: int, payload: Any, message: str) -> None:
    with pytest.raises(SourceUnavailableError, match=message):
        source(answer(payload, status)).search("x")


def test_hostile_posts_are_cleaned_capped_or_skipped(keyless: None) -> None:
    odd_handle = post_view(
        "r1",
        "<b>Bold</b> " + "w" * 5000,
        handle="handle.invalid",
        did="did:plc:odd",
        display_name="<script>x</script>" + "N" * 500,
    )
    bad_uri = post_view("r2", "Bad uri.")
    bad_uri["uri"] = "at://did:plc:x/app.bsky.feed.like/r2"
    injected = post_view("r3/../../evil", "Injected rkey.")
    bad_did = post_view("r4", "Bad handle and DID.", handle="not a handle", did="javascript:x")
    empty = post_view("r5", "   ")
    hits = source(answer(search_payload(odd_handle, bad_uri, injected, bad_did, empty))).search("x")
    (hit,) = hits
    assert hit.url == "https://bsky.app/profile/did:plc:odd/post/r1"
    assert hit.text.startswith("Bold www") and len(hit.text) <= 3000
    assert "<" not in hit.title and len(str(hit.metadata["author_name"])) <= 200


def test_session_goes_through_a_client_without_cache(
    account: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("createSession"):
            return httpx.Response(200, json=session_payload())
        return httpx.Response(200, json=search_payload())

    made: list[dict[str, Any]] = []

    def no_cache_client(**kwargs: Any) -> httpx.Client:
        made.append(kwargs)
        return httpx.Client(transport=httpx.MockTransport(handler))

    shared = httpx.Client(transport=httpx.MockTransport(handler))
    monkeypatch.setattr(social_module, "make_http_client", no_cache_client)
    monkeypatch.setattr(social_module, "http_client", lambda client: shared)
    bluesky = BlueskySource()
    assert made == []
    bluesky.search("x")
    assert [m["cache"] for m in made] == [False]


def test_describes_itself_without_the_account(keyless: None) -> None:
    bluesky = BlueskySource()
    assert isinstance(bluesky, Source)
    assert bluesky.to_dict() == {
        "type": "bluesky",
        "name": "social",
        "host": "https://public.api.bsky.app",
        "authenticated": False,
        "sort": "top",
        "handle_env": "BLUESKY_HANDLE",
        "password_env": "BLUESKY_APP_PASSWORD",
    }


def test_authenticated_description(account: None) -> None:
    described = json.dumps(BlueskySource().to_dict())
    assert '"authenticated": true' in described and "https://bsky.social" in described
    assert PASSWORD not in described and HANDLE not in described


@pytest.mark.live
def test_live_bluesky(live_key: Callable[[str], str]) -> None:
    # Bluesky closes keyless search often, so the live test signs in.
    live_key("BLUESKY_HANDLE")
    live_key("BLUESKY_APP_PASSWORD")
    with make_http_client(cache=False) as client:
        hits = BlueskySource(client=client).search("measles", k=3, before=date(2024, 6, 1))
    assert hits
    for hit in hits:
        assert hit.url and hit.url.startswith("https://bsky.app/profile/")
        assert hit.published is not None and hit.published < date(2024, 6, 1)
