"""Baseline ``factagent``: FactAgent, an expert's fake-news workflow run by an LLM with tools.

    method = load_method("factagent", models=models, sources=[news_source])
    verdict = method.verify(Article(title="Pope endorses candidate", text="...", url="..."))
    verdict.trace.model_dump()["findings"]   # each tool's reasoning and what it points to
    load_method("factagent/gossipcop", ...)  # the workflow without the political-standing tool

Xinyi Li, Yongfeng Zhang and Edward C. Malthouse, "Large Language Model Agent for Fake
News Detection", 2024 (arXiv 2405.01593). No public code was found.

FactAgent follows a workflow that fact-checking experts would: the model checks the news
with one tool at a time, each a narrow question answered from its own knowledge or from
an external source, and each tool's finding says whether it points to real or fake news.
The tools are: Phrase (sensational or clickbait wording), Language (grammar, spelling,
unprofessional style), CommonSense (plausibility), Standing (one-sided political
promotion, for political news only), Search (what other reports say: here the configured
sources, the paper used Google through SerpAPI) and URL (the credibility of the news
source's domain, when the news has a URL). At the end the model weighs every finding and
gives the verdict (``decision = "llm"``, the paper's workflow), or the findings vote
(``decision = "majority"``, the paper's comparison; ties count as fake, our rule).
Because the tools do not depend on one another they run at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, Field

from verity import schedule
from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.llm.calllog import CallLog
from verity.llm.step import Delimited, Step, data_block
from verity.methods.article import retrieval_query
from verity.methods.baselines.agentloop import (
    Outcome,
    clip,
    head_that_fits,
    judge_pair,
    subject_block,
)
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.common import numbered

Tool = Literal["phrase", "language", "commonsense", "standing", "search", "url"]
# The expert workflow's order (FactAgent section 3).
WORKFLOW: tuple[Tool, ...] = ("phrase", "language", "commonsense", "standing", "search", "url")
# Each tool's reasoning as the decision reads it, at most (ours: six answers of a model
# that rambles would not fit a small context window together).
FINDING_CHARS = 1000


class Finding(BaseModel):
    """One tool's result: its reasoning, then whether it points to real or fake news."""

    reasoning: str
    indicates: Literal["REAL", "FAKE"]


_ROLE = (
    "You are one tool in a fake-news detection workflow. Answer only the question of this "
    "tool about the news shown, explain your reasoning, then say whether what you found "
    "indicates REAL or FAKE news."
)


def _tool(name: str, question: str, template: str = "{subject}") -> Step[Finding]:
    return Step(
        name=f"factagent.{name}",
        instruction=f"{_ROLE} Question: {question}",
        template=template,
        output=Finding,
    )


TOOLS: dict[Tool, Step[Finding]] = {
    "phrase": _tool(
        "phrase",
        "does the news use sensational, emotionally charged, exaggerated or clickbait "
        "phrases of the kind common in fake news?",
    ),
    "language": _tool(
        "language",
        "does the news contain grammar errors, spelling mistakes, misused punctuation or "
        "an informal, unprofessional style that a professional outlet would not publish?",
    ),
    "commonsense": _tool(
        "commonsense",
        "judged by common sense and general knowledge, is what the news reports plausible, "
        "or does it contradict how the world is known to work?",
    ),
    "standing": _tool(
        "standing",
        "is this political news that promotes one side's standing or attacks the other "
        "side instead of reporting facts in a balanced way?",
    ),
    "search": _tool(
        "search",
        "do the search results about this news confirm it, contradict it, or show that no "
        "credible outlet reports it?",
        "{subject}\n\nSearch results:\n{results}",
    ),
    "url": _tool(
        "url",
        "is the domain the news was published on a credible news source, or one known for "
        "fake, satirical or unreliable content?",
        "{subject}\n\nPublished at the domain: {domain}",
    ),
}

DECIDE = judge_pair(
    "factagent.decide",
    "You are a fact-checking expert who ran a workflow of tools on a piece of news. Weigh "
    "what every tool found, the agreeing and the conflicting findings, and decide the "
    "veracity of the news.",
    "{subject}\n\nFindings of the workflow:\n{findings}",
)


class FactAgentConfig(BaselineConfig):
    """Settings of ``factagent``."""

    tools: tuple[Tool, ...] = Field(
        default=WORKFLOW,
        max_length=len(WORKFLOW),
        description="tools run, in workflow order (the paper leaves out standing on "
        "GossipCop, which is not political news)",
    )
    decision: Literal["llm", "majority"] = Field(
        default="llm", description="llm = the model weighs the findings; majority = a vote"
    )
    # Ours: a search tool's results are read whole by one call, so they are kept short.
    max_passages: int = Field(default=5, ge=1, le=100, description="search results the tool reads")
    max_chars: int = Field(
        default=500, ge=100, le=20_000, description="characters shown per result"
    )


