"""WKGFC (paper section 4): fact-checking with Wikidata, web evidence and an agent.

    method = load_method("wkgfc", models=models, sources=[make_source("kg-local")])
    verdict = method.verify(Claim(text="Barack Obama's wife is Michelle Obama."))
    verdict.trace.actions      # the initial retrieval, then every action and observation
    verdict.trace.subgraph     # seeds and facts with QIDs and PIDs

The graph is the first source passed that is a knowledge graph (``kg-local``,
``wikidata``); the other sources are the web. ``mode`` gives the paper's ablations
(Table 3): ``kg-only`` (the initial retrieval's N pruned hops, then the verdict),
``web-only`` (one web search, no graph at all), ``kg-agent`` (the agent without web
search), ``kg-web`` (N hops and one web search with the claim, no agent) and ``full``.
Every default is the paper's where it gives one (cited at the field), else verity's
choice, said so; docs/wkgfc.md has the table of both.

A check's independent steps run at once (`verity.schedule`; ``parallel`` decides): a
hop's entity prunings, the entity lookups, a search's filter batches and the reading of
its passages, and kg-web's coarse retrieval beside the hops. The hops, the policy's steps
and the verdict each read what came before and run in turn. Every branch's results are
merged in the order a sequential run makes them, so both give the same verdict and trace.
Graph, encoder and source work runs in worker threads.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Sequence
from itertools import zip_longest
from typing import Any, ClassVar

from pydantic import Field

from verity import schedule
from verity.domain import Article, Claim, Evidence, Label, Reference, Verdict
from verity.errors import ConfigError
from verity.grounding.cite import cited, reference
from verity.kg.base import KnowledgeGraph, Triple
from verity.kg.facts import fact_text
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.llm.step import Delimited, Step, data_block, inert
from verity.methods.base import MethodBase, MethodConfig
from verity.methods.common import require_claim
from verity.methods.settings import OperatorPath
from verity.methods.wkgfc.agent import Episode, Tools, run_policy
from verity.methods.wkgfc.context import fit_lines, free_tokens
from verity.methods.wkgfc.expand import Beam, expand_hop, valid_choices
from verity.methods.wkgfc.fusion import WebFact, fuse
from verity.methods.wkgfc.linking import seed_subgraph
from verity.methods.wkgfc.policyfile import load_policy
from verity.methods.wkgfc.prompts import ACT, FORCED_VERDICT, POLICY, VERDICT, Mode
from verity.methods.wkgfc.subgraph import Subgraph
from verity.methods.wkgfc.web import WebResult, WebSearch, coarse, fine, passage_key
from verity.nlp.embed import Encoder, default_encoder
from verity.nlp.ner import EntityRecognizer
from verity.sources.base import Source
from verity.sources.kg import GraphSource

ROLES = ("ranker", "policy", "filter", "extractor", "judge")
GIVEN = "(given evidence)"  # the query under which given evidence is recorded


class WkgfcConfig(MethodConfig):
    """Settings of ``wkgfc``: the paper's where it gives them, else verity's, each said so."""

    mode: Mode = "full"
    # Section 5.6: "we set k = 4 and N = 4 in our main experiments", after a sweep of k
    # from 3 to 5 and N from 2 to 5 (Fig. 3). The upper bounds are verity's: four times
    # the sweep's largest k, twice its largest N.
    k: int = Field(default=4, ge=1, le=20, description="beam size: relations and entities per hop")
    hops: int = Field(default=4, ge=0, le=10, description="N, the hops of the initial retrieval")
    # verity's choices: the paper bounds the agent's steps (5.7) without giving the bound;
    # the upper bounds below are verity's too.
    max_steps: int = Field(
        default=6, ge=1, le=20, description="policy actions before a forced verdict"
    )
    agent_hops: int = Field(default=4, ge=0, le=10, description="expandKG hops the agent may add")
    follow_limit: int = Field(
        default=50, ge=1, le=1000, description="statements read per kept relation"
    )
    web_k: int = Field(default=10, ge=1, le=50, description="passages per web source")
    web_keep: int = Field(default=5, ge=1, le=50, description="most passages kept per search")
    passage_chars: int = Field(
        default=600, ge=1, le=20_000, description="characters of a web passage"
    )
    given_chars: int = Field(
        default=3000, ge=1, le=50_000, description="characters of a given passage"
    )
    # At most 2**20 tokens: above the context of any model verity can reach.
    context_tokens: int | None = Field(
        default=None,
        ge=256,
        le=2**20,
        description="the models' context, when the backend cannot tell",
    )
    fuse_web: bool = Field(default=True, description="turn kept passages into graph statements")
    facts_per_passage: int = Field(default=3, ge=1, le=20)
    # A file on the server: the operator's, not a request's (verity.methods.settings).
    policy_prompt: OperatorPath | None = Field(
        default=None, description="an optimised policy prompt (JSON file from verity optimize)"
    )


class WkgfcMethod(MethodBase):
    """WKGFC's retrieval, expansion, agent and verdict."""

    name: ClassVar[str] = "wkgfc"
    paper: ClassVar[str] = (
        "Gong, Sinnott, Qi, Multi-Sourced, Multi-Agent Evidence Retrieval for Fact-Checking"
    )
    # The gold setting keeps the graph (verity's extra; the paper ran SummEval open).
    sources_in_gold: ClassVar[bool] = True
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    variants: ClassVar[dict[str, dict[str, Any]]] = {
        "kg-only": {"mode": "kg-only"},
        "web-only": {"mode": "web-only"},
        "kg-agent": {"mode": "kg-agent"},
        "kg-web": {"mode": "kg-web"},
        "no-opt": {"policy_prompt": None},
    }
    config: WkgfcConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        self.config = WkgfcConfig(**config)
        self.models = models
        self.sources = list(sources)
        graphs = [s for s in self.sources if isinstance(s, GraphSource)]
        self.graph: KnowledgeGraph | None = graphs[0].graph if graphs else None
        self.web = [s for s in self.sources if not isinstance(s, GraphSource)]
        if self.graph is None and self.config.mode != "web-only":
            raise ConfigError(
                "wkgfc needs a knowledge graph among its sources: --source kg-local "
                "(offline) or --source wikidata"
            )
        self.agents = {role: models.for_role(role) for role in ROLES}
        self.setting = "open"
        self.recognizer = EntityRecognizer()
        # An optimised prompt is read once: its text, and the examples it has seen.
        saved = load_policy(self.config.policy_prompt) if self.config.policy_prompt else None
        self.policy = saved.prompt if saved else POLICY
        self._seen = saved.examples if saved else frozenset()

    def with_policy(self, text: str) -> WkgfcMethod:
        """The same method with another policy prompt (the optimiser's candidates)."""
        twin = copy.copy(self)
        twin.policy = text
        return twin

    def excluded_ids(self) -> set[tuple[str, str]]:
        """Examples an optimised prompt was trained or validated on: not for evaluation."""
        return set(self._seen)

    def to_dict(self) -> dict[str, Any]:
        """Configuration for run manifests."""
        return {
            "method": self.name,
            **self.config.model_dump(),
            "policy": self.policy,
            "models": self.models.to_dict(),
            "sources": [s.to_dict() for s in self.sources],
        }

    def warnings(self) -> list[str]:
        """What a benchmark report says about this run besides its figures."""
        if self.setting == "gold":
            return [
                "wkgfc in the gold setting reads the dataset's gold passages beside the "
                "graph: verity's extra, not the paper's protocol (5.2: retrieval methods "
                "ran open on SummEval)"
            ]
        return []

    def use_setting(self, setting: str) -> None:
        """Told by the benchmark which evidence setting it runs (open, gold, closed)."""
        self.setting = setting

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Check a claim; ``evidence``, when given, is read with the first observation.

        Given evidence (the gold setting, verity's extra) is the caller's choice: it skips
        coarse retrieval and the filter, each passage (at most ``web_keep``) has
        confidence 1.0 and is shown up to ``given_chars`` characters.
        """
        claim = require_claim(subject, self.name)
        cfg, log = self.config, CallLog()
        graph = self.graph if cfg.mode != "web-only" else None  # 5.5: web only, no graph
        mark = graph.queries.mark() if graph is not None else 0
        episode = Episode(claim=claim.text, sub=Subgraph())
        web_facts: list[WebFact] = []

        async def expand(start: list[str] | None = None) -> dict[str, Any]:
            assert graph is not None
            beam = Beam(claim.text, graph, self.agents["ranker"], _relevance, cfg.k,
                        cfg.follow_limit, log, cfg.context_tokens)  # fmt: skip
            return await expand_hop(episode.sub, beam, start)

        read: set[tuple[str, str]] = set()  # passages already turned into statements

        async def absorb(found: WebResult) -> WebResult:
            episode.web.append(found)
            # A passage an earlier search kept is not read again (4.4: a repeated search
            # is redundant; it must not add the same statements twice).
            fresh = {passage_key(e): e for e, _ in found.kept if passage_key(e) not in read}
            read.update(fresh)
            if cfg.fuse_web and graph is not None and fresh:
                web_facts.extend(
                    await fuse(
                        list(fresh.values()), claim.text, episode.sub, graph,
                        self.agents["extractor"], per_passage=cfg.facts_per_passage,
                        chars=self._chars(found), log=log, context=cfg.context_tokens,
                        earlier=tuple(web_facts),
                    )
                )  # fmt: skip
            return found

        search_with = WebSearch(
            self.web, claim.text, self.agents["filter"], cfg.web_k, cfg.web_keep,
            cfg.passage_chars, claim.date, log, cfg.context_tokens,
        )  # fmt: skip

        async def search(query: str, found: WebResult | None = None) -> WebResult:
            if found is None:
                found = await coarse(search_with, query)
            lines = await asyncio.to_thread(self._fact_lines, episode.sub, claim.text)
            found = await absorb(await fine(search_with, found, lines))
            log.milestone(
                "wkgfc.search",
                f"web search: {len(found.kept)} of {found.found} passage(s) kept",
                found=found.found,
                kept=len(found.kept),
                failed=found.error is not None,
            )
            return found

        async def facts() -> str:
            shown = await asyncio.to_thread(self._prompt_facts, ACT, claim.text, episode, web_facts)
            return shown[0]

        early: WebResult | None = None
        if graph is not None:
            first = self._first_observation(claim.text, graph, episode, expand)
            if cfg.mode == "kg-web":
                # Variant 4 searches with the claim, not with what the graph found (5.5):
                # the coarse retrieval runs beside the hops; the filter, which reads the
                # subgraph (4.3), waits for them.
                _, early = await schedule.gather(first, coarse(search_with, claim.text))
            else:
                await first
        if evidence is not None:
            # Gold evidence is part of the first observation, so a policy that decides at
            # once has still read it.
            given = WebResult(query=GIVEN, found=len(evidence))
            given.kept = [(e, 1.0) for e in list(evidence)[: cfg.web_keep]]
            await absorb(given)
            episode.actions.append(
                {"action": "givenEvidence", "reason": "evidence supplied with the claim",
                 "observation": given.to_trace(), "summary": f"{len(given.kept)} passages",
                 "taken": True, "new": len(given.kept)}
            )  # fmt: skip
        if cfg.mode in ("kg-web", "web-only"):
            found = await search(claim.text, early)
            episode.actions.append(
                {"action": "webSearch", "reason": "fixed schedule", "query": found.query,
                 "observation": found.to_trace(), "summary": f"{len(found.kept)} kept",
                 "taken": found.error is None, "new": len(found.kept)}
            )  # fmt: skip
        if cfg.mode in ("full", "kg-agent"):
            await run_policy(
                episode,
                model=self.agents["policy"],
                instruction=self.policy,
                tools=Tools(
                    expand=expand,
                    search=search,
                    facts=facts,
                    web=lambda: self._web_text(episode, web_facts),
                ),
                max_steps=cfg.max_steps,
                agent_hops=cfg.agent_hops,
                k=cfg.k,
                log=log,
                # Without a web source a search could only come back empty.
                web_allowed=cfg.mode == "full" and bool(self.web),
            )
        return await self._verdict(claim, episode, web_facts, log, mark, graph)

    def references(self, verdict: Verdict) -> list[Reference]:
        """The facts ``[T<n>]`` and passages ``[W<n>]`` as the judge's prompt numbered them."""
        return numbered_references(verdict)

    async def _first_observation(
        self,
        claim: str,
        graph: KnowledgeGraph,
        episode: Episode,
        expand: Callable[[], Awaitable[dict[str, Any]]],
    ) -> None:
        """The first observation (4.1, 4.2): link the seeds, then N pruned hops from them.

        Each hop starts from where the last one ended, so the hops run one after another.
        """
        episode.sub, unlinked = await seed_subgraph(claim, graph, self.recognizer)
        hops = []
        while episode.sub.hops < self.config.hops and episode.sub.frontier:
            hops.append(await expand())
        episode.actions.append(
            {
                "action": "initKGRetrieval",
                "reason": "first observation",
                "summary": f"{len(episode.sub.seeds)} seeds, {len(episode.sub.facts)} facts "
                f"in {episode.sub.hops} hops",
                "taken": True,
                "new": len(episode.sub.facts),
                "observation": {
                    "seeds": [s.qid for s in episode.sub.seeds],
                    "unlinked": unlinked,
                    "hops": hops,
                    "facts": len(episode.sub.facts),
                },
            }
        )

    @staticmethod
    def _fact_lines(sub: Subgraph, claim: str) -> list[str]:
        """The subgraph's facts, closest to the claim first, as the web filter sees them."""
        return [fact_text(f) for f in sub.ranked(_relevance, claim)]

    def _prompt_facts(
        self, step: Step[Any], claim: str, episode: Episode, web_facts: Sequence[WebFact]
    ) -> tuple[str, list[Triple]]:
        """The facts a prompt shows, closest to the claim first, as many as fit."""
        ranked = episode.sub.ranked(_relevance, claim)
        role = "policy" if step is ACT else "judge"
        inputs: dict[str, Any] = {
            "claim": claim,
            "facts": "",
            "web": self._web_text(episode, web_facts),
        }
        if step is ACT:
            names = episode.sub.labels()
            inputs.update(
                history=episode.history(), left=0, hops_left=0, actions="",
                entities=", ".join(f"{names.get(q, '?')} ({q})" for q in episode.sub.expandable()),
            )  # fmt: skip
        room = free_tokens(self.agents[role], step, context=self.config.context_tokens, **inputs)
        lines = [f"[T{i}] {fact_text(f)}" for i, f in enumerate(ranked, start=1)]
        shown = fit_lines(lines, room, self.agents[role])
        episode.cut = max(episode.cut, len(lines) - len(shown))
        return "\n".join(shown) or "(no facts yet)", ranked[: len(shown)]

    def _web_text(self, episode: Episode, web_facts: Sequence[WebFact]) -> str:
        passages = self._passages(episode)
        if not passages:
            return "(none)"
        lines = []
        for i, (e, confidence, given) in enumerate(passages, start=1):
            kind = "given" if given else "web"
            # Each passage in its own block, so that one cannot forge the next.
            block = data_block(
                "passage", e.text[: self._shown_chars(given)], title=e.title or e.source
            )
            lines.append(f"[W{i}] ({kind}, confidence {confidence:.2f}) {block}")
        fused = [f.text() for f in web_facts if f.status in ("web fact", "annotation")]
        if fused:
            lines.append("Statements read from these passages:")
            lines.extend(f"- {inert(line)}" for line in fused)
        return Delimited("\n".join(lines))

    def _shown_chars(self, given: bool) -> int:
        """How much of a passage the prompts show: given evidence has its own length."""
        return self.config.given_chars if given else self.config.passage_chars

    def _chars(self, result: WebResult) -> int:
        """How much of a result's passages the prompts show."""
        return self._shown_chars(result.query == GIVEN)

    @staticmethod
    def _passages(episode: Episode) -> list[tuple[Evidence, float, bool]]:
        """Every kept passage once, in the order found: evidence, confidence, given."""
        seen: dict[tuple[str, str], tuple[Evidence, float, bool]] = {}
        for result in episode.web:
            for ev, confidence in result.kept:
                seen.setdefault(passage_key(ev), (ev, confidence, result.query == GIVEN))
        return list(seen.values())

    async def _verdict(
        self,
        claim: Claim,
        episode: Episode,
        web_facts: Sequence[WebFact],
        log: CallLog,
        mark: int,
        graph: KnowledgeGraph | None,
    ) -> Verdict:
        step = FORCED_VERDICT if episode.forced else VERDICT
        facts_text, shown = await asyncio.to_thread(
            self._prompt_facts, step, claim.text, episode, web_facts
        )
        passages = self._passages(episode)
        judged = await step.arun(
            self.agents["judge"],
            log=log,
            claim=claim.text,
            facts=facts_text,
            web=self._web_text(episode, web_facts),
        )
        facts = [shown[i] for i in valid_choices(judged.cited_facts, len(shown), len(shown))]
        cited = [
            passages[i][0]
            for i in valid_choices(judged.cited_passages, len(passages), len(passages))
        ]
        evidence = [
            Evidence(
                text=fact_text(f),
                title=f.subject_label or f.subject,
                source=graph.name if graph is not None else "kg",
                id=f"{f.subject}|{f.pid}|{f.object}",
                url=f"https://www.wikidata.org/wiki/{f.subject}",
            )
            for f in facts
        ]
        stats = (
            graph.queries.summary(since=mark, check=schedule.check_id())
            if graph is not None
            else None
        )
        return Verdict(
            label=Label(judged.label),
            confidence=judged.confidence,
            explanation=judged.justification,
            evidence=(*evidence, *cited),
            usage=log.usage(),
            trace=log.trace(
                mode=self.config.mode,
                actions=episode.actions,
                subgraph=episode.sub.to_trace(),
                facts_shown=len(shown),
                facts_cut=episode.cut,
                web=[w.to_trace(self._chars(w)) for w in episode.web],
                web_facts=[f.to_trace() for f in web_facts],
                forced_verdict=episode.forced,
                # What the judge's prompt numbered [T<n>] and [W<n>], as it showed them:
                # what its justification may cite (`references`).
                shown_facts=[fact_text(f) for f in shown],
                shown_passages=[
                    {"title": e.title or e.source, "text": e.text[: self._shown_chars(given)]}
                    for e, _, given in passages
                ],
                cited_facts=judged.cited_facts,
                cited_passages=judged.cited_passages,
                citations={
                    "cited": len(judged.cited_facts) + len(judged.cited_passages),
                    "valid": len(facts) + len(cited),
                },
                model_calls=calls_by_step(log),
                sparql_queries=stats.sparql if stats else 0,
                graph_queries=stats.queries if stats else 0,
            ),
            method=self.name,
            subject=claim,
        )


def numbered_references(verdict: Verdict) -> list[Reference]:
    """The judge's facts ``T1``.. and passages ``W1``.., the ones the verdict cites first.

    The ids the justification names come first, then those the judge listed as cited,
    then the rest, a fact and a passage in turn by rank: a checker shown only the first
    few then has what the explanation rests on.
    """
    trace = verdict.trace.model_extra or {}
    every: dict[str, Reference] = {}
    for i, text in enumerate(trace.get("shown_facts") or [], start=1):
        every[f"T{i}"] = reference(f"T{i}", str(text), "fact")
    facts = list(every)
    for i, shown in enumerate(trace.get("shown_passages") or [], start=1):
        every[f"W{i}"] = reference(f"W{i}", shown["text"], "passage", shown.get("title") or "")
    web = [key for key in every if key.startswith("W")]
    order = [
        *cited(verdict.explanation),
        *(f"T{n}" for n in trace.get("cited_facts") or []),
        *(f"W{n}" for n in trace.get("cited_passages") or []),
        *(key for pair in zip_longest(facts, web) for key in pair if key),
    ]
    return [every[key] for key in dict.fromkeys(order) if key in every]


def calls_by_step(log: CallLog) -> dict[str, Any]:
    """Model calls as the paper counts them (decisions) and their repair rounds, per step.

    A decision is one answer the method asked for; a repair round asks again after an
    answer that could not be read. Usage's ``llm_calls`` counts both.
    """
    steps: dict[str, dict[str, int]] = {}
    for call in log.calls:
        row = steps.setdefault(call.step, {"decisions": 0, "repairs": 0})
        row["decisions"] += 1
        row["repairs"] += call.attempts - 1
    return {
        "decisions": sum(r["decisions"] for r in steps.values()),
        "repairs": sum(r["repairs"] for r in steps.values()),
        "by_step": steps,
    }


def _relevance(claim: str, texts: Sequence[str]) -> list[float]:
    """Cosine of each text with the claim under the shared sentence encoder.

    The same claim and facts are ranked again at every hop and step: their vectors are
    remembered, and only new facts are encoded.
    """
    encoder = default_encoder()
    vectors = encoder.encode([claim, *texts], remember=True)
    return [float(x) for x in Encoder.cosine_matrix(vectors[:1], vectors[1:])[0]]
