"""The ``teller`` method: ask the cognition system's questions, apply the decision rules."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Sequence
from typing import Annotated, Any, ClassVar
from urllib.parse import urlparse

from pydantic import Field, field_validator

from verity import schedule
from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.llm.calllog import CallLog
from verity.llm.step import Delimited, data_block
from verity.methods.article import article_context, retrieval_query, truncate_words
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.baselines.teller.logic import (
    DELTA,
    SIDES,
    WEIGHT,
    Decision,
    atoms_of,
    decide,
    parse_literal,
)
from verity.methods.baselines.teller.questions import (
    ASK,
    INTENT,
    QUESTIONS,
    REPUTATION,
    STATEMENTS,
    YesNo,
    truth,
)
from verity.methods.common import numbered
from verity.methods.direct import claim_context
from verity.methods.settings import OperatorOnly

# TELLER's rules are learned from a training split with its own model's answers; neither
# the learned rules nor that model can be had here. These are written by hand in the same
# form: a message is true when it is judged true and not false, or when its statements
# hold with accurate background and nothing left out; false when judged false and not
# true, when a key statement fails, when distorted with improper intent, or when it lacks
# background and comes from a publisher with a record of improper intent.
DEFAULT_RULES: dict[str, list[list[str]]] = {
    "SUPPORTED": [["P1", "not P8"], ["P7", "P3", "not P4"]],
    "REFUTED": [["P8", "not P1"], ["not P7"], ["P4", "P5"], ["not P2", "P6"]],
}
# TELLER drive_liar.py, configure ('P7', 3): at most three statements are checked.
MAX_STATEMENTS = 3


class TellerConfig(BaselineConfig):
    """Settings of ``teller``."""

    # A rule set is the operator's (verity.toml), not a request's: it is the model of the
    # method, as a checkpoint is of `nli`.
    rules: Annotated[dict[str, list[list[str]]], OperatorOnly("a rule set")] = Field(
        default_factory=lambda: copy.deepcopy(DEFAULT_RULES),
        description="the decision rules: per side, conjunctions of 'Pn' or 'not Pn'",
    )
    max_statements: int = Field(
        default=MAX_STATEMENTS, ge=1, le=10, description="key statements checked (P7)"
    )
    # At most 100 is verity's bound; TELLER's trained weights sit near 6.
    weight: float = Field(
        default=WEIGHT, gt=0.0, le=100.0, description="weight of a rule's literals"
    )
    delta: float = Field(default=DELTA, ge=0.0, le=1.0, description="the DNF layer's delta")

    @field_validator("rules")
    @classmethod
    def _well_formed(cls, rules: dict[str, list[list[str]]]) -> dict[str, list[list[str]]]:
        unknown = set(rules) - set(SIDES)
        if unknown:
            raise ValueError(f"rules are for SUPPORTED and REFUTED, not {sorted(unknown)}")
        for side in SIDES:
            if not rules.get(side):
                raise ValueError(f"rules need at least one conjunction for {side}")
        for conjunctions in rules.values():
            for literals in conjunctions:
                if not literals:
                    raise ValueError("a rule's conjunction names at least one literal")
                for literal in literals:
                    parse_literal(literal)
        return rules


class Teller(Baseline):
    """Questions answered yes or no with a confidence, then rules over the answers."""

    name: ClassVar[str] = "teller"
    paper: ClassVar[str] = "Liu et al. 2024, TELLER (Findings of ACL): questions + DNF rules"
    # What stands in for the published method (see the module docstring and docs/baselines.md).
    substitute: ClassVar[str] = (
        "a written rule set in place of TELLER's learned DNF rule weights; a stated "
        "confidence in place of the probability of 'yes'"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)
    Config: ClassVar[type[BaselineConfig]] = TellerConfig
    config: TellerConfig

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Special questions, then the general ones the rules need, then the rules."""
        log = CallLog()
        message, context, publisher = self._message(subject)
        needed = atoms_of(self.config.rules)
        query = retrieval_query(subject) if isinstance(subject, Article) else subject.text
        # Given evidence is TELLER's open-book background; closed book there is none.
        background = await self.gather(query, subject, evidence, log)
        facts = await self._special(subject, message, context, publisher, needed, log)
        log.milestone(
            "teller.cognition",
            f"{len(facts['statements'])} statement(s) to check",
            statements=len(facts["statements"]),
            intent=bool(facts["intent"]),
            reputation=bool(facts["reputation"]),
        )
        asked = self._questions(needed, facts)
        material = {"message": message, "context": context, "background": background, **facts}
        answers: tuple[YesNo, ...] = await schedule.gather(
            *(
                ASK.arun(
                    self.model,
                    log=log,
                    material=_material(need, material, statement, self.config.max_chars),
                    question=QUESTIONS[atom].text,
                )
                for atom, need, statement in asked
            )
        )
        values = _values(asked, answers)
        decision = decide(values, self.config.rules, self.config.weight, self.config.delta)
        label = _label(decision, subject)
        log.milestone(
            "teller.decision",
            f"rules: {decision.scores['SUPPORTED']:.2f} true, "
            f"{decision.scores['REFUTED']:.2f} false: {label.value}",
            supported=round(decision.scores["SUPPORTED"], 4),
            refuted=round(decision.scores["REFUTED"], 4),
            label=label.value,
        )
        return Verdict(
            label=label,
            confidence=decision.confidence,
            explanation=_explanation(decision, asked, answers),
            evidence=tuple(background),
            usage=log.usage(),
            trace=log.trace(
                statements=facts["statements"],
                intent=facts["intent"],
                reputation=facts["reputation"],
                answers=[
                    {
                        "atom": atom,
                        "question": QUESTIONS[atom].text,
                        "statement": statement,
                        "answer": a.answer,
                        "confidence": a.confidence,
                        "truth": round(truth(a), 4),
                        "explanation": a.explanation,
                    }
                    for (atom, _, statement), a in zip(asked, answers, strict=True)
                ],
                values={k: round(v, 4) for k, v in values.items()},
                conjunctions=decision.conjunctions,
                scores={k: round(v, 4) for k, v in decision.scores.items()},
                rules=self.config.rules,
            ),
            method=self.name,
            subject=subject,
        )

    def _message(self, subject: Claim | Article) -> tuple[str, str, str]:
        """The message, its context lines, and the publisher asked about (may be empty)."""
        if isinstance(subject, Article):
            text = truncate_words(subject.text, self.config.max_article_words)
            host = urlparse(subject.url).netloc if subject.url else ""
            return text, article_context(subject).strip(), host
        return subject.text, claim_context(subject).strip(), (subject.speaker or "").strip()

    async def _special(
        self,
        subject: Claim | Article,
        message: str,
        context: str,
        publisher: str,
        needed: set[str],
        log: CallLog,
    ) -> dict[str, Any]:
        """Answer the special questions the needed atoms rest on, at once."""
        asks: dict[str, Awaitable[Any]] = {}
        if "P7" in needed:
            asks["statements"] = STATEMENTS.arun(
                self.model, log=log, message=message, context=context
            )
        if "P5" in needed:
            asks["intent"] = INTENT.arun(self.model, log=log, message=message, context=context)
        if "P6" in needed and publisher:
            asks["reputation"] = REPUTATION.arun(self.model, log=log, publisher=publisher)
        done = dict(zip(asks, await schedule.gather(*asks.values()), strict=True))
        statements: list[str] = []
        if "statements" in done:
            statements = [s.strip() for s in done["statements"].statements if s.strip()]
            statements = statements[: self.config.max_statements]
            # A claim is itself the statement to check when none is listed; an article
            # without statements leaves P7 unknown, as TELLER masks a missing atom.
            if not statements and isinstance(subject, Claim):
                statements = [subject.text]
        return {
            "statements": statements,
            "intent": done["intent"].intent.strip() if "intent" in done else "",
            "reputation": done["reputation"].reputation.strip() if "reputation" in done else "",
        }

    def _questions(
        self, needed: set[str], facts: dict[str, Any]
    ) -> list[tuple[str, tuple[str, ...], str | None]]:
        """(atom, parts shown, statement) for each question to ask, P1 to P8 in order."""
        asked: list[tuple[str, tuple[str, ...], str | None]] = []
        for atom, question in QUESTIONS.items():
            if atom not in needed:
                continue
            if atom == "P6" and not facts["reputation"]:
                continue  # no publisher to ask about: the atom stays unknown
            if atom == "P7":
                asked.extend((atom, question.needs, s) for s in facts["statements"])
            else:
                asked.append((atom, question.needs, None))
        return asked


