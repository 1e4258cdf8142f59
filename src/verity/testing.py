"""Test doubles shipped with verity, for testing control flow in methods and plug-ins.

    fake = FakeChatModel(['{"label": "REFUTED", "explanation": "x"}'])
    client = ModelClient(fake)

`FakeChatModel` is a fake: it returns scripted answers and never reasons. It exists to
test which branch a method takes for a given answer; anything about answer quality is
tested with the embedded model or a real endpoint.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from verity.domain import Evidence, Message
from verity.llm.base import GenParams, RawCompletion

Script = Callable[[Sequence[Message], dict[str, Any] | None], str]


class FakeChatModel:
    """A scripted chat backend: answers from a list in order, or from a function."""

    backend = "fake"

    def __init__(self, answers: Iterable[str] | Script, *, model: str = "fake") -> None:
        self.model = model
        self._script: Script | None = answers if callable(answers) else None
        self._answers = [] if callable(answers) else list(answers)
        self.requests: list[tuple[list[Message], GenParams, dict[str, Any] | None]] = []

    def identity(self) -> dict[str, Any]:
        """A fake's identity: its name (give fakes distinct names to keep caches apart)."""
        return {"backend": self.backend, "model": self.model}

    def complete(
        self,
        messages: Sequence[Message],
        params: GenParams,
        schema: dict[str, Any] | None = None,
    ) -> RawCompletion:
        """Return the next scripted answer."""
        self.requests.append((list(messages), params, schema))
        if self._script is not None:
            text = self._script(messages, schema)
        elif self._answers:
            text = self._answers.pop(0)
        else:
            raise AssertionError("FakeChatModel ran out of scripted answers")
        words = sum(len(m.content.split()) for m in messages)
        return RawCompletion(
            text=text,
            prompt_tokens=words,
            completion_tokens=len(text.split()),
            structured_mode="fake" if schema else None,
        )

    async def acomplete(
        self,
        messages: Sequence[Message],
        params: GenParams,
        schema: dict[str, Any] | None = None,
    ) -> RawCompletion:
        """Async twin of `complete`."""
        return self.complete(messages, params, schema)


class NoSource:
    """A source that finds nothing: for building a method whose searches do not matter."""

    name = "none"

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        before: dt.date | None = None,
        exclude_domains: Sequence[str] = (),
    ) -> list[Evidence]:
        """Nothing, whatever the query."""
        return []

    def to_dict(self) -> dict[str, Any]:
        """Its configuration: its name."""
        return {"name": self.name}
