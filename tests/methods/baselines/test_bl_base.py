"""The baselines' shared base: given evidence ranked by BM25, sources, manifest, listing."""

from __future__ import annotations

import asyncio
from datetime import date
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from verity.cli import app
from verity.cli.info import with_substitute
from verity.domain import Claim, Evidence
from verity.errors import BadInputError
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods import base as registry
from verity.methods.baselines.base import Baseline, SettingBaseline, rank_given
from verity.sources.base import apply_filters
from verity.testing import FakeChatModel

GIVEN = [
    Evidence(text="Bananas are yellow fruit grown in the tropics.", source="gold"),
    Evidence(text="The Eiffel Tower stands in Paris.", source="gold"),
    Evidence(text="Paris is the capital of France and its largest city.", source="gold"),
    Evidence(text="Whales are mammals.", source="gold"),
]


class _Source:
    name = "listed"

    def __init__(self) -> None:
        self.asked: list[tuple[str, date | None]] = []

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        self.asked.append((query, before))
        return apply_filters(GIVEN, k, before=before, exclude_domains=exclude_domains)

    def to_dict(self):
        return {"name": self.name}


class _Searching(Baseline):
    name: ClassVar[str] = "searching"
    paper: ClassVar[str] = "a test double"
    retrieves: ClassVar[bool] = True


class _Closed(Baseline):
    name: ClassVar[str] = "closed"
    paper: ClassVar[str] = "a test double"


def _models() -> ModelSet:
    # A fake model: these tests never call it.
    return ModelSet(ModelClient(FakeChatModel([])))


def test_given_evidence_is_ranked_by_bm25_and_capped() -> None:
    ranked = rank_given("Where is the Eiffel Tower in Paris?", GIVEN, 2)
    assert [ev.text for ev in ranked] == [GIVEN[1].text, GIVEN[2].text]


def test_unmatched_passages_fill_the_cap_in_given_order() -> None:
    ranked = rank_given("Whales", GIVEN, 3)
    assert ranked == [GIVEN[3], GIVEN[0], GIVEN[1]]


def test_few_passages_come_back_as_given() -> None:
    assert rank_given("Paris", GIVEN, 4) == GIVEN


def test_given_evidence_replaces_the_sources() -> None:
    source = _Source()
    method = _Searching(models=_models(), sources=[source], max_passages=1)
    claim = Claim(text="The Eiffel Tower is in Paris.")
    found = asyncio.run(method.gather("Eiffel Tower", claim, GIVEN, CallLog()))
    assert found == [GIVEN[1]]
    assert source.asked == []


def test_sources_are_searched_with_the_claim_date_as_cutoff() -> None:
    source = _Source()
    method = _Searching(models=_models(), sources=[source], k=3, max_passages=2)
    claim = Claim(text="x", date=date(2020, 1, 2))
    log = CallLog()
    found = asyncio.run(method.gather("Paris", claim, None, log))
    assert source.asked == [("Paris", date(2020, 1, 2))]
    assert found == GIVEN[:2]
    assert len(log.trace().retrievals) == 1


def test_only_a_searching_baseline_lists_and_keeps_sources() -> None:
    source = _Source()
    searching = _Searching(models=_models(), sources=[source])
    closed = _Closed(models=_models(), sources=[source])
    assert searching.to_dict()["sources"] == [{"name": "listed"}]
    assert "sources" not in closed.to_dict()
    assert asyncio.run(closed.gather("Paris", Claim(text="x"), None, CallLog())) == []
    assert closed.to_dict()["paper"] == "a test double"


def test_a_searching_baseline_without_sources_says_so() -> None:
    assert _Searching(models=_models()).warnings() == [
        "searching: no evidence source is configured, so every search is empty"
    ]
    assert _Searching(models=_models(), sources=[_Source()]).warnings() == []


