"""ProgramFC's program generator (Pan et al. 2023, section 3.2): demonstrations, then a program.

    demos = demonstrations("multi-hop")[:10]
    program, text, sent = await generate(model, claim_text, demos, params, log)

The model sees a short statement of the three calls, then worked examples as earlier
turns (each a claim and its program), then the claim; it answers with the program as
plain text, as ProgramFC's Codex did, and `program.parse_program` reads it. A program
that breaks a rule is sent back once with the rule it broke (verity's repair round;
ProgramFC guessed a label at random instead, ``program_execution.py``); one that is
still broken raises `ProgramError`, and the caller lets that sample cast no vote.

The demonstrations (``demos.json``) are verity's own invented claims, in two sets shaped
like ProgramFC's two prompts: ``multi-hop`` (questions whose answers later statements
use, as its HOVER prompt) and ``facts`` (a long claim split into statements, as its
FEVEROUS prompt). None is a benchmark example, so none has to be left out of scoring.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from verity.domain import Message
from verity.errors import ModelOutputError
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import Completion, ModelClient
from verity.llm.step import DATA_NOTE, data_block
from verity.methods.baselines.programfc.program import Program, ProgramError, parse_program

DemoSet = Literal["multi-hop", "facts"]

INSTRUCTION = (
    "You turn a claim into a short Python-like program whose steps, run one after "
    "another, check the claim. Three calls are available. "
    'answer_N = Question("...") asks one simple question; a later step can use its '
    "answer by writing {answer_N} inside its text. "
    'fact_N = Verify("...") states one simple fact to be judged true or false. '
    "label = Predict(...) comes last and combines the fact_N variables with and, or, "
    "not and parentheses into the claim's truth. "
    "Write one call per line and nothing else: no explanation."
)
# The repair message starts with this, so a call that only parrots it is recognisable.
REPAIR_NOTE = "That program cannot be run"
# Tokens a chat template adds around each message (role markers), for the context count.
MESSAGE_TOKENS = 8


@dataclass(frozen=True)
class Demo:
    """One worked example: a claim and the program written for it."""

    claim: str
    program: str


@cache
def demonstrations(name: DemoSet) -> tuple[Demo, ...]:
    """A built-in demonstration set, in file order; each program is checked on loading."""
    path = resources.files("verity.methods.baselines.programfc").joinpath("demos.json")
    rows = json.loads(path.read_text(encoding="utf-8"))[name]
    demos = tuple(Demo(claim=row["claim"], program=row["program"]) for row in rows)
    for demo in demos:
        parse_program(demo.program)  # a broken demonstration would teach a broken format
    return demos


def messages(claim: str, demos: Sequence[Demo]) -> list[Message]:
    """The generation prompt: the calls explained, the examples as turns, then the claim."""
    convo = [Message(role="system", content=f"{INSTRUCTION}\n\n{DATA_NOTE}")]
    for demo in demos:
        convo.append(Message(role="user", content=_claim_turn(demo.claim)))
        convo.append(Message(role="assistant", content=demo.program))
    convo.append(Message(role="user", content=_claim_turn(claim)))
    return convo


def _claim_turn(claim: str) -> str:
    return "Claim: " + data_block("claim", claim) + "\nProgram:"


async def generate(
    model: ModelClient,
    claim: str,
    demos: Sequence[Demo],
    params: GenParams | None,
    log: CallLog,
) -> tuple[Program, str, int]:
    """A valid program for ``claim``, the text it was read from, and the examples sent.

    One repair round: the first answer and the rule it broke go back to the model, which
    writes the whole program again. A second invalid answer raises `ProgramError`.
    """
    reserved = (params or model.params).max_tokens
    # Counting tokens runs a local model's tokenizer under its lock: off the event loop.
    sent = await asyncio.to_thread(fitting, model, claim, demos, reserved)
    first = messages(claim, demos[:sent])
    text = await _ask(model, first, params, log, "programfc.program")
    try:
        return parse_program(text), text, sent
    except ProgramError as exc:
        error = str(exc)
    feedback = [
        Message(role="assistant", content=text),
        Message(
            role="user",
            content=f"{REPAIR_NOTE}: "
            + data_block("error", error)
            + "\nWrite the whole program for the same claim again, one call per line.",
        ),
    ]
    again = await _ask(model, [*first, *feedback], params, log, "programfc.program.repair")
    if REPAIR_NOTE in again:
        raise ProgramError("invalid program after one repair round: it repeats the feedback")
    try:
        return parse_program(again), again, sent
    except ProgramError as exc:
        raise ProgramError(f"invalid program after one repair round: {exc}") from exc


async def _ask(
    model: ModelClient,
    convo: Sequence[Message],
    params: GenParams | None,
    log: CallLog,
    step: str,
) -> str:
    done: Completion[Any] = await model.achat(convo, step=step, params=params, log=log)
    if not done.text.strip():
        raise ModelOutputError("the program generator gave an empty answer")
    return done.text


def fitting(model: ModelClient, claim: str, demos: Sequence[Demo], reserved: int) -> int:
    """How many of ``demos`` fit the model's context with ``reserved`` tokens left over.

    All of them when the model does not state its context (a remote endpoint); a small
    local model drops the last ones first, and the trace records how many were sent.
    """
    context = model.context_tokens()
    if context is None:
        return len(demos)

    def tokens(convo: Sequence[Message]) -> int:
        return sum(model.count_tokens(m.content)[0] + MESSAGE_TOKENS for m in convo)

    used = tokens(messages(claim, [])) + reserved
    for n, demo in enumerate(demos):
        used += tokens(messages(claim, [demo])[1:3])
        if used > context:
            return n
    return len(demos)
