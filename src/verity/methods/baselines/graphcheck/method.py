"""The ``graphcheck`` method: extract two graphs, align them, verify in one call.

    method = load_method("graphcheck", models=models)
    verdict = method.verify(claim, evidence=[Evidence(text=article, source="gold")])

See the package docstring for the paper and for what is kept and what stands in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from verity import schedule
from verity.domain import Article, Claim, Evidence, Reference, Verdict
from verity.errors import BadInputError, ModelOutputError
from verity.grounding.cite import reference
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.step import Delimited, Step, data_block
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.baselines.graphcheck.graph import (
    Graph,
    Triple,
    align,
    render_alignment,
    render_claim,
)
from verity.methods.common import Confidence, require_claim


class TripleAnswer(BaseModel):
    """One triple as the model writes it."""

    subject: str
    relation: str
    object: str


class Extraction(BaseModel):
    """The triples a model extracted from a claim or a document."""

    triples: list[TripleAnswer]


class GraphJudgement(BaseModel):
    """The verifier's answer; GraphCheck's own answer is one word, support or unsupport.

    ``unsupported`` names the claim triples (by number) the document does not back, so
    a reader can see which fact sank the claim. No length limits, as in `ClaimJudgement`.
    """

    explanation: str
    unsupported: list[int] = Field(default_factory=list)
    label: Literal["SUPPORTED", "REFUTED"]
    confidence: Confidence


_TRIPLE_RULES = (
    "Write each fact as a triple: a subject entity, a short relation, an object entity or "
    "value. Name entities as the text does and spell one entity the same way every time, "
    "so that triples sharing an entity join into one graph. Keep numbers, dates and "
    "qualifiers in the triple they belong to. Do not add facts the text does not state."
)

EXTRACT_CLAIM = Step(
    name="graphcheck.extract_claim",
    instruction=(
        "You turn a claim into a small knowledge graph. List every fact the claim asserts. "
        + _TRIPLE_RULES
    ),
    template="Claim: {claim}\n\nGive at most {limit} triples.",
    output=Extraction,
)

EXTRACT_DOCUMENT = Step(
    name="graphcheck.extract_document",
    instruction=(
        "You turn a document into a knowledge graph. List the facts the document states "
        "about its people, organisations, places, events, numbers and dates, most "
        "important first. " + _TRIPLE_RULES
    ),
    template="Document:\n{document}\n\nGive at most {limit} triples.",
    output=Extraction,
)

_VERIFY_INSTRUCTION = (
    "You check whether a document supports a claim. You are given the claim, the claim's "
    "facts as numbered triples, and under each claim triple the document triples that "
    "share its entities{document}. Check each claim triple against its document triples"
    "{and_text}. Use SUPPORTED only if the document backs every claim triple; use REFUTED "
    "if any claim triple is contradicted or not stated in the document. Explain briefly "
    "first, then list the numbers of the claim triples the document does not support, "
    "then give the label and your confidence between 0 and 1."
)

VERIFY = Step(
    name="graphcheck.verify",
    instruction=_VERIFY_INSTRUCTION.format(
        document=", and the document itself", and_text=" and the document text"
    ),
    template=(
        "Claim: {claim}\n\nClaim triples:\n{claim_graph}\n\n"
        "Document triples aligned to each claim triple:\n{aligned}\n\nDocument:\n{document}"
    ),
    output=GraphJudgement,
)

VERIFY_GRAPHS = Step(
    name="graphcheck.verify",
    instruction=_VERIFY_INSTRUCTION.format(document="", and_text=""),
    template=(
        "Claim: {claim}\n\nClaim triples:\n{claim_graph}\n\n"
        "Document triples aligned to each claim triple:\n{aligned}"
    ),
    output=GraphJudgement,
)


class GraphCheckConfig(BaselineConfig):
    """Settings of ``graphcheck``; see the package docstring for where each comes from."""

    max_chars: int = Field(
        default=4000, ge=100, le=20_000, description="characters shown per evidence passage"
    )
    # GraphCheck's repository caps the verifier's text (prompt, claim and document) at
    # max_txt_len = 1024 tokens (src/config.py): about 4,000 characters of English.
    max_doc_chars: int = Field(
        default=4000,
        ge=100,
        le=50_000,
        description="characters of evidence shown, all passages together",
    )
    # Its released SummEval graphs hold at most 16 claim triples and 26 document triples
    # on average (dataset/summeval/summeval.pkl); the caps bound an answer, not a text.
    # Their upper bounds (and every other one here) are verity's.
    max_claim_triples: int = Field(default=16, ge=1, le=200, description="claim triples kept")
    max_document_triples: int = Field(default=30, ge=1, le=500, description="document triples kept")
    extract_max_tokens: int = Field(
        default=1024,
        ge=64,
        le=32_768,
        description="answer tokens allowed to each extraction call (a long triple list); "
        "at least the model's own setting",
    )
    match_threshold: float = Field(
        default=85.0,
        ge=0.0,
        le=100.0,
        description="word agreement (rapidfuzz token-set ratio, 0-100) for a document "
        "entity to match a claim entity",
    )
    hops: int = Field(
        default=1, ge=1, le=3, description="edges this far from a matched entity are aligned"
    )
    max_aligned: int = Field(
        default=5, ge=1, le=50, description="document triples per claim triple"
    )
    show_document: bool = Field(
        default=True,
        description="show the document text to the verifier beside the graphs, as "
        "GraphCheck's LLM reads it beside the graph tokens",
    )


class GraphCheck(Baseline):
    """Two extracted graphs, aligned triple by triple, and one verification call."""

    name: ClassVar[str] = "graphcheck"
    paper: ClassVar[str] = (
        "Chen et al. 2025, GraphCheck: Breaking Long-Term Text Barriers with Extracted "
        "Knowledge Graph-Powered Fact-Checking (ACL)"
    )
    # What stands in for the published method (see the module docstring and docs/baselines.md).
    substitute: ClassVar[str] = (
        "aligned claim and document triples shown as text in place of GraphCheck's "
        "trained graph encoder and its soft tokens"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    Config: ClassVar[type[BaselineConfig]] = GraphCheckConfig
    config: GraphCheckConfig

    async def check(self, subject: Claim | Article, evidence: Sequence[Evidence] | None) -> Verdict:
        """Extract both graphs at once, align them, verify the claim on the alignment."""
        claim = require_claim(subject, self.name)
        if not evidence:
            raise BadInputError(
                "graphcheck checks a claim against given evidence (its grounding document), "
                "as WKGFC ran it on gold evidence only; pass evidence=[...], since it "
                "searches no source"
            )
        cfg = self.config
        log = CallLog()
        shown = await self.gather(claim.text, claim, evidence, log)
        document = self._document(shown)
        params = self._extract_params()
        (claim_found, claim_note), (document_found, document_note) = await schedule.gather(
            self._extract(EXTRACT_CLAIM, log, params, cfg.max_claim_triples, claim=claim.text),
            self._extract(
                EXTRACT_DOCUMENT, log, params, cfg.max_document_triples, document=document
            ),
        )
        unreadable = {
            side: note
            for side, note in (("claim", claim_note), ("document", document_note))
            if note is not None
        }
        claim_graph = Graph.build(claim_found)
        document_graph = Graph.build(document_found)
        log.milestone(
            "graphcheck.extract",
            f"{len(claim_graph.triples)} claim triple(s), "
            f"{len(document_graph.triples)} document triple(s)",
            claim_triples=len(claim_graph.triples),
            document_triples=len(document_graph.triples),
        )
        alignments = align(
            claim_graph,
            document_graph,
            threshold=cfg.match_threshold,
            hops=cfg.hops,
            k=cfg.max_aligned,
        )
        matched = sum(1 for found in alignments if found.evidence)
        log.milestone(
            "graphcheck.align",
            f"{matched} of {len(alignments)} claim triple(s) aligned to the document graph",
            aligned=matched,
            claim_triples=len(alignments),
        )
        inputs: dict[str, Any] = {
            "claim": claim.text,
            "claim_graph": render_claim(claim_graph.triples),
            "aligned": render_alignment(alignments),
        }
        step = VERIFY_GRAPHS
        if cfg.show_document:
            step, inputs["document"] = VERIFY, document
        judgement = await step.arun(self.model, log=log, **inputs)
        unsupported = [n for n in dict.fromkeys(judgement.unsupported) if 1 <= n <= len(alignments)]
        log.milestone("graphcheck.verify", f"verdict {judgement.label}", label=judgement.label)
        return self.verdict(
            claim,
            judgement,
            log,
            evidence=shown,
            claim_triples=[t.as_list() for t in claim_graph.triples],
            document_triples=[t.as_list() for t in document_graph.triples],
            claim_graph=claim_graph.size(),
            document_graph=document_graph.size(),
            alignment=[found.to_dict() for found in alignments],
            unsupported=unsupported,
            unreadable=unreadable,
        )

    def references(self, verdict: Verdict) -> list[Reference]:
        """Claim triples ``[1]``..``[n]`` with their aligned document triples, then ``D1``..

        The verifier's prompt numbers the claim triples, and under each the document
        triples aligned to it, so an explanation's ``[2]`` is the second claim triple;
        the document's passages (shown unnumbered) follow as ``D1``...
        """
        aligned = (verdict.trace.model_extra or {}).get("alignment") or []
        triples = [
            reference(str(n), _aligned_text(found), "triple")
            for n, found in enumerate(aligned, start=1)
        ]
        return triples + [
            reference(f"D{i}", ev.text, "passage", ev.title or "")
            for i, ev in enumerate(verdict.evidence, start=1)
        ]

    def _document(self, passages: Sequence[Evidence]) -> Delimited:
        """The grounding document: the passages in order, each in its own data block.

        At most ``max_chars`` of each and ``max_doc_chars`` in all: the last one shown
        may be cut.
        """
        left = self.config.max_doc_chars
        blocks = []
        for ev in passages:
            if left <= 0:
                break
            cap = min(self.config.max_chars, left)
            text = ev.text if len(ev.text) <= cap else ev.text[:cap].rstrip() + " ..."
            left -= min(len(ev.text), cap)
            blocks.append(data_block("passage", text, title=ev.title, source=ev.source))
        return Delimited("\n".join(blocks))

    async def _extract(
        self, step: Step[Extraction], log: CallLog, params: GenParams, cap: int, **text: Any
    ) -> tuple[list[Triple], str | None]:
        """One side's triples; an unreadable answer gives an empty graph and a note.

        GraphCheck's own code gives an empty graph a zero embedding and still verifies;
        here the verifier is told the graph is empty, and the trace says why.
        """
        try:
            answer = await step.arun(self.model, log=log, params=params, limit=cap, **text)
        except ModelOutputError as exc:
            return [], f"extraction unreadable, graph left empty: {str(exc)[:200]}"
        return _triples(answer, cap), None

    def _extract_params(self) -> GenParams:
        """The model's own parameters, with room for a long list of triples."""
        own = self.model.params
        tokens = max(own.max_tokens, self.config.extract_max_tokens)
        return own.model_copy(update={"max_tokens": tokens})


def _triples(answer: Extraction, cap: int) -> list[Triple]:
    """The model's triples, cleaned, without empty fields, at most ``cap``."""
    cleaned = (Triple.clean(t.subject, t.relation, t.object) for t in answer.triples)
    return [t for t in cleaned if t is not None][:cap]


def _aligned_text(found: dict[str, Any]) -> str:
    """A traced alignment as the verifier read it: the claim triple, then its matches."""
    claim = " | ".join(found.get("claim") or [])
    matched = "; ".join(" | ".join(t) for t in found.get("evidence") or [])
    return f"Claim triple: {claim}. Document triples: " + (matched or "none mention these entities")
