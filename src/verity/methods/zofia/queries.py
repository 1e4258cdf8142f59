"""The query-construction variants the paper compares with SC-MMR (Table 3).

- ``tfidf``: the article's top terms by TF-IDF, the sentences of the article taken as
  the documents (no outside corpus, so the variant needs nothing the method does not).
- ``llm-ner``: entities listed by the model instead of spaCy and SC-MMR.
- ``promptner``: PromptNER (Ashok and Lipton 2023) in place of the NER model only: the
  model is given definitions of the entity types, lists candidate phrases and says of
  each whether it is an entity and why; the phrases it accepts then go through
  hierarchical saliency and SC-MMR like the NER's units. The paper (5.4) says only that
  these variants "replace the entity acquisition mechanism"; PromptNER is an NER method,
  so it replaces the NER step, while ``llm-ner`` replaces the whole selection.
- ``sentence``: the single most salient sentence, the one closest to the whole text.
- ``core-claim``: the core claim from claim extraction.

The last two are whole sentences, sent to the web as they are.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from verity.llm.step import Step
from verity.methods.zofia.agents import PANEL
from verity.methods.zofia.names import find_name
from verity.nlp.embed import Encoder

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


class EntityList(BaseModel):
    """Key entities named by the model."""

    entities: list[str]


LLM_NER = Step(
    name="zofia.llm_ner",
    instruction=PANEL,
    template=(
        "{material}\n\nTask: list at most {n} named entities (people, organisations, "
        "places, events, laws) that are most central to this article, most important first, "
        "each exactly as written in the article."
    ),
    output=EntityList,
)


class Candidate(BaseModel):
    """A phrase PromptNER considered, its decision and the reason for it."""

    phrase: str
    is_entity: bool
    reason: str
    type: Literal["person", "organisation", "location", "miscellaneous", "none"]


class PromptNerAnswer(BaseModel):
    """PromptNER's answer: every candidate phrase with a decision."""

    candidates: list[Candidate] = Field(max_length=20)


# PromptNER's recipe: definitions of the entity types first, then candidates, each with
# a true/false decision and an explanation. The types are the CoNLL-2003 ones the paper's
# NER model knows (section 3.1).
PROMPT_NER = Step(
    name="zofia.promptner",
    instruction=PANEL,
    template=(
        "{material}\n\nTask: find the named entities of the article. A named entity is a "
        "proper name of a person, an organisation (company, agency, party, team), a "
        "location (country, city, region, landmark) or another specific named thing "
        "(event, nationality, work, law, product). Dates, times, amounts, numbers and "
        "common nouns are not named entities. List up to 20 candidate phrases exactly as "
        "written in the article, the most central first; for each, say whether it is a "
        "named entity by this definition, why, and its type."
    ),
    output=PromptNerAnswer,
)


def accepted_names(answer: PromptNerAnswer) -> list[str]:
    """The phrases PromptNER accepted as entities, first mention first, without repeats."""
    names = (c.phrase.strip() for c in answer.candidates if c.is_entity and c.type != "none")
    return list(dict.fromkeys(n for n in names if n))


def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def tfidf_keywords(sentences: Sequence[str], n: int) -> list[str]:
    """The ``n`` terms with the highest tf x idf, sentences as documents.

    tf is the term's count in the whole article, idf = ln((1 + N) / (1 + df)) + 1 over the
    N sentences (the smoothed form scikit-learn uses). Ties go to the term seen first.
    """
    stop = _stop_words()
    docs = [[w.lower() for w in _WORD.findall(s) if w.lower() not in stop] for s in sentences]
    tf: Counter[str] = Counter(w for doc in docs for w in doc)
    df: Counter[str] = Counter(w for doc in docs for w in set(doc))
    first: dict[str, int] = {}
    for w in (w for doc in docs for w in doc):
        first.setdefault(w, len(first))
    total = len(docs)

    def score(term: str) -> float:
        return tf[term] * (math.log((1 + total) / (1 + df[term])) + 1)

    return sorted(tf, key=lambda t: (-score(t), first[t]))[:n]


def salient_sentence(sentences: Sequence[str], encoder: Encoder) -> int:
    """Index of the sentence closest to the whole text (the first of equals)."""
    vectors = encoder.encode([*sentences, " ".join(sentences)])
    sims = vectors[:-1] @ vectors[-1]
    return int(max(range(len(sentences)), key=lambda i: (sims[i], -i)))


def sentence_of(term: str, sentences: Sequence[str]) -> int:
    """Index of the first sentence naming ``term`` as whole words (ignoring case), else 0."""
    for i, sentence in enumerate(sentences):
        if find_name(sentence, term) is not None:
            return i
    return 0
