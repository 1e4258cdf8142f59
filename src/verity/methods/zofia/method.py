"""ZoFia (Wu et al.): zero-shot fake-news detection for news articles.

    method = load_method("zofia", models=models, sources=[OfflineWiki(), corpus])
    verdict = method.verify(Article(title="...", text="...", date=date(2020, 5, 1)))
    verdict.label            # Label.REAL, Label.FAKE, or NOT_ENOUGH_INFO (judge undecided)
    verdict.trace.debate     # every turn and ruling

Stage 1 (section 3) picks keywords with SC-MMR (Algorithm 3) over hierarchically salient
entities (Algorithm 2, eq. 3) and retrieves the web (sources without titled pages: web
search providers or a local corpus) and Wikipedia (``offline-wiki`` or ``wikipedia``).
Stage 2 (section 4) runs the linguist, the domain expert and claim verification, then the
debate (Algorithm 1). Every agent runs at temperature 0 (5.1). ``variants`` name the
paper's ablations (Table 2), query-construction variants (Table 3) and the documented
departures, e.g. ``zofia/no-debate``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import Field

from verity import schedule
from verity.domain import Article, Claim, Evidence, Label, Reference, Verdict
from verity.errors import BadInputError, ModelOutputError
from verity.llm.base import GenParams
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.llm.step import Delimited, Step
from verity.methods.base import MethodBase, MethodConfig
from verity.methods.settings import RequestText
from verity.methods.zofia import agents
from verity.methods.zofia.claims import CheckedClaim, verify_claims
from verity.methods.zofia.debate import (
    MAX_ROUNDS,
    Debate,
    Ruling,
    judge_without_debate,
    run_debate,
)
from verity.methods.zofia.keywords import KeywordParams, KeywordSelector, local_context
from verity.methods.zofia.material import Material, article_block, fit_text, passages_block
from verity.methods.zofia.queries import (
    LLM_NER,
    PROMPT_NER,
    EntityList,
    PromptNerAnswer,
    accepted_names,
    salient_sentence,
    sentence_of,
    tfidf_keywords,
)
from verity.methods.zofia.references import zofia_references
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

# The judge's three answers (Algorithm 1, B.6) as verdict labels. Insufficient after the
# last round is reported as such; the benchmark metrics count it as wrong, as the paper does.
LABELS = {"Real": Label.REAL, "Fake": Label.FAKE, "Insufficient": Label.NOT_ENOUGH_INFO}

# Token accounting for fitting prompts into a context window: chat templates add a few
# tokens per message; the debate task and its wrapping take about PROMPT_TOKENS; MARGIN
# covers tokenizers that count the rendered template a little differently.
MESSAGE_TOKENS = 8
PROMPT_TOKENS = 400
MARGIN_TOKENS = 64
# Never cut an article below this, whatever the context: with less there is no article.
MIN_ARTICLE_TOKENS = 128


_PAPER = KeywordParams()
T = TypeVar("T")


class ZofiaConfig(MethodConfig):
    """Settings of ``zofia``; defaults are the paper's where it gives a value (docs/zofia.md)."""

    keywords: Literal["sc-mmr", "tfidf", "llm-ner", "promptner", "sentence", "core-claim"] = (
        "sc-mmr"
    )
    composition: Literal["and", "or"] = "and"
    # Algorithms 2 and 3 and sections 5.1 and 5.5: the values and their citations live in
    # KeywordParams, the one place that holds them. The bounds are KeywordParams' own
    # checks where it has them; the upper bounds beyond those are verity's, each well
    # above the paper's value, so that a request cannot ask for an endless schedule.
    lambda_init: float = Field(default=_PAPER.lambda_init, ge=0.0, le=1.0)
    # Algorithm 2 lowers the threshold by delta from lambda_init (at most 1) to the floor:
    # a delta of at least 0.01 ends that loop within 100 steps (the paper's 0.1: 7).
    delta: float = Field(default=_PAPER.delta, ge=0.01, le=1.0)
    n_min: int = Field(default=_PAPER.n_min, ge=1, le=20)
    tau_floor: float = Field(default=_PAPER.tau_floor, ge=0.0, le=1.0)
    lambda_min: float = Field(default=_PAPER.lambda_min, ge=0.0, le=1.0)
    lambda_max: float = Field(default=_PAPER.lambda_max, ge=0.0, le=1.0)
    # verity's bounds: over three times the paper's alpha (0.3), eight times its beta (2.5).
    alpha: float = Field(default=_PAPER.alpha, ge=0.0, le=1.0)
    beta: float = Field(default=_PAPER.beta, ge=0.0, le=20.0)
    gamma: float = Field(default=_PAPER.gamma, ge=0.0, le=1.0)
    # An MMR score is at most 1, so a reference above 1 would end every selection at once.
    prev_init: float = Field(default=_PAPER.prev_init, ge=0.0, le=1.0)
    max_keywords: int | None = Field(
        default=_PAPER.max_keywords, ge=1, le=50, description="None: no cap"
    )
    mmr: Literal["paper", "relaxed"] = "paper"
    variant_terms: int = Field(default=5, ge=1, le=50, description="terms for q-tfidf, q-llm-ner")
    web: bool = True
    wikipedia: bool = True
    web_results: int = Field(default=10, ge=1, le=50, description="web results kept (5.1)")
    # A request may give its own list, of at most 200 domains (verity's bound).
    exclude_domains: tuple[RequestText, ...] = Field(default=DEFAULT_EXCLUDED, max_length=200)
    # Not in the paper (eq. 7 examines every sense): at most this many senses per keyword,
    # each a request to live Wikipedia; a disambiguation page lists the common ones first.
    wiki_candidates: int = Field(
        default=10, ge=1, le=50, description="senses examined per keyword (eq. 7)"
    )
    wiki_sentences: int = Field(default=3, ge=1, le=20, description="summary sentences kept (5.1)")
    linguist: bool = True
    expert: bool = True
    claim_verification: bool = True
    debate: bool = True
    top_k: int = Field(default=5, ge=1, le=50, description="chunks per claim (eq. 9)")
    theta_sim: float = Field(default=0.1, ge=-1.0, le=1.0, description="eq. 9, 5.1")
    chunk_words: int = Field(default=80, ge=10, le=1000)
    # At most 20 rounds is verity's bound: four times B.6's 5.
    max_rounds: int = Field(default=MAX_ROUNDS, ge=1, le=20, description="B.6: 5")
    # At most 2**20 tokens: above the context of any model verity can reach.
    context_tokens: int | None = Field(
        default=None,
        ge=512,
        le=2**20,
        description="the model's context window, if the model cannot say",
    )
    max_chars: int = Field(
        default=600, ge=50, le=20_000, description="characters per passage shown"
    )
    max_tokens: int | None = Field(
        default=None, ge=1, le=32_768, description="output tokens per call"
    )

    def keyword_params(self) -> KeywordParams:
        """The parameters of Algorithms 2 and 3."""
        return KeywordParams(
            lambda_init=self.lambda_init,
            delta=self.delta,
            n_min=self.n_min,
            tau_floor=self.tau_floor,
            lambda_min=self.lambda_min,
            lambda_max=self.lambda_max,
            alpha=self.alpha,
            beta=self.beta,
            gamma=self.gamma,
            prev_init=self.prev_init,
            max_keywords=self.max_keywords,
            schedule=self.mmr,
        )


