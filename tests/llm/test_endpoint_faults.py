"""``verity check`` against an OpenAI-compatible endpoint that fails in every way we know.

Each fault is served by a loopback server (`faults.FaultServer`) to the real CLI, with
tiny timeouts and backoff. Every test checks how many requests the server saw (the
retries), that the run ended within a generous bound, the exit code and message (never a
traceback), and that nothing bad was cached: once the fault clears, the next run reaches
the server again and succeeds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from faults import FaultServer, Reply, Seen, model, redirect

TIMEOUT = 0.4  # seconds per attempt, the whole answer included
RETRIES = 2
MAX_BYTES = 2**16
# Generous: a run's own work (imports, settings) takes a fraction of a second.
SLACK = 3.0

CliRun = Callable[[list[str]], tuple[int, str, str]]


@pytest.fixture
def endpoint() -> Iterator[FaultServer]:
    with FaultServer(default=model.answer()) as server:
        yield server


@pytest.fixture(autouse=True)
def fast_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "verity.toml"
    config.write_text(
        "[model]\n"
        f"timeout = {TIMEOUT}\n"
        f"retries = {RETRIES}\n"
        "retry_backoff = 0.01\n"
        f"max_response_bytes = {MAX_BYTES}\n"
    )
    monkeypatch.setenv("VERITY_CONFIG", str(config))
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@dataclass
class Run:
    code: int
    out: str
    err: str
    seconds: float


def check(cli: CliRun, base_url: str, *extra: str) -> Run:
    # The requests counted are the method's own: the grounding call is tested on its own.
    started = time.monotonic()
    code, out, err = cli(
        [
            "check",
            "x",
            "--method",
            "direct",
            "--model",
            "openai:m",
            "--base-url",
            base_url,
            "--grounding",
            "off",
            *extra,
        ]
    )
    return Run(code, out, err, time.monotonic() - started)


def assert_fault(
    cli: CliRun,
    server: FaultServer,
    reply: Reply | Callable[[Seen], Reply],
    *,
    code: int,
    requests: int,
    message: str,
    seconds: float = 0.0,
) -> Run:
    """Serve ``reply`` to every request, then a good answer; check both runs."""
    server.always(reply)
    run = check(cli, server.url + "/v1")
    assert (run.code, server.count) == (code, requests), run.err
    assert message in run.err
    assert "Traceback" not in run.err
    assert run.seconds < 5 * seconds + SLACK
    server.always(model.answer())
    again = check(cli, server.url + "/v1")
    assert again.code == 0, again.err
    assert server.count == requests + 1  # nothing of the fault was cached
    return run


ATTEMPTS = RETRIES + 1


# --- answers that are retried -------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_are_retried_then_unavailable(
    cli: CliRun, endpoint: FaultServer, status: int
) -> None:
    assert_fault(
        cli,
        endpoint,
        model.server_error(status),
        code=4,
        requests=ATTEMPTS,
        message=f"answered HTTP {status} after retries",
    )


@pytest.mark.parametrize(
    "retry_after",
    ["0", "-5", "nan", "inf", "1e999", "soon", "Wed, 21 Oct 2015 07:28:00 GMT", None],
)
def test_rate_limits_with_any_retry_after_end_quickly(
    cli: CliRun, endpoint: FaultServer, retry_after: str | None
) -> None:
    # Nonsense is ignored (the tiny backoff), a past date or a negative delay means now.
    requests = 1 if retry_after == "1e999" else ATTEMPTS  # "too long" to the SDK: no retry
    assert_fault(
        cli,
        endpoint,
        model.rate_limited(retry_after),
        code=4,
        requests=requests,
        message="answered HTTP 429",
    )


def test_a_good_retry_after_is_waited_for(cli: CliRun, endpoint: FaultServer) -> None:
    endpoint.script(model.rate_limited("0.3"))
    run = check(cli, endpoint.url + "/v1")
    assert run.code == 0, run.err
    assert endpoint.count == 2
    assert run.seconds >= 0.3


def test_a_hang_times_out_each_attempt(cli: CliRun, endpoint: FaultServer) -> None:
    assert_fault(
        cli,
        endpoint,
        model.hang(30),
        code=4,
        requests=ATTEMPTS,
        message=f"no complete answer within {TIMEOUT:g} s after retries",
        seconds=ATTEMPTS * TIMEOUT,
    )


def test_a_trickle_past_the_deadline_is_cut(cli: CliRun, endpoint: FaultServer) -> None:
    # Every byte comes well within the read timeout; the whole would take minutes.
    run = assert_fault(
        cli,
        endpoint,
        model.trickle(0.05),
        code=4,
        requests=ATTEMPTS,
        message=f"no complete answer within {TIMEOUT:g} s",
        seconds=ATTEMPTS * TIMEOUT,
    )
    assert run.seconds < ATTEMPTS * TIMEOUT * 2 + SLACK


def test_a_body_cut_short_is_retried_then_unavailable(cli: CliRun, endpoint: FaultServer) -> None:
    assert_fault(
        cli,
        endpoint,
        model.truncated(),
        code=4,
        requests=ATTEMPTS,
        message="the exchange failed after retries: peer closed connection",
    )


# --- answers that are final ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (model.bad_request(), "refused the request (HTTP 400): Invalid value for 'temperature'"),
        (model.unauthorized(), "the key in OPENAI_API_KEY was rejected (HTTP 401)"),
    ],
)
def test_client_errors_are_not_retried(
    cli: CliRun, endpoint: FaultServer, reply: Reply, message: str
) -> None:
    assert_fault(cli, endpoint, reply, code=4, requests=1, message=message)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (model.invalid_json(), "answered 200 with a body that is not JSON (starts with '{"),
        (model.html(), "not JSON (starts with '<html><head><title>Bad Gateway</title>"),
        (model.empty_choices(), "answered 200 with no choices"),
        (model.missing_choices(), "answered 200 with a body that has no choices"),
        (model.choice_without_message(), "answered 200 with a first choice that has no message"),
    ],
    ids=["invalid-json", "html", "empty-choices", "missing-choices", "no-message"],
)
def test_malformed_answers_are_unavailable(
    cli: CliRun, endpoint: FaultServer, reply: Reply, message: str
) -> None:
    run = assert_fault(cli, endpoint, reply, code=4, requests=1, message=message)
    assert "\x1b" not in run.err and "\x07" not in run.err


def test_an_answer_off_the_schema_gets_one_repair_then_exit_5(
    cli: CliRun, endpoint: FaultServer
) -> None:
    assert_fault(
        cli,
        endpoint,
        model.schema_violation(),
        code=5,
        requests=2,
        message="gave no valid answer for step 'direct.judge' after 2 attempt(s)",
    )


@pytest.mark.parametrize("announced", [True, False], ids=["content-length", "until-close"])
def test_a_huge_answer_is_refused_unread(
    cli: CliRun, endpoint: FaultServer, announced: bool
) -> None:
    assert_fault(
        cli,
        endpoint,
        model.huge(60, announced=announced),
        code=4,
        requests=1,
        message=f"over the limit of {MAX_BYTES:,} bytes",
    )


@pytest.mark.parametrize(
    "reply",
    [
        model.context_openai(),
        model.context_vllm(),
        model.context_llama_server(),
        model.context_llama_cpp_python(),
        model.context_ollama(),
        model.context_lm_studio(),
    ],
    ids=["openai", "vllm", "llama-server", "llama-cpp-python", "ollama", "lm-studio"],
)
def test_a_prompt_over_the_context_is_exit_6(
    cli: CliRun, endpoint: FaultServer, reply: Reply
) -> None:
    assert_fault(
        cli, endpoint, reply, code=6, requests=1, message="longer than the model's context window"
    )


# --- redirects and secrets ------------------------------------------------------------------


def test_a_redirect_to_another_origin_arrives_without_the_key(
    cli: CliRun, endpoint: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULT_KEY", "sk-fault-secret")
    with FaultServer(default=model.answer()) as mirror:
        endpoint.always(redirect(mirror.url + "/v1/chat/completions"))
        run = check(cli, endpoint.url + "/v1", "--api-key-env", "FAULT_KEY")
        assert run.code == 0, run.err
        assert (endpoint.count, mirror.count) == (1, 1)
        assert endpoint.requests[0].headers["authorization"] == "Bearer sk-fault-secret"
        assert "authorization" not in mirror.requests[0].headers
        assert mirror.requests[0].json()["model"] == "m"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("http://localhost:{port}/v1/chat/completions", "resolves to 127.0.0.1, a loopback"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local"),
        ("http://10.1.2.3/v1/chat/completions", "10.1.2.3 is a private address"),
    ],
    ids=["loopback-name", "metadata", "private"],
)
def test_a_redirect_to_a_private_address_is_refused(
    cli: CliRun, endpoint: FaultServer, target: str, message: str
) -> None:
    with FaultServer(default=model.answer()) as other:
        run = assert_fault(
            cli,
            endpoint,
            redirect(target.format(port=other.port)),
            code=4,
            requests=1,
            message=message,
        )
        assert other.count == 0
    assert "refused to send a request" in run.err


def test_a_redirect_loop_is_refused(cli: CliRun, endpoint: FaultServer) -> None:
    def bounce(seen: Seen) -> Reply:
        back = seen.path.endswith("/b")
        return redirect("/v1/chat/completions" if back else "/v1/b")

    assert_fault(cli, endpoint, bounce, code=4, requests=2, message="is a redirect loop")


def test_too_many_redirects_are_refused(cli: CliRun, endpoint: FaultServer) -> None:
    def onward(seen: Seen) -> Reply:
        last = seen.path.rsplit("/", 1)[-1]
        return redirect(f"/v1/hop/{int(last) + 1 if last.isdigit() else 1}")

    # The request and the 5 redirects allowed; the sixth is refused.
    assert_fault(cli, endpoint, onward, code=4, requests=6, message="redirects more than 5 times")


def test_a_password_in_the_base_url_never_shows(cli: CliRun, endpoint: FaultServer) -> None:
    secret_url = endpoint.url.replace("http://", "http://alice:hunter2@") + "/v1"
    endpoint.always(model.server_error())
    run = check(cli, secret_url)
    assert run.code == 4
    assert "hunter2" not in run.err
    assert f"http://***@127.0.0.1:{endpoint.port}/v1/" in run.err
    endpoint.always(model.answer())
    run = check(cli, secret_url, "--json")
    assert run.code == 0, run.err
    assert "hunter2" not in run.out + run.err
    assert json.loads(run.out)["label"] == "SUPPORTED"
