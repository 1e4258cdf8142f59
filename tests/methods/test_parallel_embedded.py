"""With the embedded model at temperature 0, a parallel check reaches the sequential verdict.

The embedded model answers one call at a time, so `parallel` is off by default there;
turned on, calls queue for the model in whatever order they come. Each method here runs
the same input both ways with no answer cache: the verdicts, and the steps in trace order,
must be the same.

The answers themselves need not be the same to the letter: llama.cpp reuses the part of
a prompt that matches the prompt before it, so another order of calls evaluates the rest
in other batches, and the floating-point sums differ in their last bits, enough to turn
a near tie between two tokens (a ZoFia linguist's wording differed at its 2nd call).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from verity.api import shared_source
from verity.bench.datasets import load_dataset
from verity.domain import Article, Claim, Verdict
from verity.errors import ConfigError
from verity.kg.store import kg_file
from verity.llm.spec import ModelSet, ModelSettings
from verity.methods.base import load_method

DATA = Path(os.environ.get("VERITY_DATA_DIR") or "../shared/datasets").resolve()
pytestmark = pytest.mark.integration


def both_ways(name: str, subject: Claim | Article, sources: list[Any], **config: Any) -> Verdict:
    models = ModelSet.from_settings(ModelSettings(cache=False))

    def check(parallel: bool) -> Verdict:
        method = load_method(name, models=models, sources=sources, parallel=parallel, **config)
        return method.verify(subject)

    one_by_one, at_once = check(False), check(True)
    assert at_once.label == one_by_one.label
    assert [c.step for c in at_once.trace.calls] == [c.step for c in one_by_one.trace.calls]
    # Sequentially, every call is on the path; at once, fewer are.
    assert one_by_one.usage.critical_calls == one_by_one.usage.llm_calls
    assert at_once.usage.critical_calls <= at_once.usage.llm_calls
    return at_once


def test_local() -> None:
    claim = Claim(text="The director of Alien was born in England.")
    both_ways("local", claim, [shared_source("offline-wiki")])


def test_wkgfc() -> None:
    try:
        kg_file()
    except ConfigError as exc:
        pytest.skip(f"the offline Wikidata subset is not here: {exc}")
    claim = Claim(text="Barack Obama is married to Michelle Obama.")
    both_ways("wkgfc/kg-only", claim, [shared_source("kg-local")], k=2, hops=2)


@pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}")
def test_zofia() -> None:
    split = load_dataset("politifact", data_dir=DATA)
    article = min((ex.subject for ex in split.examples), key=lambda a: len(a.text))
    assert isinstance(article, Article)
    at_once = both_ways("zofia", article, [shared_source("offline-wiki")], max_rounds=1)
    # The five linguist dimensions, at least, were asked together.
    assert at_once.usage.critical_calls <= at_once.usage.llm_calls - 4


def test_toe() -> None:
    # The lite preset: three iterations, sub-claims one level down, the one tool there is.
    claim = Claim(text="The Eiffel Tower is in Paris.")
    at_once = both_ways("toe/lite", claim, [shared_source("offline-wiki")])
    # The root is always decomposed: its judge and decomposition, at least, were asked
    # together. Sub-claims' work run ahead and never taken in is counted apart.
    trace = at_once.trace.model_dump()
    assert at_once.usage.critical_calls < at_once.usage.llm_calls
    answered = sum(call["usage"]["llm_calls"] for call in trace["calls"])  # repairs too
    assert at_once.usage.llm_calls == answered + trace["unused_calls"]
