"""A document checked claim by claim: concurrency, failures kept, reruns, summary, report.

The claims come from the extractor over a scripted fake model, and the checks from a
fake method that answers by the claim's text: control flow only.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest

from verity import events
from verity.documents import check_document
from verity.documents.report import markdown
from verity.documents.store import load, save
from verity.domain import Article, Claim, Event, Label, Verdict
from verity.errors import BadInputError, ModelOutputError
from verity.extraction import Document, Extractor
from verity.llm.client import ModelClient
from verity.testing import FakeChatModel

TEXT = (
    "The dam was finished in 1936. It holds 35 cubic kilometres of water. "
    "Its builders broke the record. Critics called it ugly."
)


def fake_extractor() -> Extractor:
    """Every sentence is verifiable and one claim, except the one with an opinion."""

    def script(messages: Any, _schema: Any) -> str:
        system, user = messages[0].content, messages[-1].content
        sentence = user.rsplit("<sentence>", 1)[1].split("</sentence>", 1)[0]
        if "decide which sentences" in system:
            return json.dumps({"analysis": "", "verifiable": "ugly" not in sentence})
        if "understandable without" in system:
            fixed = sentence.replace("It holds", "The dam holds").replace("Its", "The dam's")
            return json.dumps({"analysis": "", "resolvable": True, "decontextualized": fixed})
        return json.dumps({"analysis": "", "claims": [sentence]})

    return Extractor(ModelClient(FakeChatModel(script, model="fake-doc")), variant="single")


class FakeMethod:
    """A fake claim method: REFUTED for a claim with 'record', a failure for 'broke'."""

    name: ClassVar[str] = "fake"
    accepts: ClassVar[tuple[type, ...]] = (Claim,)

    def __init__(self, fail: str | None = None) -> None:
        self.fail = fail
        self.seen: list[Claim] = []
        self.running = 0
        self.most = 0
        self._lock = threading.Lock()

    async def averify(self, subject: Any, *, evidence: Any = None) -> Verdict:
        self.seen.append(subject)
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        await asyncio.sleep(0.05)
        with self._lock:
            self.running -= 1
        if self.fail and self.fail in subject.text:
            raise ModelOutputError("no valid answer")
        label = Label.REFUTED if "record" in subject.text else Label.SUPPORTED
        return Verdict(label=label, confidence=0.8, explanation="Because [1] says so.",
                       method=self.name, subject=subject)  # fmt: skip

    def verify(self, subject: Any, *, evidence: Any = None) -> Verdict:
        return asyncio.run(self.averify(subject))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}


def run(method: FakeMethod, **options: Any):  # type: ignore[no-untyped-def]
    doc = Document(text=TEXT, title="The dam", date=dt.date(1937, 1, 2))
    return asyncio.run(check_document(doc, method, fake_extractor(), **options))


def test_each_claim_is_checked_with_the_document_date_as_its_cutoff() -> None:
    method = FakeMethod()
    result = run(method, concurrency=3)
    assert [r.claim.text for r in result.claims] == [
        "The dam was finished in 1936.",
        "The dam holds 35 cubic kilometres of water.",
        "The dam's builders broke the record.",
    ]
    assert {c.date for c in method.seen} == {dt.date(1937, 1, 2)}
    assert method.most == 3  # the three checks ran at once
    assert result.summary.counts == {"SUPPORTED": 2, "REFUTED": 1, "failed": 0}
    assert result.summary.in_doubt == ("C3", "C1", "C2")
    assert result.sentences[3].outcome == "no_verifiable_claim"
    assert result.complete
    shown = result.to_json_dict()["claims"][1]
    assert shown["sentence"] == "It holds 35 cubic kilometres of water."
    assert shown["checkworthy"] == "1 of 1 answers found a verifiable fact"
    assert shown["label"] == "SUPPORTED" and shown["status"] == "checked"


def test_concurrency_bounds_how_many_claims_are_checked_at_once() -> None:
    method = FakeMethod()
    run(method, concurrency=1)
    assert method.most == 1


def test_a_failed_claim_is_kept_with_its_error_and_a_rerun_checks_only_it(tmp_path: Path) -> None:
    first_method = FakeMethod(fail="broke")
    first = run(first_method)
    failed = [r for r in first.claims if r.status == "failed"]
    assert [r.claim.id for r in failed] == ["C3"]
    assert "ModelOutputError: no valid answer" in (failed[0].error or "")
    assert first.summary.counts["failed"] == 1
    assert not first.complete
    path = tmp_path / "dam.json"
    save(first, path)
    again = FakeMethod()
    second = run(again, previous=load(path))
    assert [c.text for c in again.seen] == ["The dam's builders broke the record."]
    assert second.claims[0].verdict == first.claims[0].verdict
    assert second.complete


def test_an_earlier_result_for_another_document_is_not_reused() -> None:
    first = run(FakeMethod())
    other = first.model_copy(update={"document": Document(text="Another text entirely.")})
    method = FakeMethod()
    run(method, previous=other)
    assert len(method.seen) == 3


def test_a_file_that_is_not_a_result_is_refused_by_name(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"claims": []}')
    with pytest.raises(BadInputError, match="is not a document result"):
        load(bad)
    assert load(tmp_path / "absent.json") is None


def test_progress_is_announced_per_claim() -> None:
    seen: list[Event] = []
    with events.listening(seen.append):
        run(FakeMethod())
    names = [e.name for e in seen if e.kind == "milestone"]
    assert names[0] == "document.extracted"
    claims = [e for e in seen if e.name == "document.claim"]
    assert sorted(str(e.data["claim"]) for e in claims) == ["C1", "C2", "C3"]
    first = next(e for e in claims if e.data["claim"] == "C1")
    assert (first.data["start"], first.data["end"]) == (0, 29)


class FakeArticleMethod:
    name: ClassVar[str] = "fake-article"
    accepts: ClassVar[tuple[type, ...]] = (Article,)

    async def averify(self, subject: Any, *, evidence: Any = None) -> Verdict:
        assert isinstance(subject, Article) and subject.title == "The dam"
        return Verdict(label=Label.REAL, method=self.name, subject=subject)


def test_the_whole_article_label_can_be_asked_for_beside_the_claims() -> None:
    result = run(FakeMethod(), article_method=FakeArticleMethod())
    assert result.article is not None and result.article.label is Label.REAL
    assert result.to_json_dict()["article"]["label"] == "REAL"


def test_the_markdown_report_shows_each_claim_in_place_as_inert_text() -> None:
    doc = Document(text="Mayor <b>Bo</b> won **42** votes.", title="# Vote [x](y)")
    found = asyncio.run(check_document(doc, FakeMethod(), fake_extractor()))
    text = markdown(found)
    assert text.startswith("# \\# Vote \\[x\\]\\(y\\)\n")
    assert "\\<b\\>Bo\\</b\\> won \\*\\*42\\*\\* votes." in text
    assert "<b>" not in text
    assert "### C1: SUPPORTED (0.80)" in text


def test_a_method_that_does_not_verify_claims_is_refused_before_anything_runs() -> None:
    class FakeSentenceJudge(FakeMethod):
        task: ClassVar[str] = "check-worthiness"

    judge = FakeSentenceJudge()
    with pytest.raises(BadInputError, match="does not verify claims"):
        run(judge)
    assert judge.seen == []
    with pytest.raises(BadInputError, match="does not verify claims"):
        run(FakeArticleMethod())  # type: ignore[arg-type]


def test_an_extractor_on_its_own_models_takes_every_answer_its_sentences_ask_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from verity.api import load_extractor
    from verity.llm.spec import ModelSettings

    monkeypatch.setenv("OPENAI_API_KEY", "loopback")
    extractor = load_extractor(
        model=ModelSettings(spec="openai:m", base_url="http://127.0.0.1:9/v1"), merge=False
    )
    # 8 sentences at once, 3 answers each for selection and disambiguation (Appendix D).
    assert extractor.model.max_concurrency >= 8 * 3


def test_a_document_over_the_article_limit_is_refused_by_name_text_and_title_together() -> None:
    from verity.api import as_document
    from verity.limits import Limits, check_document_size

    with pytest.raises(
        BadInputError, match="the document has 11 characters, more than the limit of 10"
    ):
        as_document("x" * 11, Limits(article_chars=10))
    assert as_document("x" * 10, Limits(article_chars=10)).text == "x" * 10
    with pytest.raises(BadInputError, match="the document has 10 characters"):
        check_document_size("x" * 6, "y" * 4, Limits(article_chars=9))


def test_the_claims_most_in_doubt_are_at_most_five_and_never_a_sure_supported_one() -> None:
    from verity.documents.summary import summarise
    from verity.documents.types import ClaimResult
    from verity.extraction.types import ExtractedClaim, Span

    def result(n: int, label: Label | None, confidence: float | None) -> ClaimResult:
        claim = ExtractedClaim(id=f"C{n}", text=f"Claim {n}.", spans=(Span(start=0, end=1),),
                               sentence_index=0)  # fmt: skip
        if label is None:
            return ClaimResult(claim=claim, status="failed", error="ModelOutputError: x")
        subject = Claim(text=claim.text)
        verdict = Verdict(label=label, confidence=confidence, method="fake", subject=subject)
        return ClaimResult(claim=claim, status="checked", verdict=verdict)

    results = [
        result(1, Label.SUPPORTED, 0.95),  # sure and supported: never in doubt
        result(2, Label.SUPPORTED, 0.89),
        result(3, Label.REFUTED, 0.99),
        result(4, Label.NOT_ENOUGH_INFO, None),  # no confidence counts as 0.5
        result(5, None, None),
        result(6, Label.CONFLICTING, 0.6),
        result(7, Label.SUPPORTED, 0.3),
        result(8, Label.SUPPORTED, 0.9),  # 0.9 is sure enough
    ]
    summary = summarise(results)
    # Against first (least sure first), then the rest by confidence, then failures; five.
    assert summary.in_doubt == ("C6", "C3", "C7", "C4", "C2")
    # The boundary: a supported verdict at 0.9 is not in doubt, at 0.89 it is.
    assert summarise([results[7]]).in_doubt == ()
    assert summarise([results[1]]).in_doubt == ("C2",)
    assert summary.counts == {"SUPPORTED": 4, "REFUTED": 1, "NOT_ENOUGH_INFO": 1,
                              "failed": 1, "CONFLICTING": 1}  # fmt: skip
