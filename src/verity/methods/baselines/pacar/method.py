"""Baseline ``pacar``: planning and customized action reasoning for fact-checking.

Zhao, Wang, Wang, Cheng, Zhang and Wong (2024), "PACAR: Automated Fact-Checking with
Planning and Customized Action Reasoning Using Large Language Models", LREC-COLING 2024,
pages 12564-12573 (LoCal's reference [64]). No public code was found.

    method = load_method("pacar", models=models)
    verdict = method.verify(claim, evidence=gold_passages)       # gold, as LoCal ran it
    verdict.trace.model_dump()["actions"]      # each planned action and what it returned

Four modules, as the paper describes them (steps in `steps.py`). A claim decomposer
splits the claim into sub-claims and reflects on its split (does it cover the whole
claim, add nothing, leave each part checkable?), revising it until it passes or
``max_reflections`` rounds are spent. An LLM-centric planner then picks one action at a
time from the history so far: ``search`` (evidence retrieval), ``verify`` a sub-claim,
``numerical`` reasoning (counts, dates, comparisons), ``disambiguate`` an entity the
claim names, or ``finish``. An executor carries each action out and records what it
returned. A verifier gives the verdict and its explanation from the whole record.

Only the paper's description of its modules could be read here, not its prompts, so
every instruction is written from that description; the action names and budgets
(``max_actions``, ``max_reflections``) are verity's choices, recorded in the
configuration. LoCal reports PACAR in the gold setting only (Table 1); open book it
searches the configured sources, closed book the planner is not offered ``search`` and
the actions answer from the model's own knowledge.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

from verity.domain import Article, Claim, Evidence, Verdict
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.methods.baselines.base import (
    BaselineConfig,
    Setting,
    SettingBaseline,
    SettingConfig,
    rank_given,
)
from verity.methods.baselines.pacar.steps import (
    ACTIONS,
    DECOMPOSE,
    DISAMBIGUATE,
    NUMERICAL,
    PLAN,
    REFLECT,
    VERIFIER,
    VERIFY,
    Planned,
)
from verity.methods.common import numbered, require_claim
from verity.sources.base import Source

# What an observation may add to the planner's history, in characters: the history is
# shown again at every step, and a small model's context is short.
OBSERVATION_CHARS = 300


class PacarConfig(SettingConfig):
    """Settings of ``pacar``; the paper gives no values, so each default is verity's."""

    max_actions: int = Field(default=6, ge=1, le=20, description="planned actions, at most")
    max_reflections: int = Field(
        default=2, ge=0, le=5, description="self-reflection rounds on the decomposition"
    )
    max_subclaims: int = Field(default=5, ge=1, le=10, description="sub-claims kept, at most")


