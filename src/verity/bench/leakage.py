"""Which benchmark examples can leak through which sources, and the two settings reported.

ToE's datasets are made of fact-checks: LIAR, LIAR-New and AdvFact of PolitiFact's
rulings, Check-COVID of claims whose gold evidence is a set of CORD-19 abstracts, the
same abstracts that stand in for arXiv offline. The paper ran its fact-check tool
unguarded and found that tool group mattered most (Table III), so only unguarded figures
compare with it. A run on these datasets in the open setting therefore reports each
retrieving method twice, each row named:

- ``paper-faithful``: no exclusions, as the paper ran;
- ``guarded``: the dataset's own fact-checking site excluded from every source, fact-check
  results about the statement itself removed (`verity.sources.leakage.about_statement`),
  results of the statement's own id removed.

In both, on Check-COVID, the arXiv stand-in never returns a claim's own gold abstracts:
that corpus is built from the gold evidence itself, which the paper's arXiv was not, so
this guard (on unless ``gold_guard=False``) keeps the stand-in from answering for it.

    sources = guard_sources(given, "liar", setting="guarded")
    with searching_for(search_context(split.name, example)):
        method.verify(example.subject)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from verity.bench.base import Example
from verity.sources.base import Source
from verity.sources.context import SearchContext
from verity.sources.leakage import GuardedSource, is_fact_check

LeakageSetting = Literal["paper-faithful", "guarded"]
SETTINGS: tuple[LeakageSetting, ...] = ("paper-faithful", "guarded")

# Each dataset's own fact-checking site(s): where its labels were published.
FACT_CHECK_SITES: dict[str, tuple[str, ...]] = {
    "liar": ("politifact.com",),
    "liar-train": ("politifact.com",),
    "liar-plus": ("politifact.com",),
    "liar-new": ("politifact.com",),
    "liar-new-3way": ("politifact.com",),
    "advfact": ("politifact.com",),
    "check-covid": (),
}
# Datasets whose example ids are PolitiFact statement ids, as in the rulings corpus.
_STATEMENT_IDS = frozenset({"liar", "liar-train", "liar-plus"})
# The stand-in built from a dataset's gold evidence, and that dataset.
GOLD_STANDIN = {"check-covid": "arxiv:offline"}


def leaks(dataset: str) -> bool:
    """Whether a run on this dataset reports the paper-faithful and guarded settings.

    ``advfact:DIR`` (a set built elsewhere) is ``advfact``.
    """
    return dataset.partition(":")[0] in FACT_CHECK_SITES


def search_context(dataset: str, example: Example) -> SearchContext:
    """What the guard and the poisoned-evidence attack need to know about one example."""
    drop: set[str] = set()
    if dataset in _STATEMENT_IDS:
        drop.add(example.id)
    original = example.meta.get("original_id")
    if original:
        drop.add(str(original))
    cord_id = example.meta.get("cord_id")
    if dataset == "check-covid" and cord_id:
        drop.add(str(cord_id))
    poison = example.meta.get("poison") or ()
    return SearchContext(
        subject_id=example.id,
        # The statement a fact-check would be about: AdvFact keeps its original.
        subject_text=str(example.meta.get("statement") or example.subject.text),
        drop_documents=frozenset(drop),
        poison=tuple(poison),
    )


def guard_sources(
    sources: Sequence[Source],
    dataset: str,
    *,
    setting: LeakageSetting,
    gold_guard: bool = True,
    own_corpus: str | None = None,
) -> list[Source]:
    """The sources as a run in ``setting`` sees them on ``dataset``.

    ``own_corpus`` names the dataset's own corpus (the open-book setting's), which is the
    task's retrieval pool and stays as it is.
    """
    sites = FACT_CHECK_SITES.get(dataset, ())
    gold_standin = GOLD_STANDIN.get(dataset) if gold_guard else None
    out: list[Source] = []
    for source in sources:
        if source.name == own_corpus:
            out.append(source)
        elif setting == "guarded":
            out.append(
                GuardedSource(
                    source,
                    exclude_domains=sites,
                    same_statement=True,
                    drop_documents=is_fact_check(source.name) or source.name == gold_standin,
                )
            )
        elif source.name == gold_standin:
            out.append(GuardedSource(source, same_statement=False, drop_documents=True))
        else:
            out.append(source)
    return out
