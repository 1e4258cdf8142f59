"""Declared LLM steps: a name, an instruction, typed inputs and a typed output.

    class Judgement(BaseModel):
        label: Literal["SUPPORTED", "REFUTED", "NOT_ENOUGH_INFO"]
        explanation: str

    JUDGE = Step(
        name="judge",
        instruction="You are a careful fact-checker.",
        template="Claim: {claim}  Evidence: {evidence}  Is the claim supported?",
        output=Judgement,
    )
    judgement = JUDGE.run(model, log=log, claim=claim.text, evidence=numbered)

Prompt rendering and output parsing live here, once; a paper's agent is a thin module
over a few steps.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from verity.domain import Message
from verity.errors import BadInputError
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import Completion, ModelClient

T = TypeVar("T", bound=BaseModel)
Shot = tuple[Mapping[str, Any], BaseModel]


@dataclass(frozen=True)
class Step(Generic[T]):
    """One contract between a method and a model."""

    name: str
    instruction: str
    template: str
    output: type[T]

    @property
    def inputs(self) -> tuple[str, ...]:
        """The input fields the template names."""
        return tuple(field for _, field, _, _ in string.Formatter().parse(self.template) if field)

    def messages(self, *, shots: Sequence[Shot] = (), **inputs: Any) -> list[Message]:
        """The chat messages for these inputs; every declared input must be given.

        ``shots`` are demonstrations, each an input mapping and the answer to it, sent as
        earlier user and assistant turns (in-context learning).
        """
        convo = [Message(role="system", content=self.instruction)]
        for shot_inputs, answer in shots:
            convo.append(Message(role="user", content=self._render(shot_inputs)))
            convo.append(Message(role="assistant", content=answer.model_dump_json()))
        convo.append(Message(role="user", content=self._render(inputs)))
        return convo

    def _render(self, inputs: Mapping[str, Any]) -> str:
        missing = [name for name in self.inputs if name not in inputs]
        if missing:
            raise BadInputError(f"step {self.name!r} is missing inputs: {', '.join(missing)}")
        return self.template.format(**inputs)

    def run(
        self,
        model: ModelClient,
        *,
        log: CallLog | None = None,
        params: GenParams | None = None,
        shots: Sequence[Shot] = (),
        **inputs: Any,
    ) -> T:
        """Ask the model and return its validated answer."""
        return _parsed(
            model.chat(
                self.messages(shots=shots, **inputs),
                step=self.name,
                schema=self.output,
                params=params,
                log=log,
            )
        )

    async def arun(
        self,
        model: ModelClient,
        *,
        log: CallLog | None = None,
        params: GenParams | None = None,
        shots: Sequence[Shot] = (),
        **inputs: Any,
    ) -> T:
        """Async twin of `run`."""
        return _parsed(
            await model.achat(
                self.messages(shots=shots, **inputs),
                step=self.name,
                schema=self.output,
                params=params,
                log=log,
            )
        )


def _parsed(done: Completion[T]) -> T:
    # ModelClient raises ModelOutputError before returning an unparsed structured answer.
    if done.parsed is None:  # pragma: no cover - defended by ModelClient
        raise RuntimeError("structured answer missing")
    return done.parsed
