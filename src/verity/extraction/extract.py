"""Claims out of a whole document, after Claimify (Metropolitansky & Larson, 2025).

    extractor = Extractor(models.for_role("extract"), encoder=default_encoder())
    found = await extractor.extract(Document(text=article, date=date(2024, 5, 1)))
    found.claims[0].text, found.claims[0].spans, found.sentences[3].outcome

The method is Claimify's ("Towards Effective Extraction and Evaluation of Factual
Claims", ACL 2025, arXiv:2502.10855): the text is split into sentences (§3.1), and each
sentence, read in an excerpt of its neighbours, goes through three model steps:

- selection (§3.2): does it state anything verifiable? If only part of it, that part;
- disambiguation (§3.3): made readable alone, or dropped when an ambiguity has no
  reading that readers of the excerpt would agree on;
- decomposition (§3.4): split into atomic claims, context in square brackets.

Selection and disambiguation ask for 3 answers and let a sentence through only when 2
agree that it passes; decomposition asks once (Appendix D, below). docs/documents.md
lists what verity keeps and changes: a document's title stands in for the question,
the document's date is shown to disambiguation, near copies are merged, and every claim
keeps the character spans of the sentences it came from.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from verity.domain import Trace, Usage
from verity.errors import (
    BadInputError,
    BudgetExceededError,
    ContextOverflowError,
    ModelOutputError,
    VerityError,
)
from verity.extraction.merge import merge_claims
from verity.extraction.sentences import Sentence, excerpt, split_document
from verity.extraction.steps import (
    DECOMPOSE,
    DISAMBIGUATE,
    SELECT,
    Decomposition,
    Disambiguation,
    Selection,
    StageName,
)
from verity.extraction.types import Document, ExtractedClaim, SentenceNote, Span
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.step import Step
from verity.nlp.embed import Encoder

T = TypeVar("T", bound=BaseModel)
Variant = Literal["claimify", "single"]
VARIANTS: tuple[Variant, ...] = ("claimify", "single")


@dataclass(frozen=True)
class Stage:
    """How one step reads a sentence: its window, how many answers, how many must pass."""

    before: int
    after: int
    completions: int
    successes: int
    temperature: float


# Claimify, Appendix D: p = 5 preceding sentences for every step, f = 5 following for
# selection and 0 for the others; 3 completions of which 2 must pass for selection and
# disambiguation, 1 for decomposition; temperature 0.2 where there are several
# completions, else 0.
PAPER_STAGES: dict[StageName, Stage] = {
    "select": Stage(before=5, after=5, completions=3, successes=2, temperature=0.2),
    "disambiguate": Stage(before=5, after=0, completions=3, successes=2, temperature=0.2),
    "decompose": Stage(before=5, after=0, completions=1, successes=1, temperature=0.0),
}
# The ``single`` variant: one answer per step at temperature 0. A third of the calls, and
# no vote; for a model too small to gain from sampling, or a tight budget.
SINGLE_STAGES: dict[StageName, Stage] = {
    name: Stage(s.before, s.after, 1, 1, 0.0) for name, s in PAPER_STAGES.items()
}
# Output tokens per answer: the analysis plus a sentence or a list of claims.
ANSWER_TOKENS: dict[StageName, int] = {"select": 384, "disambiguate": 448, "decompose": 640}
# A document with more sentences than this is refused, not cut: the reader would think
# the rest had been read. About 8,000 words of prose.
MAX_SENTENCES = 400
# Claims checked at most per document; past it, the rest are counted, not checked.
MAX_CLAIMS = 100
# Sentences read at once (each is independent of the others until claims are merged).
DEFAULT_CONCURRENCY = 8
NO_QUESTION = "(none given: the excerpt is from a document, not an answer to a question)"
# Characters of a document's title shown as its question: a title, not a second text.
TITLE_CHARS = 300


@dataclass
class Extraction:
    """What extraction found: a note per sentence, the merged claims, and what it cost."""

    sentences: list[SentenceNote]
    claims: list[ExtractedClaim]
    usage: Usage
    trace: Trace
    claims_over_cap: int = 0
    seconds: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Vote(Generic[T]):
    """A step's answers, the one that goes on (None: too few passed), how many passed."""

    answers: list[T]
    chosen: T | None
    passed: int
    # Answers asked for: a broken one (no valid answer) is among them, not in ``answers``.
    asked: int


