"""ProgramFC's reasoning programs: the text a model writes, parsed and checked, no ``eval``.

    program = parse_program('''
        answer_1 = Question("Who directed Alien?")
        fact_1 = Verify("{answer_1} was born in England.")
        label = Predict(fact_1)
    ''')
    program.calls[1].references          # ('answer_1',)
    program.predict.evaluate({"fact_1": True})   # True

Pan et al. 2023 (section 3.2; the prompts of their code, ``models/prompts.py``) write a
program as Python-like lines of three kinds:

- ``answer_N = Question("...")``: a question whose short answer later lines use;
- ``fact_N = Verify("...")``: a simple statement to be judged true or false, which may
  hold an earlier answer as ``{answer_N}`` (written as an f-string or not);
- ``label = Predict(...)``: the label, a logical expression over the ``fact`` variables.

What the parser accepts, and why:

- Scaffolding a model copies from the demonstrations (``def program():``, ``# ...``
  comments, code fences, blank lines) is skipped, as ProgramFC's executor skips any
  line that is not one of the three calls. Any other line is an error here, so a
  program cut off or mixed with prose is caught rather than half run.
- A ``{name}`` inside a call must name a ``Question`` defined on an earlier line, and
  ``Predict`` may name only ``Verify`` variables defined before it: an undefined name is
  an error. ProgramFC's code left an unknown placeholder in the text and skipped an
  unknown name in ``Predict``; verity asks for the program again instead (`generate.py`).
- ``Predict`` takes ``and``, ``or``, ``not`` and parentheses, parsed by hand (``not``
  binds tightest, then ``and``, then ``or``, as in Python). ProgramFC's own executor
  splits the argument on " and " only; every demonstration it shipped is a conjunction,
  which both readings evaluate alike.
- The first ``Predict`` line ends the program; anything after it is not read, as
  ProgramFC's generator stopped at the start of the next example (its stop words,
  ``program_generator.py``). A program without ``Predict`` is an error; since ``Predict``
  must name a ``Verify`` variable, every program verifies something.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from verity.errors import ModelOutputError

# Caps on what a program may hold, so a runaway answer cannot start an unbounded number
# of calls. ProgramFC's demonstrations use at most 4 facts and 2 questions; these are
# verity's bounds, well above that.
MAX_CALLS = 12
MAX_TEXT_CHARS = 400


class ProgramError(ModelOutputError):
    """A generated program that cannot be run: bad syntax, undefined names, no ``Predict``."""


Kind = Literal["question", "verify"]
# ("var", name), ("not", node), ("and", left, right) or ("or", left, right).
Node = tuple[Any, ...]


@dataclass(frozen=True)
class Call:
    """One ``Question`` or ``Verify`` line: the variable it sets, its kind and its text."""

    var: str
    kind: Kind
    text: str

    @property
    def references(self) -> tuple[str, ...]:
        """The earlier answers the text names as ``{answer_N}``, in order."""
        return tuple(_REFERENCE.findall(self.text))

    def resolved(self, answers: Mapping[str, str]) -> str:
        """The text with each ``{name}`` replaced by that question's answer."""
        return _REFERENCE.sub(lambda m: answers[m.group(1)], self.text)


@dataclass(frozen=True)
class Predict:
    """The ``Predict`` line: its expression as written and as a parsed tree."""

    expression: str
    tree: Node

    def evaluate(self, facts: Mapping[str, bool]) -> bool:
        """The expression's truth for the ``Verify`` results in ``facts``."""
        return _evaluate(self.tree, facts)


@dataclass(frozen=True)
class Program:
    """A parsed program: its calls in order and the final ``Predict``."""

    calls: tuple[Call, ...]
    predict: Predict

    def to_dict(self) -> dict[str, object]:
        """The program as plain data, for the trace."""
        return {
            "calls": [{"var": c.var, "call": c.kind, "text": c.text} for c in self.calls],
            "predict": self.predict.expression,
        }


# -- lines -------------------------------------------------------------------------------

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_REFERENCE = re.compile(r"\{(" + _NAME + r")\}")
# fact_1 = Verify("..."), with an optional f prefix and either quote; the text is taken
# up to the quote that closes the call, so a quote inside it is kept.
_CALL = re.compile(
    r"^(?P<var>" + _NAME + r")\s*=\s*(?P<fn>Verify|Question)\s*\(\s*f?"
    r"(?P<q>[\"'])(?P<text>.*)(?P=q)\s*\)\s*$"
)
_PREDICT = re.compile(r"^label\s*=\s*[Pp]redict\s*\((?P<expr>.*)\)\s*$")
_SKIPPED = re.compile(r"^(def\s+program\s*\(\s*\)\s*:|#.*|```\w*|return\s+label)$")


