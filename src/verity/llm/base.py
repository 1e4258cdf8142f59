"""The backend protocol: what a chat model must do, and nothing more.

A backend sends messages to one model and returns its text and token counts. Caching,
accounting, retries, concurrency and output validation are added once, for every
backend, by `verity.llm.client.ModelClient`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from verity.domain import Message
from verity.errors import SourceUnavailableError


class GenParams(BaseModel):
    """Generation parameters passed through to every backend."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1)
    seed: int | None = 0


class RawCompletion(BaseModel):
    """What a backend returns for one call."""

    model_config = ConfigDict(frozen=True)

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    structured_mode: str | None = None
    finish_reason: str | None = None


class ModelUnavailableError(SourceUnavailableError):
    """The model endpoint could not be reached, rejected the request, or timed out."""


class TransientModelError(ModelUnavailableError):
    """A failure worth retrying: a rate limit (429) or a server error (5xx)."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


@runtime_checkable
class ChatBackend(Protocol):
    """One chat model behind one API."""

    backend: str
    model: str

    def identity(self) -> dict[str, Any]:
        """What makes two answers comparable: backend, model and endpoint. Part of cache keys."""
        ...

    def complete(
        self,
        messages: Sequence[Message],
        params: GenParams,
        schema: dict[str, Any] | None = None,
    ) -> RawCompletion:
        """Answer the messages; with a JSON schema, answer with JSON meant to match it."""
        ...

    async def acomplete(
        self,
        messages: Sequence[Message],
        params: GenParams,
        schema: dict[str, Any] | None = None,
    ) -> RawCompletion:
        """Async twin of `complete`."""
        ...