@dataclass
class _Read:
    """One sentence's way through the three steps."""

    note: SentenceNote
    claims: list[str]


class Extractor:
    """Claimify's three steps over a document's sentences, with claims merged and placed."""

    name = "claimify"

    def __init__(
        self,
        model: ModelClient,
        *,
        encoder: Encoder | None = None,
        variant: Variant = "claimify",
        concurrency: int = DEFAULT_CONCURRENCY,
        max_claims: int = MAX_CLAIMS,
        max_sentences: int = MAX_SENTENCES,
    ) -> None:
        if variant not in VARIANTS:
            raise BadInputError(f"extractor variant must be one of {', '.join(VARIANTS)}")
        if concurrency < 1 or max_claims < 1 or max_sentences < 1:
            raise BadInputError("extractor concurrency and caps must be at least 1")
        self.model = model
        self.encoder = encoder
        self.variant: Variant = variant
        self.stages = PAPER_STAGES if variant == "claimify" else SINGLE_STAGES
        self.concurrency = concurrency
        self.max_claims = max_claims
        self.max_sentences = max_sentences

    def settings(self) -> dict[str, Any]:
        """What decides the claims: a rerun reuses a document's claims only under the same."""
        identity = self.model.backend.identity()
        return {
            "extractor": self.name if self.variant == "claimify" else f"{self.name}/{self.variant}",
            "model": identity.get("model") or identity.get("provider") or "unknown",
            "stages": {k: vars(v) for k, v in self.stages.items()},
            "merge": "encoder" if self.encoder is not None else "exact",
            "max_claims": self.max_claims,
        }

    async def extract(self, document: Document) -> Extraction:
        """Every sentence read (at most `concurrency` at once), claims merged and numbered."""
        started = time.monotonic()
        units = split_document(document.text)
        if len(units) > self.max_sentences:
            raise BadInputError(
                f"the document has {len(units)} sentences; the extractor reads at most "
                f"{self.max_sentences} (split the document, or raise max_sentences)"
            )
        log = CallLog()
        gate = asyncio.Semaphore(self.concurrency)

        async def read(unit: Sentence) -> _Read:
            async with gate:
                return await self._read(document, units, unit, log)

        reads = await asyncio.gather(*(read(u) for u in units))
        claims, notes = self._claims(document, units, reads)
        over = max(0, len(claims) - self.max_claims)
        kept = claims[: self.max_claims]
        return Extraction(
            sentences=notes,
            claims=kept,
            usage=log.usage(),
            trace=log.trace(),
            claims_over_cap=over,
            seconds=time.monotonic() - started,
            settings=self.settings(),
        )

    async def select(
        self, question: str, text_excerpt: str, sentence: str, log: CallLog
    ) -> Vote[Selection]:
        """The selection step alone, with its vote.

        Check-worthiness of a lone sentence (`verity.methods.checkworthy`) is this step
        with the sentence as its own excerpt.
        """
        answers = await self._vote(
            SELECT, "select", log, question=question, excerpt=text_excerpt, sentence=sentence
        )
        rule = self.stages["select"]
        return Vote(answers, _passing(answers, rule.successes, _selects),
                    _count(answers, _selects), rule.completions)  # fmt: skip

    async def _read(
        self, document: Document, units: Sequence[Sentence], unit: Sentence, log: CallLog
    ) -> _Read:
        span = Span(start=unit.start, end=unit.end)
        note = SentenceNote(index=unit.index, span=span, outcome="no_verifiable_claim")
        if unit.heading:
            return _Read(note.model_copy(update={"reason": "a heading"}), [])
        question = _title(document) or NO_QUESTION
        try:
            return await self._steps(document, units, unit, log, note, question)
        except ContextOverflowError as exc:
            # This sentence's prompt is too long for the model: it fails, the rest go on.
            reason = f"{type(exc).__name__}: {exc}"[:300]
            return _Read(note.model_copy(update={"outcome": "failed", "reason": reason}), [])
        except BudgetExceededError:
            raise
        except VerityError as exc:
            reason = f"{type(exc).__name__}: {exc}"[:300]
            return _Read(note.model_copy(update={"outcome": "failed", "reason": reason}), [])

    async def _steps(
        self,
        document: Document,
        units: Sequence[Sentence],
        unit: Sentence,
        log: CallLog,
        note: SentenceNote,
        question: str,
    ) -> _Read:
        s = self.stages
        answers = await self._vote(
            SELECT, "select", log, question=question,
            excerpt=excerpt(units, unit.index, before=s["select"].before, after=s["select"].after),
            sentence=unit.text,
        )  # fmt: skip
        chosen = _passing(answers, s["select"].successes, _selects)
        asked = s["select"].completions
        votes = f"{_count(answers, _selects)} of {asked} answers found a verifiable fact"
        note = note.model_copy(update={"selection": votes})
        if chosen is None:
            return _Read(note.model_copy(update={"reason": votes}), [])
        selected = chosen.rewritten.strip() or unit.text
        written = document.date.isoformat() if document.date else "unknown"
        window = excerpt(units, unit.index, before=s["disambiguate"].before, after=0)
        clear = await self._vote(
            DISAMBIGUATE, "disambiguate", log, question=question, written=written,
            excerpt=window, sentence=selected,
        )  # fmt: skip
        resolved = _passing(clear, s["disambiguate"].successes, _resolves)
        note = note.model_copy(update={"selected": selected if selected != unit.text else None})
        if resolved is None:
            asked = s["disambiguate"].completions
            reason = f"{_count(clear, _resolves)} of {asked} answers could resolve it"
            return _Read(note.model_copy(update={"outcome": "ambiguous", "reason": reason}), [])
        standalone = resolved.decontextualized.strip()
        note = note.model_copy(update={"disambiguated": standalone})
        window = excerpt(units, unit.index, before=s["decompose"].before, after=0)
        split = await self._vote(
            DECOMPOSE, "decompose", log, question=question, excerpt=window, sentence=standalone
        )
        found = _passing(split, s["decompose"].successes, _decomposes)
        claims = _clean_claims(found.claims) if found is not None else []
        if not claims:
            return _Read(note.model_copy(update={"outcome": "no_claims"}), [])
        return _Read(note.model_copy(update={"outcome": "claims"}), claims)

    async def _vote(self, step: Step[T], stage: StageName, log: CallLog, **inputs: Any) -> list[T]:
        """The stage's valid answers, asked at once; seeds differ so that samples differ.

        An answer the model could not give validly (``ModelOutputError``, as when a small
        model's analysis runs past its output budget) counts as one that does not pass:
        it is one vote of three, not the sentence. With no valid answer at all, that
        error is raised; any other error (a spent budget, an endpoint down) is raised.
        """
        rule = self.stages[stage]
        asks = [
            step.arun(
                self.model,
                log=log,
                params=GenParams(
                    temperature=rule.temperature, seed=n, max_tokens=ANSWER_TOKENS[stage]
                ),
                **inputs,
            )
            for n in range(rule.completions)
        ]
        done = await asyncio.gather(*asks, return_exceptions=True)
        for outcome in done:
            if isinstance(outcome, BaseException) and not isinstance(outcome, ModelOutputError):
                raise outcome
        answers = [a for a in done if not isinstance(a, BaseException)]
        if not answers:
            raise next(e for e in done if isinstance(e, BaseException))
        return answers

    def _claims(
        self, document: Document, units: Sequence[Sentence], reads: Sequence[_Read]
    ) -> tuple[list[ExtractedClaim], list[SentenceNote]]:
        """Claims in document order, near copies merged, numbered C1, C2 ...; notes updated."""
        raw = [(r.note.index, text) for r in reads for text in r.claims]
        merged = merge_claims([t for _, t in raw], self.encoder)
        claims: list[ExtractedClaim] = []
        ids_of: dict[int, list[str]] = {}
        for n, group in enumerate(merged, start=1):
            first = group[0]
            indices = tuple(dict.fromkeys(raw[i][0] for i in group))
            claim_id = f"C{n}"
            text = raw[first][1]
            spans = [Span(start=units[i].start, end=units[i].end) for i in indices]
            spans += context_spans(text, units, indices[0], spans)
            claims.append(
                ExtractedClaim(
                    id=claim_id,
                    text=text,
                    spans=tuple(spans),
                    sentence_index=indices[0],
                    sentences=indices,
                )
            )
            for i in indices:
                ids_of.setdefault(i, []).append(claim_id)
        notes = [
            r.note.model_copy(update={"claim_ids": tuple(ids_of.get(r.note.index, []))})
            for r in reads
        ]
        return claims, notes