def _material(
    needs: tuple[str, ...], parts: dict[str, Any], statement: str | None, max_chars: int
) -> Delimited:
    """The parts a question is asked about, each untrusted text in its own block."""
    lines: list[str] = []
    for need in needs:
        if need == "background":
            if parts["background"]:
                lines.append("Background information:\n" + numbered(parts["background"], max_chars))
        elif need == "message":
            lines.append("Message: " + data_block("message", parts["message"]))
            if parts["context"]:
                lines.append(data_block("context", parts["context"]))
        elif need == "statement" and statement:
            lines.append("Statement: " + data_block("statement", statement))
        elif need == "intent" and parts["intent"]:
            lines.append("Intent: " + data_block("intent", parts["intent"]))
        elif need == "reputation":
            lines.append("Publisher reputation: " + data_block("reputation", parts["reputation"]))
    # Only method-written labels join blocks already made inert, so the whole is data.
    return Delimited("\n".join(lines))


def _values(
    asked: Sequence[tuple[str, tuple[str, ...], str | None]], answers: Sequence[YesNo]
) -> dict[str, float]:
    """Each atom's truth value; P7 is the least true of its statements (all must hold)."""
    values: dict[str, float] = {}
    for (atom, _, _), answer in zip(asked, answers, strict=True):
        value = truth(answer)
        values[atom] = min(values[atom], value) if atom in values else value
    return values


def _label(decision: Decision, subject: Claim | Article) -> Label:
    if decision.label is None:
        return Label.NOT_ENOUGH_INFO
    if isinstance(subject, Article):
        return Label.REAL if decision.label == "SUPPORTED" else Label.FAKE
    return Label(decision.label)


def _explanation(
    decision: Decision,
    asked: Sequence[tuple[str, tuple[str, ...], str | None]],
    answers: Sequence[YesNo],
) -> str:
    """The strongest rule of the winning side, and the answers its atoms came from."""
    if decision.label is None:
        return "No rule decides: the two sides score the same."
    side = [c for c in decision.conjunctions if c["side"] == decision.label]
    best = max(side, key=lambda c: float(c["output"]))  # type: ignore[arg-type]
    literals = [str(lit) for lit in best["literals"]]  # type: ignore[attr-defined]
    atoms = {parse_literal(lit)[0] for lit in literals}
    said = [
        f"{atom} {QUESTIONS[atom].text} {a.answer} ({a.confidence:.2f}): {a.explanation}"
        for (atom, _, _), a in zip(asked, answers, strict=True)
        if atom in atoms
    ]
    rule = " and ".join(literals)
    return f"{decision.label} by the rule '{rule}' ({best['output']}). " + " ".join(said)
