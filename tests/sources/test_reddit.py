"""RedditSource against answers in the shapes of Reddit's API documentation."""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from shapes.reddit import comment, listing, more, post, thread, token_payload, user_about
from verity.errors import BadInputError, MissingKeyError, SourceUnavailableError
from verity.http import make_http_client
from verity.sources import reddit as reddit_module
from verity.sources.base import Source
from verity.sources.reddit import RedditSource

CLIENT_ID = "reddit-test-client-id"
SECRET = "reddit-test-secret-0001"
CUTOFF = date(2020, 1, 1)
TOKEN_URL = "https://www.reddit.com/api/v1/access_token"


def ts(day: date) -> float:
    return datetime(day.year, day.month, day.day, 12, tzinfo=UTC).timestamp()


@pytest.fixture
def creds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDDIT_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("REDDIT_CLIENT_SECRET", SECRET)
    monkeypatch.delenv("REDDIT_USER_AGENT", raising=False)


class FakeReddit:
    """Answers the token endpoint and oauth.reddit.com paths from a table; records requests."""

    def __init__(self, routes: dict[str, Any], token: Any = None) -> None:
        self.routes = routes
        self.token = token if token is not None else token_payload()
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if str(request.url) == TOKEN_URL:
            answer = self.token
        else:
            assert request.url.host == "oauth.reddit.com"
            answer = self.routes[request.url.path]
        if callable(answer):
            answer = answer(request)
        return answer if isinstance(answer, httpx.Response) else httpx.Response(200, json=answer)

    def paths(self) -> list[str]:
        return [r.url.path for r in self.requests]

    def source(self, **kwargs: Any) -> RedditSource:
        return RedditSource(client=httpx.Client(transport=httpx.MockTransport(self)), **kwargs)


def test_token_search_comments_and_karma(creds: None) -> None:
    fake = FakeReddit(
        {
            "/search": listing(
                post(
                    "abc12",
                    "Do 5G towers spread viruses?",
                    selftext="My uncle says   so.\n\nIs it true?",
                    subreddit="askscience",
                    author="curious_cat",
                    score=321,
                    num_comments=54,
                    created_utc=ts(date(2019, 6, 1)),
                ),
                post(
                    "def34",
                    "Study: radio waves and health",
                    url="https://www.nature.com/articles/xyz",
                    author="[deleted]",
                    created_utc=ts(date(2019, 5, 1)),
                ),
            ),
            "/comments/abc12": thread(
                post("abc12", "Do 5G towers spread viruses?"),
                comment(
                    "No. Viruses need hosts; radio waves carry no virus.",
                    score=900,
                    author="virologist_1",
                ),
                comment("[removed]", score=500),
                comment("Also no evidence at all.", score=120, author="skeptic"),
                comment("Third comment.", score=90, author="third"),
                comment("Fourth comment, not quoted.", score=80),
                more(),
            ),
            "/comments/def34": thread(post("def34", "Study"), more()),
            "/user/curious_cat/about": user_about("curious_cat", 1000, 234),
        }
    )
    source = fake.source()
    hits = source.search("  5G towers spread viruses  ", k=2)

    assert fake.paths() == [
        "/api/v1/access_token",
        "/search",
        "/comments/abc12",
        "/user/curious_cat/about",
        "/comments/def34",
    ]
    token, search, comments, about, _ = fake.requests
    assert token.method == "POST"
    assert (
        token.headers["Authorization"]
        == "Basic " + base64.b64encode(f"{CLIENT_ID}:{SECRET}".encode()).decode()
    )
    assert parse_qs(token.content.decode()) == {"grant_type": ["client_credentials"]}
    for request in fake.requests:
        assert request.headers["User-Agent"].startswith("python:verity:")
    assert dict(search.url.params) == {
        "q": "5G towers spread viruses",
        "limit": "2",
        "sort": "relevance",
        "t": "all",
        "type": "link",
        "raw_json": "1",
    }
    assert search.headers["Authorization"] == "bearer reddit-token-1"
    assert dict(comments.url.params) == {"sort": "top", "limit": "8", "depth": "1", "raw_json": "1"}
    assert about.headers["Authorization"] == "bearer reddit-token-1"

    first, second = hits
    assert first.text == (
        "Do 5G towers spread viruses?\n"
        "My uncle says so. Is it true?\n"
        "Comment by u/virologist_1 (900 points): No. Viruses need hosts; radio waves carry no "
        "virus.\n"
        "Comment by u/skeptic (120 points): Also no evidence at all.\n"
        "Comment by u/third (90 points): Third comment."
    )
    assert (first.title, first.url, first.id, first.published, first.score, first.source) == (
        "Do 5G towers spread viruses?",
        "https://www.reddit.com/r/askscience/comments/abc12/do_5g_towers_spread_viruses/",
        "abc12",
        date(2019, 6, 1),
        1.0,
        "reddit",
    )
    assert first.metadata == {
        "subreddit": "askscience",
        "author": "curious_cat",
        "author_karma": 1234,
        "score": 321,
        "num_comments": 54,
        "comments_quoted": 3,
    }
    assert second.text == "Study: radio waves and health\nLink: https://www.nature.com/articles/xyz"
    assert second.metadata["author"] == "[deleted]" and "author_karma" not in second.metadata
    assert second.metadata["link_domain"] == "nature.com"

    # The token and the karma are reused by the next search.
    source.search("5G towers spread viruses", k=2)
    assert fake.paths()[5:] == ["/search", "/comments/abc12", "/comments/def34"]


