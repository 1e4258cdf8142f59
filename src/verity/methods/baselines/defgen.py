"""Baseline ``defgen``: F3's definition-grounded detector, DeF_Gen (Lucas et al. 2023).

    method = load_method("defgen", models=models)
    verdict = method.verify(Claim(text="The Eiffel Tower was sold for scrap in 2019."))
    verdict.trace.model_dump()["definition_source"]   # 'generic': F3's one cloze prompt
    load_method("defgen/generated", models=models)    # verity's two-call variant

Paper: J. Lucas, A. Uchendu, M. Yamashita, J. Lee, S. Rohatgi and D. Lee, "Fighting Fire
with Fire: The Dual Role of LLMs in Crafting and Detecting Elusive Disinformation", EMNLP
2023 (arXiv:2310.15515); code and data: https://github.com/mickeymst/F3.

F3 detects disinformation zero-shot with cloze-style prompts. Its DeF_Gen prompt
(``get_prompt("DeF_Gen")`` in the detection notebook, ``[F3] Code_base/
[F3]_Fighting_Fire_With_Fire.ipynb``) is one call: a classifier role, a fixed, generic
definition of genuine versus fake news (genuine: verifiable facts backed by evidence;
fake: misleading, inaccurate or invented content meant to deceive; judge by content,
tone, language and sources), then the text, and the label alone as the answer. That is
the default here (``definition="generic"``), in verity's words. ToE (§IV-A) calls the
prompt "deductive generation".

``defgen/generated`` (``definition="generated"``) is verity's own variant, not F3's: the
model first writes a definition fitted to the subject with the tests a genuine version
would pass, and a second call deduces the label from those tests. Nothing is retrieved;
given evidence is ignored (ToE: "solely on the provided input"). Claims get SUPPORTED,
REFUTED or NOT_ENOUGH_INFO; articles REAL or FAKE.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.llm.calllog import CallLog
from verity.llm.step import Step
from verity.methods.article import ArticleLabel
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.baselines.f3 import (
    ReasonedArticle,
    ReasonedClaim,
    reasoned_verdict,
    subject_inputs,
)
from verity.methods.common import ClaimLabel, Confidence

# F3's DeF_Gen definition (get_prompt("DeF_Gen"), F3 detection notebook), in verity's
# words: what makes a text genuine, what makes it fake, and what to weigh.
GENERIC_DEFINITION = (
    "A genuine text reports facts that can be checked and that evidence supports. A fake "
    "text carries misleading, inaccurate or invented content meant to deceive its "
    "readers. Weigh the content, the tone, the language and the sources it cites."
)

# Tests shown from a generated definition: a small model may list many, and each costs
# context in the deduction call.
MAX_TESTS = 8


class Definition(BaseModel):
    """A definition of disinformation fitted to the subject, and the tests it implies."""

    definition: str
    tests: list[str] = Field(default_factory=list)


DEFINE_NOTE = (
    "Do not judge it yet: write a short definition of what disinformation of this kind "
    "looks like (invented facts, wrong figures, false attribution, missing context and "
    "the like), then list the concrete tests a genuine version would pass."
)

DEFINE = Step(
    name="defgen.define",
    instruction="A fact-checker will examine the claim below. " + DEFINE_NOTE,
    template="Claim: {claim}{context}",
    output=Definition,
)

DEFINE_ARTICLE = Step(
    name="defgen.define_article",
    instruction="A fact-checker will examine the news article below. " + DEFINE_NOTE,
    template="{context}Article text: {text}",
    output=Definition,
)

DEDUCE = Step(
    name="defgen.deduce",
    instruction=(
        "Judge the claim by deduction from the definition of disinformation given: take "
        "each test in turn, say whether the claim passes it, and conclude from those "
        "results only. Write this in 'reasoning'. Then fill the blank with SUPPORTED if "
        "the claim passes the tests and is true, REFUTED if it fails them, or "
        "NOT_ENOUGH_INFO if the tests cannot be settled; give your confidence between 0 "
        "and 1."
    ),
    template=(
        "Definition: {definition}\nTests:\n{tests}\n\nClaim: {claim}{context}\n\n"
        "By deduction from the definition, the claim is ____."
    ),
    output=ReasonedClaim,
)

DEDUCE_ARTICLE = Step(
    name="defgen.deduce_article",
    instruction=(
        "Judge the news article by deduction from the definition of disinformation "
        "given: take each test in turn, say whether the article passes it, and conclude "
        "from those results only. Write this in 'reasoning'. Then fill the blank with "
        "REAL if the article passes the tests or FAKE if it fails them; give your "
        "confidence between 0 and 1."
    ),
    template=(
        "Definition: {definition}\nTests:\n{tests}\n\n{context}Article text: {text}\n\n"
        "By deduction from the definition, the article is ____."
    ),
    output=ReasonedArticle,
)


class Labelled(BaseModel):
    """F3's DeF_Gen answer for a claim: the label alone (with verity's confidence)."""

    label: ClaimLabel
    confidence: Confidence


class LabelledArticle(BaseModel):
    """F3's DeF_Gen answer for an article: REAL or FAKE (with verity's confidence)."""

    label: ArticleLabel
    confidence: Confidence


# F3's DeF_Gen (get_prompt): a classifier role, the fixed definition, an order to judge
# the text's authenticity, the label alone as the answer; the blank is F3's cloze slot.
CLASSIFY = Step(
    name="defgen.classify",
    instruction=(
        "You are a language model that sorts news claims, posts and articles into "
        "genuine and fake. Decide by this definition. "
        + GENERIC_DEFINITION
        + " Judge the claim's authenticity and fill the blank with SUPPORTED if it is "
        "genuine, REFUTED if it is fake, or NOT_ENOUGH_INFO if you cannot tell. Answer "
        "with the label only, and your confidence between 0 and 1."
    ),
    template="Claim: {claim}{context}\n\nThe claim is ____.",
    output=Labelled,
)

CLASSIFY_ARTICLE = Step(
    name="defgen.classify_article",
    instruction=(
        "You are a language model that sorts news claims, posts and articles into "
        "genuine and fake. Decide by this definition. "
        + GENERIC_DEFINITION
        + " Judge the article's authenticity and fill the blank with REAL if it is "
        "genuine or FAKE if it is fake. Answer with the label only, and your confidence "
        "between 0 and 1."
    ),
    template="{context}Article text: {text}\n\nThe article is ____.",
    output=LabelledArticle,
)


class DefGenConfig(BaselineConfig):
    """Settings of ``defgen``."""

    definition: Literal["generic", "generated"] = Field(
        default="generic",
        description="'generic': F3's DeF_Gen, one call with a fixed definition (the "
        "paper); 'generated': verity's variant, the model writes a definition fitted to "
        "the subject first, then deduces from it (two calls)",
    )


class DefGen(Baseline):
    """F3's DeF_Gen: one cloze prompt with a fixed definition of genuine and fake news."""

    name: ClassVar[str] = "defgen"
    paper: ClassVar[str] = (
        "Lucas et al. 2023, Fighting Fire with Fire (EMNLP): DeF_Gen, definition-grounded"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)
    Config: ClassVar[type[BaselineConfig]] = DefGenConfig
    variants: ClassVar[dict[str, dict[str, Any]]] = {"generated": {"definition": "generated"}}
    config: DefGenConfig

    def variant_kind(self) -> str:
        """``"paper"`` for F3's DeF_Gen; the two-call pipeline is verity's own variant."""
        if self.config.definition == "generated":
            return "verity variant: the model writes its own definition first (two calls)"
        return "paper"

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Classify by the fixed definition (or define, then deduce); evidence is ignored."""
        log = CallLog()
        kind, inputs = subject_inputs(subject, self.config.max_article_words)
        if self.config.definition == "generic":
            return await self._classify(subject, kind, inputs, log)
        define = DEFINE_ARTICLE if kind == "article" else DEFINE
        found = await define.arun(self.model, log=log, **inputs)
        tests = [t.strip() for t in found.tests if t.strip()][:MAX_TESTS]
        log.milestone(
            "defgen.definition",
            f"generated definition with {len(tests)} test(s)",
            source="generated",
            tests=len(tests),
        )
        deduce = DEDUCE_ARTICLE if kind == "article" else DEDUCE
        shown = "\n".join(f"{i}. {t}" for i, t in enumerate(tests, start=1)) or "(none given)"
        answer = await deduce.arun(
            self.model, log=log, definition=found.definition, tests=shown, **inputs
        )
        log.milestone("defgen.answer", f"deduced: {answer.label}", label=answer.label)
        return reasoned_verdict(
            self.name,
            subject,
            answer,
            log,
            definition=found.definition,
            tests=tests,
            definition_source="generated",
        )

    async def _classify(
        self, subject: Claim | Article, kind: str, inputs: dict[str, Any], log: CallLog
    ) -> Verdict:
        """F3's one call: the fixed definition, the subject, the label."""
        step = CLASSIFY_ARTICLE if kind == "article" else CLASSIFY
        answer = await step.arun(self.model, log=log, **inputs)
        log.milestone("defgen.answer", f"classified: {answer.label}", label=answer.label)
        return Verdict(
            label=Label(answer.label),
            confidence=answer.confidence,
            usage=log.usage(),
            trace=log.trace(definition=GENERIC_DEFINITION, definition_source="generic"),
            method=self.name,
            subject=subject,
        )
