"""The openai backend against an injected transport speaking OpenAI's documented shapes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
import pytest
from pydantic import BaseModel

from verity.domain import Message
from verity.errors import MissingKeyError
from verity.llm.base import GenParams, ModelUnavailableError, TransientModelError
from verity.llm.client import ModelClient
from verity.llm.openai_compat import OpenAIBackend

MESSAGES = [Message(role="user", content="Is water wet?")]


class Verdict(BaseModel):
    label: str


def completion(content: str, *, cached: int = 0) -> dict:
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1731000000,
        "model": "test-model",
        "system_fingerprint": "fp_1",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": 21,
            "completion_tokens": 7,
            "total_tokens": 28,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def backend(
    handler: Callable[[httpx.Request], httpx.Response], base_url: str, **kw: object
) -> tuple[OpenAIBackend, list[dict]]:
    seen: list[dict] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return handler(request)

    b = OpenAIBackend(
        "test-model",
        base_url=base_url,
        http_client=httpx.Client(transport=httpx.MockTransport(record)),
        async_http_client=httpx.AsyncClient(transport=httpx.MockTransport(record)),
        **kw,  # type: ignore[arg-type]
    )
    return b, seen


def test_text_completion_passes_parameters_and_reads_usage() -> None:
    b, seen = backend(
        lambda r: httpx.Response(200, json=completion("yes", cached=5)), "http://t1.test/v1"
    )
    raw = b.complete(MESSAGES, GenParams(temperature=0.3, max_tokens=64, seed=7))
    assert raw.text == "yes"
    assert (raw.prompt_tokens, raw.completion_tokens, raw.cached_tokens) == (21, 7, 5)
    (body,) = seen
    assert body["model"] == "test-model"
    assert body["temperature"] == 0.3 and body["max_tokens"] == 64 and body["seed"] == 7
    assert body["messages"] == [{"role": "user", "content": "Is water wet?"}]
    assert "response_format" not in body


def test_json_schema_used_when_accepted() -> None:
    b, seen = backend(
        lambda r: httpx.Response(200, json=completion('{"label": "a"}')), "http://t2.test/v1"
    )
    done = ModelClient(b).chat(MESSAGES, schema=Verdict)
    assert done.parsed == Verdict(label="a")
    assert done.call.structured_mode == "json_schema"
    fmt = seen[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"]["properties"]["label"]["type"] == "string"


def rejects_json_schema(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    if body.get("response_format", {}).get("type") == "json_schema":
        # The shape llama.cpp's server and older vLLM use for an unsupported format.
        return httpx.Response(
            400,
            json={
                "error": {
                    "message": "response_format json_schema is not supported",
                    "type": "invalid_request_error",
                    "param": "response_format",
                    "code": None,
                }
            },
        )
    return httpx.Response(200, json=completion('{"label": "b"}'))


def test_falls_back_to_json_object_with_schema_and_remembers() -> None:
    b, seen = backend(rejects_json_schema, "http://t3.test/v1")
    client = ModelClient(b)
    done = client.chat(MESSAGES, schema=Verdict)
    assert done.parsed == Verdict(label="b")
    assert done.call.structured_mode == "json_object"
    assert [s["response_format"]["type"] for s in seen] == ["json_schema", "json_object"]
    assert seen[1]["response_format"]["schema"]["required"] == ["label"]
    # The schema is also spelled out in the prompt for servers that ignore it.
    assert "JSON schema" in seen[1]["messages"][-1]["content"]
    client.chat([Message(role="user", content="again")], schema=Verdict)
    assert seen[2]["response_format"]["type"] == "json_object"


def test_llama_cpp_server_style_rejection_is_a_fallback_not_a_retry() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if body.get("response_format", {}).get("type") == "json_schema":
            # llama_cpp.server answers an unknown format with a 500 carrying the validation error.
            return httpx.Response(
                500,
                json={
                    "error": {
                        "message": (
                            "1 validation error: {'type': 'literal_error', 'loc': ('body', "
                            "'response_format', 'type'), 'msg': \"Input should be 'text' or "
                            "'json_object'\"}"
                        )
                    }
                },
            )
        return httpx.Response(200, json=completion('{"label": "d"}'))

    b, seen = backend(handler, "http://t12.test/v1")
    done = ModelClient(b).chat(MESSAGES, schema=Verdict)
    assert done.parsed == Verdict(label="d")
    assert [s["response_format"]["type"] for s in seen] == ["json_schema", "json_object"]


def test_falls_back_to_prompt_only() -> None:
    def only_plain(request: httpx.Request) -> httpx.Response:
        if "response_format" in json.loads(request.content):
            return httpx.Response(
                400, json={"error": {"message": "Unrecognized field: response_format"}}
            )
        return httpx.Response(200, json=completion('Here: {"label": "c"}'))

    b, seen = backend(only_plain, "http://t4.test/v1")
    done = ModelClient(b).chat(MESSAGES, schema=Verdict)
    assert done.parsed == Verdict(label="c")
    assert done.call.structured_mode == "prompt"
    assert len(seen) == 3


def test_an_unrelated_400_does_not_cost_a_mode() -> None:
    answers = [
        httpx.Response(
            400,
            json={
                "error": {
                    "message": "This model's maximum context length is 4096 tokens",
                    "code": "context_length_exceeded",
                }
            },
        ),
        httpx.Response(200, json=completion('{"label": "e"}')),
    ]
    b, seen = backend(lambda r: answers.pop(0), "http://t13.test/v1")
    with pytest.raises(ModelUnavailableError, match="maximum context length"):
        b.complete(MESSAGES, GenParams(), Verdict.model_json_schema())
    b.complete(MESSAGES, GenParams(), Verdict.model_json_schema())
    assert [s["response_format"]["type"] for s in seen] == ["json_schema", "json_schema"]


def test_rate_limit_and_server_errors_are_transient() -> None:
    b, _ = backend(
        lambda r: httpx.Response(
            429, headers={"retry-after": "3"}, json={"error": {"message": "slow down"}}
        ),
        "http://t5.test/v1",
    )
    with pytest.raises(TransientModelError) as info:
        b.complete(MESSAGES, GenParams())
    assert info.value.retry_after == 3.0
    b5, _ = backend(
        lambda r: httpx.Response(503, json={"error": {"message": "busy"}}), "http://t6.test/v1"
    )
    with pytest.raises(TransientModelError):
        b5.complete(MESSAGES, GenParams())


def test_client_retries_transient_then_succeeds() -> None:
    answers = [
        httpx.Response(500, json={"error": {"message": "oops"}}),
        httpx.Response(200, json=completion("fine")),
    ]
    b, seen = backend(lambda r: answers.pop(0), "http://t7.test/v1")
    client = ModelClient(b)
    client.sleep = lambda _s: None
    assert client.chat(MESSAGES).text == "fine"
    assert len(seen) == 2


def test_auth_error_is_not_transient_and_names_the_variable() -> None:
    b, _ = backend(
        lambda r: httpx.Response(401, json={"error": {"message": "bad key"}}),
        "http://t8.test/v1",
        api_key_env="MY_KEY",
    )
    with pytest.raises(ModelUnavailableError, match="MY_KEY") as info:
        b.complete(MESSAGES, GenParams())
    assert not isinstance(info.value, TransientModelError)


def test_unreachable_endpoint() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    b, _ = backend(refuse, "http://t9.test/v1")
    with pytest.raises(ModelUnavailableError, match="cannot reach"):
        b.complete(MESSAGES, GenParams())


def test_missing_key_for_openai_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        OpenAIBackend("gpt-4o-mini")


def test_async_path() -> None:
    b, seen = backend(rejects_json_schema, "http://t10.test/v1")
    done = asyncio.run(ModelClient(b).achat(MESSAGES, schema=Verdict))
    assert done.parsed == Verdict(label="b")
    assert len(seen) == 2


def test_identity_names_endpoint_never_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_ENV", "sk-very-secret")
    b = OpenAIBackend("m", base_url="http://t11.test/v1", api_key_env="SECRET_ENV")
    ident = json.dumps(b.identity())
    assert "t11.test" in ident and "sk-very-secret" not in ident
