"""The sources' HTTP layer against loopback servers that misbehave in every way we know.

The first half runs ``verity check --method rag --source searxng:URL`` through the CLI
against a fault-injecting SearXNG (and a good model endpoint), with tiny limits set in the
``VERITY_HTTP_*`` variables. Every test checks the requests the server saw (the retries),
a generous time bound, the exit code and message (never a traceback), and that nothing bad
was cached: once the fault clears, the next run reaches the server again and succeeds. The
second half checks redirects and the cache on the HTTP layer itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from faults import FaultServer, Reply, Seen, model, redirect, source
from verity.http import BlockedTargetError, make_http_client
from verity.sources.wikipedia import WikipediaSource

DEADLINE = 0.4
RETRIES = 2
MAX_BYTES = 2**16
SLACK = 3.0
ATTEMPTS = RETRIES + 1

CliRun = Callable[[list[str]], tuple[int, str, str]]


@pytest.fixture(autouse=True)
def fast_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "verity.toml"
    config.write_text("[model]\ntimeout = 2\nretries = 0\n")
    monkeypatch.setenv("VERITY_CONFIG", str(config))
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("VERITY_HTTP_DEADLINE", str(DEADLINE))
    monkeypatch.setenv("VERITY_HTTP_RETRIES", str(RETRIES))
    monkeypatch.setenv("VERITY_HTTP_BACKOFF", "0.01")
    monkeypatch.setenv("VERITY_HTTP_MAX_BYTES", str(MAX_BYTES))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def searx() -> Iterator[FaultServer]:
    with FaultServer(default=source.searx()) as server:
        yield server


@pytest.fixture
def judge() -> Iterator[FaultServer]:
    with FaultServer(default=model.answer()) as server:
        yield server


@dataclass
class Run:
    code: int
    err: str
    seconds: float


def check(cli: CliRun, searx: FaultServer, judge: FaultServer) -> Run:
    started = time.monotonic()
    code, _, err = cli(
        [
            "check",
            "The Eiffel Tower is in Paris.",
            # The judge's requests counted are the method's own, not the grounding call's.
            "--grounding",
            "off",
            "--method",
            "rag",
            "--source",
            f"searxng:{searx.url}",
            "--model",
            "openai:m",
            "--base-url",
            judge.url + "/v1",
        ]
    )
    return Run(code, err, time.monotonic() - started)


def assert_fault(
    cli: CliRun,
    searx: FaultServer,
    judge: FaultServer,
    reply: Reply | Callable[[Seen], Reply],
    *,
    requests: int,
    message: str,
    seconds: float = 0.0,
) -> Run:
    """Serve ``reply`` to every search, then a good one; check both runs."""
    searx.always(reply)
    run = check(cli, searx, judge)
    assert (run.code, searx.count) == (4, requests), run.err
    assert "every evidence source failed" in run.err and message in run.err
    assert "Traceback" not in run.err
    assert run.seconds < 5 * seconds + SLACK
    assert judge.count == 0  # no evidence, no judgement
    searx.always(source.searx())
    again = check(cli, searx, judge)
    assert again.code == 0, again.err
    assert searx.count == requests + 1  # nothing of the fault was cached
    return run


def test_the_configured_instance_may_be_on_loopback(
    cli: CliRun, searx: FaultServer, judge: FaultServer
) -> None:
    run = check(cli, searx, judge)
    assert run.code == 0, run.err
    assert (searx.count, judge.count) == (1, 1)
    run = check(cli, searx, judge)
    assert run.code == 0
    assert searx.count == 1  # the search was cached; the judgement too


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_are_retried(
    cli: CliRun, searx: FaultServer, judge: FaultServer, status: int
) -> None:
    assert_fault(
        cli,
        searx,
        judge,
        source.server_error(status),
        requests=ATTEMPTS,
        message=f"SearXNG answered HTTP {status}: <html>upstream down</html>",
    )


@pytest.mark.parametrize(
    "retry_after", ["0", "-5", "nan", "inf", "1e999", "soon", "Wed, 21 Oct 2015 07:28:00 GMT"]
)
def test_rate_limits_with_any_retry_after_end_quickly(
    cli: CliRun, searx: FaultServer, judge: FaultServer, retry_after: str
) -> None:
    assert_fault(
        cli,
        searx,
        judge,
        source.rate_limited(retry_after),
        requests=ATTEMPTS,
        message="SearXNG answered HTTP 429",
    )


def test_a_good_retry_after_is_waited_for(
    cli: CliRun, searx: FaultServer, judge: FaultServer
) -> None:
    searx.script(source.rate_limited("0.3"))
    run = check(cli, searx, judge)
    assert run.code == 0, run.err
    assert searx.count == 2
    assert run.seconds >= 0.3


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(status=400, body=b"bad query", content_type="text/plain"), "HTTP 400: bad query"),
        (Reply(status=403, body=b"forbidden", content_type="text/plain"), "allow JSON output"),
        (source.not_json(), "SearXNG did not answer with JSON"),
    ],
    ids=["400", "403", "html"],
)
def test_final_answers_are_not_retried(
    cli: CliRun, searx: FaultServer, judge: FaultServer, reply: Reply, message: str
) -> None:
    assert_fault(cli, searx, judge, reply, requests=1, message=message)


@pytest.mark.parametrize("announced", [True, False], ids=["content-length", "until-close"])
def test_a_huge_answer_is_refused_unread(
    cli: CliRun, searx: FaultServer, judge: FaultServer, announced: bool
) -> None:
    assert_fault(
        cli,
        searx,
        judge,
        source.huge(80, announced=announced),
        requests=1,
        message=f"over the limit of {MAX_BYTES:,} bytes",
    )


@pytest.mark.parametrize("reply", [source.hang(30), source.trickle(0.05)], ids=["hang", "trickle"])
def test_a_slow_answer_ends_at_the_deadline(
    cli: CliRun, searx: FaultServer, judge: FaultServer, reply: Reply
) -> None:
    # The deadline is the budget of a whole exchange: it is not spent again on retries.
    run = assert_fault(
        cli,
        searx,
        judge,
        reply,
        requests=1,
        message=f"gave no complete answer within {DEADLINE:g} s",
        seconds=DEADLINE,
    )
    assert run.seconds < DEADLINE * 2 + SLACK


def test_a_body_cut_short_is_retried(cli: CliRun, searx: FaultServer, judge: FaultServer) -> None:
    assert_fault(
        cli,
        searx,
        judge,
        source.truncated(),
        requests=ATTEMPTS,
        message="peer closed connection without sending complete message body",
    )


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("http://localhost:{port}/search", "localhost resolves to 127.0.0.1, a loopback address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://192.168.1.1/search", "192.168.1.1 is a private address"),
        ("http://100.64.0.1/search", "a shared (carrier-grade NAT) address"),
        ("http://[::ffff:127.0.0.1]/search", "a loopback address"),
    ],
    ids=["loopback-name", "metadata", "private", "cgnat", "mapped-v6"],
)
def test_a_redirect_off_the_configured_host_to_a_private_address_is_refused(
    cli: CliRun, searx: FaultServer, judge: FaultServer, target: str, message: str
) -> None:
    with FaultServer(default=source.searx()) as other:
        assert_fault(
            cli, searx, judge, redirect(target.format(port=other.port)), requests=1, message=message
        )
        assert other.count == 0


def test_a_redirect_loop_is_refused(cli: CliRun, searx: FaultServer, judge: FaultServer) -> None:
    def bounce(seen: Seen) -> Reply:
        return redirect("/b" if seen.path == "/a" else "/a")

    # /search, /a, /b: the way back to /a is refused before it is taken.
    assert_fault(cli, searx, judge, bounce, requests=3, message="is a redirect loop")


def test_too_many_redirects_are_refused(
    cli: CliRun, searx: FaultServer, judge: FaultServer
) -> None:
    def onward(seen: Seen) -> Reply:
        last = seen.path.rsplit("/", 1)[-1]
        return redirect(f"/hop/{int(last) + 1 if last.isdigit() else 1}")

    assert_fault(cli, searx, judge, onward, requests=6, message="redirects more than 5 times")


# --- the HTTP layer itself -------------------------------------------------------------------

SECRETS = {
    "Authorization": "Bearer sk-secret-1",
    "X-Subscription-Token": "secret-2",
    "X-API-KEY": "secret-3",
    "Cookie": "session=secret-4",
    "X-Goog-Api-Key": "secret-5",
    "X-Acme": "secret-6",  # not key-like by name: named by the source instead
}


def loopback_client(tmp_path: Path, **kw: object) -> httpx.Client:
    return make_http_client(
        allowed_hosts=["127.0.0.1"],
        cache_path=tmp_path / "http.sqlite",
        credential_headers=["X-Acme"],
        sleep=lambda _s: None,
        **kw,  # type: ignore[arg-type]
    )


def test_credentials_stay_with_their_origin(tmp_path: Path) -> None:
    with FaultServer() as home, FaultServer(default=source.searx()) as away:
        home.script(redirect("/same"), redirect(away.url + "/search"))
        home.default = source.searx()
        with loopback_client(tmp_path) as client:
            response = client.get(home.url + "/first", headers=SECRETS)
        assert response.status_code == 200
        assert [r.path for r in home.requests] == ["/first", "/same"]
        for seen in home.requests:  # same origin: every header kept
            assert all(seen.headers[name.lower()] == value for name, value in SECRETS.items())
        (arrived,) = away.requests
        assert not any(name.lower() in arrived.headers for name in SECRETS)
        assert arrived.headers["user-agent"].startswith("verity/")


def test_a_redirected_title_works_offline_from_the_cache(tmp_path: Path) -> None:
    """Wikipedia answers an old title with a redirect; both hops are cached."""

    class ToLoopback(httpx.BaseTransport):
        # Wikipedia's host, served by the fault server: the real network path, on loopback.
        def __init__(self, port: int) -> None:
            self.inner = httpx.HTTPTransport()
            self.port = port

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            there = request.url.copy_with(scheme="http", host="127.0.0.1", port=self.port)
            moved = httpx.Request(
                request.method,
                there,
                headers=request.headers,
                content=request.content,
                extensions=request.extensions,
            )
            return self.inner.handle_request(moved)

        def close(self) -> None:
            self.inner.close()

    def wikipedia(seen: Seen) -> Reply:
        if seen.path.endswith("/Eiffel_tower"):
            return redirect("Eiffel_Tower", status=302)
        return source.summary("Eiffel_Tower")

    with FaultServer(default=wikipedia) as site:
        client = make_http_client(
            transport=ToLoopback(site.port), cache_path=tmp_path / "http.sqlite"
        )
        page = WikipediaSource(client=client).lookup("Eiffel tower")
        assert page is not None and page.title == "Eiffel_Tower"
        assert site.count == 2
    # The site is gone: the redirect and its target both come from the cache.
    offline = WikipediaSource(client=client).lookup("Eiffel tower")
    assert offline is not None and offline.text == page.text
    assert site.count == 2
    client.close()


def test_a_cached_redirect_is_checked_again(tmp_path: Path) -> None:
    with FaultServer() as lan_host:
        lan_host.script(redirect(f"http://localhost:{lan_host.port}/inside"))
        lan_host.default = source.searx()
        # A client that allows both hosts follows and caches the redirect...
        trusting = make_http_client(
            allowed_hosts=["127.0.0.1", "localhost"], cache_path=tmp_path / "http.sqlite"
        )
        assert trusting.get(lan_host.url + "/start").status_code == 200
        trusting.close()
        assert lan_host.count == 2
        # ...and one that allows only the first must not follow it from the cache.
        careful = loopback_client(tmp_path)
        with pytest.raises(BlockedTargetError, match=r"localhost resolves to 127\.0\.0\.1"):
            careful.get(lan_host.url + "/start")
        careful.close()
        assert lan_host.count == 2


def test_an_answer_cut_short_is_never_cached(tmp_path: Path) -> None:
    with FaultServer() as site, loopback_client(tmp_path, retries=0) as client:
        site.script(source.truncated())
        site.default = source.searx()
        with pytest.raises(httpx.RemoteProtocolError):
            client.get(site.url + "/search")
        assert client.get(site.url + "/search").json()["results"]
        assert client.get(site.url + "/search").extensions["verity_cache"] == "hit"
        assert site.count == 2
