"""ToE's model calls as declared steps: analyse, query, clean, assess, judge, decompose.

Sections refer to the ToE paper (Wang et al.). The paper prints no prompt; each
instruction asks what its section describes, in verity's words. No output field has a
length limit (the embedded backend turns the schema into a grammar, see
`verity.methods.common`); the callers cap what they keep.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, Field

from verity.llm.step import Step
from verity.methods.common import Confidence
from verity.methods.toe.features import Category, Locale, StanceName

# §III-D's verification dimensions; a decomposition uses each at most once.
Dimension = Literal[
    "geographic accuracy",
    "entity identity",
    "core event",
    "causal relationship",
    "source credibility",
    "quantitative accuracy",
    "contextual background",
]
DIMENSIONS: tuple[str, ...] = get_args(Dimension)


class NodeAnalysis(BaseModel):
    """§III-B's claim features and §III's three queries for one node."""

    category: Category
    locale: Locale
    recent_event: bool
    historical_fact: bool
    factual_statement: bool
    opinion: bool
    prediction: bool
    background_query: str
    supporting_query: str
    counter_query: str


ANALYZE = Step(
    name="toe.analyze",
    instruction=(
        "You prepare a statement for fact-checking. Classify it: its topic category "
        "(political, scientific, health, historical, celebrity or other), its geographic "
        "scope (local, national or international), and whether it is about a recent event, "
        "a historical fact, a checkable factual statement, an opinion, a prediction. Then "
        "write three short web search queries: one for background on its subject, one "
        "that would find evidence supporting it, one that would find evidence against it. "
        "Answer with JSON only."
    ),
    template="Statement: {claim}",
    output=NodeAnalysis,
)


class Query(BaseModel):
    """One search query written for a tool."""

    query: str


QUERY = Step(
    name="toe.query",
    instruction=(
        "You write one short search query for the named tool, suited to what that tool "
        "holds, to gather evidence about a statement. For the counter-evidence tool, look "
        "for evidence that the statement is wrong. Do not repeat a query already used. "
        "Answer with JSON only."
    ),
    template="Tool: {tool}\nStatement: {claim}\nQueries used so far: {used}",
    output=Query,
    trusted=("tool",),
)


class Cleaned(BaseModel):
    """The statements of a text chunk that bear on the claim."""

    statements: list[str] = Field(default_factory=list)


CLEAN = Step(
    name="toe.clean",
    instruction=(
        "You read one part of a document found while checking a statement. Copy out the "
        "sentences or facts in it that bear on the statement, each as a short self-contained "
        "statement; leave out everything else. An empty list is fine. Answer with JSON only."
    ),
    template="Statement to check: {claim}\n\nDocument part:\n{chunk}",
    output=Cleaned,
)


class Assessment(BaseModel):
    """§III-C's analysis of one document: stance and quality attributes."""

    explanation: str
    stance: StanceName
    authoritative: bool
    primary: bool
    relevance: Confidence
    credibility: Confidence


ASSESS = Step(
    name="toe.assess",
    instruction=(
        "You assess one document as evidence about a statement. Say briefly why, then "
        "give: its stance (support, refute or neutral toward the statement); whether it "
        "comes from an official or authoritative source; whether it is a primary report "
        "(true) or a republication of someone else's report (false); how relevant it is "
        "to the statement (0 to 1); how credible its source is (0 to 1). Answer with JSON "
        "only."
    ),
    template="Statement: {claim}\n\nDocument:\n{document}",
    output=Assessment,
)


class Judgement(BaseModel):
    """The judge's soft scores for a node (§III-C's training targets)."""

    explanation: str
    veracity: Confidence
    reliability: Confidence


JUDGE = Step(
    name="toe.judge",
    instruction=(
        "You score how well a set of assessed evidence settles a statement. Weigh how "
        "strongly the evidence supports or refutes it, how authoritative the sources are, "
        "how much evidence there is, whether different sources agree, and how directly "
        "the evidence speaks to the statement. Give veracity, the probability that the "
        "statement is true (0 to 1), and reliability, how far that score can be trusted "
        "given the evidence (0 to 1; low when evidence is thin or conflicting). Answer "
        "with JSON only."
    ),
    template="Statement: {claim}\n\nEvidence:\n{evidence}",
    output=Judgement,
)


class SubClaim(BaseModel):
    """One sub-claim with its verification dimension and importance."""

    text: str
    dimension: Dimension
    weight: Confidence


class Decomposition(BaseModel):
    """§III-D: two to four sub-claims on distinct dimensions."""

    subclaims: list[SubClaim]


DECOMPOSE = Step(
    name="toe.decompose",
    instruction=(
        "You split a statement that could not be settled into two to four simpler "
        "sub-claims that can each be checked on their own. Each sub-claim examines a "
        "different dimension, one of: geographic accuracy, entity identity, core event, "
        "causal relationship, source credibility, quantitative accuracy, contextual "
        "background. Give each an importance weight; the weights should sum to 1. Answer "
        "with JSON only."
    ),
    template="Statement: {claim}\n\nWhat the evidence so far says:\n{evidence}",
    output=Decomposition,
)