def parse_program(text: str) -> Program:
    """The program in ``text``; `ProgramError` says which rule a bad one breaks."""
    calls: list[Call] = []
    predict: Predict | None = None
    kinds: dict[str, Kind] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or _SKIPPED.match(line):
            continue
        if found := _PREDICT.match(line):
            # The program ends here: ProgramFC stopped generation at the next example
            # ("# The claim is", program_generator.py), so what follows is not read.
            predict = _predict(found.group("expr"), kinds)
            break
        found = _CALL.match(line)
        if found is None:
            raise ProgramError(f"line {number} is not a Question, Verify or Predict call")
        call = _call(found, kinds)
        calls.append(call)
        kinds[call.var] = call.kind
        if len(calls) > MAX_CALLS:
            raise ProgramError(f"more than {MAX_CALLS} calls")
    if predict is None:
        raise ProgramError("the program has no label = Predict(...) line")
    return Program(tuple(calls), predict)


def _call(found: re.Match[str], kinds: Mapping[str, Kind]) -> Call:
    var, text = found.group("var"), found.group("text").strip()
    kind: Kind = "verify" if found.group("fn") == "Verify" else "question"
    if var == "label":
        raise ProgramError("label is set by Predict only")
    if var in kinds:
        raise ProgramError(f"{var} is set twice")
    if not text:
        raise ProgramError(f"{var} has an empty text")
    if len(text) > MAX_TEXT_CHARS:
        raise ProgramError(f"the text of {var} is longer than {MAX_TEXT_CHARS} characters")
    call = Call(var=var, kind=kind, text=text)
    for name in call.references:
        if kinds.get(name) != "question":
            raise ProgramError(f"{var} uses {{{name}}}, which no earlier Question defines")
    return call


# -- Predict's expression ------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(\(|\)|" + _NAME + r")")


def _predict(expression: str, kinds: Mapping[str, Kind]) -> Predict:
    tokens = _tokens(expression)
    if not tokens:
        raise ProgramError("Predict has no argument")
    parser = _Parser(tokens, kinds)
    tree = parser.disjunction()
    if parser.at < len(tokens):
        raise ProgramError(f"Predict has an unexpected {tokens[parser.at]!r}")
    return Predict(expression=expression.strip(), tree=tree)


def _tokens(expression: str) -> list[str]:
    tokens: list[str] = []
    at = 0
    while at < len(expression):
        found = _TOKEN.match(expression, at)
        if found is None:
            if expression[at:].strip():
                raise ProgramError(f"Predict cannot read {expression[at:].strip()!r}")
            break
        tokens.append(found.group(1))
        at = found.end()
    return tokens


class _Parser:
    """Recursive descent over ``or`` / ``and`` / ``not`` / names / parentheses."""

    def __init__(self, tokens: list[str], kinds: Mapping[str, Kind]) -> None:
        self.tokens = tokens
        self.kinds = kinds
        self.at = 0

    def _peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def disjunction(self) -> Node:
        left = self.conjunction()
        while self._peek() == "or":
            self.at += 1
            left = ("or", left, self.conjunction())
        return left

    def conjunction(self) -> Node:
        left = self.negation()
        while self._peek() == "and":
            self.at += 1
            left = ("and", left, self.negation())
        return left

    def negation(self) -> Node:
        if self._peek() == "not":
            self.at += 1
            return ("not", self.negation())
        return self.atom()

    def atom(self) -> Node:
        token = self._peek()
        if token is None:
            raise ProgramError("Predict ends too early")
        self.at += 1
        if token == "(":
            inner = self.disjunction()
            if self._peek() != ")":
                raise ProgramError("Predict has an unclosed parenthesis")
            self.at += 1
            return inner
        if token in {")", "and", "or", "not"}:
            raise ProgramError(f"Predict has an unexpected {token!r}")
        if self.kinds.get(token) != "verify":
            raise ProgramError(f"Predict names {token}, which no earlier Verify defines")
        return ("var", token)


def _evaluate(node: Node, facts: Mapping[str, bool]) -> bool:
    op = node[0]
    if op == "var":
        return facts[str(node[1])]
    if op == "not":
        return not _evaluate(node[1], facts)
    if op == "and":
        return _evaluate(node[1], facts) and _evaluate(node[2], facts)
    return _evaluate(node[1], facts) or _evaluate(node[2], facts)
