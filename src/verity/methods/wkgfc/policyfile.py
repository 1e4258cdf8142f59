"""Reading an optimised policy prompt (``policy.json`` of ``verity optimize wkgfc``).

    policy = load_policy("runs/opt/policy.json")
    policy.prompt                 # the policy instruction the optimisation kept
    policy.examples               # {("fever", "123"), ("hover", "0a1b..."), ...}

``examples`` are the (dataset, id) pairs the prompt was trained or validated on, read from
the file's dataset-qualified ids ("fever:123"), so that an evaluation can leave them out.
A file written before ids were qualified (no ``datasets`` list) names one ``dataset`` for
all its bare ids; a file with a prompt alone (written by hand) was trained on nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from verity.errors import ConfigError


@dataclass(frozen=True)
class PolicyFile:
    """An optimised policy prompt and the examples it has seen."""

    prompt: str
    examples: frozenset[tuple[str, str]]


def load_policy(path: str) -> PolicyFile:
    """The prompt and examples of a policy file; `ConfigError` naming ``path`` if unusable."""
    try:
        saved = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ConfigError(f"cannot read the policy prompt {path}: {exc}") from exc
    if not isinstance(saved, dict):
        raise ConfigError(f"the policy file {path} is not a JSON object")
    prompt = saved.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(f"the policy prompt in {path} is missing or empty")
    # Files of older versions name one dataset for all their ids, which are bare.
    legacy = saved.get("dataset") if "datasets" not in saved else None
    examples = set()
    for key in ("train_ids", "val_ids"):
        ids = saved.get(key, [])
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ConfigError(f"{key} in the policy file {path} is not a list of ids")
        for qualified in ids:
            dataset, sep, bare = qualified.partition(":")
            if isinstance(legacy, str) and legacy:
                examples.add((legacy, qualified))
            elif sep and dataset and bare:
                examples.add((dataset, bare))
            else:
                raise ConfigError(
                    f"the policy file {path} names example {qualified!r} without its "
                    "dataset (expected dataset:id)"
                )
    return PolicyFile(prompt=prompt, examples=frozenset(examples))