def test_cutoff_drops_late_posts_and_late_comments(creds: None) -> None:
    fake = FakeReddit(
        {
            "/search": listing(
                post("late1", "Late post", created_utc=ts(date(2020, 1, 1))),
                post("early1", "Early post", created_utc=ts(date(2019, 12, 31))),
                post("early2", "Earlier post", created_utc=ts(date(2018, 1, 1))),
            ),
            "/comments/early1": thread(
                post("early1", "Early post"),
                comment("Written later.", created_utc=ts(date(2020, 2, 1))),
                comment("Written in time.", created_utc=ts(date(2019, 12, 31)), author="ontime"),
                {"kind": "t1", "data": {"body": "No date.", "author": "nodate", "score": 3}},
            ),
            "/comments/early2": thread(post("early2", "Earlier post")),
            "/user/curious_cat/about": user_about("curious_cat"),
        }
    )
    hits = fake.source().search("post", k=2, before=CUTOFF)
    assert [h.id for h in hits] == ["early1", "early2"]
    assert hits[0].text.split("\n")[1:] == ["Comment by u/ontime (40 points): Written in time."]
    search = fake.requests[1]
    assert search.url.params["t"] == "all" and search.url.params["limit"] == "7"
    assert "/comments/late1" not in fake.paths()


def test_exclusions(creds: None) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise AssertionError("no request expected")

    blocked = RedditSource(client=httpx.Client(transport=httpx.MockTransport(refuse)))
    assert blocked.search("x", exclude_domains=["reddit.com"]) == []

    fake = FakeReddit(
        {
            "/search": listing(
                post("link1", "PolitiFact: claim is false", url="https://www.politifact.com/x"),
                post("self1", "A self post", selftext="Text."),
            ),
            "/comments/self1": thread(post("self1", "A self post")),
            "/user/curious_cat/about": user_about("curious_cat"),
        }
    )
    hits = fake.source().search("claim", exclude_domains=["politifact.com"])
    assert [h.id for h in hits] == ["self1"]
    assert "/comments/link1" not in fake.paths()


def test_only_k_posts_cost_extra_requests(creds: None) -> None:
    posts = [post(f"p{i}", f"Post {i}", author=f"user_{i}") for i in range(10)]
    routes: dict[str, Any] = {"/search": listing(*posts)}
    for i in range(10):
        routes[f"/comments/p{i}"] = thread(posts[i])
        routes[f"/user/user_{i}/about"] = user_about(f"user_{i}")
    fake = FakeReddit(routes)
    hits = fake.source().search("post", k=3)
    assert [h.id for h in hits] == ["p0", "p1", "p2"]
    assert len(fake.requests) == 1 + 1 + 2 * 3
    fewer = FakeReddit(routes)
    assert len(fewer.source(top_comments=0).search("post", k=3)) == 3
    assert fewer.paths() == ["/api/v1/access_token", "/search"] + [
        f"/user/user_{i}/about" for i in range(3)
    ]


