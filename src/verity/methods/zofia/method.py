"""ZoFia (Wu et al.): zero-shot fake-news detection for news articles.

    method = load_method("zofia", models=models, sources=[OfflineWiki(), corpus])
    verdict = method.verify(Article(title="...", text="...", date=date(2020, 5, 1)))
    verdict.label            # Label.REAL or Label.FAKE
    verdict.trace.debate     # every turn and ruling

Stage 1 (section 3) picks keywords with SC-MMR over hierarchically salient entities and
retrieves the web (sources without titled pages: web search providers or a local corpus)
and Wikipedia (``offline-wiki`` or ``wikipedia``). Stage 2 (section 4) runs the linguist,
the domain expert and claim verification, then the debate. Every agent runs at
temperature 0. ``variants`` name the paper's ablations (Table 2) and query-construction
variants (Table 3), e.g. ``zofia/no-debate``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field

from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.errors import BadInputError, ModelOutputError
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import MethodConfig
from verity.methods.zofia import agents
from verity.methods.zofia.claims import CheckedClaim, verify_claims
from verity.methods.zofia.debate import Debate, Ruling, judge_without_debate, run_debate
from verity.methods.zofia.keywords import KeywordParams, KeywordSelector, local_context
from verity.methods.zofia.material import Material, article_block, passages_block
from verity.methods.zofia.queries import (
    LLM_NER,
    EntityList,
    salient_sentence,
    sentence_of,
    tfidf_keywords,
)
from verity.methods.zofia.render import markdown
from verity.methods.zofia.reports import reports_block
from verity.methods.zofia.retrieval import (
    DEFAULT_EXCLUDED,
    WebSearch,
    WikiSense,
    is_wikipedia,
    search_web,
    wikipedia_sense,
)
from verity.nlp.embed import Encoder, default_encoder
from verity.nlp.ner import EntityRecognizer
from verity.nlp.text import split_sentences
from verity.sources.base import Source

ROLES = ("linguist", "domain_expert", "claim_extractor", "claim_verifier", "pro", "con", "judge")


class ZofiaConfig(MethodConfig):
    """Settings of ``zofia``; defaults follow the paper where it gives a value."""

    keywords: Literal["sc-mmr", "tfidf", "llm-ner", "sentence", "core-claim"] = "sc-mmr"
    composition: Literal["and", "or"] = "and"
    lambda_init: float = 0.8
    delta: float = 0.1
    n_min: int = Field(default=3, ge=1)
    lambda_min: float = 0.5
    lambda_max: float = 0.9
    alpha: float = 0.3
    beta: float = 2.5
    gamma: float = 0.5
    max_keywords: int = Field(default=5, ge=1)
    web: bool = True
    wikipedia: bool = True
    web_results: int = Field(default=10, ge=1, description="web results kept")
    exclude_domains: tuple[str, ...] = DEFAULT_EXCLUDED
    wiki_candidates: int = Field(default=5, ge=1, description="senses scored per keyword")
    wiki_sentences: int = Field(default=3, ge=1)
    linguist: bool = True
    expert: bool = True
    claim_verification: bool = True
    debate: bool = True
    max_sub_claims: int = Field(default=3, ge=0)
    top_k: int = Field(default=5, ge=1, description="chunks per claim (eq. 9)")
    theta_sim: float = Field(default=0.1, ge=-1.0, le=1.0)
    chunk_words: int = Field(default=80, ge=10)
    max_rounds: int = Field(default=3, ge=1)
    max_article_words: int = Field(default=400, ge=20, description="article words shown")
    max_chars: int = Field(default=300, ge=50, description="characters per passage shown")
    max_tokens: int | None = Field(default=None, ge=1, description="output tokens per call")

    def keyword_params(self) -> KeywordParams:
        """The SC-MMR parameters."""
        return KeywordParams(
            lambda_init=self.lambda_init,
            delta=self.delta,
            n_min=self.n_min,
            lambda_min=self.lambda_min,
            lambda_max=self.lambda_max,
            alpha=self.alpha,
            beta=self.beta,
            gamma=self.gamma,
            max_keywords=self.max_keywords,
        )


class ZofiaMethod:
    """ZoFia's two stages with its agent roles and the paper's ablation switches."""

    name: ClassVar[str] = "zofia"
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Article,)
    variants: ClassVar[dict[str, dict[str, Any]]] = {
        "no-wikipedia": {"wikipedia": False},
        "no-web": {"web": False},
        "no-retrieval": {"wikipedia": False, "web": False},
        "no-linguist": {"linguist": False},
        "no-expert": {"expert": False},
        "no-analysis": {"linguist": False, "expert": False},
        "no-claims": {"claim_verification": False},
        "no-debate": {"debate": False},
        "q-tfidf": {"keywords": "tfidf"},
        "q-llm-ner": {"keywords": "llm-ner"},
        "q-sentence": {"keywords": "sentence"},
        "q-core-claim": {"keywords": "core-claim"},
        "q-or": {"composition": "or"},
    }

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        self.config = ZofiaConfig(**config)
        self.params = self.config.keyword_params()
        self.models = models
        self.sources = list(sources)
        self.agents: dict[str, ModelClient] = {role: models.for_role(role) for role in ROLES}
        self.encoder: Encoder | None = None
        self.recognizer = EntityRecognizer()

    def to_dict(self) -> dict[str, Any]:
        """Configuration for run manifests."""
        return {
            "method": self.name,
            **self.config.model_dump(mode="json"),
            "models": self.models.to_dict(),
            "sources": [s.to_dict() for s in self.sources],
        }

    def _encoder(self) -> Encoder:
        if self.encoder is None:
            self.encoder = default_encoder()
        return self.encoder

    def _gen(self, role: str, step: str) -> GenParams:
        """The role's parameters with the step's output budget (or the configured cap)."""
        cap = self.config.max_tokens or agents.BUDGET[step]
        return self.agents[role].params.model_copy(update={"max_tokens": cap})

    async def averify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Async twin of `verify`, run in a worker thread."""
        return await asyncio.to_thread(self.verify, subject, evidence=evidence)

    def verify(
        self, subject: Claim | Article, *, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Classify a news article as REAL or FAKE.

        ``evidence``, when given, is used as the web quadrant instead of searching.
        """
        if not isinstance(subject, Article):
            raise BadInputError("method 'zofia' classifies news articles, not claims")
        article, log, cfg = subject, CallLog(), self.config
        # Agents other than the judge may fail to give a valid answer (weak models do);
        # the verdict goes on without them and says so here.
        failures: list[dict[str, str]] = []
        sentences = split_sentences(article.text)
        if not sentences:
            raise BadInputError("the article has no text to analyse")
        block = article_block(article, cfg.max_article_words)
        extracted = None
        if cfg.keywords == "core-claim" or cfg.claim_verification:
            extracted = self._extract(block, log, failures)
        terms, contexts, keywords_trace, mode = self._query(
            sentences, block, extracted, log, failures
        )
        web, wiki = self._retrieve(article, terms, contexts, mode, evidence, log)
        web_passages = web.results if web else []
        wiki_passages = [s.chosen for s in wiki if s.chosen is not None]
        material = Material(
            article=block,
            wikipedia=passages_block("Wikipedia background", "W", wiki_passages, cfg.max_chars),
            web=passages_block("Web search results", "S", web_passages, cfg.max_chars),
        )
        linguist = self._linguist(material, log, failures) if cfg.linguist else {}
        expert = self._expert(material, log, failures) if cfg.expert else None
        checked: list[CheckedClaim] = []
        if cfg.claim_verification and extracted is not None:
            checked = self._check(extracted, web_passages, log, failures)
        pool = material.pool(reports_block(linguist, expert, checked, cfg.max_chars))
        debate: Debate | None = None
        if cfg.debate:
            debate = run_debate(
                pool,
                pro=self.agents["pro"],
                con=self.agents["con"],
                judge=self.agents["judge"],
                max_rounds=cfg.max_rounds,
                max_tokens=cfg.max_tokens,
                log=log,
                failures=failures,
            )
            final: Ruling = debate.final
        else:
            final = judge_without_debate(
                pool, judge=self.agents["judge"], max_tokens=cfg.max_tokens, log=log
            )
        matrix: dict[str, Any] = {
            "in_news": True,
            "model_knowledge": True,
            "wikipedia": len(wiki_passages),
            "web": len(web_passages),
        }
        matrix["empty"] = [q for q in ("wikipedia", "web") if not matrix[q]]
        fields: dict[str, Any] = {
            "keywords": keywords_trace,
            "information_matrix": matrix,
            "web": web.to_trace() if web else None,
            "wikipedia": [s.to_trace() for s in wiki],
            "linguist": {k: v.model_dump() for k, v in linguist.items()},
            "expert": expert,
            "claims": [c.to_trace() for c in checked],
            "debate": debate.to_trace() if debate else None,
            "decision": final.__dict__,
            "failures": failures,
        }
        fields["markdown"] = markdown(article, fields)
        return Verdict(
            label=Label.REAL if final.decision == "Real" else Label.FAKE,
            confidence=final.confidence,
            explanation=final.reason,
            evidence=(*wiki_passages, *web_passages),
            usage=log.usage(),
            trace=log.trace(**fields),
            method=self.name,
            subject=article,
        )

    def _query(
        self,
        sentences: list[str],
        block: str,
        extracted: agents.ExtractedClaims | None,
        log: CallLog,
        failures: list[dict[str, str]],
    ) -> tuple[list[str], list[str], dict[str, Any], Literal["and", "or", "text"]]:
        """Search terms, the local context of each, the trace record, the composition."""
        cfg = self.config
        if cfg.keywords == "sc-mmr":
            selection = KeywordSelector(self.recognizer, self._encoder(), self.params).select(
                " ".join(sentences)
            )
            by_text = {u.text: u.context for u in selection.units}
            terms = selection.keywords
            record = {"construction": "sc-mmr", **selection.to_trace(), "terms": terms}
            return terms, [by_text[t] for t in terms], record, cfg.composition
        if cfg.keywords in ("sentence", "core-claim"):
            # Without a core claim (the extractor failed) the salient sentence stands in.
            if cfg.keywords == "sentence" or extracted is None:
                index = salient_sentence(sentences, self._encoder())
                text = sentences[index]
            else:
                text = extracted.core_claim
            record = {"construction": cfg.keywords, "terms": [text]}
            return [text], [text], record, "text"
        if cfg.keywords == "tfidf":
            terms = tfidf_keywords(sentences, cfg.max_keywords)
        else:
            try:
                listed = LLM_NER.run(
                    self.agents["claim_extractor"],
                    log=log,
                    params=self._gen("claim_extractor", LLM_NER.name),
                    material=block,
                    n=cfg.max_keywords,
                )
            except ModelOutputError as exc:
                failures.append({"agent": "llm-ner", "error": str(exc)})
                listed = EntityList(entities=[])
            terms = list(dict.fromkeys(e.strip() for e in listed.entities if e.strip()))
            terms = terms[: cfg.max_keywords]
        contexts = [local_context(sentences, sentence_of(t, sentences)) for t in terms]
        return terms, contexts, {"construction": cfg.keywords, "terms": terms}, cfg.composition

    def _retrieve(
        self,
        article: Article,
        terms: list[str],
        contexts: list[str],
        mode: Literal["and", "or", "text"],
        given: Sequence[Evidence] | None,
        log: CallLog,
    ) -> tuple[WebSearch | None, list[WikiSense]]:
        cfg = self.config
        web: WebSearch | None = None
        if cfg.web and given is not None:
            web = WebSearch(query="(given evidence)", composition="given")
            web.results = list(given)[: cfg.web_results]
        elif cfg.web and terms:
            web = search_web(
                [s for s in self.sources if not is_wikipedia(s)],
                terms,
                mode,
                k=cfg.web_results,
                before=article.date,
                exclude_domains=cfg.exclude_domains,
                log=log,
            )
        wiki: list[WikiSense] = []
        wiki_sources = [s for s in self.sources if is_wikipedia(s)]
        if cfg.wikipedia and wiki_sources:
            for term, context in zip(terms, contexts, strict=True):
                wiki.append(
                    wikipedia_sense(
                        wiki_sources,
                        term,
                        context,
                        self._encoder(),
                        candidates=cfg.wiki_candidates,
                        sentences=cfg.wiki_sentences,
                        before=article.date,
                        log=log,
                    )
                )
        return web, wiki

    def _linguist(
        self, material: Material, log: CallLog, failures: list[dict[str, str]]
    ) -> dict[str, agents.DimensionJudgement]:
        judged: dict[str, agents.DimensionJudgement] = {}
        for name, question in agents.DIMENSIONS.items():
            try:
                judged[name] = agents.LINGUIST.run(
                    self.agents["linguist"],
                    log=log,
                    params=self._gen("linguist", agents.LINGUIST.name),
                    material=material.linguist(),
                    dimension=question,
                )
            except ModelOutputError as exc:
                failures.append({"agent": f"linguist {name}", "error": str(exc)})
        return judged

    def _expert(
        self, material: Material, log: CallLog, failures: list[dict[str, str]]
    ) -> dict[str, Any] | None:
        model = self.agents["domain_expert"]
        try:
            choice = agents.DOMAIN.run(
                model,
                log=log,
                params=self._gen("domain_expert", agents.DOMAIN.name),
                material=material.linguist(),
            )
            judged = agents.EXPERT.run(
                model,
                log=log,
                params=self._gen("domain_expert", agents.EXPERT.name),
                material=material.expert(),
                role=choice.expert_role,
                domain=choice.domain,
            )
        except ModelOutputError as exc:
            failures.append({"agent": "domain expert", "error": str(exc)})
            return None
        return {**choice.model_dump(), **judged.model_dump()}

    def _extract(
        self, block: str, log: CallLog, failures: list[dict[str, str]]
    ) -> agents.ExtractedClaims | None:
        try:
            return agents.EXTRACT.run(
                self.agents["claim_extractor"],
                log=log,
                params=self._gen("claim_extractor", agents.EXTRACT.name),
                material=block,
                n=self.config.max_sub_claims,
            )
        except ModelOutputError as exc:
            failures.append({"agent": "claim extractor", "error": str(exc)})
            return None

    def _check(
        self,
        extracted: agents.ExtractedClaims,
        passages: list[Evidence],
        log: CallLog,
        failures: list[dict[str, str]],
    ) -> list[CheckedClaim]:
        subs = [s for s in extracted.sub_claims if s.strip()][: self.config.max_sub_claims]
        claims = [(extracted.core_claim, "core"), *((s, "sub") for s in subs)]
        return verify_claims(
            claims,
            passages,
            encoder=self._encoder(),
            model=self.agents["claim_verifier"],
            k=self.config.top_k,
            theta=self.config.theta_sim,
            chunk_words=self.config.chunk_words,
            params=self._gen("claim_verifier", agents.VERIFY.name),
            log=log,
            failures=failures,
        )
