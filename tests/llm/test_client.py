"""ModelClient control flow, driven by the scripted FakeChatModel (a fake, not a model)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from verity.domain import Message
from verity.errors import ModelOutputError
from verity.llm.base import GenParams, ModelUnavailableError, RawCompletion, TransientModelError
from verity.llm.cache import ResponseCache
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient, parse_json_answer
from verity.testing import FakeChatModel

HELLO = [Message(role="user", content="hello there")]


class Answer(BaseModel):
    label: str
    score: float = Field(ge=0, le=1)


def test_text_call_is_recorded_with_usage() -> None:
    client = ModelClient(FakeChatModel(["hi back"]))
    log = CallLog()
    done = client.chat(HELLO, step="greet", log=log)
    assert done.text == "hi back"
    assert done.parsed is None
    (call,) = log.calls
    assert call.step == "greet"
    assert call.output == "hi back"
    assert call.usage.llm_calls == 1
    assert call.usage.prompt_tokens == 2  # the fake counts words
    assert call.usage.completion_tokens == 2
    assert log.usage().llm_calls == 1
    assert client.usage.llm_calls == 1


def test_structured_answer_is_validated() -> None:
    client = ModelClient(FakeChatModel(['```json\n{"label": "x", "score": 0.5}\n```']))
    done = client.chat(HELLO, schema=Answer)
    assert done.parsed == Answer(label="x", score=0.5)
    assert done.call.parsed == {"label": "x", "score": 0.5}


def test_invalid_answer_gets_one_repair_round() -> None:
    fake = FakeChatModel(['{"label": "x", "score": 7}', '{"label": "x", "score": 0.7}'])
    client = ModelClient(fake)
    done = client.chat(HELLO, schema=Answer)
    assert done.parsed is not None and done.parsed.score == 0.7
    assert done.call.attempts == 2
    assert done.call.usage.llm_calls == 2
    (rejected,) = done.call.rejected
    assert rejected.output == '{"label": "x", "score": 7}'
    assert "less than or equal to 1" in rejected.error
    repair_prompt = fake.requests[1][0]
    assert repair_prompt[-2].content == '{"label": "x", "score": 7}'
    assert "score" in repair_prompt[-1].content
    assert "less than or equal to 1" in repair_prompt[-1].content


def test_still_invalid_after_repair_raises_typed_error_and_is_traced() -> None:
    client = ModelClient(FakeChatModel(["not json", "still not json"]))
    log = CallLog()
    with pytest.raises(ModelOutputError) as info:
        client.chat(HELLO, schema=Answer, step="judge", log=log)
    assert "judge" in str(info.value)
    assert info.value.raw == "still not json"
    assert log.calls[0].attempts == 2
    assert log.calls[0].parsed is None


def test_cache_hit_skips_backend(tmp_path: Path) -> None:
    fake = FakeChatModel(["first", "second"])
    client = ModelClient(fake, cache=ResponseCache(tmp_path / "c.sqlite"))
    assert client.chat(HELLO).text == "first"
    again = client.chat(HELLO)
    assert again.text == "first"
    assert again.call.cached is True
    assert again.call.usage.cached_calls == 1
    assert len(fake.requests) == 1
    # Any change of parameters is a different request.
    other = client.chat(HELLO, params=GenParams(temperature=0.5))
    assert other.text == "second"
    assert other.call.cached is False


def test_invalid_answers_are_not_cached_so_a_rerun_retries(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    failing = ModelClient(FakeChatModel(["nope", "still nope"]), cache=cache)
    with pytest.raises(ModelOutputError):
        failing.chat(HELLO, schema=Answer)
    fixed = FakeChatModel(['{"label": "ok", "score": 0.5}'])
    done = ModelClient(fixed, cache=cache).chat(HELLO, schema=Answer)
    assert done.parsed == Answer(label="ok", score=0.5)
    assert len(fixed.requests) == 1 and done.call.cached is False
    # The valid answer is stored: the next run replays it.
    replay = ModelClient(FakeChatModel([]), cache=cache).chat(HELLO, schema=Answer)
    assert replay.call.cached is True


def test_repaired_answer_is_cached_under_the_repair_conversation(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    first = FakeChatModel(["bad", '{"label": "b", "score": 1}'])
    ModelClient(first, cache=cache).chat(HELLO, schema=Answer)
    # A rerun asks afresh for the first answer (not stored), gets the same bad one, and
    # finds the repaired answer in the cache.
    again = FakeChatModel(["bad"])
    done = ModelClient(again, cache=cache).chat(HELLO, schema=Answer)
    assert done.parsed == Answer(label="b", score=1.0)
    assert len(again.requests) == 1
    assert done.call.usage.cached_calls == 1 and done.call.attempts == 2


def test_cache_survives_a_new_client(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    ModelClient(FakeChatModel(["stored"]), cache=ResponseCache(path)).chat(HELLO)
    fresh = FakeChatModel([])  # would fail if asked
    assert ModelClient(fresh, cache=ResponseCache(path)).chat(HELLO).text == "stored"


class Flaky:
    """A backend that fails a set number of times before answering."""

    backend = "flaky"
    model = "flaky"

    def __init__(self, failures: list[Exception]) -> None:
        self.failures = failures
        self.calls = 0

    def identity(self) -> dict[str, str]:
        return {"backend": "flaky"}

    def complete(self, messages, params, schema=None) -> RawCompletion:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return RawCompletion(text="ok")

    async def acomplete(self, messages, params, schema=None) -> RawCompletion:
        return self.complete(messages, params, schema)


def test_retries_rate_limits_with_backoff() -> None:
    flaky = Flaky([TransientModelError("429"), TransientModelError("503", retry_after=2.5)])
    client = ModelClient(flaky, backoff=0.5)
    waits: list[float] = []
    client.sleep = waits.append
    assert client.chat(HELLO).text == "ok"
    assert flaky.calls == 3
    assert waits == [0.5, 2.5]


def test_gives_up_after_retries() -> None:
    flaky = Flaky([TransientModelError("429")] * 3)
    client = ModelClient(flaky, retries=2)
    client.sleep = lambda _s: None
    with pytest.raises(TransientModelError):
        client.chat(HELLO)
    assert flaky.calls == 3


def test_does_not_retry_other_errors() -> None:
    flaky = Flaky([ModelUnavailableError("401 key rejected")])
    client = ModelClient(flaky)
    with pytest.raises(ModelUnavailableError):
        client.chat(HELLO)
    assert flaky.calls == 1


def test_async_retries_and_records() -> None:
    flaky = Flaky([TransientModelError("500", retry_after=0.0)])
    client = ModelClient(flaky)
    log = CallLog()
    done = asyncio.run(client.achat(HELLO, log=log))
    assert done.text == "ok" and flaky.calls == 2 and len(log.calls) == 1


class Slow:
    """Counts how many calls run at the same time."""

    backend = "slow"
    model = "slow"

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()

    def identity(self) -> dict[str, str]:
        return {"backend": "slow"}

    def complete(self, messages, params, schema=None) -> RawCompletion:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.05)
        with self.lock:
            self.active -= 1
        return RawCompletion(text="ok")

    async def acomplete(self, messages, params, schema=None) -> RawCompletion:
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.05)
        with self.lock:
            self.active -= 1
        return RawCompletion(text="ok")


def test_concurrency_limit_holds_for_threads() -> None:
    slow = Slow()
    client = ModelClient(slow, max_concurrency=2)
    threads = [
        threading.Thread(target=client.chat, args=([Message(role="user", content=str(i))],))
        for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert slow.peak == 2


def test_concurrency_limit_holds_for_tasks() -> None:
    slow = Slow()
    client = ModelClient(slow, max_concurrency=3)

    async def many() -> None:
        await asyncio.gather(
            *(client.achat([Message(role="user", content=str(i))]) for i in range(9))
        )

    asyncio.run(many())
    assert slow.peak == 3


def test_role_twin_shares_usage_and_labels_calls() -> None:
    client = ModelClient(FakeChatModel(["a", "b"]))
    judge = client.with_role("judge")
    log = CallLog()
    client.chat(HELLO, log=log)
    judge.chat([Message(role="user", content="other")], log=log)
    assert [c.role for c in log.calls] == ["default", "judge"]
    assert client.usage.llm_calls == 2 == judge.usage.llm_calls


def test_parse_json_answer_takes_object_out_of_prose() -> None:
    got = parse_json_answer('Sure! {"label": "y", "score": 1} Hope it helps.', Answer)
    assert got == Answer(label="y", score=1.0)


def test_raw_newline_inside_a_string_is_accepted() -> None:
    got = parse_json_answer('{"label": "line one\nline two", "score": 0.5}', Answer)
    assert got.label == "line one\nline two"


def test_truncated_json_is_still_an_error() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        parse_json_answer('{"label": "cut off', Answer)