def test_side_requests_failing_only_drop_comments_or_karma(creds: None) -> None:
    fake = FakeReddit(
        {
            "/search": listing(
                post("a1", "First", author="gone_user"),
                post("a2", "Second", author="suspended_user"),
            ),
            "/comments/a1": httpx.Response(403, json={"message": "Forbidden", "error": 403}),
            "/comments/a2": [listing()],  # one listing only: no comments part
            "/user/gone_user/about": httpx.Response(404, json={"message": "Not Found"}),
            "/user/suspended_user/about": {
                "kind": "t2",
                "data": {"name": "suspended_user", "is_suspended": True},
            },
        }
    )
    hits = fake.source().search("x")
    assert [h.text for h in hits] == ["First", "Second"]
    assert all("author_karma" not in h.metadata for h in hits)


def test_an_expired_token_is_renewed_once(creds: None) -> None:
    tokens = iter([token_payload("old-token"), token_payload("new-token")])
    searches: list[str] = []

    def search(request: httpx.Request) -> httpx.Response:
        searches.append(request.headers["Authorization"])
        if request.headers["Authorization"] == "bearer old-token":
            return httpx.Response(401, json={"message": "Unauthorized", "error": 401})
        return httpx.Response(200, json=listing())

    fake = FakeReddit({"/search": search}, token=lambda r: httpx.Response(200, json=next(tokens)))
    assert fake.source().search("x") == []
    assert searches == ["bearer old-token", "bearer new-token"]

    always = FakeReddit({"/search": httpx.Response(401, json={"error": 401})})
    with pytest.raises(SourceUnavailableError, match="REDDIT_CLIENT_ID and REDDIT_CLIENT_SECRET"):
        always.source().search("x")
    assert always.paths().count("/api/v1/access_token") == 2


def test_token_expiry_is_respected(creds: None) -> None:
    now = [0.0]
    fake = FakeReddit({"/search": listing()}, token=token_payload(expires_in=3600))
    source = fake.source(clock=lambda: now[0])
    source.search("x")
    now[0] = 3600 - 61
    source.search("x")
    now[0] = 3600 - 59  # within a minute of expiry: renewed
    source.search("x")
    assert fake.paths().count("/api/v1/access_token") == 2


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (httpx.Response(401, json={"message": "Unauthorized", "error": 401}), "rejected the API"),
        (httpx.Response(200, json={"error": "invalid_grant"}), "no access token: invalid_grant"),
        (httpx.Response(500, text="oops"), "HTTP 500"),
        (httpx.Response(200, text="<html>login</html>"), "not answer with JSON"),
    ],
)
def test_token_failures(creds: None, token: httpx.Response, message: str) -> None:
    with pytest.raises(SourceUnavailableError, match=message) as info:
        FakeReddit({}, token=token).source().search("x")
    assert SECRET not in str(info.value)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (httpx.Response(503, text="down"), "HTTP 503"),
        (httpx.Response(403, json={"error": 403}), r"rejected the API key \(HTTP 403\)"),
        ({"kind": "Listing", "data": {"children": "none"}}, "unexpected shape"),
        ([1, 2], "unexpected shape"),
    ],
)
def test_search_failures(creds: None, answer: Any, message: str) -> None:
    with pytest.raises(SourceUnavailableError, match=message):
        FakeReddit({"/search": answer}).source().search("x")


