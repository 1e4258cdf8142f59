"""Near copies among a document's claims merged into one, so each fact is checked once.

    groups = merge_claims(["Paris is in France.", "Paris is located in France."], encoder)
    # [[0, 1]]: one claim, said in two places

A text often says one thing twice (a lead and its body, a summary at the end). Claimify
extracts per sentence and leaves repeats (its paper counts claims after removing them);
verity merges them before checking, keeping every place the claim was made.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from verity.nlp.embed import Encoder

# Cosine of the encoder's vectors (all-MiniLM-L6-v2) at or above which two claims are one.
# Measured with it: rewordings of one fact scored 0.88-0.99 ("X is in Y" / "X is located
# in Y" 0.958, "finished" / "completed" 0.979, a moved clause 0.991, "employs 5,000" /
# "has 5,000 employees" 0.880); different facts about one subject up to 0.857 ("Paris
# is in France" / "Paris is the capital of France"), and 0.890 when only a number
# differed (which `_numbers` keeps apart anyway). The threshold sits above every
# different pair: checking a fact twice costs less than losing one.
SAME_CLAIM = 0.93


def merge_claims(
    claims: Sequence[str], encoder: Encoder | None, threshold: float = SAME_CLAIM
) -> list[list[int]]:
    """Groups of claim indices, each group one claim, in order of first appearance.

    A claim joins the first earlier group whose first claim it matches: the same words
    (case and spacing aside), or, with an encoder, a cosine of at least ``threshold``.
    A claim whose numbers differ from the group's is never merged by the encoder: "grew
    4%" and "grew 5%" are near in meaning and different facts.
    """
    groups: list[list[int]] = []
    keys = [" ".join(c.casefold().split()) for c in claims]
    vectors = encoder.encode(list(claims)) if encoder is not None and claims else None
    for i, key in enumerate(keys):
        home = None
        for group in groups:
            head = group[0]
            if keys[head] == key:
                home = group
                break
            if (
                vectors is not None
                and _numbers(claims[head]) == _numbers(claims[i])
                and float(np.dot(vectors[head], vectors[i])) >= threshold
            ):
                home = group
                break
        if home is None:
            groups.append([i])
        else:
            home.append(i)
    return groups


def _numbers(text: str) -> list[str]:
    return re.findall(r"\d+(?:[.,]\d+)*", text)
