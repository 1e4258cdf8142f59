"""direct and rag: control flow with the scripted fake model, then for real."""

from __future__ import annotations

import asyncio
import json
from datetime import date

import pytest

from verity.domain import Article, Claim, Evidence, Label
from verity.errors import BadInputError, ConfigError, SourceUnavailableError, UnknownNameError
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method, method_class, method_names
from verity.sources.base import apply_filters
from verity.testing import FakeChatModel

PASSAGES = [
    Evidence(
        text="The Eiffel Tower is a tower in Paris, France.",
        title="Eiffel Tower",
        source="list",
        url="https://example.org/eiffel",
        published=date(2001, 1, 1),
    ),
    Evidence(
        text="Paris is the capital of France.",
        title="Paris",
        source="list",
        url="https://example.org/paris",
        published=date(2030, 1, 1),
    ),
    Evidence(
        text="Berlin is the capital of Germany.",
        title="Berlin",
        source="list",
        url="https://news.example.com/berlin",
    ),
]


class ListSource:
    """A fixed list of passages behind the Source protocol (for control-flow tests)."""

    def __init__(
        self, name: str = "list", passages: list[Evidence] = PASSAGES, fail: bool = False
    ) -> None:
        self.name = name
        self.passages = passages
        self.fail = fail
        self.queries: list[tuple[str, int, date | None]] = []

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        self.queries.append((query, k, before))
        if self.fail:
            raise SourceUnavailableError(f"{self.name} is down")
        return apply_filters(self.passages, k, before=before, exclude_domains=exclude_domains)

    def to_dict(self):
        return {"name": self.name}


def fake_models(*answers: str) -> tuple[ModelSet, FakeChatModel]:
    fake = FakeChatModel(list(answers))
    return ModelSet(ModelClient(fake)), fake


def judged(label: str, cited: list[int] | None = None, confidence: float = 0.8) -> str:
    body = {"explanation": "because [1]", "label": label, "confidence": confidence}
    if cited is not None:
        body["cited"] = cited
    return json.dumps(body)


def test_registry_lists_the_baselines() -> None:
    assert {"direct", "rag"} <= set(method_names())
    with pytest.raises(UnknownNameError, match="unknown method 'nope'"):
        load_method("nope", models=fake_models()[0])


def test_unknown_method_setting_is_an_error() -> None:
    with pytest.raises(ConfigError, match="bad settings"):
        load_method("rag", models=fake_models()[0], kk=3)


def test_direct_uses_no_evidence() -> None:
    models, fake = fake_models(judged("REFUTED", confidence=0.9))
    verdict = load_method("direct", models=models).verify(
        Claim(text="The moon is made of cheese.", speaker="Bob", date=date(2020, 5, 1))
    )
    assert verdict.label is Label.REFUTED and verdict.confidence == 0.9
    assert verdict.evidence == ()
    prompt = fake.requests[0][0][-1].content
    assert "Speaker: Bob" in prompt and "Date: 2020-05-01" in prompt
    assert verdict.trace.calls[0].step == "direct.judge"
    assert verdict.trace.calls[0].role == "judge"


def test_rag_cites_numbered_passages_and_honours_the_claim_date() -> None:
    models, fake = fake_models(judged("SUPPORTED", cited=[1]))
    source = ListSource()
    method = load_method("rag", models=models, sources=[source], k=3)
    verdict = method.verify(Claim(text="The Eiffel Tower is in Paris.", date=date(2020, 1, 1)))
    assert source.queries == [("The Eiffel Tower is in Paris.", 3, date(2020, 1, 1))]
    prompt = fake.requests[0][0][-1].content
    # The 2030 passage is after the claim date and never shown.
    assert '[1] <passage title="Eiffel Tower" source="list">The Eiffel Tower' in prompt
    assert '[2] <passage title="Berlin" source="list">' in prompt
    assert "Paris is the capital" not in prompt
    assert verdict.label is Label.SUPPORTED
    assert [e.title for e in verdict.evidence] == ["Eiffel Tower"]
    assert verdict.trace.model_dump()["citations_valid"] is True
    (retrieval,) = verdict.trace.retrievals
    assert [e.title for e in retrieval.results] == ["Eiffel Tower", "Berlin"]
    assert verdict.usage.llm_calls == 1