# The reading of SC-MMR verity used before following Algorithm 3 to the letter: the
# weight in [0.5, 0.9] one step further along, a first pick scored by MMR, at most 5
# keywords, and a threshold that needs 3 units and may fall to 0 (docs/zofia.md).
RELAXED_MMR = {
    "mmr": "relaxed",
    "lambda_min": 0.5,
    "lambda_max": 0.9,
    "max_keywords": 5,
    "n_min": 3,
    "tau_floor": 0.0,
}

NO_WEB_WARNING = (
    "zofia: no web source is configured, so the web quadrant is empty: this is the paper's "
    "'w/o Open Web retrieval' ablation (Table 2, its largest drop), not ZoFia. Add a web "
    "search provider (--source brave, --source searxng, ...) or a local corpus "
    "(--source corpus:NAME)."
)


class ZofiaMethod(MethodBase):
    """ZoFia's two stages with its agent roles and the paper's ablation switches."""

    name: ClassVar[str] = "zofia"
    paper: ClassVar[str] = (
        "Wu, Jiang et al., ZoFia: Zero-Shot Fake News Detection with Entity-Guided "
        "Retrieval and Multi-LLM Interaction"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Article,)
    config: ZofiaConfig
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
        "q-promptner": {"keywords": "promptner"},
        "mmr-relaxed": RELAXED_MMR,
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

    def warnings(self) -> list[str]:
        """What makes a run of this configuration differ from the paper's ZoFia."""
        web = [s for s in self.sources if not is_wikipedia(s)]
        return [NO_WEB_WARNING] if self.config.web and not web else []

    def _encoder(self) -> Encoder:
        if self.encoder is None:
            self.encoder = default_encoder()
        return self.encoder

    def _gen(self, role: str, step: str) -> GenParams:
        """The role's parameters with the step's output budget (or the configured cap)."""
        cap = self.config.max_tokens or agents.BUDGET[step]
        return self.agents[role].params.model_copy(update={"max_tokens": cap})

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Classify a news article as REAL or FAKE (NOT_ENOUGH_INFO if the judge never rules).

        ``evidence``, when given, is used as the web quadrant instead of searching.

        Appendix D's schedule: the linguist reads the article alone and starts at once;
        beside it run the expert's triage, claim extraction and the retrieval, then the
        expert's analysis and the verification of every claim; the debate starts when all
        reports exist.
        """
        if not isinstance(subject, Article):
            raise BadInputError("method 'zofia' classifies news articles, not claims")
        article, log, cfg = subject, CallLog(), self.config
        sentences = split_sentences(article.text)
        if not sentences:
            raise BadInputError("the article has no text to analyse")
        text = " ".join(sentences)
        tokens, exact = self.agents["linguist"].count_tokens(text)
        read_text, read_tokens = self._reading(article, text)
        block = article_block(article, read_text)
        # Agents other than the judge may fail to give a valid answer (weak models do);
        # the verdict goes on without them and says so. Each branch keeps its own list,
        # joined in a fixed order, so the record does not depend on which finished first.
        said: dict[str, list[dict[str, str]]] = {
            part: [] for part in ("extract", "query", "linguist", "expert", "claims")
        }
        linguist_done = (
            self._linguist(Material(block, "", ""), log, said["linguist"])
            if cfg.linguist
            else _nothing({})
        )
        linguist, found = await schedule.gather(
            linguist_done, self._evidence(article, text, sentences, block, evidence, log, said)
        )
        failures = [entry for part in said.values() for entry in part]
        web, wiki, keywords_trace, material, expert, expert_tokens, checked = found
        web_passages = web.results if web else []
        wiki_passages = [s.chosen for s in wiki if s.chosen is not None]
        reports = reports_block(linguist, expert, checked, cfg.max_chars)
        pool = self._debate_pool(article, text, material, reports)
        debate: Debate | None = None
        debate_failures: list[dict[str, str]] = []
        if cfg.debate:
            debate = await run_debate(
                pool,
                pro=self.agents["pro"],
                con=self.agents["con"],
                judge=self.agents["judge"],
                max_rounds=cfg.max_rounds,
                max_tokens=cfg.max_tokens,
                log=log,
                failures=debate_failures,
                fits=self._history_fits(pool),
            )
            final: Ruling = debate.final
        else:
            final = await judge_without_debate(
                pool, judge=self.agents["judge"], max_tokens=cfg.max_tokens, log=log
            )
        failures.extend(debate_failures)
        matrix: dict[str, Any] = {
            "in_news": True,
            "model_knowledge": True,
            "wikipedia": len(wiki_passages),
            "web": len(web_passages),
        }
        matrix["empty"] = [q for q in ("wikipedia", "web") if not matrix[q]]
        fields: dict[str, Any] = {
            "warnings": self.warnings() if evidence is None else [],
            "article": {
                "tokens": tokens,
                "counted_by": "the model's tokenizer"
                if exact
                else "estimate, 4 characters a token",
                "context_tokens": self._context("linguist"),
                "shown_tokens": read_tokens,
                "expert_shown_tokens": expert_tokens,
                "cut": read_tokens < tokens,
            },
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
            label=LABELS[final.decision],
            # The judge answers with a letter only (B.6): there is no confidence to report.
            confidence=None,
            explanation=explain(final, debate),
            evidence=(*wiki_passages, *web_passages),
            usage=log.usage(),
            trace=log.trace(**fields),
            method=self.name,
            subject=article,
        )

    def references(self, verdict: Verdict) -> list[Reference]:
        """Found quotes ``Q1``.., the pool's ``W1``.. and ``S1``.., debate points ``D1``.."""
        return zofia_references(verdict)

    def _context(self, role: str) -> int | None:
        """The context window of the role's model: the setting, else what the model says."""
        return self.config.context_tokens or self.agents[role].context_tokens()

    def _budget(self, step: str) -> int:
        return self.config.max_tokens or agents.BUDGET[step]

    def _fit(
        self, article: Article, text: str, agent: str, step: Step[Any], after: str, **inputs: Any
    ) -> tuple[str, int]:
        """The longest start of ``text`` for which ``step``'s prompt and answer fit.

        The context is that of the ``agent`` role's model; the result is the text and its length
        in tokens (the whole text if the context is unknown). ``after`` is the material
        that follows the article in the prompt.
        """
        model = self.agents[agent]
        context = self._context(agent)

        def count(t: str) -> int:
            return model.count_tokens(t)[0]

        if context is None:
            return text, count(text)
        shell = step.messages(material=Delimited(f"{article_block(article, '')}{after}"), **inputs)
        overhead = sum(count(m.content) + MESSAGE_TOKENS for m in shell)
        room = context - overhead - self._budget(step.name) - MARGIN_TOKENS
        shown = fit_text(text, max(room, MIN_ARTICLE_TOKENS), count)
        return shown, count(shown)

    def _reading(self, article: Article, text: str) -> tuple[str, int]:
        """The article for the linguist and the agents that read it before retrieval.

        It is what fits the tightest of their prompts.
        """
        fits = [
            self._fit(
                article,
                text,
                "linguist",
                agents.LINGUIST,
                "",
                features=agents.DIMENSION_LIST,
                dimension="information",
            ),
            self._fit(article, text, "claim_extractor", agents.EXTRACT, ""),
        ]
        if self.config.keywords == "promptner":
            fits.append(self._fit(article, text, "claim_extractor", PROMPT_NER, ""))
        return min(fits, key=lambda fit: fit[1])

    def _debate_pool(self, article: Article, text: str, material: Material, reports: str) -> str:
        """The evidence pool, its article cut if the debate prompts need it.

        Room is kept for the pool, the task, one answer and one full exchange of history;
        when the history grows past that, its oldest turns are left out
        (`Debate.history`).
        """
        pool = material.pool(reports)
        context = self._context("pro")
        if context is None:
            return pool
        model = self.agents["pro"]
        answer = self._budget("zofia.debater")
        room = context - 3 * answer - PROMPT_TOKENS - MARGIN_TOKENS
        if model.count_tokens(pool)[0] <= room:
            return pool
        rest = Material(article_block(article, ""), material.wikipedia, material.web).pool(reports)
        left = room - model.count_tokens(rest)[0]
        shown = fit_text(text, max(left, MIN_ARTICLE_TOKENS), lambda t: model.count_tokens(t)[0])
        return Material(article_block(article, shown), material.wikipedia, material.web).pool(
            reports
        )

    def _history_fits(self, pool: str) -> Callable[[str], bool] | None:
        """Whether a debate history still fits beside ``pool`` in the debaters' context."""
        context = self._context("pro")
        if context is None:
            return None
        model = self.agents["pro"]
        used = model.count_tokens(pool)[0] + PROMPT_TOKENS + self._budget("zofia.debater")
        room = context - used - MARGIN_TOKENS
        return lambda history: model.count_tokens(history)[0] <= room

    async def _query(
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
            selector = KeywordSelector(self.recognizer, self._encoder(), self.params)
            selection = await asyncio.to_thread(selector.select, " ".join(sentences))
            by_text = {u.text: u.context for u in selection.units}
            terms = selection.keywords
            record = {"construction": "sc-mmr", **selection.to_trace(), "terms": terms}
            return terms, [by_text[t] for t in terms], record, cfg.composition
        if cfg.keywords in ("sentence", "core-claim"):
            # Without a core claim (the extractor failed) the salient sentence stands in.
            if cfg.keywords == "sentence" or extracted is None:
                index = await asyncio.to_thread(salient_sentence, sentences, self._encoder())
                text = sentences[index]
            else:
                text = extracted.core_claim
            record = {"construction": cfg.keywords, "terms": [text]}
            return [text], [text], record, "text"
        if cfg.keywords == "promptner":
            try:
                answer = await PROMPT_NER.arun(
                    self.agents["claim_extractor"],
                    log=log,
                    params=self._gen("claim_extractor", PROMPT_NER.name),
                    material=block,
                )
            except ModelOutputError as exc:
                failures.append({"agent": "promptner", "error": str(exc)})
                answer = PromptNerAnswer(candidates=[])
            names = accepted_names(answer)
            selector = KeywordSelector(self.recognizer, self._encoder(), self.params)
            chosen = await asyncio.to_thread(selector.select_names, " ".join(sentences), names)
            by_text = {u.text: u.context for u in chosen.units}
            terms = chosen.keywords
            record = {
                "construction": "promptner",
                "candidates": [c.model_dump() for c in answer.candidates],
                **chosen.to_trace(),
                "terms": terms,
            }
            return terms, [by_text[t] for t in terms], record, cfg.composition
        if cfg.keywords == "tfidf":
            terms = tfidf_keywords(sentences, cfg.variant_terms)
        else:
            try:
                listed = await LLM_NER.arun(
                    self.agents["claim_extractor"],
                    log=log,
                    params=self._gen("claim_extractor", LLM_NER.name),
                    material=block,
                    n=cfg.variant_terms,
                )
            except ModelOutputError as exc:
                failures.append({"agent": "llm-ner", "error": str(exc)})
                listed = EntityList(entities=[])
            terms = list(dict.fromkeys(e.strip() for e in listed.entities if e.strip()))
            terms = terms[: cfg.variant_terms]
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

    async def _evidence(
        self,
        article: Article,
        text: str,
        sentences: list[str],
        block: str,
        given: Sequence[Evidence] | None,
        log: CallLog,
        said: dict[str, list[dict[str, str]]],
    ) -> tuple[Any, ...]:
        """Everything but the linguist before the debate: retrieval, expert, claims."""
        cfg = self.config
        triage = self._triage(block, log, said["expert"]) if cfg.expert else _nothing(None)
        wants_claims = cfg.keywords == "core-claim" or cfg.claim_verification
        extract = self._extract(block, log, said["extract"]) if wants_claims else _nothing(None)
        if cfg.keywords == "core-claim":
            # The query is the core claim itself: the search waits for the extraction.
            choice, extracted = await schedule.gather(triage, extract)
            searched = await self._search(article, sentences, block, extracted, given, log, said)
        else:
            search = self._search(article, sentences, block, None, given, log, said)
            choice, extracted, searched = await schedule.gather(triage, extract, search)
        keywords_trace, web, wiki = searched
        web_passages = web.results if web else []
        wiki_passages = [s.chosen for s in wiki if s.chosen is not None]
        wikipedia = passages_block("Wikipedia background", "W", wiki_passages, cfg.max_chars)
        web_block = passages_block("Web search results", "S", web_passages, cfg.max_chars)
        material = Material(article=block, wikipedia=wikipedia, web=web_block)
        expert_tokens, expert_material = None, None
        if cfg.expert:
            expert_text, expert_tokens = self._fit(
                article,
                text,
                "domain_expert",
                agents.EXPERT,
                f"\n\n{wikipedia}",
                # Room for the longest names the triage can give (`agents.one_line`).
                role="x" * agents.LABEL_CHARS,
                domain="x" * agents.LABEL_CHARS,
            )
            expert_material = Material(article_block(article, expert_text), wikipedia, web_block)
        expert, checked = await schedule.gather(
            self._analyse(choice, expert_material, log, said["expert"])
            if choice is not None and expert_material is not None
            else _nothing(None),
            self._check(extracted, web_passages, log, said["claims"])
            if cfg.claim_verification and extracted is not None
            else _nothing([]),
        )
        return web, wiki, keywords_trace, material, expert, expert_tokens, checked

    async def _search(
        self,
        article: Article,
        sentences: list[str],
        block: str,
        extracted: agents.ExtractedClaims | None,
        given: Sequence[Evidence] | None,
        log: CallLog,
        said: dict[str, list[dict[str, str]]],
    ) -> tuple[dict[str, Any], WebSearch | None, list[WikiSense]]:
        """Stage 1: the query, then the web and Wikipedia."""
        terms, contexts, record, mode = await self._query(
            sentences, block, extracted, log, said["query"]
        )
        log.milestone(
            "zofia.keywords",
            f"{len(terms)} search term(s) by {record['construction']}",
            count=len(terms),
            construction=str(record["construction"]),
        )
        web, wiki = await asyncio.to_thread(
            self._retrieve, article, terms, contexts, mode, given, log
        )
        return record, web, wiki

    async def _linguist(
        self, material: Material, log: CallLog, failures: list[dict[str, str]]
    ) -> dict[str, agents.DimensionJudgement]:
        # 4.1.1: each dimension in its own session, the whole feature list in each (B.1);
        # the sessions are independent, so they run at once.
        async def judge(name: str, feature: str) -> agents.DimensionJudgement | str:
            try:
                return await agents.LINGUIST.arun(
                    self.agents["linguist"],
                    log=log,
                    params=self._gen("linguist", agents.LINGUIST.name),
                    material=material.linguist(),
                    features=agents.DIMENSION_LIST,
                    dimension=feature.split(":", 1)[0],
                )
            except ModelOutputError as exc:
                return str(exc)

        names = list(agents.DIMENSIONS)
        answers = await schedule.gather(*(judge(n, agents.DIMENSIONS[n]) for n in names))
        judged: dict[str, agents.DimensionJudgement] = {}
        for name, answer in zip(names, answers, strict=True):
            if isinstance(answer, str):
                failures.append({"agent": f"linguist {name}", "error": answer})
            else:
                judged[name] = answer
        log.milestone(
            "zofia.agent",
            f"linguist: {len(judged)} of {len(names)} dimensions judged",
            agent="linguist",
            ok=bool(judged),
            judged=len(judged),
        )
        return judged

    async def _triage(
        self, block: str, log: CallLog, failures: list[dict[str, str]]
    ) -> agents.DomainChoice | None:
        """4.1.2: the field of the article and its expert, from the article alone."""
        try:
            return await agents.DOMAIN.arun(
                self.agents["domain_expert"],
                log=log,
                params=self._gen("domain_expert", agents.DOMAIN.name),
                material=block,
            )
        except ModelOutputError as exc:
            failures.append({"agent": "domain expert", "error": str(exc)})
            return None

    async def _analyse(
        self,
        choice: agents.DomainChoice,
        material: Material,
        log: CallLog,
        failures: list[dict[str, str]],
    ) -> dict[str, Any] | None:
        # The triage's names are model output drawn from the article: one short line each,
        # and, like every untrusted input, each in its own tagged block of the prompt.
        choice = choice.cleaned()
        try:
            judged = await agents.EXPERT.arun(
                self.agents["domain_expert"],
                log=log,
                params=self._gen("domain_expert", agents.EXPERT.name),
                material=material.expert(),
                role=choice.expert_role,
                domain=choice.domain,
            )
        except ModelOutputError as exc:
            failures.append({"agent": "domain expert", "error": str(exc)})
            log.milestone(
                "zofia.agent", "domain expert: no valid report", agent="domain expert", ok=False
            )
            return None
        log.milestone("zofia.agent", "domain expert reported", agent="domain expert", ok=True)
        return {**choice.model_dump(), **judged.model_dump()}

    async def _extract(
        self, block: str, log: CallLog, failures: list[dict[str, str]]
    ) -> agents.ExtractedClaims | None:
        try:
            return await agents.EXTRACT.arun(
                self.agents["claim_extractor"],
                log=log,
                params=self._gen("claim_extractor", agents.EXTRACT.name),
                material=block,
            )
        except ModelOutputError as exc:
            failures.append({"agent": "claim extractor", "error": str(exc)})
            return None

    async def _check(
        self,
        extracted: agents.ExtractedClaims,
        passages: list[Evidence],
        log: CallLog,
        failures: list[dict[str, str]],
    ) -> list[CheckedClaim]:
        subs = [s for s in extracted.sub_claims if s.strip()]
        claims = [(extracted.core_claim, "core"), *((s, "sub") for s in subs)]
        checked = await verify_claims(
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
        log.milestone(
            "zofia.agent",
            f"claim verifier: {len(checked)} claim(s) checked",
            agent="claim verifier",
            ok=True,
            claims=len(checked),
        )
        return checked


async def _nothing(value: T) -> T:
    """A step that is switched off: its result at once."""
    return value


def explain(final: Ruling, debate: Debate | None) -> str:
    """The verdict's explanation, built from the debate: the judge gives only a letter."""
    if debate is None:
        return f"Without a debate, the judge ruled the news {final.decision.lower()}."
    rounds = f"{final.round} round{'s' if final.round != 1 else ''}"
    if final.decision == "Insufficient":
        return (
            f"After {rounds} the judge still found the evidence insufficient for a ruling, "
            "so the debate ended without one."
        )
    side = "pro" if final.decision == "Real" else "con"
    last = [t for t in debate.turns if t.side == side and not t.failed]
    said = f" The {side} side's last evidence: {last[-1].argument()}" if last else ""
    return f"The judge ruled the news {final.decision.lower()} after {rounds}.{said}"
