"""Baseline ``web-agents``: Web Retrieval Agents, a main agent that searches through a second.

    method = load_method("web-agents", models=models, sources=[news_source])
    verdict = method.verify(Article(title="Tower sold for scrap", text="..."))
    verdict.trace.model_dump()["turns"]      # each query and the summary it came back with

Jacob-Junqi Tian, Hao Yu, Yury Orlovskiy, Tyler Vergho, Mauricio Rivera, Mayank Goel,
Zachary Yang, Jean-Francois Godbout, Reihaneh Rabbany and Kellin Pelrine, "Web Retrieval
Agents for Evidence-Based Misinformation Detection", 2024 (arXiv 2409.00009); code at
github.com/ComplexData-MILA/webretrieval (``verifact/parallel.py``).

Two agents. The main agent reads the statement and, turn after turn, either asks for a
web search or gives its answer (true or false). Each search goes to the search agent,
which reads the top results (fact-checking site results left out) and writes a summary
for the query, weighing how varied and how reliable the results are; only that summary
goes back to the main agent. Here the search engine is the configured sources (or the
given evidence, ranked for each query), a claim's answer is SUPPORTED or REFUTED and an
article's REAL or FAKE. A run that reaches ``max_turns`` without an answer records no
prediction in the paper's code; here it is NOT_ENOUGH_INFO, unless ``fallback = "last"``
takes the label the main agent leaned to on its last turn.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.errors import ModelOutputError
from verity.llm.calllog import CallLog
from verity.llm.step import Delimited, Step, data_block
from verity.methods.baselines.agentloop import (
    ARTICLE_RULE,
    Outcome,
    Pair,
    clip,
    first_kept,
    head_that_fits,
    subject_block,
    without_domains,
)
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.common import numbered
from verity.methods.settings import RequestText


class ClaimTurn(BaseModel):
    """One turn of the main agent on a claim: search once more, or answer."""

    reasoning: str
    action: Literal["search", "answer"]
    query: str
    label: Literal["SUPPORTED", "REFUTED"]


class ArticleTurn(BaseModel):
    """One turn of the main agent on a news article: search once more, or answer."""

    reasoning: str
    action: Literal["search", "answer"]
    query: str
    label: Literal["REAL", "FAKE"]


class Summary(BaseModel):
    """The search agent's summary of one search's results, for the main agent."""

    summary: str


_TURN = (
    "You can use a web search tool as many times as you need: set action to search and "
    "write the query. Each search comes back as a summary of its results. When you have "
    "what you need, set action to answer. On every turn give the label you lean to now."
)

MAIN: Pair[ClaimTurn, ArticleTurn] = Pair(
    claim=Step(
        name="web_agents.main",
        instruction=(
            "Your task is to analyse whether the statement is factual. "
            f"{_TURN} Labels: SUPPORTED if the statement is factual, REFUTED if it is not."
        ),
        template="{subject}\n\nSearches so far:\n{searches}\n\nThis is turn {turn} of {limit}.",
        output=ClaimTurn,
    ),
    article=Step(
        name="web_agents.main_article",
        instruction=(
            f"Your task is to analyse whether the news article is factual. {_TURN} {ARTICLE_RULE}"
        ),
        template="{subject}\n\nSearches so far:\n{searches}\n\nThis is turn {turn} of {limit}.",
        output=ArticleTurn,
    ),
)

SUMMARISE = Step(
    name="web_agents.summarise",
    instruction=(
        "You are a search agent. Summarise what the search results say that bears on the "
        "query. Weigh how varied and how accurate the results are, be thorough, and keep "
        "the summary well organised."
    ),
    template="Query: {query}\n\nSearch results:\n{results}",
    output=Summary,
)


class WebAgentsConfig(BaselineConfig):
    """Settings of ``web-agents``."""

    # parallel.py: MAX_NUM_TURNS = 10; at most 50 is verity's bound, five times that.
    max_turns: int = Field(default=10, ge=1, le=50, description="main-agent turns before it stops")
    # parallel.py: MAX_SEARCH_RESULTS = 10, each result's text cut at 1,600 characters.
    k: int = Field(default=10, ge=1, le=50, description="passages per source per search")
    max_passages: int = Field(
        default=10, ge=1, le=100, description="results the search agent reads"
    )
    max_chars: int = Field(
        default=1600, ge=100, le=20_000, description="characters kept per result"
    )
    # parallel.py: the main agent samples at temperature 0.7.
    temperature: float = Field(default=0.7, ge=0.0, le=2.0, description="main agent only")
    # parallel.py drops every result from politifact.com, the dataset's own fact-checker.
    # A request may give its own list, of at most 200 domains (verity's bound).
    excluded_domains: tuple[RequestText, ...] = Field(default=("politifact.com",), max_length=200)
    fallback: Literal["none", "last"] = Field(
        default="none",
        description="when the turns run out: none = NOT_ENOUGH_INFO (no prediction, as in "
        "the paper's code); last = the label of the main agent's last turn",
    )


class WebAgents(Baseline):
    """A main agent that asks for searches, a search agent that summarises their results."""

    name: ClassVar[str] = "web-agents"
    paper: ClassVar[str] = (
        "Tian et al. 2024, Web Retrieval Agents for Evidence-Based Misinformation "
        "Detection (arXiv 2409.00009)"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)
    Config: ClassVar[type[BaselineConfig]] = WebAgentsConfig
    retrieves: ClassVar[bool] = True
    variants: ClassVar[dict[str, dict[str, Any]]] = {
        # For a model with a small context window (the embedded one).
        "lite": {"max_turns": 3, "k": 3, "max_passages": 3, "max_chars": 400},
        "last-fallback": {"fallback": "last"},
    }
    config: WebAgentsConfig

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Let the main agent search through the search agent until it answers."""
        log = CallLog()
        block = subject_block(subject, self.config.max_article_words)
        params = self.model.params.model_copy(update={"temperature": self.config.temperature})
        turns: list[dict[str, Any]] = []
        read: list[Evidence] = []
        last: ClaimTurn | ArticleTurn | None = None
        answered = False
        left_out = 0
        main = MAIN.pick(subject)
        for number in range(1, self.config.max_turns + 1):
            done = [t for t in turns if t["action"] == "search"]
            start = first_kept(
                self.model,
                main,
                "searches",
                functools.partial(_searches, done),
                len(done),
                subject=block,
                turn=number,
                limit=self.config.max_turns,
            )
            left_out = max(left_out, start)
            try:
                last = await main.arun(
                    self.model,
                    log=log,
                    params=params,
                    subject=block,
                    searches=_searches(done, start),
                    turn=number,
                    limit=self.config.max_turns,
                )
            except ModelOutputError as exc:
                # The paper's code records no answer when the agent's reply cannot be
                # parsed; the run ends as if the turns ran out, and the trace says why.
                turns.append({"turn": number, "action": "unreadable", "error": str(exc)})
                log.milestone("web_agents.answer", f"turn {number}: unreadable answer")
                break
            query = last.query.strip()
            if last.action == "answer" or not query:
                # A search with no query ends the run too: asking again would repeat it.
                answered = last.action == "answer"
                action = "answer" if answered else "empty search"
                turns.append({"turn": number, "reasoning": last.reasoning, "action": action})
                log.milestone("web_agents.answer", f"turn {number}: {action} ({last.label})")
                break
            found = await self._search(query, subject, evidence, log)
            show = functools.partial(_results, found, self.config.max_chars)
            found = found[
                : head_that_fits(self.model, SUMMARISE, "results", show, len(found), query=query)
            ]
            summary = await SUMMARISE.arun(
                self.model, log=log, query=query, results=show(len(found))
            )
            read += [ev for ev in found if ev not in read]
            turns.append(
                {
                    "turn": number,
                    "reasoning": last.reasoning,
                    "action": "search",
                    "query": query,
                    "results": [ev.ref for ev in found],
                    "summary": summary.summary,
                }
            )
            log.milestone(
                "web_agents.search",
                f"turn {number}: searched {clip(query, 60)!r}, {len(found)} result(s)",
                turn=number,
                results=len(found),
            )
        outcome = self._outcome(last, answered)
        return self.verdict(
            subject,
            outcome,
            log,
            evidence=read,
            turns=turns,
            answered=answered,
            searches_left_out=left_out,
        )

    async def _search(
        self,
        query: str,
        subject: Claim | Article,
        evidence: Sequence[Evidence] | None,
        log: CallLog,
    ) -> list[Evidence]:
        found = await self.gather(query, subject, evidence, log)
        return without_domains(found, self.config.excluded_domains)

    def _outcome(self, last: ClaimTurn | ArticleTurn | None, answered: bool) -> Outcome:
        if last is not None and (answered or self.config.fallback == "last"):
            return Outcome(explanation=last.reasoning, label=Label(last.label))
        return Outcome(
            explanation=f"No answer within {self.config.max_turns} turns.",
            label=Label.NOT_ENOUGH_INFO,
        )


def _results(found: list[Evidence], max_chars: int, n: int) -> str:
    """The first ``n`` results, numbered, each in its own block."""
    return numbered(found[:n], max_chars)


def _searches(searches: list[dict[str, Any]], start: int = 0) -> Delimited:
    """The searches from ``start`` on, each query and summary in its own block.

    Earlier searches are left out only when the model's context cannot hold them.
    """
    lines = [f"(searches 1 to {start} left out to fit the context)"] if start else []
    for turn in searches[start:]:
        lines.append(
            f"{turn['turn']}. Search: "
            + data_block("query", turn["query"])
            + "\nSearch result: "
            + data_block("summary", turn["summary"])
        )
    return Delimited("\n".join(lines) if lines else "(none yet)")