def test_rag_without_valid_citations_keeps_every_shown_passage() -> None:
    models, _ = fake_models(judged("NOT_ENOUGH_INFO", cited=[7]))
    verdict = load_method("rag", models=models, sources=[ListSource()]).verify(Claim(text="x is y"))
    assert len(verdict.evidence) == 3
    assert verdict.trace.model_dump()["citations_valid"] is False


def test_rag_interleaves_sources_and_survives_one_failure() -> None:
    other = ListSource("other", [Evidence(text="Other text.", title="O", source="other")])
    models, fake = fake_models(judged("SUPPORTED", cited=[1, 2]))
    verdict = load_method(
        "rag", models=models, sources=[ListSource(), ListSource("down", fail=True), other]
    ).verify(Claim(text="q"))
    prompt = fake.requests[0][0][-1].content
    assert prompt.index('[1] <passage title="Eiffel Tower"') < prompt.index(
        '[2] <passage title="O" source="other">'
    )
    errors = [r.error for r in verdict.trace.retrievals if r.error]
    assert errors == ["down is down"]
    assert [e.title for e in verdict.evidence] == ["Eiffel Tower", "O"]


def test_rag_caps_the_passages_shown_across_sources() -> None:
    other = ListSource(
        "other", [Evidence(text=f"Other {i}.", title=f"O{i}", source="other") for i in range(3)]
    )
    models, fake = fake_models(judged("SUPPORTED", cited=[1]))
    verdict = load_method(
        "rag", models=models, sources=[ListSource(), other], max_passages=3
    ).verify(Claim(text="q"))
    prompt = fake.requests[0][0][-1].content
    # Interleaved by rank, then cut: each source keeps its best passages.
    assert '[1] <passage title="Eiffel Tower"' in prompt and '[2] <passage title="O0"' in prompt
    assert '[3] <passage title="Paris"' in prompt
    assert "[4]" not in prompt
    assert len(verdict.trace.model_dump()["shown"]) == 3


def test_rag_fails_when_every_source_fails() -> None:
    models, _ = fake_models()
    method = load_method("rag", models=models, sources=[ListSource(fail=True)])
    with pytest.raises(SourceUnavailableError, match="every evidence source failed"):
        method.verify(Claim(text="q"))


def test_claim_only_methods_reject_articles() -> None:
    from verity.methods.common import require_claim

    with pytest.raises(BadInputError, match="method 'local' checks claims, not articles"):
        require_claim(Article(title="t", text="body"), "local")


def test_the_baselines_accept_articles() -> None:
    for name in ("direct", "rag"):
        assert set(method_class(name).accepts) == {Claim, Article}


NEWS = Article(
    title="Eiffel Tower sold for scrap",
    text="Paris sold the Eiffel Tower for scrap on Monday. The buyer was not named.",
    url="https://news.example.com/tower",
    date=date(2020, 1, 1),
)


def test_direct_judges_an_article_real_or_fake() -> None:
    models, fake = fake_models(judged("FAKE", confidence=0.7))
    verdict = load_method("direct", models=models).verify(NEWS)
    assert verdict.label is Label.FAKE and verdict.confidence == 0.7
    assert verdict.subject == NEWS and verdict.evidence == ()
    messages, _, schema = fake.requests[0]
    assert "news article is real or fake" in messages[0].content
    assert messages[-1].content == (
        "<context>\n"
        "Title: Eiffel Tower sold for scrap\n"
        "Date: 2020-01-01\n"
        "URL: https://news.example.com/tower\n"
        "</context>Article text: <text>Paris sold the Eiffel Tower for scrap on Monday. The "
        "buyer was not named.</text>"
    )
    assert schema is not None and schema["properties"]["label"]["enum"] == ["REAL", "FAKE"]
    assert list(schema["properties"]) == ["explanation", "label", "confidence"]
    assert verdict.trace.calls[0].step == "direct.judge_article"


