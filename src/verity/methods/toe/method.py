"""ToE (Wang et al.): a tree of evidence grown by a retrieval policy, scored and aggregated.

    method = load_method("toe", models=models, sources=[...])      # untrained: judge, heuristic
    method = load_method("toe", models=models, sources=[...], weights="runs/toe-weights")
    verdict = method.verify(Claim(text="..."))
    verdict.trace.model_dump()["tree"]                            # every node
    print(verdict.trace.model_dump()["markdown"])                  # the tree, indented

Algorithm 1: the root is the claim and the queue holds it. Each iteration takes the
pending node of highest priority, reads its features and queries, runs its retrieval
episode (`retrieval.py`), evaluates it (`judge.py`), decomposes it into 2-4 weighted
sub-claims when its reliability is below τ_r^exp (the root always) and it is above the
depth limit, aggregates the tree (`combine.py`), prunes the pending nodes under decisive
ones, and stops when the root converges or is itself decisive, at T_max, or when the
queue is empty. v0 < 0.4 is false, v0 > 0.6 true, in between uncertain (§IV-A). In a
parallel check, pending nodes' own work runs ahead of the loop (`ahead.py`), which
takes it in one node at a time, in its own order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from verity.domain import Article, Claim, Evidence, Label, Reference, Verdict
from verity.errors import ConfigError, ContextOverflowError, ModelOutputError
from verity.grounding.cite import passages, reference
from verity.llm.calllog import CallLog
from verity.llm.spec import ModelSet
from verity.methods.base import MethodBase
from verity.methods.common import require_claim
from verity.methods.toe import weights as stored
from verity.methods.toe.aggnet import AggNet
from verity.methods.toe.config import COMPONENT_VARIANTS, PAPER_VARIANTS, ToeConfig
from verity.methods.toe.evalnet import EvalNet
from verity.methods.toe.evidence import EvidenceAgent, with_assessment
from verity.methods.toe.features import ACTIONS, ClaimFeatures
from verity.methods.toe.grow import Grown, grow
from verity.methods.toe.judge import EvaluatorKind, NodeEvaluator
from verity.methods.toe.policy import PolicyNet, act
from verity.methods.toe.render import markdown, node_record
from verity.methods.toe.retrieval import Chooser, RetrievalAgent, StepRecord
from verity.methods.toe.tools import ABLATIONS, available, heuristic_action, tool_sources
from verity.methods.toe.tree import Node, Thresholds, Tree, verdict_band
from verity.sources.base import Source

ROLES = ("analyst", "evidence_analyst", "judge", "decomposer")
# What stands in for each network when its weights are absent, in the order a report
# names them: the policy (§III-B), the evaluation network (§III-C), the aggregation
# network (§III-D).
STAND_INS = {
    "policy": "heuristic policy",
    "evaluator": "LLM-judge scoring",
    "aggregation": "rule aggregation",
}


class ToeMethod(MethodBase):
    """ToE with its networks when trained weights are given, else the judge and heuristic."""

    name: ClassVar[str] = "toe"
    paper: ClassVar[str] = "Wang et al., ToE: Tree of Evidence (arXiv 2606.27736)"
    accepts: ClassVar[tuple[type[Claim] | type[Article], ...]] = (Claim,)
    variants: ClassVar[dict[str, dict[str, Any]]] = PAPER_VARIANTS | COMPONENT_VARIANTS
    config: ToeConfig

    def __init__(self, *, models: ModelSet, sources: Sequence[Source] = (), **config: Any) -> None:
        self.config = ToeConfig(**config)
        self.models = models
        self.sources = list(sources)
        self.thresholds = Thresholds()
        self.tools = tool_sources(self.sources)
        removed = {t for group in self.config.remove_tools for t in ABLATIONS[group]}
        self.usable = available(self.tools, removed)
        self.masked = [t for t in ACTIONS[:-1] if t not in self.usable]
        self.dataset: str | None = None
        self.manifests: dict[str, dict[str, Any]] = {}
        self.evalnet: EvalNet | None = self._load(EvalNet, "evalnet", self.config.evaluator)
        self.policy_net: PolicyNet | None = self._load(PolicyNet, "policy", self.config.policy)
        self.aggnet: AggNet | None = self._load(AggNet, "aggnet", self.config.aggregation)
        # Training swaps these: a sampling chooser and a collector of episodes.
        self.chooser: Chooser = self._choose
        self.on_episode: Callable[[Node, list[StepRecord]], None] | None = None

    def _load(self, cls: Any, part: str, wanted: str) -> Any:
        folder = Path(self.config.weights).expanduser() if self.config.weights else None
        if wanted in ("heuristic", "rule", "llm-judge"):
            return None
        if folder is None or not stored.exists(folder, part):
            if wanted == "network":
                raise ConfigError(
                    f"toe: the {part} network was asked for but no trained weights hold it "
                    f"(weights = {self.config.weights!r}); run `verity train toe --stage {part}`"
                )
            return None
        net, manifest = stored.load(cls, folder, part)
        slots = manifest.get("evidence_slots", "document")
        if part == "evalnet" and slots != self.config.evidence_slots:
            raise ConfigError(
                f"toe: the evaluation network in {folder} was trained with a slot per "
                f"{slots}, not per {self.config.evidence_slots} (evidence_slots)"
            )
        self.manifests[part] = manifest
        return net

    def use_dataset(self, name: str) -> None:
        """Told by the benchmark harness which dataset it runs: picks the uncertain label."""
        self.dataset = name

    def excluded_ids(self) -> set[tuple[str, str]]:
        """Examples the loaded weights were trained on, to leave out of evaluation."""
        out: set[tuple[str, str]] = set()
        for manifest in self.manifests.values():
            for qualified in manifest.get("train_ids", []):
                dataset, _, ident = str(qualified).partition(":")
                out.add((dataset, ident))
        return out

    @property
    def uncertain_label(self) -> Label:
        """The label of a root veracity in [0.4, 0.6]."""
        if self.config.uncertain_label != "auto":
            return Label(self.config.uncertain_label)
        return Label.NOT_ENOUGH_INFO if self.dataset == "check-covid" else Label.CONFLICTING

    def components(self) -> dict[str, str]:
        """Which evaluator, policy and aggregation this run uses."""
        return {
            "evaluator": "network" if self.evalnet is not None else "llm-judge",
            "policy": "network" if self.policy_net is not None else "heuristic",
            "aggregation": "network" if self.aggnet is not None else "rule",
        }

    def variant_kind(self) -> str:
        """What runs, named: ``"paper"`` only for the paper's settings on three trained networks.

        The paper's method is its trained policy, evaluation network and aggregation
        network (§III-B to §III-D). A run without them is verity's stand-in (warm-up
        heuristic, LLM judge, rule) and says so, part by part; a Table III ablation or one
        of verity's component variants says that too.
        """
        cfg = self.config
        kinds = []
        if cfg.remove_tools:
            kinds.append("paper ablation (Table III, tools masked on the same policy)")
        changed = any(
            getattr(cfg, key) != ToeConfig.model_fields[key].default
            for preset in COMPONENT_VARIANTS.values()
            for key in preset
        )
        if changed:
            kinds.append("component variant (verity's, not a paper ablation)")
        used = self.components()
        missing = [STAND_INS[part] for part in STAND_INS if used[part] != "network"]
        if len(missing) == len(STAND_INS):
            kinds.append("untrained: " + ", ".join(missing))
        elif missing:
            kinds.append("partly trained: " + ", ".join(missing) + " in place of the network")
        return "; ".join(kinds) or "paper"

    def weights_used(self) -> dict[str, dict[str, Any]]:
        """Per loaded network: its file, the SHA-256 of its content, its training-set size."""
        folder = Path(self.config.weights).expanduser() if self.config.weights else None
        return {
            part: {
                "path": str(folder / f"{part}.pt") if folder is not None else None,
                "sha256": m.get("sha256"),
                "train_ids": len(m.get("train_ids", [])),
            }
            for part, m in self.manifests.items()
        }

    def to_dict(self) -> dict[str, Any]:
        """Configuration for run manifests: settings, components, weights, masked tools."""
        return {
            "method": self.name,
            **self.config.model_dump(),
            "variant_kind": self.variant_kind(),
            "components": self.components(),
            "weights_used": self.weights_used(),
            "tools": {tool: [s.name for s in found] for tool, found in self.tools.items()},
            "masked_actions": self.masked,
            "thresholds": self.thresholds.to_dict(),
            "models": self.models.to_dict(),
            "sources": [s.to_dict() for s in self.sources],
        }

    def references(self, verdict: Verdict) -> list[Reference]:
        """Each evaluated node as ``N<i>`` (n0 the claim), then the documents as ``[1]``.."""
        nodes = (verdict.trace.model_extra or {}).get("node_evidence") or []
        return [Reference.model_validate(n) for n in nodes] + passages(verdict)

    def _choose(
        self, node: Node, state: list[float], allowed: list[bool], belief_r: float | None
    ) -> tuple[int, float]:
        """Evaluation: the frozen policy's most probable action, or the heuristic's."""
        if self.policy_net is not None:
            action, logprob, _ = act(self.policy_net, state, allowed, greedy=True)
            return action, logprob
        features = node.features or ClaimFeatures()
        return heuristic_action(features, node.episode, allowed, belief_r=belief_r), 0.0

    def retrieval_agent(self, evaluator: NodeEvaluator) -> RetrievalAgent:
        """The agent that runs node episodes with this method's tools and chooser."""
        cfg = self.config
        return RetrievalAgent(
            tools=self.tools,
            usable=self.usable,
            evidence=EvidenceAgent(self.models.for_role("evidence_analyst"), clean=cfg.clean),
            chooser=lambda *args: self.chooser(*args),
            scorer=evaluator.belief,
            query_model=self.models.for_role("analyst"),
            max_steps=cfg.max_steps,
            max_docs=cfg.max_docs,
            query_mode=cfg.query_mode,
        )

    async def grow(self, claim: Claim, log: CallLog, *, judge_root: bool = False) -> Grown:
        """Algorithm 1 on one claim: the tree, why it stopped, the root's history."""
        kind: EvaluatorKind = "network" if self.evalnet is not None else "llm-judge"
        evaluator = NodeEvaluator(
            kind, self.models.for_role("judge"), self.evalnet, self.config.evidence_slots
        )
        return await grow(
            claim,
            log,
            config=self.config,
            thresholds=self.thresholds,
            evaluator=evaluator,
            agent=self.retrieval_agent(evaluator),
            analyst=self.models.for_role("analyst"),
            decomposer=self.models.for_role("decomposer"),
            aggnet=self.aggnet,
            on_episode=self.on_episode,
            judge_root=judge_root,
            # Training samples its actions and collects episodes in order: never ahead.
            run_ahead=self.chooser == self._choose and self.on_episode is None,
        )

    async def check(
        self, subject: Claim | Article, evidence: Sequence[Evidence] | None = None
    ) -> Verdict:
        """Grow the tree and read the verdict off its root."""
        claim = require_claim(subject, self.name)
        log = CallLog()
        try:
            grown = await self.grow(claim, log)
        except ContextOverflowError as exc:
            raise ModelOutputError(f"toe: a prompt did not fit the model: {exc}") from exc
        root = grown.tree.root
        if root.v is None or root.r is None:
            raise ModelOutputError(f"toe: the claim could not be evaluated: {root.note}")
        band = verdict_band(root.v, self.thresholds)
        label = {"true": Label.SUPPORTED, "false": Label.REFUTED}.get(band, self.uncertain_label)
        used = [with_assessment(ev, item) for ev, item in grown.documents]
        counts = {tool: 0 for tool in ACTIONS}
        for node in grown.tree.nodes:
            for action in node.actions:
                counts[action.tool] += 1
        iterations = len(grown.history)
        text = markdown(grown.tree, label=band, stop=grown.stop, iterations=iterations)
        kind = self.variant_kind()
        explanation = (
            f"Root veracity {root.v:.2f}, reliability {root.r:.2f} ({band}) after "
            f"{iterations} iteration(s) over {len(grown.tree.nodes)} node(s); stopped: "
            f"{grown.stop}." + ("" if kind == "paper" else f" Run as: {kind}.")
        )
        return Verdict(
            label=label,
            confidence=root.r,
            explanation=explanation,
            evidence=tuple(used),
            usage=grown.usage(),
            trace=grown.trace(
                tree=[node_record(n) for n in grown.tree.walk()],
                iterations_used=iterations,
                stop_reason=grown.stop,
                root_history=[list(pair) for pair in grown.history],
                action_counts=counts,
                category=root.features.category if root.features else None,
                masked_actions=self.masked,
                variant_kind=kind,
                components=self.components(),
                # The content hash names the weights; the folder is the server's own business.
                weights_used={p: m.get("sha256") for p, m in self.manifests.items()},
                markdown=text,
                node_evidence=[ref.model_dump() for ref in node_references(grown.tree)],
                # Work run ahead that the loop never took: in the usage, not in the calls.
                unused_calls=grown.unused_calls(),
            ),
            method=self.name,
            subject=claim,
        )


def node_references(tree: Tree) -> list[Reference]:
    """What each evaluated node stands on, for the grounding check: ``N<i>`` is node n_i.

    The node's statement, its own and aggregated scores (the explanation states the
    root's), and the statements of its evidence with their stance, as the judge read them
    (`judge.evidence_text`); cut to what a checker is shown (`reference`).
    """
    out = []
    for node in tree.walk():
        if node.status != "evaluated":
            continue
        scores = (
            f"Own veracity {_two(node.v_self)}, reliability {_two(node.r_self)}; "
            f"aggregated veracity {_two(node.v)}, reliability {_two(node.r)}."
        )
        found = [
            f"({item.stance}) " + (" ".join(item.statements) or item.explanation)
            for item in node.episode.items
        ]
        evidence = " Evidence: " + " | ".join(found) if found else " No evidence found."
        title = "claim" if node.is_root else node.dimension
        out.append(reference(f"N{node.id}", f"{node.text} {scores}{evidence}", "node", title))
    return out


def _two(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
