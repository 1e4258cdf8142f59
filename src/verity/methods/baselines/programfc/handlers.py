"""ProgramFC's sub-task handlers: ``Verify`` and ``Question``, with evidence or without.

    truth = await (VERIFY if passages else VERIFY_CLOSED).arun(model, log=log, ...)

Pan et al. 2023, section 3.3: each call of the program goes to a handler of its own. A
``Question`` gets a short answer that later calls use in place of ``{answer_1}``; a ``Verify``
gets true or false; ``Predict`` is the program's logical expression over those truths
(evaluated in `method.py`). In the gold and open-book settings a handler reads the
evidence first; closed book it answers from the model's own knowledge. The paper's
handlers (FLAN-T5) answer directly, without a rationale, and so do these.
"""

from __future__ import annotations

from pydantic import BaseModel

from verity.llm.step import Step

# A Question's answer is put into later texts: verity caps it (a short phrase is asked for).
MAX_ANSWER_CHARS = 200


class Truth(BaseModel):
    """A ``Verify`` call's result."""

    answer: bool


class ShortAnswer(BaseModel):
    """A ``Question`` call's result: a short phrase (a name, a date, a number, a place)."""

    answer: str


# The repository maps an answer of "it's impossible to say" to false (program_execution.py,
# map_direct_answer_to_label): a statement the evidence does not bear out is not true.
VERIFY = Step(
    name="programfc.verify",
    instruction=(
        "You check one simple statement against the evidence passages. Answer true if "
        "the passages show that the statement holds, and false if they contradict it or "
        "do not show it. Give the answer directly, without explanation."
    ),
    template="Evidence:\n{evidence}\n\nBased on the evidence, is this statement true?\n{statement}",
    output=Truth,
)

VERIFY_CLOSED = Step(
    name="programfc.verify",
    instruction=(
        "You check one simple statement using your own knowledge. Answer true if it "
        "holds and false if it does not. Give the answer directly, without explanation."
    ),
    template="Is this statement true?\n{statement}",
    output=Truth,
)

QUESTION = Step(
    name="programfc.question",
    instruction=(
        "You answer one simple question from the evidence passages with a short phrase: "
        "a name, a date, a number or a place. Give the phrase only."
    ),
    template="Evidence:\n{evidence}\n\nQuestion: {question}",
    output=ShortAnswer,
)

QUESTION_CLOSED = Step(
    name="programfc.question",
    instruction=(
        "You answer one simple question from your own knowledge with a short phrase: a "
        "name, a date, a number or a place. Give the phrase only."
    ),
    template="Question: {question}",
    output=ShortAnswer,
)
