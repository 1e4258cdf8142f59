"""LoCal's decomposition program: sub-tasks, references, and a safe deduction function.

    program = parse_program(Decomposition(
        questions=[Step(text="Who directed Alien?")],
        facts=[Step(text="{q1} was born in England.")],
        deduction="f1",
    ))
    program.deduction.evaluate({"f1": True})                 # True
    resolve("{q1} was born in England.", {"q1": "Ridley Scott"})

The decomposing agent writes a sequence of sub-tasks s_i = (t_i, I_i, a_i) and a
deduction function f over their results (LoCal, section 3.2.1). Here a question's result
is named q1, q2, ... and a fact's f1, f2, ...; an instruction I_i may use an earlier
question's answer as ``{q1}``. The deduction is parsed by the small recursive-descent
parser below, never evaluated as Python.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from verity.errors import ModelOutputError

# Verity's cap on a program's size; the paper sets none (3.2.1). Ten covers a 4-hop HoVer
# claim with room to spare (the built-in demonstrations use at most 7).
MAX_SUBTASKS = 10
_REFERENCE = re.compile(r"\{(q[1-9][0-9]*)\}")
# Any brace pair, or a brace left alone: each must be a valid reference.
_BRACE = re.compile(r"\{[^{}]*\}|[{}]")
_TOKEN = re.compile(r"\s*(?:(\()|(\))|([qf]\d+)\b|(and|or|not)\b|(\S+))", re.IGNORECASE)


class ProgramError(ModelOutputError):
    """A decomposition that is not a valid program: bad references or deduction."""


# A deduction in disjunctive form needs no parentheses (and binds tighter than or), so
# the answer format asks for that shape, and a local model's grammar cannot leave it. It
# is not enforced when the answer is read: 3.2.1 asks for "a logical expression", and
# the parser below reads any well-formed one (parentheses, capitals, extra spaces); a
# deduction it cannot read goes to the program's repair round, which names the fault.
def _deduction_shape(name: str) -> str:
    return f"^(not )?{name}( (and|or) (not )?{name})*$"


DEDUCTION_PATTERN = _deduction_shape("f[1-9][0-9]?")


# Braces only as {qN}: sent in the answer format, so a local model's grammar cannot
# write anything else, but not enforced on validation, so that `parse_program` names the
# broken rule for the repair round.
TEXT_PATTERN = r"^([^{}]|\{q[1-9][0-9]?\})*$"


class Step(BaseModel):
    """One question or fact as the decomposing agent writes it."""

    text: str = Field(json_schema_extra={"pattern": TEXT_PATTERN})


class Decomposition(BaseModel):
    """The decomposing agent's answer.

    Questions come first (q1, q2, ...), then facts (f1, f2, ...): a question may use the
    answer of an earlier question ({q1}), a fact the answer of any question; the deduction
    combines facts. Any LoCal program can be written in this order, since only question
    answers are ever referred to; naming the two kinds apart lets the answer format
    itself keep questions out of the deduction.
    """

    questions: list[Step] = Field(default_factory=list)
    # Both rules are in the answer format only; `parse_program` enforces them, so that a
    # breach reaches the program's repair round with the rule named.
    facts: list[Step] = Field(json_schema_extra={"minItems": 1})
    deduction: str = Field(json_schema_extra={"pattern": DEDUCTION_PATTERN})


@dataclass(frozen=True)
class SubTask:
    """A sub-task with the name of its result (q1, q2, ... or f1, f2, ...)."""

    var: str
    type: Literal["fact", "question"]
    text: str


# -- the deduction function: a tiny boolean expression language ---------------------------


@dataclass(frozen=True)
class Var:
    """A fact variable."""

    name: str

    def evaluate(self, env: Mapping[str, bool]) -> bool:
        """Its value in ``env``."""
        return env[self.name]

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Not:
    """Negation."""

    operand: Expr

    def evaluate(self, env: Mapping[str, bool]) -> bool:
        """The opposite of the operand."""
        return not self.operand.evaluate(env)

    def __str__(self) -> str:
        return f"not {_wrap(self.operand)}"


@dataclass(frozen=True)
class And:
    """Conjunction of two or more operands."""

    operands: tuple[Expr, ...]

    def evaluate(self, env: Mapping[str, bool]) -> bool:
        """True when every operand is."""
        return all(op.evaluate(env) for op in self.operands)

    def __str__(self) -> str:
        return " and ".join(_wrap(op) for op in self.operands)


@dataclass(frozen=True)
class Or:
    """Disjunction of two or more operands."""

    operands: tuple[Expr, ...]

    def evaluate(self, env: Mapping[str, bool]) -> bool:
        """True when any operand is."""
        return any(op.evaluate(env) for op in self.operands)

    def __str__(self) -> str:
        return " or ".join(_wrap(op) for op in self.operands)


Expr = Var | Not | And | Or


def _wrap(expr: Expr) -> str:
    return str(expr) if isinstance(expr, Var | Not) else f"({expr})"


def variables(expr: Expr) -> set[str]:
    """Every variable an expression mentions."""
    if isinstance(expr, Var):
        return {expr.name}
    if isinstance(expr, Not):
        return variables(expr.operand)
    return set().union(*(variables(op) for op in expr.operands))


def parse_deduction(text: str) -> Expr:
    """Parse ``a1 and (a2 or not a3)``; precedence not > and > or; a clear error otherwise."""
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:  # only trailing whitespace is left
            break
        if match.group(5):
            raise ProgramError(f"unexpected {match.group(5)!r} in deduction {text!r}")
        tokens.append(next(g for g in match.groups() if g).lower())
        pos = match.end()
    if not tokens:
        raise ProgramError("the deduction function is empty")
    parser = _Parser(tokens, text)
    expr = parser.expression()
    if parser.pos != len(tokens):
        raise ProgramError(f"unexpected {tokens[parser.pos]!r} in deduction {text!r}")
    return expr


class _Parser:
    def __init__(self, tokens: list[str], text: str) -> None:
        self.tokens, self.text, self.pos = tokens, text, 0

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self) -> str:
        token = self._peek()
        if token is None:
            raise ProgramError(f"deduction {self.text!r} ends too early")
        self.pos += 1
        return token

    def expression(self) -> Expr:
        operands = [self._conjunction()]
        while self._peek() == "or":
            self._take()
            operands.append(self._conjunction())
        return operands[0] if len(operands) == 1 else Or(tuple(operands))

    def _conjunction(self) -> Expr:
        operands = [self._negation()]
        while self._peek() == "and":
            self._take()
            operands.append(self._negation())
        return operands[0] if len(operands) == 1 else And(tuple(operands))

    def _negation(self) -> Expr:
        if self._peek() == "not":
            self._take()
            return Not(self._negation())
        return self._atom()

    def _atom(self) -> Expr:
        token = self._take()
        if token == "(":
            inner = self.expression()
            if self._take() != ")":
                raise ProgramError(f"unbalanced parentheses in deduction {self.text!r}")
            return inner
        if re.fullmatch(r"[qf]\d+", token):
            return Var(token)
        raise ProgramError(f"unexpected {token!r} in deduction {self.text!r}")


# -- programs --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Program:
    """A validated decomposition."""

    subtasks: tuple[SubTask, ...]
    deduction: Expr

    def to_dict(self) -> dict[str, object]:
        """JSON shape for traces."""
        return {
            "subtasks": [{"var": s.var, "type": s.type, "text": s.text} for s in self.subtasks],
            "deduction": str(self.deduction),
        }


def parse_program(answer: Decomposition) -> Program:
    """Check a decomposition and name its variables; `ProgramError` says what is wrong.

    Rules: at least one fact and at most ten sub-tasks; the only braces in a text are
    references, ``{qN}``, a question's to earlier questions and a fact's to any question;
    every question's answer is used by a later sub-task; the deduction uses every fact
    and nothing else. A program that breaks a rule would run with a hole in it: an
    unresolved ``{a1}`` sent to retrieval, or a sub-task whose result decides nothing.
    """
    subtasks = check_subtasks(answer)
    facts = [t.var for t in subtasks if t.type == "fact"]
    return Program(subtasks=subtasks, deduction=check_deduction(answer.deduction, facts))


def check_subtasks(answer: Decomposition) -> tuple[SubTask, ...]:
    """The sub-tasks, named, once their texts and references obey the rules."""
    total = len(answer.questions) + len(answer.facts)
    if not answer.facts:
        raise ProgramError("the decomposition has no fact to verify")
    if total > MAX_SUBTASKS:
        raise ProgramError(f"{total} sub-tasks; at most {MAX_SUBTASKS} are allowed")
    subtasks: list[SubTask] = []
    questions = [f"q{i}" for i in range(1, len(answer.questions) + 1)]
    used: set[str] = set()
    groups: tuple[tuple[Literal["question", "fact"], str, list[Step]], ...] = (
        ("question", "q", answer.questions),
        ("fact", "f", answer.facts),
    )
    for kind, prefix, steps in groups:
        for number, step in enumerate(steps, start=1):
            var = f"{prefix}{number}"
            if not step.text.strip():
                raise ProgramError(f"sub-task {var} has no text")
            allowed = questions[: number - 1] if kind == "question" else questions
            used |= _references(var, step.text, allowed)
            subtasks.append(SubTask(var=var, type=kind, text=step.text.strip()))
    unused = [q for q in questions if q not in used]
    if unused:
        raise ProgramError(
            f"the answer of {unused[0]} is never used; refer to it as {{{unused[0]}}} in a "
            "later sub-task, or leave the question out"
        )
    return tuple(subtasks)


def check_deduction(text: str, facts: list[str]) -> Expr:
    """The parsed deduction, once it uses every one of ``facts`` and nothing else."""
    expr = parse_deduction(text)
    named = variables(expr)
    for name in sorted(named):
        if name not in facts:
            raise ProgramError(f"the deduction uses {name}, but the facts are {', '.join(facts)}")
    missing = [f for f in facts if f not in named]
    if missing:
        raise ProgramError(f"the deduction leaves out {missing[0]}; every fact must be in it")
    return expr


def deduction_pattern(facts: int) -> str:
    """The deduction format over exactly f1..f{facts}, for a repair of the deduction alone."""
    return _deduction_shape(f"f[1-{facts}]" if facts < 10 else "(f10|f[1-9])")


def _references(var: str, text: str, allowed: list[str]) -> set[str]:
    """The questions ``text`` refers to; any other brace token is an error."""
    found: set[str] = set()
    for token in _BRACE.findall(text):
        match = _REFERENCE.fullmatch(token)
        if match is None or match.group(1) not in allowed:
            shown = token if len(token) <= 40 else token[:37] + "..."
            scope = "earlier questions" if var.startswith("q") else "questions"
            raise ProgramError(
                f"sub-task {var} contains {shown!r}; braces may only hold a reference to "
                f"one of the {scope}, written {{q1}}"
            )
        found.add(match.group(1))
    return found


def waves(subtasks: Sequence[SubTask]) -> list[list[SubTask]]:
    """The sub-tasks in rounds, each round's free of references to one another.

    A sub-task goes one round after the latest question it references ({qN}); one that
    references none goes in the first. Every sub-task of a round has, when the round
    starts, the answers it needs (3.2.1: I_i may use a_1..a_{i-1}), and nothing else
    orders them. Each round keeps the program's order.

        [[t.var for t in w] for w in waves(subtasks)]   # [["q1", "f2"], ["q2"], ["f1"]]
    """
    round_of: dict[str, int] = {}
    for task in subtasks:
        needs = [round_of[var] for var in _REFERENCE.findall(task.text) if var in round_of]
        round_of[task.var] = 1 + max(needs, default=-1)
    rounds: list[list[SubTask]] = [[] for _ in range(max(round_of.values(), default=-1) + 1)]
    for task in subtasks:
        rounds[round_of[task.var]].append(task)
    return rounds


def resolve(text: str, answers: Mapping[str, str]) -> str:
    """Replace each ``{qN}`` reference by the answer to question qN."""
    return _REFERENCE.sub(lambda m: answers.get(m.group(1), m.group(0)), text)
