"""The extractor's three model steps: selection, disambiguation, decomposition (Claimify).

Each step sees the same three parts the paper's prompts show (§3; Appendix N.1): the
question the text answers (for a document: its title, or a note that there is none), an
excerpt of the text around the sentence, and the sentence. The paper's prompts ask for a
free-text analysis ending in marked fields; verity asks for the same analysis as the first
field of a JSON answer, then the fields the paper's parser reads, so that every backend's
structured mode parses them the same way.

What each step asks is the paper's; the wording is verity's own.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from verity.llm.step import Step

# Claims one sentence may yield: the paper reports 3.31 per sentence on average (§4),
# so 12 leaves room for a long list sentence and bounds a runaway answer.
MAX_CLAIMS_PER_SENTENCE = 12

_CONTEXT_NOTE = (
    "The excerpt shows the sentence among its neighbours; '[...]' in it means part of "
    "the text is not shown. Headings ('#') above the sentence are part of the excerpt."
)


# No length bound on the strings: a grammar-constrained backend (llama.cpp) would unroll
# one rule per character. The output budget (ANSWER_TOKENS) bounds them instead.


class Selection(BaseModel):
    """Whether the sentence holds something a fact-checker can verify, and that part alone."""

    analysis: str
    verifiable: bool
    # The sentence cut to its verifiable content; "" when it is kept as it stands.
    rewritten: str = ""


class Disambiguation(BaseModel):
    """The sentence made readable on its own, or the word that it cannot be."""

    analysis: str
    resolvable: bool
    # The self-contained sentence (or sentences); "" when it cannot be made so.
    decontextualized: str = ""


class Decomposition(BaseModel):
    """The sentence's atomic claims, each understandable without the text around it."""

    analysis: str
    claims: list[str] = Field(default_factory=list, max_length=MAX_CLAIMS_PER_SENTENCE)


SELECT = Step(
    name="extract.select",
    instruction=(
        "You help fact-checkers decide which sentences of a text they can verify. You get "
        "the question the text answers (or its title), an excerpt of the text, and one "
        "sentence from it. Decide whether the sentence states at least one specific fact "
        "that could be checked as true or false. Whether the fact is true, whether it is "
        "relevant, and whether it cites a source do not matter. Opinions, advice, "
        "recommendations, speculation about what could happen, interpretations of other "
        "facts, statements that some information is missing, and broad generalities are "
        "not verifiable. Read the sentence with its neighbours: a pronoun whose referent "
        "the excerpt makes clear does not make it unverifiable; a sentence that only "
        "introduces points made after it, or only sums up points made before it, is not "
        "verifiable. If only part of the sentence is verifiable, give in 'rewritten' the "
        "sentence cut down to that part, with subjective framing removed; if all of it "
        "is, leave 'rewritten' empty. Think it through in 'analysis' first, then answer."
        f" {_CONTEXT_NOTE}"
    ),
    template="Question or title: {question}\n\nExcerpt:\n{excerpt}\n\nSentence: {sentence}",
    output=Selection,
)

DISAMBIGUATE = Step(
    name="extract.disambiguate",
    instruction=(
        "You make one sentence of a text understandable without the text around it, for "
        "fact-checkers who will see only that sentence. You get the question the text "
        "answers (or its title), the date the text was written when known, an excerpt, "
        "and the sentence. First, complete partial names and spell out acronyms and "
        "abbreviations where the question or excerpt says what they stand for; leave "
        "them as they are otherwise. Then look for ambiguity: referential ambiguity (it is "
        "unclear who or what a word such as 'he', 'they', 'the policy' or 'last year' "
        "points to) and structural ambiguity (the sentence can be parsed in more than one "
        "way, including whether a view is the writer's or someone else's). Vague or "
        "general wording is not ambiguity. Resolve each ambiguity only if readers shown "
        "the question, the date and the excerpt would agree on one reading; use the "
        "text's date for relative times such as 'last year'. If any ambiguity cannot be "
        "resolved that way, set 'resolvable' to false and leave 'decontextualized' "
        "empty. Otherwise set it to true and give the self-contained sentence (or a few "
        "sentences) in 'decontextualized'. Use only the question, the date and the "
        "excerpt, never your own knowledge, and add no citations. Think it through in "
        f"'analysis' first. {_CONTEXT_NOTE}"
    ),
    template=(
        "Question or title: {question}\n\nWritten on: {written}\n\nExcerpt:\n{excerpt}\n\n"
        "Sentence: {sentence}"
    ),
    output=Disambiguation,
    trusted=("written",),
)

DECOMPOSE = Step(
    name="extract.decompose",
    instruction=(
        "You split one sentence of a text into the specific, verifiable propositions it "
        "states, for fact-checkers who will each see one proposition alone. You get the "
        "question the text answers (or its title), an excerpt, and the sentence, already "
        "made as self-contained as the text allows. Give every proposition as the "
        "simplest discrete statement that can be checked as true or false. Each must be "
        "understandable on its own and mean the same alone as it does in the text: put "
        "context it needs from the question or the excerpt in square brackets, as in "
        "'The [Boston] council expects its law [banning plastic bags] to pass'. Keep who "
        "said or reported something ('X says that ...'). Leave out opinions and "
        "interpretations; draw out the verifiable fact inside a generic sentence. Use "
        "only the sentence, the question and the excerpt, never your own knowledge, and "
        "add no citations. If the sentence states nothing verifiable, give no "
        f"propositions. Think it through in 'analysis' first. {_CONTEXT_NOTE}"
    ),
    template="Question or title: {question}\n\nExcerpt:\n{excerpt}\n\nSentence: {sentence}",
    output=Decomposition,
)

StageName = Literal["select", "disambiguate", "decompose"]
