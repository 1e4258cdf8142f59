"""The embedded model for real: in process, and behind a real llama.cpp OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from verity.domain import Message
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.local_gguf import LocalBackend, embedded_model_path
from verity.llm.openai_compat import OpenAIBackend

pytestmark = pytest.mark.integration

QUESTION = [
    Message(role="system", content="You are a helpful assistant."),
    Message(role="user", content="What is the capital of France? Answer in one word."),
]


class CityAnswer(BaseModel):
    city: str = Field(max_length=40)
    country: Literal["France", "Germany", "Italy"]
    sure: bool


class Judgement(BaseModel):
    explanation: str
    label: Literal["SUPPORTED", "REFUTED", "NOT_ENOUGH_INFO"]
    confidence: float


JUDGE = [
    Message(role="system", content="You are a fact-checker. Explain briefly, then answer."),
    Message(
        role="user",
        content="Claim: The Eiffel Tower is in Paris.\n\nEvidence:\n[1] The Eiffel Tower is a "
        "wrought-iron lattice tower on the Champ de Mars in Paris, France.",
    ),
]


def test_embedded_model_file_ships_with_the_package() -> None:
    path = embedded_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size > 50_000_000


def test_local_text_answer_with_usage() -> None:
    client = ModelClient(LocalBackend(), params=GenParams(max_tokens=16))
    log = CallLog()
    done = client.chat(QUESTION, log=log)
    assert "paris" in done.text.lower()
    usage = log.calls[0].usage
    assert usage.prompt_tokens > 10 and 0 < usage.completion_tokens <= 16
    assert usage.seconds > 0


def test_local_is_deterministic_at_temperature_zero() -> None:
    backend = LocalBackend()
    params = GenParams(max_tokens=24, temperature=0.0, seed=1)
    first = backend.complete(QUESTION, params).text
    assert backend.complete(QUESTION, params).text == first


def test_local_structured_output_is_constrained_by_the_schema() -> None:
    client = ModelClient(LocalBackend(), params=GenParams(max_tokens=96))
    done = client.chat(QUESTION, schema=CityAnswer)
    assert isinstance(done.parsed, CityAnswer)
    assert done.parsed.country in ("France", "Germany", "Italy")
    assert done.call.structured_mode == "grammar"
    assert done.call.attempts == 1


def test_grammar_first_decoding_answers_as_llama_cpp_python_does() -> None:
    from llama_cpp import Llama

    from verity.llm import local_gguf
    from verity.llm.client import schema_of

    backend = LocalBackend()
    llama = local_gguf._load(backend.path, backend.n_ctx, backend.threads)[0]
    # The library's own decoding, which matches the grammar against the whole vocabulary.
    reference = Llama(
        model_path=str(backend.path),
        n_ctx=backend.n_ctx,
        n_threads=backend.threads,
        n_threads_batch=backend.threads,
        n_ubatch=local_gguf.MICRO_BATCH,
        verbose=False,
    )
    try:
        params = GenParams(max_tokens=128, temperature=0.0, seed=0)
        for messages, output in ((QUESTION, CityAnswer), (JUDGE, Judgement)):
            schema = schema_of(output)
            before = llama.last_grammar_sampler
            ours = backend.complete(messages, params, schema)
            theirs = reference.create_chat_completion(
                messages=[m.model_dump() for m in messages],
                temperature=0.0,
                max_tokens=128,
                seed=0,
                repeat_penalty=backend.repeat_penalty,
                response_format={"type": "json_object", "schema": schema},
            )
            assert ours.text == theirs["choices"][0]["message"]["content"]
            output.model_validate_json(ours.text)
            sampler = llama.last_grammar_sampler
            assert sampler is not None and sampler is not before
            # Every token went through the grammar-first sampler; most needed one grammar check.
            assert sampler.tokens >= ours.completion_tokens
            assert sampler.full_passes < sampler.tokens / 2
    finally:
        reference.close()  # freed now, not by the collector at interpreter exit


def test_a_state_restored_from_the_prefix_cache_answers_the_same() -> None:
    from verity.llm import local_gguf

    backend = LocalBackend()
    params = GenParams(max_tokens=12, temperature=0.0)
    facts = " ".join(f"Fact {i}: item {i} weighs {i * 3} kg." for i in range(30))
    first = [
        Message(role="system", content="Inventory. " + facts),
        Message(role="user", content="How much does item 4 weigh?"),
    ]
    other = [Message(role="system", content="Something else. " + facts), first[1]]
    answer = backend.complete(first, params)
    backend.complete(other, params)  # the context now holds a prompt that differs early
    again = backend.complete(first, params)  # so the first one's state comes from the cache
    assert again.text == answer.text
    assert again.cached_tokens == again.prompt_tokens - 1
    llama = local_gguf._load(backend.path, backend.n_ctx, backend.threads)[0]
    # Cache entries keep llama.cpp's state only, not a 100 MB copy of an unused logits array.
    assert max(state.scores.nbytes for state in llama.cache.cache_state.values()) < 1_000_000


def test_model_runs_with_verity_batch_and_thread_settings() -> None:
    from verity.llm import local_gguf

    # A context size of its own, so this model is loaded here with one thread.
    backend = LocalBackend(n_ctx=512, threads=1)
    llama = local_gguf._load(backend.path, backend.n_ctx, backend.threads)[0]
    assert llama.context_params.n_ubatch == local_gguf.MICRO_BATCH
    assert llama.context_params.n_threads == llama.context_params.n_threads_batch == 1


def test_local_async_twin() -> None:
    client = ModelClient(LocalBackend(), params=GenParams(max_tokens=8))
    done = asyncio.run(client.achat(QUESTION))
    assert done.text


def test_prefix_reuse_is_counted_as_cached_prompt_tokens() -> None:
    backend = LocalBackend()
    params = GenParams(max_tokens=4, temperature=0.0)
    shared = "Background. " + " ".join(
        f"Fact {i}: the value of item {i} is {i * 7}." for i in range(40)
    )
    first = [
        Message(role="system", content=shared),
        Message(role="user", content="Which item has value 21? Reply with its number."),
    ]
    second = [first[0], Message(role="user", content="Which item has value 70?")]
    unrelated = [Message(role="system", content="Different start entirely."), *second[1:]]
    backend.complete(unrelated, params)
    before = backend.complete(first, params)
    after = backend.complete(second, params)
    # The first prompt starts where the unrelated one did not: at most the chat template's
    # opening tokens can be reused. The second shares the whole long system message.
    assert before.cached_tokens < 10
    assert after.prompt_tokens - 40 < after.cached_tokens < after.prompt_tokens


def test_model_loads_once_per_process() -> None:
    from verity.llm import local_gguf

    first, second = LocalBackend(), LocalBackend()
    loaded = local_gguf._load(first.path, first.n_ctx, first.threads)[0]
    second.complete(QUESTION, GenParams(max_tokens=2))
    assert local_gguf._load(second.path, second.n_ctx, second.threads)[0] is loaded


def test_prompt_longer_than_the_context_is_a_budget_error() -> None:
    from verity.errors import BudgetExceededError

    small = LocalBackend(n_ctx=256)
    long_prompt = [Message(role="user", content="Paris is in France. " * 200)]
    with pytest.raises(BudgetExceededError, match="raise n_ctx"):
        small.complete(long_prompt, GenParams(max_tokens=8))


def test_openai_backend_against_real_server_text(llama_server: str) -> None:
    client = ModelClient(
        OpenAIBackend("smollm2", base_url=llama_server), params=GenParams(max_tokens=16)
    )
    done = client.chat(QUESTION)
    assert "paris" in done.text.lower()
    assert done.call.usage.prompt_tokens > 10


def test_openai_backend_against_real_server_structured(llama_server: str) -> None:
    backend = OpenAIBackend("smollm2-structured", base_url=llama_server)
    client = ModelClient(backend, params=GenParams(max_tokens=96))
    done = client.chat(QUESTION, schema=CityAnswer)
    assert isinstance(done.parsed, CityAnswer)
    # The server rejects json_schema and accepts json_object with a schema.
    assert done.call.structured_mode == "json_object"


def test_openai_backend_against_real_server_async(llama_server: str) -> None:
    client = ModelClient(
        OpenAIBackend("smollm2-async", base_url=llama_server), params=GenParams(max_tokens=96)
    )
    done = asyncio.run(client.achat(QUESTION, schema=CityAnswer))
    assert isinstance(done.parsed, CityAnswer)