def test_a_claim_label_is_no_answer_for_an_article() -> None:
    from verity.errors import ModelOutputError

    models, _ = fake_models(*[judged("SUPPORTED")] * 5)
    with pytest.raises(ModelOutputError):
        load_method("direct", models=models).verify(NEWS)


def test_article_text_is_cut_to_max_article_words() -> None:
    words = [f"w{i}" for i in range(1, 701)]
    long = Article(text="\n".join([" ".join(words[:350]), " ".join(words[350:])]))
    models, fake = fake_models(judged("REAL"), judged("REAL"))
    load_method("direct", models=models).verify(long)
    prompt = fake.requests[0][0][-1].content
    assert prompt.endswith(" w600 ...\n</text>") and " w601" not in prompt
    assert "w350\nw351" in prompt  # line breaks inside the kept text stay
    load_method("direct", models=models, max_article_words=5).verify(long)
    assert fake.requests[1][0][-1].content == "Article text: <text>w1 w2 w3 w4 w5 ...</text>"


def test_rag_searches_an_article_by_its_title_before_its_date() -> None:
    models, fake = fake_models(judged("REAL", cited=[2]))
    source = ListSource()
    verdict = load_method("rag", models=models, sources=[source], k=3).verify(NEWS)
    assert source.queries == [("Eiffel Tower sold for scrap", 3, date(2020, 1, 1))]
    messages, _, schema = fake.requests[0]
    prompt = messages[-1].content
    assert prompt.startswith("<context>\nTitle: Eiffel Tower sold for scrap\nDate: 2020-01-01\n")
    assert "Article text: <text>Paris sold the Eiffel Tower" in prompt
    # The 2030 passage is after the article date and never shown.
    assert '[2] <passage title="Berlin" source="list">' in prompt
    assert "Paris is the capital" not in prompt
    assert schema is not None and schema["properties"]["label"]["enum"] == ["REAL", "FAKE"]
    assert verdict.label is Label.REAL and verdict.subject == NEWS
    assert [e.title for e in verdict.evidence] == ["Berlin"]
    trace = verdict.trace.model_dump()
    assert trace["query"] == "Eiffel Tower sold for scrap" and trace["citations_valid"] is True
    assert verdict.trace.calls[0].step == "rag.judge_article"


def test_rag_searches_an_untitled_article_by_its_first_sentence() -> None:
    models, _ = fake_models(judged("FAKE"), judged("FAKE"))
    source = ListSource()
    method = load_method("rag", models=models, sources=[source])
    method.verify(Article(text="Dr. Smith sold the tower. It went for scrap.\n\nMore later."))
    assert source.queries[0][0] == "Dr. Smith sold the tower."
    rambling = "The tower " + "and the bridge " * 40 + "were sold."
    method.verify(Article(text=rambling + " Second sentence."))
    query = source.queries[1][0]
    # 10 + 19 * 15 characters, then "and": the next word would pass 300, so it is left out.
    assert query == rambling[:298] and query.endswith(" bridge and")


def test_rag_caps_an_article_title_query() -> None:
    from verity.methods.article import retrieval_query

    title = "word " * 100
    assert retrieval_query(Article(title=title, text="Body.")) == ("word " * 60).strip()
    assert retrieval_query(Article(title="x" * 400, text="Body.")) == "x" * 300


