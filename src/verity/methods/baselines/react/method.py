"""Baseline ``react``: ReAct, thoughts interleaved with search actions and their observations.

    method = load_method("react", models=models, sources=[OfflineWiki()])
    verdict = method.verify(Claim(text="The Danube flows through Vienna."))
    verdict.trace.model_dump()["steps"]      # thought, action, argument, observation per step
    verdict = method.verify(Article(title="Tower sold for scrap", text="..."))   # REAL or FAKE

Shunyu Yao, Jeffrey Zhao, Dian Yu, Nan Du, Izhak Shafran, Karthik Narasimhan and Yuan Cao,
"ReAct: Synergizing Reasoning and Acting in Language Models", ICLR 2023 (arXiv
2210.03629); code at github.com/ysymyth/ReAct (``FEVER.ipynb``, ``wikienv.py``).

At each step the model writes a thought and one action: ``search[query]`` asks the search
tool and shows the first sentences of what it finds, ``lookup[keyword]`` shows the next
sentence holding the keyword in what the last search found, ``finish[label]`` ends with the
answer. The observation of each action joins the trajectory the next step reads. The
paper's search tool was a Wikipedia API and ZoFia gave ReAct a web search API; here it is
the configured sources (or the given evidence, ranked for each query). A run that reaches
``max_steps`` without finishing has no answer in the paper's code; here it is
NOT_ENOUGH_INFO, unless ``fallback = "judge"`` asks the model for a label from its
trajectory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.llm.calllog import CallLog
from verity.llm.step import Delimited, data_block, inert
from verity.methods.baselines.agentloop import (
    Outcome,
    clip,
    first_kept,
    kind_of,
    read_label,
    subject_block,
)
from verity.methods.baselines.base import Baseline, BaselineConfig
from verity.methods.baselines.react.prompts import FINAL, NO_STEPS, SHOTS, STEP
from verity.nlp.text import split_sentences


class ReactConfig(BaselineConfig):
    """Settings of ``react``."""

    # FEVER.ipynb: `for i in range(1, 8)`, seven thought-action-observation steps; at
    # most 30 is verity's bound, a little over four times that.
    max_steps: int = Field(default=7, ge=1, le=30, description="steps before the run stops")
    # wikienv.py shows the first 5 sentences of the page a search lands on.
    observation_sentences: int = Field(
        default=5, ge=1, le=50, description="sentences shown of each passage a search finds"
    )
    # A web search API returns several results where Wikipedia gave one page; ours.
    observe: int = Field(default=3, ge=1, le=20, description="passages shown per search")
    demonstrations: bool = Field(
        default=True, description="show two short example steps of the format first"
    )
    fallback: Literal["none", "judge"] = Field(
        default="none",
        description="when the steps run out: none = NOT_ENOUGH_INFO (no answer, as in the "
        "paper's code); judge = one more call for a label from the trajectory",
    )


@dataclass
class _Episode:
    """What one run has seen: its steps, the last search's sentences, the lookup cursor."""

    turns: list[dict[str, Any]] = field(default_factory=list)
    seen: list[Evidence] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    keyword: str | None = None
    found: list[str] = field(default_factory=list)
    cursor: int = 0
    # The most earlier steps ever left out of a prompt to fit the model's context.
    left_out: int = 0

    def trajectory(self, start: int = 0) -> Delimited:
        """The steps from ``start`` on, every model-written or retrieved part inert or in a block.

        Earlier steps are left out only when the model's context cannot hold them.
        """
        if not self.turns:
            return NO_STEPS
        lines = [f"(steps 1 to {start} left out to fit the context)"] if start else []
        for turn in self.turns[start:]:
            n = turn["step"]
            lines.append(f"Thought {n}: {inert(turn['thought'])}")
            lines.append(f"Action {n}: {turn['action']}[{inert(turn['argument'])}]")
            lines.append(f"Observation {n}: {turn['shown']}")
        return Delimited("\n".join(lines))

    def lookup(self, keyword: str) -> str:
        """wikienv.py's lookup: the next sentence holding the keyword, counted per keyword."""
        if keyword != self.keyword:
            self.keyword, self.cursor = keyword, 0
            self.found = [s for s in self.sentences if keyword.lower() in s.lower()]
        if self.cursor >= len(self.found):
            return "No more results."
        self.cursor += 1
        return f"(Result {self.cursor} / {len(self.found)}) {self.found[self.cursor - 1]}"


