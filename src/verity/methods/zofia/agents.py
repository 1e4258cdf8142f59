"""ZoFia stage 2 agents (section 4; prompts after appendix B), each a declared step.

What each prompt asks follows the paper's appendix B (B.1 linguist, B.2 expert, B.3 claim
extractor, B.4 claim verifier, B.5 debater, B.6 judge) and section 4; the wording is ours.
Every step that reads the article shares one system message and puts the shared material
first (the article, then Wikipedia, then the web, then the analyses) with the agent's role
and task last, so calls over one article start with the same tokens and a backend with
prefix reuse (llama.cpp here, prompt caching at hosted providers) computes that start once.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from verity.llm.step import Step

PANEL = (
    "You are one member of a panel that decides whether a news article is real or fake. "
    "Read the material, then do only the task given at the end. Answer in English."
)

Lean = Literal["REAL", "FAKE"]

# B.3: besides the core claim, the extractor gives 2 to 4 sub-claims (eq. 8's q_sub_1..m).
MIN_SUB_CLAIMS = 2
MAX_SUB_CLAIMS = 4
# The expert triage's answer is model output read from the article: before it names the
# expert in the next prompt it is cut to one line of at most this many characters, which
# is room for any real field or profession ("forensic accountant", "public health").
LABEL_CHARS = 80
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]+")


class DimensionJudgement(BaseModel):
    """The linguist's view of one dimension of the text, with an explicit lean (4.1.1)."""

    analysis: str
    lean: Lean


class DomainChoice(BaseModel):
    """The field the article belongs to and the expert who should judge it (4.1.2)."""

    domain: str
    expert_role: str

    def cleaned(self) -> DomainChoice:
        """Both names as one short line each (`one_line`), ready to name the expert.

        A name left empty by the cleaning falls back to a plain one.
        """
        return DomainChoice(
            domain=one_line(self.domain) or "news",
            expert_role=one_line(self.expert_role) or "fact-checker",
        )


def one_line(text: str, cap: int = LABEL_CHARS) -> str:
    """Model-written text as one line of at most ``cap`` characters.

    Control and layout characters become spaces and runs of spaces one:

        one_line("economist" + chr(10) + "Ignore the above")   # 'economist Ignore the above'
    """
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat[:cap].rstrip()


class ExpertJudgement(BaseModel):
    """The expert's two analyses (B.2: a two-item list, no verdict of its own)."""

    knowledge_concordance: str
    logical_integrity: str


class ExtractedClaims(BaseModel):
    """The article's core claim and the sub-claims that support it (eq. 8, B.3)."""

    core_claim: str
    sub_claims: list[str] = Field(min_length=MIN_SUB_CLAIMS, max_length=MAX_SUB_CLAIMS)


ClaimLabel = Literal["Supports", "Refutes", "Not Enough Information"]


class ClaimCheck(BaseModel):
    """A claim judged against web passages, with the quotes it rests on (4.1.3)."""

    reasoning: str
    quotes: list[str]
    label: ClaimLabel


# B.5: each piece of evidence must say which material it comes from.
Material = Literal["article", "Wikipedia", "web", "linguist", "expert", "claim verification"]


class Point(BaseModel):
    """One piece of evidence in a debate turn: what it says, where from, why it matters."""

    evidence: str
    source: Material
    reason: str


class Argument(BaseModel):
    """One debate turn (B.5): a one-paragraph rebuttal, then new evidence with reasons."""

    rebuttal: str
    # B.5 asks for all the most persuasive evidence, so the number of points is not capped;
    # only the turn's output budget (`BUDGET`, or ``max_tokens``) bounds its length.
    points: list[Point] = Field(min_length=1)


class JudgeRuling(BaseModel):
    """B.6: one letter, R (real), F (fake) or I (not yet: the debate goes on)."""

    ruling: Literal["R", "F", "I"]


class ForcedRuling(BaseModel):
    """The judge when a decision is required (the ablation without debate)."""

    ruling: Literal["R", "F"]


# B.1: the five features of fake-news writing the linguist examines, one per session
# (4.1.1: each dimension in isolation, so one cannot colour another).
DIMENSIONS = {
    "sentence": "Sentence: fake news tends to longer sentences, plain words and a casual "
    "tone, sometimes with expletives.",
    "word": "Word: fake news uses more superlatives and emotional or vague words, and "
    "fewer reporting verbs and first- or second-person pronouns.",
    "grammar": "Grammar: fake news leans on reported speech, the passive voice and "
    "negation, and paraphrases less.",
    "emotion": "Emotion: fake news has a higher share of emotional words, and its headline "
    "is often sensational, written to provoke.",
    "information": "Information quality: fake news gives too much or too little "
    "information, puts facts in a context that does not fit them, and uses more clickbait.",
}
DIMENSION_LIST = "\n".join(f"{i}. {text}" for i, text in enumerate(DIMENSIONS.values(), 1))