class Pacar(SettingBaseline):
    """PACAR: reflective decomposition, a planner choosing actions, a final verifier."""

    name: ClassVar[str] = "pacar"
    paper: ClassVar[str] = (
        "Zhao et al. 2024, PACAR: Automated Fact-Checking with Planning and Customized "
        "Action Reasoning (LREC-COLING)"
    )
    # What stands in for the published method (see the module docstring and docs/baselines.md).
    substitute: ClassVar[str] = (
        "rebuilt from the paper's description of its modules (no code or prompts "
        "published); the actions and budgets are verity's"
    )
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    Config: ClassVar[type[BaselineConfig]] = PacarConfig
    config: PacarConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        super().__init__(models=models, sources=sources, **config)
        roles = ("decomposer", "planner", "executor", "verifier")
        self.agents = {role: models.for_role(role) for role in roles}

    async def check(self, subject: Claim | Article, evidence: Sequence[Evidence] | None) -> Verdict:
        """Decompose and reflect, plan and act until finish or the budget, then judge."""
        claim = require_claim(subject, self.name)
        setting = self.setting_for(evidence)
        log = CallLog()
        subclaims, reflections = await self._decompose(claim, log)
        offered = [a for a in ACTIONS if setting != "closed" or a != "search"]
        run = _Run(claim, setting, evidence if setting == "gold" else None)
        stopped = "max_actions"
        for number in range(1, self.config.max_actions + 1):
            plan = await PLAN.arun(
                self.agents["planner"],
                log=log,
                actions="\n".join(f"- {ACTIONS[a]}" for a in offered),
                claim=claim.text,
                subclaims=listed(subclaims),
                history=run.history(),
            )
            if plan.action == "finish":
                stopped = "finish"
                log.milestone("pacar.finish", f"planner finished after {number - 1} action(s)")
                break
            observation = await self._act(plan, offered, run, log)
            run.actions.append(
                {
                    "step": number,
                    "thought": plan.thought,
                    "action": plan.action,
                    "argument": plan.argument,
                    "observation": observation,
                }
            )
            log.milestone(
                "pacar.action", f"action {number}: {plan.action}", step=number, action=plan.action
            )
        judged = await VERIFIER.arun(
            self.agents["verifier"],
            log=log,
            claim=claim.text,
            subclaims=listed(subclaims),
            history=run.history(),
        )
        log.milestone("pacar.verdict", f"verifier: {judged.label}", label=judged.label)
        return self.verdict(
            claim,
            judged,
            log,
            evidence=run.pool,
            setting=setting,
            subclaims=subclaims,
            reflections=reflections,
            actions=run.actions,
            stopped=stopped,
        )

    async def _decompose(self, claim: Claim, log: CallLog) -> tuple[list[str], list[Any]]:
        """The decomposer, then its reflection rounds, each free to revise the split."""
        split = await DECOMPOSE.arun(self.agents["decomposer"], log=log, claim=claim.text)
        subclaims = _clean(split.subclaims, self.config.max_subclaims) or [claim.text]
        reflections: list[dict[str, Any]] = []
        for number in range(1, self.config.max_reflections + 1):
            looked = await REFLECT.arun(
                self.agents["decomposer"], log=log, claim=claim.text, subclaims=listed(subclaims)
            )
            revised = _clean(looked.subclaims, self.config.max_subclaims)
            reflections.append(
                {"round": number, "critique": looked.critique, "faithful": looked.faithful}
            )
            log.milestone(
                "pacar.reflect",
                f"reflection {number}: " + ("faithful" if looked.faithful else "revised"),
                round=number,
                faithful=looked.faithful,
            )
            if looked.faithful:
                break
            if revised:
                subclaims = revised
                reflections[-1]["subclaims"] = revised
        log.milestone("pacar.decomposed", f"{len(subclaims)} sub-claim(s)", count=len(subclaims))
        return subclaims, reflections

    async def _act(self, plan: Planned, offered: list[str], run: _Run, log: CallLog) -> str:
        """Carry out one action; what it returned, as the history will show it."""
        model = self.agents["executor"]
        argument = plan.argument.strip() or run.claim.text
        if plan.action not in offered:
            return f"{plan.action} is not available in the {run.setting} setting"
        if plan.action == "search":
            found = await self.gather(argument, run.claim, run.gold, log)
            run.add(found)
            titles = "; ".join(ev.title or ev.text[:60] for ev in found)
            return f"found {len(found)} passage(s)" + (f": {titles}" if titles else "")
        relevant = self._relevant(argument, run)
        run.add(relevant)
        shown = numbered(relevant, self.config.max_chars)
        if plan.action == "verify":
            checked = await VERIFY.arun(model, log=log, evidence=shown, subclaim=argument)
            return f"{'holds' if checked.holds else 'does not hold'}: {checked.reason}"
        if plan.action == "numerical":
            worked = await NUMERICAL.arun(
                model, log=log, evidence=shown, history=run.history(), task=argument
            )
            return f"{worked.result} (working: {worked.working})"
        resolved = await DISAMBIGUATE.arun(
            model, log=log, claim=run.claim.text, evidence=shown, name=argument
        )
        return f"{resolved.entity} ({resolved.reason})"

    def _relevant(self, query: str, run: _Run) -> list[Evidence]:
        """The passages that best match an action's argument: of the gold ones, or found.

        Gold passages are the claim's evidence whether or not the planner searched them
        first; open book, an action reads what the searches so far have found.
        """
        passages = run.gold if run.gold is not None else run.pool
        return rank_given(query, passages, self.config.max_passages)


class _Run:
    """What one check has gathered: the passages found and the actions taken."""

    def __init__(self, claim: Claim, setting: Setting, gold: Sequence[Evidence] | None) -> None:
        self.claim, self.setting, self.gold = claim, setting, gold
        self.pool: list[Evidence] = []
        self.actions: list[dict[str, Any]] = []

    def add(self, found: Sequence[Evidence]) -> None:
        """Keep passages not kept yet, in order."""
        seen = {(ev.source, ev.ref or ev.text[:200]) for ev in self.pool}
        for ev in found:
            key = (ev.source, ev.ref or ev.text[:200])
            if key not in seen:
                seen.add(key)
                self.pool.append(ev)

    def history(self) -> str:
        """The actions so far, argument and result each cut to `OBSERVATION_CHARS`."""
        if not self.actions:
            return "(none yet)"
        return "\n".join(
            f"{a['step']}. {a['action']}: {_cut(a['argument'])} -> {_cut(a['observation'])}"
            for a in self.actions
        )


def listed(subclaims: Sequence[str]) -> str:
    """Sub-claims as a numbered list."""
    return "\n".join(f"{n}. {text}" for n, text in enumerate(subclaims, start=1))


def _clean(subclaims: Sequence[str], limit: int) -> list[str]:
    return [s.strip() for s in subclaims if s.strip()][:limit]


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= OBSERVATION_CHARS else flat[: OBSERVATION_CHARS - 4] + " ..."