class React(Baseline):
    """Thought, action, observation, until the model finishes or the steps run out."""

    name: ClassVar[str] = "react"
    paper: ClassVar[str] = (
        "Yao et al. 2023, ReAct: Synergizing Reasoning and Acting in Language Models (ICLR)"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim, Article)
    Config: ClassVar[type[BaselineConfig]] = ReactConfig
    retrieves: ClassVar[bool] = True
    variants: ClassVar[dict[str, dict[str, Any]]] = {
        # For a model with a small context window (the embedded one): fewer, shorter steps.
        "lite": {"max_steps": 4, "observe": 1, "observation_sentences": 3},
        "judge-fallback": {"fallback": "judge"},
    }
    config: ReactConfig

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Run the thought-action-observation loop, then make its finish the verdict."""
        log = CallLog()
        block = subject_block(subject, self.config.max_article_words)
        step = STEP.pick(subject)
        shots = SHOTS[kind_of(subject)] if self.config.demonstrations else ()
        episode = _Episode()
        answer: Label | None = None
        for number in range(1, self.config.max_steps + 1):
            start = first_kept(
                self.model,
                step,
                "trajectory",
                episode.trajectory,
                len(episode.turns),
                shots=shots,
                subject=block,
                step=number,
            )
            episode.left_out = max(episode.left_out, start)
            move = await step.arun(
                self.model,
                log=log,
                shots=shots,
                subject=block,
                trajectory=episode.trajectory(start),
                step=number,
            )
            argument = move.argument.strip()
            if move.action == "finish":
                answer = read_label(argument, subject)
                shown = plain = "Finished." if answer else _bad_label(subject)
            elif move.action == "search":
                shown, plain = await self._search(argument, subject, evidence, episode, log)
            else:
                plain = episode.lookup(argument) if argument else "No keyword given."
                shown = inert(plain)
            episode.turns.append(
                {
                    "step": number,
                    "thought": move.thought,
                    "action": move.action,
                    "argument": argument,
                    "shown": shown,
                    "observation": clip(plain, 600),
                }
            )
            log.milestone(
                "react.step",
                f"step {number}: {move.action}[{clip(argument, 60)}]",
                step=number,
                action=move.action,
            )
            if answer is not None:
                break
        outcome = await self._outcome(subject, block, episode, answer, log)
        return self.verdict(
            subject,
            outcome,
            log,
            evidence=episode.seen,
            steps=[{k: v for k, v in t.items() if k != "shown"} for t in episode.turns],
            finished=answer is not None,
            steps_used=len(episode.turns),
            steps_left_out=episode.left_out,
        )

    async def _search(
        self,
        query: str,
        subject: Claim | Article,
        evidence: Sequence[Evidence] | None,
        episode: _Episode,
        log: CallLog,
    ) -> tuple[str, str]:
        """The observation of a search as the model sees it, and as plain text."""
        if not query:
            return "The search query was empty.", "The search query was empty."
        found = (await self.gather(query, subject, evidence, log))[: self.config.observe]
        episode.sentences, episode.keyword = [], None  # wikienv.py: a search resets lookup
        if not found:
            return f"No results for {inert(query)}.", f"No results for {query}."
        blocks, texts = [], []
        for ev in found:
            kept = split_sentences(ev.text)[: self.config.observation_sentences]
            episode.sentences += kept
            text = " ".join(kept)[: self.config.max_chars] or ev.text[: self.config.max_chars]
            blocks.append(data_block("passage", text, title=ev.title, source=ev.source))
            texts.append(text)
            if ev not in episode.seen:
                episode.seen.append(ev)
        return "<observation>" + "\n".join(blocks) + "</observation>", " | ".join(texts)

    async def _outcome(
        self,
        subject: Claim | Article,
        block: Delimited,
        episode: _Episode,
        answer: Label | None,
        log: CallLog,
    ) -> BaseModel:
        if answer is not None:
            thought = episode.turns[-1]["thought"]
            return Outcome(explanation=thought, label=answer)
        if self.config.fallback == "judge":
            log.milestone("react.fallback", "steps spent: asking for a label from the trajectory")
            final = FINAL.pick(subject)
            start = first_kept(
                self.model,
                final,
                "trajectory",
                episode.trajectory,
                len(episode.turns),
                subject=block,
            )
            return await final.arun(
                self.model, log=log, subject=block, trajectory=episode.trajectory(start)
            )
        return Outcome(
            explanation=f"No answer within {self.config.max_steps} steps.",
            label=Label.NOT_ENOUGH_INFO,
        )


def _bad_label(subject: Claim | Article) -> str:
    if isinstance(subject, Article):
        return "Invalid label: finish with REAL or FAKE."
    return "Invalid label: finish with SUPPORTED, REFUTED or NOT_ENOUGH_INFO."