class FactAgent(Baseline):
    """Tools run as an expert's workflow; the model, or a vote, decides from their findings."""

    name: ClassVar[str] = "factagent"
    paper: ClassVar[str] = (
        "Li, Zhang and Malthouse 2024, Large Language Model Agent for Fake News Detection "
        "(arXiv 2405.01593)"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)
    Config: ClassVar[type[BaselineConfig]] = FactAgentConfig
    retrieves: ClassVar[bool] = True
    variants: ClassVar[dict[str, dict[str, Any]]] = {
        "gossipcop": {"tools": tuple(t for t in WORKFLOW if t != "standing")},
        "majority": {"decision": "majority"},
        # For a model with a small context window (the embedded one).
        "lite": {"max_article_words": 200, "max_passages": 3, "max_chars": 300},
    }
    config: FactAgentConfig

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Run each tool of the workflow, then decide from their findings."""
        log = CallLog()
        block = subject_block(subject, self.config.max_article_words)
        url = subject.url if isinstance(subject, Article) else subject.source_url
        tools = list(dict.fromkeys(self.config.tools))
        skipped = ["url"] if "url" in tools and not url else []
        tools = [t for t in tools if t not in skipped]
        results = await schedule.gather(
            *(self._run(tool, subject, block, url, evidence, log) for tool in tools)
        )
        findings = [
            {"tool": tool, "indicates": finding.indicates, "reasoning": finding.reasoning}
            for tool, (finding, _) in zip(tools, results, strict=True)
        ]
        searched = [ev for _, found in results for ev in found]
        votes = Counter(f["indicates"] for f in findings)
        if self.config.decision == "majority" or not findings:
            outcome: BaseModel = _vote(subject, votes)
        else:
            outcome = await DECIDE.pick(subject).arun(
                self.model, log=log, subject=block, findings=_findings(findings)
            )
        log.milestone(
            "factagent.decision",
            f"{self.config.decision}: {votes['REAL']} real, {votes['FAKE']} fake",
            real=votes["REAL"],
            fake=votes["FAKE"],
        )
        return self.verdict(
            subject,
            outcome,
            log,
            evidence=searched,
            findings=findings,
            skipped=skipped,
            votes={"REAL": votes["REAL"], "FAKE": votes["FAKE"]},
            decision=self.config.decision,
        )

    async def _run(
        self,
        tool: Tool,
        subject: Claim | Article,
        block: Delimited,
        url: str | None,
        evidence: Sequence[Evidence] | None,
        log: CallLog,
    ) -> tuple[Finding, list[Evidence]]:
        """One tool's finding, and the passages it read (the search tool only)."""
        inputs: dict[str, Any] = {"subject": block}
        found: list[Evidence] = []
        if tool == "search":
            found = await self.gather(_query(subject), subject, evidence, log)

            def show(n: int) -> str:
                return numbered(found[:n], self.config.max_chars)

            found = found[
                : head_that_fits(
                    self.model, TOOLS[tool], "results", show, len(found), subject=block
                )
            ]
            inputs["results"] = show(len(found))
        elif tool == "url":
            inputs["domain"] = urlparse(url or "").netloc or (url or "")
        finding = await TOOLS[tool].arun(self.model, log=log, **inputs)
        log.milestone("factagent.tool", f"{tool}: {finding.indicates}", tool=tool)
        return finding, found


def _query(subject: Claim | Article) -> str:
    """FactAgent searches for the news claim: a claim's text, an article's title or opening."""
    if isinstance(subject, Article):
        return retrieval_query(subject)
    return subject.text


def _vote(subject: Claim | Article, votes: Counter[str]) -> Outcome:
    """The majority of the findings; a tie counts as fake (our rule: the paper gives none)."""
    real, fake = votes["REAL"], votes["FAKE"]
    is_real = real > fake
    if isinstance(subject, Article):
        label = Label.REAL if is_real else Label.FAKE
    else:
        label = Label.SUPPORTED if is_real else Label.REFUTED
    total = real + fake
    share = max(real, fake) / total if total else None
    return Outcome(
        explanation=f"{real} finding(s) point to real news, {fake} to fake news.",
        label=label,
        confidence=share,
    )


def _findings(findings: list[dict[str, Any]]) -> Delimited:
    """Each tool's finding in its own block, named by the tool."""
    return Delimited(
        "\n".join(
            data_block(
                "finding",
                clip(f["reasoning"], FINDING_CHARS),
                tool=f["tool"],
                indicates=f["indicates"],
            )
            for f in findings
        )
    )
