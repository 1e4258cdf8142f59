"""LoCal's decomposing agent (section 3.2.1): a checked program, with one repair round.

    program, sent = await decompose(model, claim_text, shots, params, log)

The demonstrations are fitted to the model's context; an invalid program gets one repair
round (the deduction alone when only it is wrong), and only a program that passes every
check of `program.parse_program` is returned.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from pydantic import Field, create_model

from verity.domain import Message
from verity.errors import ModelOutputError
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.step import Shot, data_block
from verity.methods.local.agents import DECOMPOSE
from verity.methods.local.program import (
    Decomposition,
    Program,
    ProgramError,
    check_subtasks,
    deduction_pattern,
    parse_program,
)

# Feedback text the repair round sends; a sub-task that holds it is the feedback parroted.
REPAIR_MARK = "That program breaks a rule"
# Tokens a chat template adds around each message (role markers); SmolLM2's adds 5.
MESSAGE_TOKENS = 8


async def decompose(
    model: ModelClient,
    claim: str,
    demos: Sequence[Shot],
    params: GenParams | None,
    log: CallLog,
) -> tuple[Program, int]:
    """The decomposing agent (3.2.1), with one repair round for an invalid program.

    Returns the program and the number of demonstrations sent. The repair answer is
    held to every rule the first one was, and may not simply repeat the feedback it
    was given: only a valid program is ever used.
    """
    answer_tokens = (params or model.params).max_tokens
    # Counting tokens runs a local model's tokenizer, under the lock its generation holds:
    # off the event loop, so the other checks of a run go on meanwhile.
    sent = await asyncio.to_thread(fitting, model, claim, demos, answer_tokens)
    messages = DECOMPOSE.messages(shots=demos[:sent], claim=claim)
    done = await model.achat(
        messages, step="local.decompose", schema=Decomposition, params=params, log=log
    )
    answer = _decomposition(done.parsed)
    try:
        return parse_program(answer), sent
    except ProgramError as exc:
        error = str(exc)
    try:
        facts = len(check_subtasks(answer)) - len(answer.questions)
    except ProgramError:
        facts = 0  # the sub-tasks themselves break a rule: the whole program is redone
    feedback = [
        Message(role="assistant", content=done.text),
        Message(
            role="user",
            content=f"{REPAIR_MARK}: "
            + data_block("error", error)
            + (
                f"\nWrite only the deduction again, over f1 to f{facts}, as JSON."
                if facts
                else "\nWrite the corrected decomposition of the same claim as JSON."
            ),
        ),
    ]
    fewer = await asyncio.to_thread(_room_for, model, claim, demos[:sent], answer_tokens, feedback)
    repair = [*DECOMPOSE.messages(shots=demos[:fewer], claim=claim), *feedback]
    if facts:
        # Only the deduction is wrong: ask for it alone, in a format that can name
        # no fact the program lacks; the sub-tasks stay as written.
        # The format, not the reading, holds the pattern: the answer is checked by
        # `parse_program` below, like every other program.
        shape = deduction_pattern(facts)
        schema = create_model(
            "Deduction", deduction=(str, Field(json_schema_extra={"pattern": shape}))
        )
        fixed = await model.achat(
            repair, step="local.decompose.repair", schema=schema, params=params, log=log
        )
        written = fixed.parsed.model_dump() if fixed.parsed is not None else {}
        answer = answer.model_copy(update={"deduction": str(written.get("deduction", ""))})
    else:
        again = await model.achat(
            repair, step="local.decompose.repair", schema=Decomposition, params=params, log=log
        )
        answer = _decomposition(again.parsed)
    try:
        program = parse_program(answer)
    except ProgramError as exc:
        raise ProgramError(f"invalid program after one repair round: {exc}") from exc
    if any(error in t.text or REPAIR_MARK in t.text for t in program.subtasks):
        raise ProgramError(
            "invalid program after one repair round: a sub-task repeats the feedback"
        )
    return program, fewer


def fitting(model: ModelClient, claim: str, demos: Sequence[Shot], reserved: int) -> int:
    """How many of ``demos`` fit the decomposer's context with ``reserved`` tokens left.

    All of them when the model does not state its context (a remote endpoint). A
    small local model cannot hold 20 long demonstrations and a long claim; the last
    ones are dropped first, and the trace records how many were sent.
    """
    context = model.context_tokens()
    if context is None:
        return len(demos)

    def tokens(messages: Sequence[Message]) -> int:
        return sum(model.count_tokens(m.content)[0] + MESSAGE_TOKENS for m in messages)

    used = tokens(DECOMPOSE.messages(claim=claim)) + reserved
    for n, shot in enumerate(demos):
        turns = DECOMPOSE.messages(shots=[shot], claim=claim)[1:3]
        used += tokens(turns)
        if used > context:
            return n
    return len(demos)


def _room_for(
    model: ModelClient,
    claim: str,
    demos: Sequence[Shot],
    answer_tokens: int,
    feedback: Sequence[Message],
) -> int:
    """How many demonstrations fit a repair round, which adds ``feedback`` to the prompt."""
    extra = sum(model.count_tokens(m.content)[0] + MESSAGE_TOKENS for m in feedback)
    return fitting(model, claim, demos, answer_tokens + extra)


def _decomposition(parsed: Decomposition | None) -> Decomposition:
    # ModelClient raises ModelOutputError before returning an unparsed structured answer.
    if parsed is None:  # pragma: no cover - defended by ModelClient
        raise ModelOutputError("the decomposing agent gave no answer")
    return parsed