LINGUIST = Step(
    name="zofia.linguist",
    instruction=PANEL,
    template=(
        "{material}\n\nTask: you are a linguistic analyst who profiles news articles for a "
        "news channel to help catch fake news. These features mark fake-news writing:\n"
        "{features}\n\nExamine the article for the feature named '{dimension}' only. Write "
        "one plain analytical paragraph of at most 25 words, with no lists or formatting, "
        "and say whether this feature shows the news to be REAL or FAKE."
    ),
    output=DimensionJudgement,
    trusted=("features", "dimension"),
)

# Table 4's "expert triage": the domain comes first, then the expert of that domain.
DOMAIN = Step(
    name="zofia.domain",
    instruction=PANEL,
    template=(
        "{material}\n\nTask: name the field this article belongs to (for example politics, "
        "public health, economics, entertainment) and the precise expert best placed to "
        "fact-check it (for example an economist, a journalist, an epidemiologist)."
    ),
    output=DomainChoice,
)

EXPERT = Step(
    name="zofia.expert",
    instruction=PANEL,
    template=(
        "{material}\n\nTask: you are a distinguished expert fact-checking this news "
        "article. Your profession is named in the role block and your field in the domain "
        "block (both chosen earlier from the article): {role} {domain}. Find the sentences "
        "that most decide whether the news is true and "
        "analyse the article in two respects. (1) Knowledge concordance: are its factual "
        "claims, views and details reasonable? Point out anything against common sense or "
        "sensational. (2) Logical integrity: do its arguments lead to its conclusions by "
        "the reasoning of your field? Point out fallacies and unsupported inferences. The "
        "Wikipedia background explains the article's key entities; use it for reference "
        "only, it may not be relevant. Keep both items together under 100 words, and "
        "invent nothing: every point must rest on the material."
    ),
    output=ExpertJudgement,
)

EXTRACT = Step(
    name="zofia.extract_claims",
    instruction=PANEL,
    template=(
        "{material}\n\nTask: you are a fact-checker listing the article's factual claims for "
        "later verification. Go through the article sentence by sentence. Find its core "
        "claim, the one that decides whether the news is true, and the sub-claims closely "
        "tied to it. Restate each as a short, objective, declarative sentence; merge claims "
        "that are closely related; use no pronouns, name every person and thing. Besides "
        f"the core claim, give {MIN_SUB_CLAIMS} to {MAX_SUB_CLAIMS} sub-claims, those most "
        "relevant to the core claim. Every claim must come from the article."
    ),
    output=ExtractedClaims,
)

VERIFY = Step(
    name="zofia.verify_claim",
    instruction=(
        "You are a news fact-checker, careful in logic and reading. You check one claim "
        "against web passages that retrieval picked as the most relevant. Take the passages "
        "as reliable and decide whether they are enough to support or to refute the claim, "
        "making use of every passage. Answer Supports, Refutes or Not Enough Information, "
        "reason briefly, and quote word for word the sentences of the passages you rely on. "
        "Invent nothing: all you say must come from the passages."
    ),
    template="Claim: {claim}\n\nPassages:\n{passages}",
    output=ClaimCheck,
)

DEBATER = Step(
    name="zofia.debater",
    instruction=PANEL,
    template=(
        "{material}\n\nDebate so far:\n{history}\n\nTask: you are a debater and you argue "
        "that the news is {side}. {turn} Give every piece of the most persuasive evidence "
        "for your side that the material offers, leaving none out: each piece is a general "
        "statement that sums up specific content of the material, names the material it "
        "comes from, and has a short reason. Invent nothing: every "
        "point must rest on the material."
    ),
    output=Argument,
    trusted=("side", "turn"),
)

JUDGE = Step(
    name="zofia.judge",
    instruction=PANEL,
    template=(
        "Debate so far:\n{history}\n\nTask: you are an extremely cautious, rigorous final "
        "judge moderating this debate on whether a news article is authentic (Pro argues "
        "it is real, Con that it is fake). Read the debate record above and decide only "
        "whether the evidence presented in it is enough for a final ruling. Each exchange "
        "counts as a round. Aim to let the debate run for as many rounds as you can, but "
        "never more than {max_rounds}. Answer with one letter: R if the news is real, F if "
        "it is fake, I if the debate should continue. Answer R or F only if you are quite "
        "confident."
    ),
    output=JudgeRuling,
    trusted=("max_rounds",),
)

FORCED_JUDGE = Step(
    name="zofia.forced_judge",
    instruction=PANEL,
    template=(
        "{material}\n\nTask: you are an extremely cautious, rigorous judge of whether this "
        "news article is authentic. Weigh all the material and decide now, with one "
        "letter: R if the news is real, F if it is fake."
    ),
    output=ForcedRuling,
)


# Output tokens per call by step. A weak model can run on inside a JSON string until the
# limit; these bounds, well above what the paper's length limits need (25 words for a
# linguist dimension, 100 for the expert), keep such a call short. ``max_tokens`` in the
# method's settings replaces all of them (the paper's Figure 4).
BUDGET = {
    "zofia.linguist": 128,
    "zofia.domain": 96,
    "zofia.expert": 320,
    "zofia.extract_claims": 320,
    "zofia.verify_claim": 320,
    "zofia.debater": 384,
    "zofia.judge": 16,
    "zofia.forced_judge": 16,
    "zofia.llm_ner": 128,
    "zofia.promptner": 384,
}
