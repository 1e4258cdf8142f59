"""Documents through the HTTP API: submitted, followed over SSE, read back, reported.

The server runs the real `LocalExecutor`: the claims are extracted by verity's extractor
and checked by ``rag`` over a small BM25 corpus. The model is a loopback
OpenAI-compatible endpoint (`faults.latency.LatencyEndpoint`) whose answers are scripted
by what each request asks (a fake model: it answers by the sentence, not by reading).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from faults.latency import LatencyEndpoint
from verity.domain import Article, Label, Verdict
from verity.service.app import create_app
from verity.service.keys import KeyRing, hash_key, new_key

CORPUS = "documents-api"
PASSAGES = [
    {"title": "Hoover Dam", "text": "The Hoover Dam was finished in 1936 on the Colorado."},
    {"title": "Lake Mead", "text": "Lake Mead holds about 35 cubic kilometres of water."},
]
SENTENCES = [
    "The dam was finished in 1936.",
    "It holds 35 cubic kilometres of water.",
    "Its builders broke the record.",
    "Critics called it ugly.",
]
TEXT = " ".join(SENTENCES)
# A sentence the judge refuses to answer for: its claim's check fails.
BROKEN = "broke"
HOSTILE = "The <img src=x onerror=alert(1)> dam <script>alert(2)</script> was finished in 1936."
# The server's own limits in these tests.
ARTICLE_CHARS = 2_000
SERVER_CONCURRENCY = 2


def _sentence(messages: list[dict[str, Any]]) -> str:
    user = str(messages[-1].get("content", ""))
    return user.rsplit("<sentence>", 1)[-1].split("</sentence>", 1)[0].strip()


class FakeModel:
    """A fake model behind the endpoint: every sentence but the opinion is one claim.

    The judge says REFUTED for a claim about a record, SUPPORTED otherwise; to a claim
    with ``fail_on`` in it, an answer no schema accepts (so that check fails).
    """

    def __init__(self) -> None:
        self.fail_on: str | None = None

    def __call__(self, messages: list[dict[str, Any]], schema: dict[str, Any] | None) -> Any:
        fields = set((schema or {}).get("properties", {}))
        if "verifiable" in fields:
            sentence = _sentence(messages)
            return {"analysis": "", "verifiable": "ugly" not in sentence, "rewritten": ""}
        if "resolvable" in fields:
            sentence = _sentence(messages).replace("It holds", "The dam holds")
            fixed = sentence.replace("Its builders", "The dam's builders")
            return {"analysis": "", "resolvable": True, "decontextualized": fixed}
        if "claims" in fields:
            return {"analysis": "", "claims": [_sentence(messages)]}
        if "label" in fields:
            # Every message: a repair request names the claim only in the first ones.
            asked = " ".join(str(m.get("content", "")) for m in messages)
            if self.fail_on is not None and self.fail_on in asked:
                return "no answer at all"
            label = "REFUTED" if "record" in asked else "SUPPORTED"
            return {"explanation": "[1] says so.", "label": label, "confidence": 0.7,
                    "cited": [1]}  # fmt: skip
        return None


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> str:
    from verity.sources.corpus import build_corpus

    passages = tmp_path_factory.mktemp("documents") / "passages.jsonl"
    passages.write_text("\n".join(json.dumps(p) for p in PASSAGES) + "\n", encoding="utf-8")
    build_corpus(passages, CORPUS)
    return f"corpus:{CORPUS}"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[LatencyEndpoint]:
    with LatencyEndpoint(delay=0.0, answer=FakeModel()) as serving:
        yield serving


@pytest.fixture(scope="module")
def model(endpoint: LatencyEndpoint) -> tuple[FakeModel, str]:
    assert isinstance(endpoint.answer, FakeModel)
    return endpoint.answer, endpoint.base_url


@pytest.fixture
def fake_model(model: tuple[FakeModel, str]) -> Iterator[FakeModel]:
    model[0].fail_on = None
    yield model[0]
    model[0].fail_on = None


def _service(make_service: Callable[..., Any], corpus: str, base_url: str, **settings: Any) -> Any:
    from verity.config import Settings
    from verity.limits import Limits
    from verity.llm.spec import ModelSettings
    from verity.service.execute import LocalExecutor

    defaults = Settings(
        model=ModelSettings(spec="openai:m", base_url=base_url, cache=False),
        sources=(corpus,),
        grounding="off",
        limits=Limits(article_chars=ARTICLE_CHARS),
    )
    return make_service(
        LocalExecutor(defaults, merge=False),
        defaults=defaults,
        workers=1,
        document_concurrency=SERVER_CONCURRENCY,
        **settings,
    )


@pytest.fixture
def api(
    make_service: Callable[..., Any], corpus: str, model: tuple[FakeModel, str]
) -> Iterator[TestClient]:
    with TestClient(create_app(_service(make_service, corpus, model[1]))) as client:
        yield client


def done(api: TestClient, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    answer = api.post("/v1/checks?wait=60", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    job = answer.json()
    assert job["status"] == "done", job
    return job


def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["status"] == status
    return body["error"]


# -- a document from request to result --------------------------------------------------


def test_a_document_is_checked_claim_by_claim_at_its_sentences(
    api: TestClient, fake_model: FakeModel
) -> None:
    job = done(api, {"document": {"text": TEXT, "title": "The dam"}, "extractor": "single"})
    result = job["verdict"]
    assert job["method"] == "rag"  # a document's default is the claim default
    assert result["method"] == "rag" and result["document"]["text"] == TEXT
    claims = result["claims"]
    assert [c["label"] for c in claims] == ["SUPPORTED", "SUPPORTED", "REFUTED"]
    for claim, sentence in zip(claims, SENTENCES, strict=False):
        span = claim["spans"][0]
        assert TEXT[span["start"] : span["end"]] == sentence
        assert claim["status"] == "checked" and claim["verdict"]["claim"] == claim["text"]
    assert claims[1]["text"] == "The dam holds 35 cubic kilometres of water."
    assert result["summary"]["counts"] == {"SUPPORTED": 2, "REFUTED": 1, "failed": 0}
    assert result["sentences"][3]["outcome"] == "no_verifiable_claim"
    typed = api.get(f"/v1/checks/{job['id']}/document")
    assert typed.status_code == 200 and typed.json()["claims"] == claims


def test_the_event_stream_carries_each_claim_as_it_is_checked(
    api: TestClient, fake_model: FakeModel
) -> None:
    job = done(api, {"document": {"text": TEXT}, "extractor": "single"})
    stream = api.get(job["links"]["events"]).text
    frames = [f for f in stream.split("\n\n") if f.startswith("id: ")]
    milestones = [json.loads(f.split("data: ", 1)[1]) for f in frames if "event: milestone" in f]
    extracted = [m for m in milestones if m["name"] == "document.extracted"]
    assert [m["data"] for m in extracted] == [{"claims": 3, "sentences": 4}]
    per_claim = [m["data"] for m in milestones if m["name"] == "document.claim"]
    assert sorted(d["claim"] for d in per_claim) == ["C1", "C2", "C3"]
    for data in per_claim:
        assert set(data) == {"claim", "status", "label", "start", "end"}
        number = int(data["claim"][1:]) - 1
        assert TEXT[data["start"] : data["end"]] == SENTENCES[number]
        assert data["status"] == "checked"
    assert stream.rstrip().endswith('"error": null}')  # the end frame, after the claims


def test_a_failed_claim_is_recorded_and_the_others_complete(
    api: TestClient, fake_model: FakeModel
) -> None:
    fake_model.fail_on = BROKEN
    job = done(api, {"document": {"text": TEXT}, "extractor": "single"})
    claims = job["verdict"]["claims"]
    assert [c["status"] for c in claims] == ["checked", "checked", "failed"]
    assert claims[2]["verdict"] is None and "ModelOutputError" in claims[2]["error"]
    assert job["verdict"]["summary"]["counts"]["failed"] == 1
    assert job["verdict"]["complete"] is False


# -- the report -----------------------------------------------------------------------------


def test_the_report_is_markdown_to_save_with_markup_escaped(
    api: TestClient, fake_model: FakeModel
) -> None:
    job = done(api, {"document": {"text": HOSTILE, "title": "<b>Dam</b>"}, "extractor": "single"})
    answer = api.get(f"/v1/checks/{job['id']}/report.md")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/markdown; charset=utf-8"
    assert answer.headers["content-disposition"] == (
        f'attachment; filename="verity-{job["id"]}.md"'
    )
    report = answer.text
    assert report.startswith("# \\<b\\>Dam\\</b\\>\n")
    # Every "<" and ">" of the document, its title or a model's answer is escaped (the
    # report's own quote marks, "> " after a span, aside).
    own = re.sub(r"(^|: )> ", r"\1", report, flags=re.MULTILINE)
    assert re.search(r"(?<!\\)[<>]", own) is None
    assert "\\<img src=x onerror=alert\\(1\\)\\>" in report
    assert "### C1: SUPPORTED" in report


def test_a_claim_check_has_no_report_or_document_result(api: TestClient) -> None:
    job = done(api, {"claim": "The dam was finished in 1936."})
    for part in ("report.md", "document"):
        error = error_of(api.get(f"/v1/checks/{job['id']}/{part}"), 409)
        assert error["code"] == "not_a_document"
    error_of(api.get("/v1/checks/" + "0" * 32 + "/report.md"), 404)


# -- what is refused, what is lowered -------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"claim": "x", "document": {"text": TEXT}},
        {"article": {"text": TEXT}, "document": {"text": TEXT}},
        {"url": "https://news.example/a", "document": {"text": TEXT}},
    ],
)
def test_exactly_one_subject_is_taken(api: TestClient, body: dict[str, Any]) -> None:
    error = error_of(api.post("/v1/checks", json=body), 422)
    assert "exactly one of" in error["message"] and "document" in error["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"document": {"text": "   "}}, "document.text"),
        ({"document": {"text": TEXT, "colour": 1}}, "document"),
        ({"document": {"text": TEXT}, "concurrency": 0}, "concurrency"),
        ({"document": {"text": TEXT}, "with": "toe"}, "with"),
        ({"document": {"text": TEXT}, "extractor": "other"}, "extractor"),
        ({"document": {"text": TEXT, "url": "file:///etc/passwd"}}, "document.url"),
    ],
)
def test_a_bad_document_request_is_422_naming_the_field(
    api: TestClient, body: dict[str, Any], field: str
) -> None:
    assert error_of(api.post("/v1/checks", json=body), 422)["field"] == field


def test_document_options_are_refused_with_another_subject(api: TestClient) -> None:
    error = error_of(api.post("/v1/checks", json={"claim": "x", "concurrency": 2}), 422)
    assert error["message"].endswith("concurrency is for a document only")


def test_a_document_is_checked_with_a_claim_method_only(api: TestClient) -> None:
    body = {"document": {"text": TEXT}, "method": "zofia"}
    error = error_of(api.post("/v1/checks", json=body), 400)
    assert error["code"] == "unsuitable_method" and "rag" in error["valid"]


def test_a_document_over_the_article_limit_is_refused(api: TestClient) -> None:
    body = {"document": {"text": "a" * (ARTICLE_CHARS - 9), "title": "0123456789"}}
    error = error_of(api.post("/v1/checks", json=body), 422)
    assert error["code"] == "too_long" and error["field"] == "document.text"
    assert "the document has 2,001 characters" in error["message"]
    fits = {"document": {"text": "a" * (ARTICLE_CHARS - 10), "title": "0123456789"}}
    assert api.post("/v1/checks", json=fits).status_code == 202


def test_concurrency_above_the_server_limit_is_lowered_to_it(
    api: TestClient, fake_model: FakeModel
) -> None:
    many = done(api, {"document": {"text": TEXT}, "concurrency": 50, "extractor": "single"})
    assert many["request"]["concurrency"] == 2
    unset = done(api, {"document": {"text": TEXT}, "extractor": "single"})
    assert unset["request"]["concurrency"] == 2
    one = done(api, {"document": {"text": TEXT}, "concurrency": 1, "extractor": "single"})
    assert one["request"]["concurrency"] == 1


def test_the_schema_describes_the_document_request_and_result(api: TestClient) -> None:
    schema = api.get("/openapi.json").json()
    request = schema["components"]["schemas"]["CheckRequest"]
    assert {"document", "concurrency", "with", "extractor"} <= set(request["properties"])
    assert [c["required"] for c in request["oneOf"]] == [
        ["claim"],
        ["article"],
        ["url"],
        ["document"],
    ]
    result = schema["components"]["schemas"]["DocumentResult"]
    assert {"document", "claims", "summary", "sentences", "complete"} <= set(result["required"])
    assert "/v1/checks/{job_id}/report.md" in schema["paths"]


# -- a restart, keys --------------------------------------------------------------------


def test_a_done_document_survives_a_restart_with_its_report(
    tmp_path: Path, corpus: str, model: tuple[FakeModel, str]
) -> None:
    from verity.service.jobs import JobStore

    path = tmp_path / "jobs.sqlite"
    built: list[Any] = []

    def make(executor: Any, **settings: Any) -> Any:
        from verity.service.core import Service, ServiceSettings

        settings.setdefault("allowed_hosts", ("testserver",))
        service = Service(ServiceSettings(**settings), store=JobStore(path), executor=executor)
        built.append(service)
        return service

    first = _service(make, corpus, model[1])
    with TestClient(create_app(first)) as client:
        job = done(client, {"document": {"text": TEXT}, "extractor": "single"})
        report = client.get(f"/v1/checks/{job['id']}/report.md").text
    first.stop()
    first.store.close()
    second = _service(make, corpus, model[1])
    try:
        with TestClient(create_app(second)) as client:
            again = client.get(f"/v1/checks/{job['id']}").json()
            assert again["status"] == "done" and again["verdict"] == job["verdict"]
            assert client.get(f"/v1/checks/{job['id']}/report.md").text == report
            assert client.get(f"/checks/{job['id']}").status_code == 200
    finally:
        second.stop()
        second.store.close()


def test_keys_guard_documents_and_their_reports(
    make_service: Callable[..., Any], corpus: str, model: tuple[FakeModel, str]
) -> None:
    keys = {"alice": new_key(), "bob": new_key()}
    ring = KeyRing({name: hash_key(key) for name, key in keys.items()})
    service = _service(make_service, corpus, model[1], keys=ring)
    body = {"document": {"text": TEXT}, "extractor": "single"}
    with TestClient(create_app(service)) as client:
        error_of(client.post("/v1/checks", json=body), 401)
        job = done(client, body, Authorization=f"Bearer {keys['alice']}")
        report = f"/v1/checks/{job['id']}/report.md"
        error_of(client.get(report), 401)
        error_of(client.get(report, headers={"Authorization": f"Bearer {keys['bob']}"}), 404)
        mine = client.get(report, headers={"Authorization": f"Bearer {keys['alice']}"})
        assert mine.status_code == 200 and "### C1" in mine.text


# -- the whole document within the request's budget; the article beside it ------------------


def test_the_request_budget_bounds_the_whole_document(
    api: TestClient, fake_model: FakeModel, endpoint: LatencyEndpoint
) -> None:
    # Extraction alone takes 3 calls a verifiable sentence (single variant): 2 stop it.
    before = endpoint.count
    body = {"document": {"text": TEXT}, "extractor": "single", "budget": {"calls": 2}}
    answer = api.post("/v1/checks?wait=60", json=body).json()
    assert answer["status"] == "failed" and answer["error"]["code"] == "budget_exceeded"
    # At most 2 were sent (the third, refused, stops the sentences read beside it).
    assert endpoint.count - before <= 2


class FakeArticleMethod:
    """A fake article method: REAL for any text, counting the articles it was given."""

    name = "zofia"
    accepts = (Article,)

    def __init__(self) -> None:
        self.seen: list[Article] = []

    async def averify(self, subject: Any, *, evidence: Any = None) -> Verdict:
        self.seen.append(subject)
        return Verdict(label=Label.REAL, confidence=0.6, explanation="Plausible.",
                       method=self.name, subject=subject)  # fmt: skip

    def verify(self, subject: Any, *, evidence: Any = None) -> Verdict:
        raise AssertionError("a document's article is checked on its loop")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}


def test_with_zofia_the_whole_text_is_judged_beside_its_claims(
    make_service: Callable[..., Any], corpus: str, model: tuple[FakeModel, str]
) -> None:
    from verity.service.execute import LocalExecutor, Plan

    article = FakeArticleMethod()

    class FakeArticleExecutor(LocalExecutor):
        """The real executor, with a fake in place of the article method."""

        def method(self, chosen: Plan) -> Any:
            return article if chosen.method == "zofia" else super().method(chosen)

    service = _service(make_service, corpus, model[1])
    service.executor = service.pool.executor = FakeArticleExecutor(
        service.executor.defaults, merge=False
    )
    body = {"document": {"text": TEXT, "title": "The dam"}, "with": "zofia", "extractor": "single"}
    with TestClient(create_app(service)) as client:
        job = done(client, body)
    assert job["request"]["with"] == "zofia"
    assert job["verdict"]["article"]["label"] == "REAL"
    assert [(a.title, a.text) for a in article.seen] == [("The dam", TEXT)]
    assert [c["label"] for c in job["verdict"]["claims"]] == ["SUPPORTED", "SUPPORTED", "REFUTED"]


def test_a_stored_document_request_reads_back_as_sent(tmp_path: Path) -> None:
    from verity.service.jobs import JobStore
    from verity.service.requests import CheckRequest

    sent = {"document": {"text": TEXT, "date": "2024-05-01"}, "with": "zofia", "concurrency": 3}
    with JobStore(tmp_path / "jobs.sqlite") as store:
        job = store.create(CheckRequest.model_validate(sent))
    assert job.request == sent
    again = CheckRequest.model_validate(job.request)
    assert again.with_article == "zofia" and again.concurrency == 3


# -- the page's views of a document ------------------------------------------------------


def test_a_label_class_is_made_for_any_label() -> None:
    from verity.service.views_documents import label_class

    assert label_class("SUPPORTED") == "v-supported"
    assert label_class("NOT_ENOUGH_INFO") == "v-not-enough-info"
    assert label_class("CHECK_WORTHY") == "v-check-worthy"  # a label added later
    assert label_class('"><b>') == "v-b"
    assert label_class("") == "v-unknown"


def _claim(cid: str, label: str, *spans: tuple[int, int], sentences: int = 1) -> dict[str, Any]:
    return {
        "id": cid,
        "text": f"claim {cid}",
        "spans": [{"start": a, "end": b} for a, b in spans],
        "sentences": list(range(sentences)),
        "status": "checked",
        "label": label,
        "verdict": None,
    }


def test_the_text_is_cut_at_the_sentences_claims_were_said_in() -> None:
    from verity.service.views_documents import document_view

    whole = "One. Two. Three."
    record = {
        "document": {"text": whole},
        "claims": [
            _claim("C1", "SUPPORTED", (0, 4)),
            # Said in "Three.", given its context by "One." (not marked for it).
            _claim("C2", "REFUTED", (10, 16), (0, 4)),
            _claim("C3", "SUPPORTED", (10, 16)),
        ],
    }
    view = document_view(record)
    cut = [(s.text, s.cards, s.css, s.aria) for s in view.segments]
    assert cut == [
        ("One.", ("card-1",), "v-supported", "Claim C1: SUPPORTED"),
        (" Two. ", (), "", ""),
        ("Three.", ("card-2", "card-3"), "v-mixed", "Claims C2 (REFUTED), C3 (SUPPORTED)"),
    ]
    assert "".join(s.text for s in view.segments) == whole
    assert view.cards[1].said == ("Three.",) and view.cards[1].context == ("One.",)


def test_offsets_outside_the_text_or_overlapping_are_left_plain() -> None:
    from verity.service.views_documents import document_view

    whole = "Alpha beta. Gamma."
    record = {
        "document": {"text": whole},
        "claims": [
            _claim("C1", "SUPPORTED", (0, 11)),
            _claim("C2", "REFUTED", (6, 18)),  # overlaps C1's sentence
            _claim("C3", "REFUTED", (12, 99)),  # past the end
        ],
    }
    view = document_view(record)
    assert [(s.text, s.cards) for s in view.segments] == [
        ("Alpha beta.", ("card-1",)),
        (" Gamma.", ()),
    ]


def test_the_rows_while_running_follow_the_claim_events() -> None:
    from verity.service.jobs import StoredEvent
    from verity.service.views_documents import document_progress

    def milestone(seq: int, name: str, **data: Any) -> StoredEvent:
        body = {"seq": seq, "kind": "milestone", "message": "", "name": name, "data": data}
        return StoredEvent(seq, "milestone", json.dumps(body))

    events = [
        milestone(1, "document.extracted", claims=3, sentences=4),
        milestone(
            2, "document.claim", claim="C2", status="checked", label="SUPPORTED", start=30, end=68
        ),
    ]
    progress = document_progress(TEXT, events)
    assert progress.total == 3 and progress.done == 1
    assert [(r.id, r.label, r.css) for r in progress.rows] == [
        ("", "pending", "v-pending"),
        ("C2", "SUPPORTED", "v-supported"),
        ("", "pending", "v-pending"),
    ]
    assert progress.rows[1].sentence == SENTENCES[1]
    assert document_progress(TEXT, events[:0]).total is None


def test_the_document_tab_sends_a_document_request() -> None:
    from verity.service.views_form import FormError, check_request, parse_form

    body = (
        "kind=document&document_text=One.+Two.&document_title=T&document_date=2024-05-01"
        "&document_method=rag&method=zofia&concurrency=3&with_zofia=1&claim=ignored"
    )
    request = check_request(parse_form(body.encode()))
    assert request.document is not None and request.document.text == "One. Two."
    assert request.document.title == "T" and str(request.document.date) == "2024-05-01"
    assert request.claim is None and request.method == "rag"  # the tab's own select
    assert request.concurrency == 3 and request.with_article == "zofia"
    with pytest.raises(FormError) as empty:
        check_request(parse_form(b"kind=document&document_text=+"))
    assert empty.value.detail.field == "document.text"
    with pytest.raises(FormError) as bad:
        check_request(parse_form(b"kind=document&document_text=x&concurrency=many"))
    assert bad.value.detail.field == "concurrency"
