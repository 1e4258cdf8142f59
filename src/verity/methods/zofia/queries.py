"""The query-construction variants the paper compares with SC-MMR (Table 3).

- ``tfidf``: the article's top terms by TF-IDF, the sentences of the article taken as
  the documents (no outside corpus, so the variant needs nothing the method does not).
- ``llm-ner``: entities listed by the model instead of spaCy and SC-MMR.
- ``sentence``: the single most salient sentence, the one closest to the whole text.
- ``core-claim``: the core claim from claim extraction.

The last two are whole sentences, sent to the web as they are.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel

from verity.llm.step import Step
from verity.methods.zofia.agents import PANEL
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
    """Index of the first sentence naming ``term`` (ignoring case), else 0."""
    needle = term.casefold()
    for i, sentence in enumerate(sentences):
        if needle in sentence.casefold():
            return i
    return 0
