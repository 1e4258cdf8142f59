"""A document and the claims taken from it, each with the places it was said.

    doc = Document(text="...", title="...", date=date(2024, 5, 1))
    claim.spans[0]                       # Span(start=120, end=187): where it was said
    doc.text[span.start:span.end]        # the sentence itself

Places are character offsets into ``Document.text``, never markup: whoever shows a
claim in place (a terminal, a web page) cuts the text at the offsets and escapes it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from verity.domain import Claim, NonEmpty


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Document(_Frozen):
    """A text whose claims are to be checked one by one: an article, a transcript, an answer.

    ``date`` is when it was written: it settles what "last year" means when a claim is
    made self-contained, and it is the retrieval cutoff of every claim's check.
    """

    text: NonEmpty
    title: str = ""
    url: str | None = None
    date: dt.date | None = None

    @property
    def checksum(self) -> str:
        """What identifies this document's content: a rerun reuses work only on the same."""
        blob = "\x1f".join([self.title, self.text, self.date.isoformat() if self.date else ""])
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


class Span(_Frozen):
    """A stretch of the document's text, ``text[start:end]``."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Span:
        if self.end < self.start:
            raise ValueError(f"a span ends before it starts ({self.start}..{self.end})")
        return self


SentenceOutcome = Literal["claims", "no_verifiable_claim", "ambiguous", "no_claims", "failed"]


class SentenceNote(_Frozen):
    """What extraction made of one sentence of the document, and why.

    ``claims``: it gave claims (their ids in ``claim_ids``). ``no_verifiable_claim``: the
    selection found nothing a fact-checker could verify. ``ambiguous``: it could not be
    read with confidence, so no claim was taken from it. ``no_claims``: decomposition gave
    none. ``failed``: a model call failed (``reason`` says how); a rerun tries it again.
    """

    index: int = Field(ge=0)
    span: Span
    outcome: SentenceOutcome
    # The sentence after selection kept only its verifiable part (None: kept whole).
    selected: str | None = None
    # The sentence made self-contained by disambiguation.
    disambiguated: str | None = None
    claim_ids: tuple[str, ...] = ()
    reason: str = ""
    # Its check-worthiness: how many of selection's answers found a verifiable fact.
    selection: str = ""


class ExtractedClaim(_Frozen):
    """One atomic, self-contained claim taken from the document, and where it was said.

    ``spans`` are the sentences it came from (more than one when near copies were merged)
    followed by any earlier sentence that supplied a name or date the claim needed.
    """

    id: str
    text: NonEmpty
    spans: tuple[Span, ...] = Field(min_length=1)
    sentence_index: int = Field(ge=0)
    # Every sentence index it stands for, the first being ``sentence_index``.
    sentences: tuple[int, ...] = ()

    def as_claim(self, document: Document) -> Claim:
        """The claim a method checks: its text, with the document's date as the cutoff."""
        return Claim(text=self.text, date=document.date, source_url=document.url)
