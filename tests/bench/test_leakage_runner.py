"""The harness on fact-check datasets (both leakage settings) and on poisoned evidence.

A scripted fake model answers (the branches are the point, not the model); the sources
are stubs that return fixed passages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest

from verity.bench.base import DatasetSplit, Example
from verity.bench.datasets import load_dataset
from verity.bench.leakage import search_context
from verity.bench.runner import BenchConfig, prepare, subject_for, with_passages
from verity.domain import Article, Claim, Evidence, Label, Verdict
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.sources.base import apply_filters
from verity.sources.context import current_context, searching_for
from verity.sources.leakage import GuardedSource
from verity.sources.poisoned import PoisonedSource
from verity.testing import FakeChatModel

DATA = Path("../shared/datasets")


class Rulings:
    """A stub fact-check source: one ruling per example id it was told about, no URLs."""

    name = "factcheck:offline"
    publishers = ("politifact.com",)

    def __init__(self, passages: list[Evidence]) -> None:
        self.passages = passages

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        return apply_filters(self.passages, k, before=before, exclude_domains=exclude_domains)

    def to_dict(self):
        return {"type": "stub", "name": self.name}


def judge(label: str = "REFUTED"):
    def script(messages, schema):
        return json.dumps({"explanation": "e", "label": label, "confidence": 0.5, "cited": [1]})

    return script


def builder(fake: FakeChatModel):
    def build(name, sources):
        return load_method(name, models=ModelSet(ModelClient(fake)), sources=sources)

    return build


@pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}")
def test_liar_reports_retrieving_methods_in_both_settings(tmp_path: Path) -> None:
    fake = FakeChatModel(judge())
    rulings = Rulings([Evidence(text="a ruling", id="1#1", source="factcheck:offline")])
    config = BenchConfig(
        dataset="liar", methods=("direct", "rag"), out=tmp_path, sample=3, setting="open"
    )
    run = prepare(config, load=load_dataset, build=builder(fake), sources=lambda s: [rulings])
    assert list(run.methods) == ["direct", "rag [paper-faithful]", "rag [guarded]"]
    faithful, guarded = run.methods["rag [paper-faithful]"], run.methods["rag [guarded]"]
    assert faithful.sources == [rulings]
    (wrapped,) = guarded.sources
    assert isinstance(wrapped, GuardedSource) and wrapped.exclude_domains == ("politifact.com",)
    assert run.manifest["leakage"] == {
        "reported": ["paper-faithful", "guarded"],
        "gold_guard": True,
    }
    results = run.run()
    evidence = {
        name: [len(r.verdict["evidence"]) for r in run.store.rows(run.run_id, name)]
        for name in ("rag [paper-faithful]", "rag [guarded]")
    }
    run.close()
    assert set(results) == set(run.methods)
    # Unguarded, rag read PolitiFact's ruling; guarded, PolitiFact is the dataset's own
    # site, so the rulings source gave nothing.
    assert evidence == {"rag [paper-faithful]": [1, 1, 1], "rag [guarded]": [0, 0, 0]}
    report = (tmp_path / "report.md").read_text()
    assert "| rag [guarded] |" in report and "| rag [paper-faithful] |" in report
    # The rulings stand in for the paper's fact-checking sites: the report says so.
    assert list(run.manifest["substitutions"]) == ["factcheck:offline"]
    assert "| substitution | factcheck:offline: PolitiFact rulings" in report


@pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}")
def test_one_leakage_setting_and_other_settings_are_plain(tmp_path: Path) -> None:
    fake = FakeChatModel(judge())
    rulings = Rulings([])
    build = builder(fake)

    def names(**overrides) -> list[str]:
        settings = {"methods": ("rag",), "out": tmp_path, "sample": 2, **overrides}
        config = BenchConfig(**settings)
        run = prepare(config, load=load_dataset, build=build, sources=lambda s: [rulings])
        run.close()
        return list(run.methods)

    assert names(dataset="liar", leakage="guarded") == ["rag [guarded]"]
    assert names(dataset="liar", setting="closed") == ["rag"]
    assert names(dataset="feverous-s") == ["rag"]


@pytest.mark.skipif(not DATA.is_dir(), reason=f"benchmark data not at {DATA}")
def test_check_covid_guards_the_gold_abstracts_in_both_settings(tmp_path: Path) -> None:
    class Abstracts(Rulings):
        name = "arxiv:offline"
        publishers = ()

    split = load_dataset("check-covid")
    example = split.examples[0]
    cord_id = example.meta["cord_id"]
    abstracts = Abstracts(
        [
            Evidence(text="gold abstract", id=f"{cord_id}#1", source="arxiv:offline"),
            Evidence(text="other abstract", id="other#1", source="arxiv:offline"),
        ]
    )
    fake = FakeChatModel(judge())
    config = BenchConfig(dataset="check-covid", methods=("rag",), out=tmp_path, ids=(example.id,))
    run = prepare(config, load=load_dataset, build=builder(fake), sources=lambda s: [abstracts])
    run.close()
    assert len(run.methods) == 2
    for method in run.methods.values():
        (source,) = method.sources
        assert isinstance(source, GuardedSource)
        with searching_for(search_context("check-covid", example)):
            assert [e.text for e in source.search("q", k=2)] == ["other abstract"]
    off = BenchConfig(
        dataset="check-covid", methods=("rag",), out=tmp_path / "off", gold_guard=False
    )
    plain = prepare(off, load=load_dataset, build=builder(fake), sources=lambda s: [abstracts])
    plain.close()
    assert plain.methods["rag [paper-faithful]"].sources == [abstracts]


class ArticleOnly:
    """A stub method that reads articles only and records what it was given."""

    name: ClassVar[str] = "article-only"
    accepts: ClassVar[tuple[type, ...]] = (Article,)

    def __init__(self) -> None:
        self.given: list[Claim | Article] = []

    def verify(self, subject, *, evidence=None):
        self.given.append(subject)
        return Verdict(
            label=Label.FAKE, confidence=0.5, explanation="e", method=self.name, subject=subject
        )

    def to_dict(self):
        return {"method": self.name}


def poisoned_split() -> DatasetSplit:
    passages = tuple(
        Evidence(text=f"Statement S. Support {j}.", source="poisoned", id=f"poisonedrag-1#{j}")
        for j in range(2)
    )
    examples = (
        Example(
            id="fakegpt-1",
            subject=Claim(text="A fluent false narrative."),
            label=Label.REFUTED,
            meta={"attack": "fakegpt", "group": "fakegpt", "poison": ()},
        ),
        Example(
            id="poisonedrag-1",
            subject=Claim(text="Statement S."),
            label=Label.REFUTED,
            meta={"attack": "poisonedrag", "group": "poisonedrag", "poison": passages},
        ),
    )
    return DatasetSplit(
        name="advfact",
        examples=examples,
        labels=(Label.SUPPORTED, Label.REFUTED, Label.CONFLICTING),
        files=(),
        checksum="x",
        description="stub",
        label_map={"false": "REFUTED"},
        prediction_map={Label.REAL: Label.SUPPORTED, Label.FAKE: Label.REFUTED},
    )


def test_poisoned_passages_reach_every_method_and_the_report_counts_citations(
    tmp_path: Path,
) -> None:
    split = poisoned_split()
    wiki_seen: list[str | None] = []

    class Wiki(Rulings):
        name = "offline-wiki"
        publishers = ()

        def search(self, query, k=5, *, before=None, exclude_domains=()):
            context = current_context()
            wiki_seen.append(context.subject_id if context else None)
            return [Evidence(text="a real passage", source="offline-wiki", id="w#1")][:k]

    fake = FakeChatModel(judge("SUPPORTED"))
    article_only = ArticleOnly()

    def build(name, sources):
        if name == "zofia":  # the registered name; the stub stands in for the method
            return article_only
        return builder(fake)(name, sources)

    config = BenchConfig(
        dataset="advfact:somewhere", methods=("direct", "rag"), out=tmp_path, sample=None
    )
    run = prepare(config, load=lambda *a, **k: split, build=build, sources=lambda s: [Wiki([])])
    # advfact is made of PolitiFact statements: both settings, each poisoned outermost.
    assert list(run.methods) == ["direct", "rag [paper-faithful]", "rag [guarded]"]
    for name in ("rag [paper-faithful]", "rag [guarded]"):
        (source,) = run.methods[name].sources
        assert isinstance(source, PoisonedSource)
    results = run.run()
    run.close()
    prompts = [messages[-1].content for messages, _, _ in fake.requests]
    direct_prompts = [p for p in prompts if "Passages that came with this statement" in p]
    # Direct got the passages in the statement's text, for the PoisonedRAG sample only.
    assert len(direct_prompts) == 1 and "Support 1." in direct_prompts[0]
    rag_prompts = [p for p in prompts if p not in direct_prompts and "Support 0." in p]
    assert len(rag_prompts) == 2  # both rag rows, the poisoned sample, passages first
    assert all(p.index("Support 0.") < p.index("a real passage") for p in rag_prompts)
    assert set(wiki_seen) == {"fakegpt-1", "poisonedrag-1"}
    groups = results["rag [guarded]"].groups
    assert list(groups) == ["all", "fakegpt", "poisonedrag"]
    # Judged SUPPORTED everywhere: wrong on all (gold REFUTED); the rag cited [1], the
    # first passage, which is poisoned on the PoisonedRAG sample.
    assert groups["poisonedrag"].cites_poison == 1.0 and groups["poisonedrag"].accuracy == 0.0
    assert groups["fakegpt"].cites_poison is None and groups["fakegpt"].n == 1
    direct = results["direct"].groups["poisonedrag"]
    assert direct.cites_poison is None and direct.poison_in_text == 1
    report = (tmp_path / "report.md").read_text()
    assert "| rag [guarded] | poisonedrag | 1 | 0.0 | 100.0 |" in report
    assert "| direct | poisonedrag | 1 | 0.0 | given in text (1) |" in report
    # Accuracy per gold label names only the labels the sample has (all false here).
    assert "| rag [guarded] | 2 | 0.0 | REFUTED 0.0 |" in report

    # An article-only method gets each claim as an article, the dataset mapping FAKE.
    (tmp_path / "b").mkdir()
    other = BenchConfig(dataset="advfact", methods=("zofia",), out=tmp_path / "b")
    run = prepare(other, load=lambda *a, **k: split, build=build, sources=lambda s: [])
    results = run.run()
    run.close()
    assert all(isinstance(s, Article) for s in article_only.given)
    assert article_only.given[0].text == "A fluent false narrative."
    assert "Passages that came with this statement" in article_only.given[1].text
    assert results["zofia"].metrics.accuracy == 1.0


def test_subject_for_leaves_other_examples_alone() -> None:
    split = poisoned_split()
    fake = FakeChatModel(judge())
    direct = builder(fake)("direct", [])
    subject, in_text = subject_for(direct, split.examples[0], split)
    assert subject is split.examples[0].subject and not in_text
    text = with_passages("S.", split.examples[1].meta["poison"])
    assert text.splitlines() == [
        "S.",
        "",
        "Passages that came with this statement:",
        "[1] Statement S. Support 0.",
        "[2] Statement S. Support 1.",
    ]


def test_search_context_names_the_documents_of_the_statement_itself() -> None:
    claim = Claim(text="Says X.")
    liar = Example(id="11972", subject=claim, label=Label.REFUTED)
    assert search_context("liar", liar).drop_documents == {"11972"}
    # LIAR-New's ids are its own rows, not PolitiFact statement ids.
    assert search_context("liar-new-3way", liar).drop_documents == frozenset()
    adv = Example(
        id="fakegpt-7",
        subject=Claim(text="A long report."),
        label=Label.REFUTED,
        meta={"original_id": "7", "statement": "Says X.", "poison": ()},
    )
    context = search_context("advfact", adv)
    assert context.drop_documents == {"7"} and context.subject_text == "Says X."
    covid = Example(id="c1", subject=claim, label=Label.REFUTED, meta={"cord_id": "abc"})
    assert search_context("check-covid", covid).drop_documents == {"abc"}
    assert search_context("liar", liar).subject_text == "Says X."


def test_article_only_methods_still_refuse_claims_where_fake_is_not_a_label(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from verity.errors import BadInputError

    split = replace(poisoned_split(), prediction_map={})
    config = BenchConfig(dataset="advfact", methods=("zofia",), out=tmp_path)
    with pytest.raises(BadInputError, match="does not check claims"):
        prepare(
            config,
            load=lambda *a, **k: split,
            build=lambda name, sources: ArticleOnly(),
            sources=lambda s: [],
        )
