"""Fitting WKGFC's lists (facts, relations, passages) into the model's context.

    room = free_tokens(model, VERDICT, claim=claim, facts="", web=web)
    shown = fit_lines(lines, room, model)          # the longest head of ``lines`` that fits
    passage = fit_text(text, room, model)          # the longest head of ``text`` that fits

The paper shows the agent the whole subgraph; a list is cut only when the prompt would
not fit the model's context, from its end (lists come ranked, closest to the claim
first), and the caller records how many lines were left out. With a context the backend
does not report (a remote endpoint without ``context_tokens`` set), nothing is cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from verity.llm.base import GenParams
from verity.llm.client import ModelClient
from verity.llm.step import Step

# Chat-template tokens around each message (role markers), as LoCal and ZoFia count them.
MESSAGE_TOKENS = 8
# Room kept for tokenizers that count a little differently from the endpoint's.
MARGIN_TOKENS = 64


def free_tokens(
    model: ModelClient, step: Step[Any], *, context: int | None = None, **inputs: Any
) -> int | None:
    """Tokens left in the context for a list, once the prompt around it and the answer fit.

    ``inputs`` are the step's inputs with the list to fit left empty. None when the
    context is unknown.
    """
    context = context or model.context_tokens()
    if context is None:
        return None
    used = sum(model.count_tokens(m.content)[0] + MESSAGE_TOKENS for m in step.messages(**inputs))
    return context - used - GenParams().max_tokens - MARGIN_TOKENS


def fit_lines(lines: Sequence[str], room: int | None, model: ModelClient) -> list[str]:
    """The longest head of ``lines`` whose tokens (one newline each) fit in ``room``."""
    if room is None:
        return list(lines)
    shown: list[str] = []
    used = 0
    for line in lines:
        used += model.count_tokens(line + "\n")[0]
        if used > room:
            break
        shown.append(line)
    return shown


def fit_text(text: str, room: int | None, model: ModelClient) -> str:
    """The longest head of ``text`` (to a few characters) whose tokens fit in ``room``."""
    if room is None or model.count_tokens(text)[0] <= room:
        return text
    if room <= 0:
        return ""
    low, high = 0, len(text)  # low fits, high does not
    while high - low > 1:
        middle = (low + high) // 2
        if model.count_tokens(text[:middle])[0] <= room:
            low = middle
        else:
            high = middle
    return text[:low]