def test_missing_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDDIT_CLIENT_ID", raising=False)
    monkeypatch.setenv("REDDIT_CLIENT_SECRET", SECRET)
    with pytest.raises(MissingKeyError, match="REDDIT_CLIENT_ID"):
        RedditSource()
    monkeypatch.setenv("REDDIT_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("REDDIT_CLIENT_SECRET", " ")
    with pytest.raises(MissingKeyError, match="REDDIT_CLIENT_SECRET"):
        RedditSource()


def test_hostile_payloads_are_cleaned_capped_and_kept_out_of_urls(creds: None) -> None:
    evil = post(
        "ok1",
        "<script>x</script><b>Title</b> " + "t" * 1000,
        selftext="<img src=x>Body " + "b" * 50_000,
        author="../../admin",
        subreddit="<i>sub</i>",
    )
    evil["data"]["permalink"] = "https://evil.example/phish"
    routes: dict[str, Any] = {
        "/search": listing(
            evil,
            post("BAD/../id", "Bad id"),
            post("noti", ""),
            {"kind": "t5", "data": {"id": "sr1", "title": "A subreddit, not a post"}},
        ),
        "/comments/ok1": thread(evil, comment("c" * 5000, author="<b>x</b>")),
        "/comments/noti": thread(post("noti", "")),
    }
    fake = FakeReddit(routes)
    (hit,) = fake.source().search("x", k=5)
    title, body, quoted = hit.text.split("\n")
    assert "<" not in hit.text and "<" not in hit.title
    assert title.startswith("xTitle ttt") and len(title) <= 300
    assert body.startswith("Body bbb") and len(body) <= 4000
    assert quoted.startswith("Comment by u/[deleted] (40 points): ccc") and len(quoted) <= 1100
    assert hit.url == "https://www.reddit.com/comments/ok1/"
    assert hit.metadata["author"] == "[deleted]" and hit.metadata["subreddit"] == "sub"
    assert not any(p.startswith("/user/") for p in fake.paths())


def test_long_query_is_cut_to_512_characters_and_blank_is_refused(creds: None) -> None:
    asked: list[str] = []

    def search(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.params["q"])
        return httpx.Response(200, json=listing())

    fake = FakeReddit({"/search": search})
    fake.source().search("word " * 300)
    assert len(asked[0]) <= 512 and asked[0].endswith("word")
    with pytest.raises(BadInputError):
        fake.source().search("   ")


def test_token_goes_through_a_client_without_cache(
    creds: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeReddit({"/search": listing()})
    made: list[dict[str, Any]] = []

    def no_cache_client(**kwargs: Any) -> httpx.Client:
        made.append(kwargs)
        return httpx.Client(transport=httpx.MockTransport(fake))

    shared = httpx.Client(transport=httpx.MockTransport(fake))
    monkeypatch.setattr(reddit_module, "make_http_client", no_cache_client)
    monkeypatch.setattr(reddit_module, "http_client", lambda client: shared)
    source = RedditSource()
    assert made == []  # nothing is built before it is needed
    source.search("x")
    assert [m["cache"] for m in made] == [False]


def test_describes_itself_without_secrets(creds: None, monkeypatch: pytest.MonkeyPatch) -> None:
    source = FakeReddit({}).source(top_comments=2)
    assert isinstance(source, Source)
    assert source.to_dict() == {
        "type": "reddit",
        "name": "reddit",
        "top_comments": 2,
        "client_id_env": "REDDIT_CLIENT_ID",
        "client_secret_env": "REDDIT_CLIENT_SECRET",
    }
    monkeypatch.setenv("REDDIT_USER_AGENT", "python:verity-lab:1 (by /u/someone)")
    assert FakeReddit({}).source().user_agent == "python:verity-lab:1 (by /u/someone)"


@pytest.mark.live
def test_live_reddit(live_key: Callable[[str], str]) -> None:
    live_key("REDDIT_CLIENT_ID")
    live_key("REDDIT_CLIENT_SECRET")
    with make_http_client(cache=False) as client:
        hits = RedditSource(client=client).search("5G coronavirus", k=2, before=date(2022, 1, 1))
    assert hits
    for hit in hits:
        assert hit.url and hit.url.startswith("https://www.reddit.com/")
        assert hit.published is not None and hit.published < date(2022, 1, 1)
        assert hit.metadata["subreddit"]