def test_rag_article_text_is_cut_too() -> None:
    models, fake = fake_models(judged("FAKE"))
    article = Article(title="T", text=" ".join(f"w{i}" for i in range(1, 50)))
    load_method("rag", models=models, sources=[ListSource()], max_article_words=3).verify(article)
    prompt = fake.requests[0][0][-1].content
    assert "Article text: <text>w1 w2 w3 ...</text>\n\nEvidence:\n<evidence>\n[1]" in prompt


def test_rag_article_async_twin() -> None:
    models, _ = fake_models(judged("REAL", cited=[1]))
    source = ListSource()
    verdict = asyncio.run(load_method("rag", models=models, sources=[source]).averify(NEWS))
    assert verdict.label is Label.REAL
    assert source.queries[0][0] == "Eiffel Tower sold for scrap"


def test_rag_async_twin() -> None:
    models, _ = fake_models(judged("REFUTED", cited=[2]))
    verdict = asyncio.run(
        load_method("rag", models=models, sources=[ListSource()]).averify(Claim(text="q"))
    )
    assert verdict.label is Label.REFUTED
    assert [e.title for e in verdict.evidence] == ["Paris"]


@pytest.mark.integration
def test_rag_for_real_with_embedded_model_and_offline_wiki() -> None:
    import verity

    verdict = verity.check("The Eiffel Tower is in Paris.")
    assert verdict.evidence, "rag always returns the evidence it used"
    assert all(ev.source == "offline-wiki" for ev in verdict.evidence)
    shown = verdict.trace.retrievals[0].results
    assert "Eiffel Tower" in [ev.title for ev in shown]
    assert verdict.usage.llm_calls >= 1 and verdict.usage.prompt_tokens > 100
    call = verdict.trace.calls[0]
    assert call.backend == "local" and call.parsed is not None


@pytest.mark.integration
def test_direct_for_real_async() -> None:
    import verity

    verdict = asyncio.run(
        verity.acheck("Water boils at 100 degrees Celsius at sea level.", method="direct")
    )
    assert verdict.method == "direct" and verdict.evidence == ()
    assert verdict.usage.llm_calls >= 1


@pytest.mark.integration
def test_direct_on_an_article_for_real() -> None:
    article = Article(
        title="City opens new library",
        text="The city council opened a new public library on Main Street on Saturday. "
        "The building has three floors and a reading garden.",
        date=date(2021, 6, 5),
    )
    import verity

    verdict = verity.check(article, method="direct")
    assert verdict.label in (Label.REAL, Label.FAKE)
    assert verdict.subject == article and verdict.method == "direct"
    call = verdict.trace.calls[0]
    assert call.backend == "local" and call.step == "direct.judge_article"
    assert call.parsed is not None and call.parsed["label"] in ("REAL", "FAKE")


def test_rag_uses_given_evidence_instead_of_its_sources() -> None:
    models, fake = fake_models(judged("SUPPORTED", cited=[1]))
    source = ListSource()
    given = [Evidence(text="Gold passage.", title="Gold", source="gold")]
    verdict = load_method("rag", models=models, sources=[source]).verify(
        Claim(text="q"), evidence=given
    )
    assert source.queries == [] and verdict.trace.retrievals == ()
    shown = fake.requests[0][0][-1].content
    assert (
        '<evidence>[1] <passage title="Gold" source="gold">Gold passage.</passage></evidence>'
        in shown
    )
    assert [e.title for e in verdict.evidence] == ["Gold"]


def test_unique_evidence_keeps_the_first_of_each_source_and_reference() -> None:
    from verity.methods.common import unique_evidence

    a = Evidence(text="one", source="s", url="https://a.example/1")
    same_ref = Evidence(text="other words", source="s", url="https://a.example/1")
    other_source = Evidence(text="one", source="t", url="https://a.example/1")
    no_ref = Evidence(text="free text", source="s")
    no_ref_again = Evidence(text="free text", source="s")
    kept = unique_evidence(iter([a, same_ref, other_source, no_ref, no_ref_again]))
    assert kept == [a, other_source, no_ref]