def test_verity_methods_names_every_method_with_its_paper() -> None:
    result = CliRunner().invoke(app, ["methods"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "retrieve-then-judge (Lewis et al. 2020, NeurIPS)" in result.output
    assert "zofia/no-debate" in result.output
    for info in registry.method_catalog():
        assert info.error == "", info
        assert info.paper.strip(), f"{info.name} names no paper"


def test_a_method_that_cannot_load_is_listed_with_its_error(monkeypatch) -> None:
    class Broken:
        name = "broken"

        def load(self):
            raise ImportError("No module named 'nowhere'")

    table = dict(registry._registry())
    table["broken"] = Broken()
    monkeypatch.setattr(registry, "_registry", lambda: table)
    infos = {info.name: info for info in registry.method_catalog()}
    assert infos["broken"].error == "cannot be loaded: No module named 'nowhere'"
    assert infos["rag"].accepts == ("claim", "article")


@pytest.mark.parametrize("name", ["direct", "rag", "local", "zofia", "wkgfc", "toe"])
def test_the_four_methods_and_two_baselines_cite_a_paper(name) -> None:
    assert registry.method_class(name).paper


class _Settled(SettingBaseline):
    name: ClassVar[str] = "settled"
    paper: ClassVar[str] = "a test double"


def test_the_setting_follows_what_is_given_unless_forced() -> None:
    bare, sourced = _Settled(models=_models()), _Settled(models=_models(), sources=[_Source()])
    assert bare.setting_for(GIVEN) == "gold" and sourced.setting_for(GIVEN) == "gold"
    assert sourced.setting_for(None) == "open" and bare.setting_for(None) == "closed"
    closed = _Settled(models=_models(), sources=[_Source()], setting="closed")
    assert closed.setting_for(GIVEN) == "closed"
    with pytest.raises(BadInputError, match="settled: the gold setting needs the gold evidence"):
        _Settled(models=_models(), setting="gold").setting_for(None)


def test_only_an_open_setting_forced_without_sources_is_a_warning() -> None:
    assert _Settled(models=_models()).warnings() == []
    assert _Settled(models=_models(), setting="open").warnings() == [
        "settled: the open setting has no evidence source, so every search is empty"
    ]


# The baselines that stand in for a defining part of their published method.
SUBSTITUTES = ["adsent", "cape-fnd", "graphcheck", "hero", "nli", "pacar", "teller"]


def test_a_substitute_says_so_in_its_manifest() -> None:
    class _Standin(_Closed):
        substitute: ClassVar[str] = "a written rule set in place of learned rules"

    assert _Standin(models=_models()).to_dict()["variant_kind"] == (
        "substitute: a written rule set in place of learned rules"
    )
    assert _Closed(models=_models()).to_dict()["variant_kind"] == "paper"


@pytest.mark.parametrize("name", [n for n in SUBSTITUTES if n not in {"nli", "graphcheck"}])
def test_each_substitute_baseline_carries_its_variant_kind(name: str) -> None:
    method = registry.load_method(name, models=_models())
    kind = method.to_dict()["variant_kind"]
    assert kind.startswith("substitute: ") and len(kind) > len("substitute: ")


@pytest.mark.parametrize("name", ["nli", "graphcheck"])
def test_substitutes_that_need_a_checkpoint_or_evidence_declare_it_on_the_class(name) -> None:
    assert registry.method_class(name).substitute.strip()


@pytest.mark.parametrize("name", ["z-cot", "defgen", "programfc", "afacta", "steel", "zs-cot"])
def test_baselines_built_as_published_are_the_paper(name: str) -> None:
    assert registry.load_method(name, models=_models()).to_dict()["variant_kind"] == "paper"


def test_verity_methods_marks_each_substitute_beside_its_paper() -> None:
    infos = {info.name: with_substitute(info) for info in registry.method_catalog()}
    for name in SUBSTITUTES:
        assert "[substitute: " in infos[name].paper, name
    for name in ("z-cot", "defgen", "programfc", "local", "zofia", "toe"):
        assert "substitute" not in infos[name].paper, name
    result = CliRunner().invoke(app, ["methods"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert result.output.count("[substitute:") == len(SUBSTITUTES)


class _Answering(_Closed):
    async def check(self, subject, evidence):
        from pydantic import BaseModel

        class _Judgement(BaseModel):
            label: str = "SUPPORTED"
            explanation: str = "as given"

        return self.verdict(subject, _Judgement(), CallLog())


class _AnsweringStandin(_Answering):
    substitute: ClassVar[str] = "a written rule set in place of learned rules"


def test_a_substitutes_every_verdict_names_what_ran_and_the_papers_verdict_does_not() -> None:
    claim = Claim(text="The Eiffel Tower is in Paris.")
    standin = _AnsweringStandin(models=_models()).verify(claim)
    assert standin.trace.model_dump()["variant_kind"] == (
        "substitute: a written rule set in place of learned rules"
    )
    as_published = _Answering(models=_models()).verify(claim)
    assert "variant_kind" not in as_published.trace.model_dump()