def _title(document: Document) -> str:
    title = " ".join(document.title.split())
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"


def _selects(answer: Selection) -> bool:
    return answer.verifiable


def _resolves(answer: Disambiguation) -> bool:
    return answer.resolvable and bool(answer.decontextualized.strip())


def _decomposes(answer: Decomposition) -> bool:
    return bool(_clean_claims(answer.claims))


def _count(answers: Sequence[T], passes: Any) -> int:
    return sum(1 for a in answers if passes(a))


def _passing(answers: Sequence[T], needed: int, passes: Any) -> T | None:
    """The first answer that passes, if at least ``needed`` of them pass; else None.

    Which of several passing answers goes on is not stated in the paper; the first, in
    the order the completions were asked, keeps a rerun's choice the same.
    """
    passed = [a for a in answers if passes(a)]
    return passed[0] if len(passed) >= needed else None


_CLAIM_SPACE = re.compile(r"\s+")


def _clean_claims(claims: Sequence[str]) -> list[str]:
    """Claims as one line each, empty ones and repeats within the sentence dropped."""
    out: list[str] = []
    for claim in claims:
        text = _CLAIM_SPACE.sub(" ", claim).strip()
        if text and text.casefold() not in {c.casefold() for c in out}:
            out.append(text[:2_000])
    return out


