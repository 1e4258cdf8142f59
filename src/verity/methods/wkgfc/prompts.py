"""WKGFC's LLM steps (paper section 4): relation ranking, entity pruning, the policy, verdict.

The policy's instruction is the text that self-reflective optimisation rewrites (section
4.4); everything else is fixed. A step's output bounds (how many items it may choose) are
enforced by the caller, not by the schema: a llama.cpp grammar with array bounds grows
large, and a model that picks too many only has the extra dropped. The policy's output
is the exception that proves the rule: which actions and entities it may name changes
at every step, so `verity.methods.wkgfc.agent` builds its schema per step.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from verity.llm.step import Step
from verity.methods.common import Confidence

POLICY = (
    "You are a fact-checking agent that gathers evidence for a claim, first from the "
    "Wikidata knowledge graph and, when the graph falls short, from the web. At each step "
    "choose one action: expandKG to follow the graph one hop further from entities you "
    "name (or from where the last hop ended); webSearch with a short query when the "
    "graph lacks a fact the claim needs; verdict when the evidence settles the claim "
    "either way. Prefer the graph: its facts are precise. Do not search for what the "
    "facts already show, and do not give a verdict while a fact the claim depends on "
    "is still missing."
)


class RelationChoice(BaseModel):
    """Relations chosen by number, most relevant first."""

    reasoning: str
    chosen: list[int]


class FactChoice(BaseModel):
    """Facts (each reaching one entity) chosen by number, most useful first."""

    reasoning: str
    chosen: list[int]


class PassageChoice(BaseModel):
    """Web passages kept by the fine filter, each with its consistency confidence."""

    kept: list[int]
    confidence: list[Confidence]


class KGVerdict(BaseModel):
    """The verdict, citing facts as [T<n>] and passages as [W<n>]."""

    justification: str
    label: Literal["SUPPORTED", "REFUTED"]
    confidence: Confidence
    cited_facts: list[int]
    cited_passages: list[int]


RANK_RELATIONS = Step(
    name="wkgfc.rank_relations",
    instruction=(
        "You help verify a claim with a knowledge graph. From the numbered relations "
        "found around the entities reached so far, choose the ones whose facts would help "
        "decide the claim, most relevant first."
    ),
    template=(
        "Claim: {claim}\n\nEntities reached: {entities}\n\nRelations (direction, count):\n"
        "{relations}\n\nChoose at most {k} relations by number."
    ),
    output=RelationChoice,
)

PRUNE_FACTS = Step(
    name="wkgfc.prune_entities",
    instruction=(
        "You help verify a claim with a knowledge graph. Each numbered fact of one relation "
        "leads to an entity. Choose the facts whose entities are most worth following to "
        "decide the claim, most useful first."
    ),
    template="Claim: {claim}\n\nFacts:\n{facts}\n\nChoose at most {k} facts by number.",
    output=FactChoice,
)

ACT = Step(
    name="wkgfc.act",
    instruction=POLICY,
    template=(
        "Claim: {claim}\n\nKnowledge-graph facts:\n{facts}\n\nWeb evidence:\n{web}\n\n"
        "Steps so far:\n{history}\n\nSteps left: {left}. Graph hops left: {hops_left}. "
        "Actions available: {actions}.\nEntities you may expand: {entities}\n"
        "Give your reasoning, then the action (the entities to expand for expandKG, or "
        "the query for webSearch)."
    ),
    output=BaseModel,  # replaced per step by the legal actions (agent.action_model)
    trusted=("actions",),
)

FILTER_PASSAGES = Step(
    name="wkgfc.filter_passages",
    instruction=(
        "You filter web passages for a fact-checker who already holds some knowledge-graph "
        "facts. Keep only passages that state facts relevant to the claim (whether they "
        "support or contradict it) and that are consistent with the claim's subject as "
        "the graph describes it; give each kept passage a confidence between 0 and 1 that "
        "it is factually consistent."
    ),
    template=(
        "Claim: {claim}\n\nKnowledge-graph facts:\n{facts}\n\nPassages:\n{passages}\n\n"
        "List the kept passage numbers and a confidence for each."
    ),
    output=PassageChoice,
)

# Open world (sections 1 and 2.2): the graph is incomplete, so a fact it lacks is no
# evidence against the claim. The paper's binary protocol (5.1) is how the datasets'
# labels were merged (partly correct or ambiguous cases became Refuted); it sets no rule
# that evidence which is merely incomplete refutes. Both verdict prompts share this rule.
OPEN_WORLD = (
    "The graph is incomplete, so a fact it does not hold is not by itself evidence "
    "against the claim. Graph facts are precise; web passages may be wrong, so weigh "
    "them and say so when they disagree with the graph."
)

# The label space of both verdicts is section 3's: Supported or Refuted.
VERDICT = Step(
    name="wkgfc.verdict",
    instruction=(
        "You are a professional fact-checker. Decide whether the claim is SUPPORTED or "
        "REFUTED on the balance of the evidence: knowledge-graph facts [T<n>] and web "
        f"passages [W<n>]. {OPEN_WORLD} Justify citing facts and passages by number."
    ),
    template="Claim: {claim}\n\nKnowledge-graph facts:\n{facts}\n\nWeb evidence:\n{web}",
    output=KGVerdict,
)

# Section 5.7: when the agent has used every step without deciding, a prompt of its own
# makes it decide "based on the existing evidence". It differs from VERDICT only in
# saying that no more evidence will come: the labels and the open-world rule are the
# same, so running out of steps does not tilt a claim towards either label.
FORCED_VERDICT = Step(
    name="wkgfc.forced_verdict",
    instruction=(
        "You are a professional fact-checker. The evidence search for this claim has used "
        "all its steps and no more evidence will come: decide now, from the evidence as it "
        "stands (knowledge-graph facts [T<n>] and web passages [W<n>]), whether the claim "
        f"is SUPPORTED or REFUTED on the balance of that evidence. {OPEN_WORLD} Justify "
        "citing facts and passages by number."
    ),
    template="Claim: {claim}\n\nKnowledge-graph facts:\n{facts}\n\nWeb evidence:\n{web}",
    output=KGVerdict,
)

Mode = Literal["full", "kg-only", "web-only", "kg-agent", "kg-web"]
