"""The evidence evaluation agent (§III-C): clean each document, then assess it.

    agent = EvidenceAgent(model, clean=True)
    item = await agent.assess(claim_text, evidence, tool="web", log=log)

A document is cut into chunks (`verity.nlp.text.chunk_text`); a cleaning call per chunk
keeps the statements that bear on the claim; one analysis call reads those statements
with the document's provenance and returns its stance, authority, primacy, relevance and
credibility (§III-C's E_i). Without the cleaning pass (the ``lite`` preset) the document's
opening stands in for its statements. A document already assessed for the same
statement is not assessed again (the tree asks for the same page under several nodes).

    mine = agent.fork()      # one node's work: reads what the agent has, adds apart
    agent.adopt(mine)        # once that node is consumed: what it read is known to all
"""

from __future__ import annotations

from verity import schedule
from verity.domain import Evidence, Stance
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.step import data_block
from verity.methods.toe.features import EvidenceItem
from verity.methods.toe.prompts import ASSESS, CLEAN
from verity.nlp.text import chunk_text

# verity's caps: what one document may cost. The paper reads whole pages; on a small
# model four chunks of 120 words (spec 5) are what a prompt holds, and a statement or an
# explanation from a model is kept to a sentence or two.
MAX_DOC_CHARS = 4_000
MAX_CHUNKS = 4
CHUNK_WORDS = 120
MAX_STATEMENTS = 8
MAX_STATEMENT_CHARS = 300
UNCLEANED_CHARS = 800
MAX_EXPLANATION_CHARS = 400

STANCES = {"support": Stance.SUPPORTS, "refute": Stance.REFUTES, "neutral": Stance.NEUTRAL}


class EvidenceAgent:
    """Cleans and assesses documents for one statement at a time; remembers what it read."""

    def __init__(self, model: ModelClient, *, clean: bool = True) -> None:
        self.model = model
        self.clean = clean
        self._seen: dict[tuple[str, str], EvidenceItem] = {}

    async def assess(self, claim: str, ev: Evidence, *, tool: str, log: CallLog) -> EvidenceItem:
        """The document's E_i for this statement."""
        key = (claim, ev.ref or ev.text[:200])
        if key in self._seen:
            return self._seen[key]
        statements = await self._statements(claim, ev, log)
        shown = "\n".join(f"- {s}" for s in statements) or "(nothing relevant found)"
        meta = {"url": ev.url, "source": ev.source, "published": ev.published}
        author = ev.metadata.get("author")
        document = data_block("document", shown, title=ev.title, author=author, **meta)
        found = await ASSESS.arun(self.model, log=log, claim=claim, document=document)
        item = EvidenceItem(
            ref=ev.ref or ev.text[:80],
            tool=tool,
            stance=found.stance,
            authoritative=found.authoritative,
            primary=found.primary,
            relevance=found.relevance,
            credibility=found.credibility,
            statements=tuple(statements),
            explanation=found.explanation[:MAX_EXPLANATION_CHARS],
        )
        self._seen[key] = item
        return item

    def fork(self) -> EvidenceAgent:
        """An agent on the same model that knows what this one knows, and adds apart."""
        twin = EvidenceAgent(self.model, clean=self.clean)
        twin._seen = dict(self._seen)
        return twin

    def adopt(self, twin: EvidenceAgent) -> None:
        """Know what a fork of this agent has assessed."""
        self._seen.update(twin._seen)

    async def _statements(self, claim: str, ev: Evidence, log: CallLog) -> list[str]:
        text = ev.text[:MAX_DOC_CHARS]
        if not self.clean:
            return [text[:UNCLEANED_CHARS].strip()]
        chunks = chunk_text(text, max_words=CHUNK_WORDS)[:MAX_CHUNKS]
        cleaned = await schedule.gather(
            *(CLEAN.arun(self.model, log=log, claim=claim, chunk=chunk) for chunk in chunks)
        )
        kept = [s.strip()[:MAX_STATEMENT_CHARS] for c in cleaned for s in c.statements]
        return [s for s in kept if s][:MAX_STATEMENTS]


def with_assessment(ev: Evidence, item: EvidenceItem) -> Evidence:
    """The domain's evidence with the agent's stance and credibility filled in."""
    return ev.model_copy(update={"stance": STANCES[item.stance], "credibility": item.credibility})
