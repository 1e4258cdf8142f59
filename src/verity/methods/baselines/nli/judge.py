"""An NLI judge over a local checkpoint, for the grounding check (`verity.grounding.nli`).

    judge = checkpoint_judge("/models/deberta-nli")
    judge("The tower is in Paris.", "It stands in Paris.")   # 'entailment'

It lives with the ``nli`` baseline because it loads checkpoints as that baseline does (the
same ``checkpoint=DIR`` contract, the same class names); `verity.grounding` takes the
judge as a function and loads no model itself.
"""

from __future__ import annotations

from typing import Any

from verity.errors import ConfigError
from verity.grounding.nli import Judge


def checkpoint_judge(folder: str) -> Judge:
    """An NLI judge over a local sequence-classification checkpoint (the ``nli`` baseline's).

    Its classes are read by name as the ``nli`` baseline reads them (entailment or
    supports; contradiction or refutes; neutral or not enough info); classes naming the
    same thing add their probabilities, and the most probable wins.
    """
    from verity.methods.baselines.nli.checkpoint import (
        checkpoint_folder,
        classify,
        load_checkpoint,
    )
    from verity.methods.baselines.nli.labels import KNOWN_NAMES, normal_name
    from verity.methods.baselines.nli.method import NliConfig

    as_nli = {"SUPPORTED": "entailment", "REFUTED": "contradiction", "NOT_ENOUGH_INFO": "neutral"}
    loaded = load_checkpoint(checkpoint_folder(folder), "auto")
    if loaded.kind != "classification":
        raise ConfigError(f"nli checker: {folder} is not a sequence classifier")
    classes = {
        name: as_nli.get(KNOWN_NAMES.get(normal_name(name), "")) for name in loaded.names.values()
    }
    unknown = sorted(name for name, cls in classes.items() if cls is None)
    if unknown:
        raise ConfigError(
            f"nli checker: the checkpoint's classes {', '.join(unknown)} name no NLI class "
            "(entailment, contradiction, neutral)"
        )
    # The nli baseline's input length: 512 tokens, that of BERT, RoBERTa and DeBERTa.
    max_length = NliConfig.model_fields["max_length"].default

    def judge(premise: str, hypothesis: str) -> Any:
        got = classify(loaded, premise=premise, hypothesis=hypothesis, max_length=max_length)
        totals: dict[str, float] = {}
        for name, p in got.probabilities.items():
            key = str(classes[name])
            totals[key] = totals.get(key, 0.0) + p
        return max(totals, key=lambda c: totals[c])

    return judge
