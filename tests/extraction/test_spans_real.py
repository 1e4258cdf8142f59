"""Spans on real text: the places each claim keeps hold the words it states.

The claims come from a scripted fake model (what a capable model would give for these
sentences of SummEval's first article); the splitting (spaCy) and the placing are real.
The judge is lexical: most of a claim's content words must stand in the text its spans
cover (an encoder's cosine cannot tell a short claim's long sentence from its neighbour:
0.24 against 0.13 here).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from verity.extraction import Document, Extractor
from verity.llm.client import ModelClient
from verity.testing import FakeChatModel

TEXT = (
    "Paul Merson has restarted his row with Andros Townsend after the Tottenham midfielder "
    "was brought on with only seven minutes remaining in his team's 0-0 draw with Burnley "
    "on Sunday. 'Just been watching the game, did you miss the coach?' Merson put on "
    "Twitter. He had angered Townsend by writing in his Sky Sports column that the "
    "winger should be nowhere near the England squad."
)
# What the fake decomposition gives per sentence (by its first words).
CLAIMS = {
    "Paul Merson has": [
        "Paul Merson has restarted his row with Andros Townsend.",
        "Tottenham drew 0-0 with Burnley on Sunday.",
    ],
    "Just been": [],
    "Merson put": ["Paul Merson put a message about the game on Twitter."],
    "He had angered": ["Paul Merson wrote in his Sky Sports column about Andros Townsend."],
}
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{2,}")
_FUNCTION = {"the", "and", "with", "his", "her", "about", "that", "has", "had", "was"}
# Share of a claim's content words its spans must hold.
COVERED = 0.6


def script(messages: Any, _schema: Any) -> str:
    system, user = messages[0].content, messages[-1].content
    sentence = user.rsplit("<sentence>", 1)[1].split("</sentence>", 1)[0]
    if "decide which sentences" in system:
        return json.dumps({"analysis": "", "verifiable": True})
    if "understandable without" in system:
        return json.dumps({"analysis": "", "resolvable": True, "decontextualized": sentence})
    claims = next(v for k, v in CLAIMS.items() if sentence.startswith(k))
    return json.dumps({"analysis": "", "claims": claims})


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - _FUNCTION


def supports(claim: str, said: str) -> tuple[bool, float]:
    wanted = words(claim)
    share = len(wanted & words(said)) / len(wanted)
    return share >= COVERED, share


def test_every_span_of_every_claim_bears_the_claim_out() -> None:
    extractor = Extractor(ModelClient(FakeChatModel(script, model="fake-spans")), variant="single")
    found = asyncio.run(extractor.extract(Document(text=TEXT)))
    assert len(found.claims) == 4
    for claim in found.claims:
        said = " ".join(TEXT[s.start : s.end] for s in claim.spans)
        ok, share = supports(claim.text, said)
        assert ok, (claim.text, share)
    # "He" became Paul Merson and "Townsend" Andros Townsend: the nearest sentences that
    # name them are places of the claim too, nearest first.
    last = found.claims[-1]
    assert [TEXT[s.start : s.end][:15] for s in last.spans] == [
        "He had angered ",
        "Merson put on T",
        "Paul Merson has",
    ]


def test_a_span_moved_to_another_sentence_is_caught_by_the_judge() -> None:
    # The judge must tell a claim's sentence from a neighbour's, or the test above proves nothing.
    claim = "Tottenham drew 0-0 with Burnley on Sunday."
    assert supports(claim, TEXT.split("Sunday.")[0] + "Sunday.")[0]
    assert not supports(claim, "He had angered Townsend by writing in his Sky Sports column.")[0]
    merson = "Paul Merson wrote in his Sky Sports column about Andros Townsend."
    # Without the sentence that names him, "He had angered ..." does not hold the claim.
    assert not supports(merson, TEXT[TEXT.index("He had") :])[0]
