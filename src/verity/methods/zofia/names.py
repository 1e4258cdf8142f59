"""Names in text: where a keyword is mentioned, and which of its senses fits (eq. 7).

    find_name("Made in the US.", "us").group()      # 'US'
    disambiguate(context, "Apple", ["American technology company", "a fruit"], encoder)

A name is matched as whole words, ignoring case: "US" is a mention in "the US voted" and
none in "because". Stage 1 (PromptNER's names), the web filter (eq. 6) and the choice of a
Wikipedia sense (eq. 7) all find mentions this way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from verity.errors import BadInputError
from verity.nlp.embed import Encoder


def find_name(text: str, name: str) -> re.Match[str] | None:
    """The first mention of ``name`` in ``text`` as whole words, ignoring case, else None.

    A mention may not run on into a letter or digit on either side, so a short name is not
    found inside a longer word; any run of spaces between its words matches:

        find_name("Made in the US.", "us")      # matches 'US'
        find_name("It failed because of rain.", "US")   # None
    """
    words = name.split()
    if not words:
        return None
    body = r"\s+".join(re.escape(word) for word in words)
    return re.search(rf"(?<!\w){body}(?!\w)", text, flags=re.IGNORECASE)


def disambiguate(
    context: str, mention: str, descriptions: Sequence[str], encoder: Encoder
) -> tuple[int, list[float]]:
    """The description that best keeps the context's meaning in place of the mention (eq. 7).

    Each description replaces the first case-insensitive whole-word mention (`find_name`);
    its score is the cosine of that modified context with the original. Returns the index
    of the best score (the first on a tie) and every score.

        disambiguate("Apple released a new iPhone in Cupertino.", "Apple",
                     ["American technology company", "fruit of the apple tree"], encoder)
        # (0, [0.924..., 0.888...])
    """
    if isinstance(descriptions, str) or not descriptions:
        raise BadInputError("disambiguate needs a sequence of candidate descriptions")
    if not mention.strip():
        raise BadInputError("disambiguate needs a mention")
    match = find_name(context, mention)
    if match is None:
        raise BadInputError(f"mention {mention!r} does not occur in the context")
    modified = [context[: match.start()] + d + context[match.end() :] for d in descriptions]
    vectors = encoder.encode([context, *modified])
    # ZoFia eq. 7: the sense whose description changes the context's meaning least.
    scores = [Encoder.cosine(vectors[0], vector) for vector in vectors[1:]]
    best = 0
    for i, score in enumerate(scores):
        if score > scores[best]:
            best = i
    return best, scores