# A word the claim may have taken from elsewhere in the text: a name (capitalised) or a
# number. Short words and sentence-initial function words are not worth a place.
_WORD = re.compile(r"\b[\w'’.-]+\b")
_FUNCTION = frozenset(
    ("the", "this", "that", "these", "those", "there", "they", "their", "its", "she",
     "his", "her", "him", "our", "you", "your", "for", "and", "but", "from", "with")
)  # fmt: skip


def _content_words(text: str) -> set[str]:
    words = set()
    for word in _WORD.findall(text):
        bare = word.strip(".'’-")
        if len(bare) < 3 or bare.casefold() in _FUNCTION:
            continue
        if bare[0].isupper() or any(ch.isdigit() for ch in bare):
            words.add(bare.casefold())
    return words


def context_spans(
    claim: str, units: Sequence[Sentence], index: int, own: Sequence[Span]
) -> list[Span]:
    """Earlier sentences that supplied a name or number the claim has and its sentence lacks.

    Disambiguation fills "he" with a name and "last year" with a year from the excerpt;
    the sentence that said so is where the claim partly came from. Only the window the
    step saw (5 sentences back, Appendix D) is searched, nearest first.
    """
    have = _content_words(units[index].text)
    missing = _content_words(claim) - have
    found: list[Span] = []
    taken = {(s.start, s.end) for s in own}
    for unit in reversed(units[max(0, index - PAPER_STAGES["disambiguate"].before) : index]):
        words = _content_words(unit.text) | {w.casefold() for w in _WORD.findall(unit.text)}
        hit = {w for w in missing if w in words}
        if hit and (unit.start, unit.end) not in taken:
            found.append(Span(start=unit.start, end=unit.end))
            taken.add((unit.start, unit.end))
            missing -= hit
        if not missing:
            break
    return found
