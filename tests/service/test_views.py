"""The web pages' views of verdicts, and the HTML the templates make of them.

The fixtures in data/ are real `--json` records of each method, made by running it with
the scripted fake model of its own tests (see data/README.md): the views are held to the
shapes the methods write, not to shapes made up here.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest

from verity.service.jobs import Job
from verity.service.ui import templates
from verity.service.views import verdict_view
from verity.service.views_common import safe_href, text, wikidata_href
from verity.service.views_form import FormError, check_request, parse_form
from verity.service.views_graph import MAX_NODES, Fact, layout
from verity.service.views_jobs import job_view, pages

DATA = Path(__file__).parent / "data"
XSS = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'


def record(method: str) -> dict[str, Any]:
    return json.loads((DATA / f"verdict_{method}.json").read_text(encoding="utf-8"))


def render(verdict: dict[str, Any], status: str = "done") -> str:
    job = Job(
        id="ab" * 16,
        status=status,  # type: ignore[arg-type]
        method=verdict.get("method"),
        summary="s",
        created=dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        request={"claim": verdict.get("claim") or "x"},
        verdict=verdict,
    )
    return templates.get_template("_result.html").render(
        job=job_view(job), verdict=verdict_view(verdict)
    )


# -- the generic parts ------------------------------------------------------------------


def test_label_confidence_and_evidence_with_links_and_dates() -> None:
    view = verdict_view(record("local"))
    assert (view.kind, view.label, view.tone, view.confidence) == (
        "claim",
        "SUPPORTED",
        "good",
        "1.00",
    )
    assert view.subject == "The director of Alien was born in England."
    first = view.evidence[0]
    assert (first.number, first.title, first.source) == (1, "Alien (film)", "list")
    assert first.href == "https://en.wikipedia.org/wiki/Alien_(film)"
    # The --json evidence has no date; the retrieval in the trace has it.
    assert [e.date for e in view.evidence] == ["2024-03-02", "2023-11-30"]
    assert dict(view.usage)["model calls"] == "10"
    assert view.calls[0].step == "local.decompose" and view.calls[0].tokens > 0
    assert (view.searches[0].source, view.searches[0].query) == ("list", "Who directed Alien?")
    assert view.searches[0].results == 2


def test_an_article_verdict_names_the_article_and_has_no_confidence() -> None:
    view = verdict_view(record("zofia"))
    assert (view.kind, view.subject, view.label, view.tone) == (
        "article",
        "Senate passes the Affordable Care Act repeal",
        "FAKE",
        "bad",
    )
    assert view.confidence == "n/a" and view.confidence_value is None


@pytest.mark.parametrize(
    ("url", "href"),
    [
        ("https://example.org/a?b=1", "https://example.org/a?b=1"),
        ("HTTP://example.org/", "http://example.org/"),
        ("https://user:pw@example.org/x?api_key=s3cret", "https://***@example.org/x?api_key=***"),
        ("javascript:alert(1)", None),
        (" javascript:alert(1)", None),
        ("JaVaScRiPt:alert(1)", None),
        ("data:text/html,<script>alert(1)</script>", None),
        ("/relative/path", None),
        ("//example.org/protocol-relative", None),
        ("https://", None),
        ("https://exa mple.org/", None),
        ("https://example.org/\nx", None),
        (None, None),
        (42, None),
    ],
)
def test_only_http_links_are_drawn(url: object, href: str | None) -> None:
    assert safe_href(url) == href


def test_wikidata_links_only_for_ids() -> None:
    assert wikidata_href("Q76") == "https://www.wikidata.org/wiki/Q76"
    assert wikidata_href("P26") == "https://www.wikidata.org/wiki/Property:P26"
    assert wikidata_href("Q76/../../evil") is None and wikidata_href("Springfield") is None


def test_long_text_is_cut_and_odd_values_are_blank() -> None:
    assert text("x" * 50, cap=10) == "x" * 9 + "…"
    assert (text(None), text({"a": 1}), text(True), text(3)) == ("", "", "true", "3")


def test_a_malformed_record_shows_blanks_not_an_error() -> None:
    hostile: dict[str, Any] = {
        "claim": ["not", "text"],
        "label": 7,
        "confidence": "0.9",
        "evidence": "not a list",
        "usage": [],
        "method": "toe",
        "trace": {
            "calls": [1, "x", {"usage": "none"}],
            # A cycle and a repeated id: each node drawn once, the walk ends.
            "tree": [
                {"id": 0, "parent": None, "v": "high", "r": 2.0},
                {"id": 1, "parent": 0},
                {"id": 1, "parent": 1},
                {"id": 0, "parent": 1},
                "junk",
            ],
            "root_history": [[0.1], "x", [0.2, 0.3]],
        },
    }
    view = verdict_view(hostile)
    assert (view.subject, view.label, view.confidence, view.evidence) == ("", "UNKNOWN", "n/a", ())
    tree = view.reasoning
    assert tree is not None and tree.kind == "toe" and tree.root is not None
    assert tree.root.v == "-" and tree.root.r == "-"  # not numbers in [0, 1]
    assert [c.id for c in tree.root.children] == ["1"] and tree.root.children[0].children == ()
    assert tree.history == (("0.20", "0.30"),)
    render(hostile)  # and the page draws it


# -- each method's reasoning ----------------------------------------------------------


def test_local_iterations_program_answers_and_the_deciding_one() -> None:
    r = verdict_view(record("local")).reasoning
    assert r is not None and r.kind == "local"
    assert [it.number for it in r.iterations] == [1, 2] and r.deciding == 2
    assert [it.deciding for it in r.iterations] == [False, True]
    second = r.iterations[1]
    assert [(s.var, s.kind, s.answer) for s in second.subtasks] == [
        ("q1", "question", "Ridley Scott"),
        ("f1", "fact", "true"),
    ]
    assert (second.deduction, second.predicted, second.final) == ("f1", "true", True)
    assert (second.logical, second.logical_accepts, second.conflict) == ("true", "yes", "yes")
    assert r.iterations[0].conflict == "no"
    assert second.subtasks[0].evidence[0][1] == "https://en.wikipedia.org/wiki/Alien_(film)"


def test_zofia_keywords_agents_and_debate_by_round() -> None:
    r = verdict_view(record("zofia")).reasoning
    assert r is not None and r.kind == "zofia"
    assert r.keywords == ("the Affordable Care Act",)
    assert [u.text for u in r.units if u.chosen] == ["the Affordable Care Act"]
    assert len(r.linguist) == 5 and r.linguist[0][:2] == ("sentence", "FAKE")
    assert dict(r.expert)["expert"] == "a Senate historian"
    assert [c.kind for c in r.claims] == ["core", "sub"]
    assert [(x.number, x.ruling) for x in r.rounds] == [(1, "Insufficient"), (2, "Fake")]
    assert [t.side for t in r.rounds[0].turns] == ["pro", "con"]
    assert r.rounds[1].turns[1].points == (("article", "evidence 4", "reason 4"),)
    assert r.web_results[0].href == "https://example.org/vote"
    assert r.decision == "Fake" and not r.forced


def test_wkgfc_entities_facts_steps_and_graph_layers() -> None:
    r = verdict_view(record("wkgfc")).reasoning
    assert r is not None and r.kind == "wkgfc"
    assert [(s.qid, s.label) for s in r.seeds] == [("Q1", "Alice Smith"), ("Q4", "Freedonia")]
    assert [a.action for a in r.actions] == ["initKGRetrieval", "expandKG", "webSearch", "verdict"]
    assert r.actions[2].target == "Alice birth" and r.actions[1].target == "Q2"
    assert (r.facts[0].subject, r.facts[0].prop, r.facts[0].object) == (
        "Alice Smith (Q1)",
        "spouse (P26)",
        "Bob Smith (Q2)",
    )
    graph = r.graph
    x = {n.key: n.x for n in graph.nodes}
    # Seeds first, then by distance from them: Bob, Springfield, Eve; then State University.
    assert x["Q1"] == x["Q4"] < x["Q2"] == x["Q3"] == x["Q8"] < x["Q5"]
    assert len(graph.edges) == len(r.facts) == 4 and graph.left_out == 0
    assert {n.key: n.label for n in graph.nodes if n.seed} == {
        "Q1": "Alice Smith",
        "Q4": "Freedonia",
    }
    assert r.searches[0].kept[0][1] == "https://example.org/alice"


def test_the_graph_layout_is_deterministic_and_capped() -> None:
    facts = [Fact("Q1", "Hub", "link", f"Q{i}", f"Item {i}", True) for i in range(2, 80)]
    facts.append(Fact("Q1", "Hub", "population", "12", "", False))
    first, again = layout(["Q1"], facts), layout(["Q1"], facts)
    assert first == again
    assert len(first.nodes) == MAX_NODES and first.left_out == len(facts) - (MAX_NODES - 1)
    assert all(0 <= n.x <= first.width and 0 <= n.y <= first.height for n in first.nodes)
    # A value is a node of its own, drawn as one.
    small = layout(["Q1"], [Fact("Q1", "Hub", "population", "12", "", False)])
    assert [(n.label, n.value) for n in small.nodes] == [("Hub", False), ("12", True)]


def test_toe_tree_nested_with_v_and_r_per_node() -> None:
    r = verdict_view(record("toe")).reasoning
    assert r is not None and r.kind == "toe"
    root = r.root
    assert root is not None and root.text.startswith("The city council cut")
    assert (root.v, root.r, root.band) == ("0.30", "0.48", "false")
    assert [c.dimension for c in root.children] == ["core event", "quantitative accuracy"]
    deep = root.children[0]
    assert [(c.v, c.r) for c in deep.children] == [("0.45", "0.50"), ("0.20", "0.85")]
    assert deep.children[0].band == "uncertain" and deep.children[1].band == "false"
    assert (r.nodes, r.iterations, r.stop) == (5, 5, "queue empty")
    assert root.actions and root.evidence[0][1] is not None


# -- the HTML ---------------------------------------------------------------------------


def test_every_method_renders_its_reasoning() -> None:
    local, zofia = render(record("local")), render(record("zofia"))
    assert "Deduction <code>f1</code>" in local and 'id="evidence"' in local
    assert "Round 2: judge says <strong>Fake</strong>" in zofia
    wkgfc = render(record("wkgfc"))
    svg = wkgfc[wkgfc.index("<svg") : wkgfc.index("</svg>")]
    assert svg.count("<circle") == 6 and svg.count('class="kg-edge"') == 4
    assert ">educated at</text>" in svg
    toe = render(record("toe"))
    assert toe.count('<details class="node') == 5
    assert '<meter class="v" min="0" max="1" low="0.4" high="0.6" optimum="1" value="0.2987' in toe


def test_outside_text_is_escaped_everywhere_and_bad_links_are_not_links() -> None:
    wkgfc = record("wkgfc")
    wkgfc["claim"] = XSS
    wkgfc["explanation"] = XSS
    wkgfc["evidence"][0].update(title=XSS, text=XSS, url="javascript:alert(3)")
    sub = wkgfc["trace"]["subgraph"]
    sub["facts"][0]["object_label"] = XSS
    sub["facts"][0]["property_label"] = XSS
    sub["seeds"][0]["label"] = XSS
    toe = copy.deepcopy(record("toe"))
    toe["trace"]["tree"][0]["text"] = XSS
    toe["trace"]["tree"][1]["evidence"][0]["ref"] = "javascript:alert(4)"
    for html in (render(wkgfc), render(toe)):
        assert "<script" not in html and "<img" not in html
        assert "javascript:" not in re.sub(r">[^<]*<", "><", html)  # in no attribute
    html = render(wkgfc)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'rel="noopener noreferrer nofollow"' in html
    for href in re.findall(r'href="([^"]*)"', html):
        assert href.startswith(("https://", "http://", "/checks/", "/v1/checks/")), href


def test_a_failed_job_shows_its_error() -> None:
    job = Job(
        id="cd" * 16,
        status="failed",
        method="rag",
        summary="s",
        created=dt.datetime(2025, 1, 2, tzinfo=dt.UTC),
        request={"url": "http://127.0.0.1/"},
        error={"code": "bad_input", "message": f"blocked address {XSS}"},  # type: ignore[arg-type]
    )
    html = templates.get_template("_result.html").render(job=job_view(job), verdict=None)
    assert "The check failed" in html and "bad_input" in html and "<script" not in html
    assert job_view(job).kind == "article from a web page"


# -- the form and the pages ------------------------------------------------------------


def test_the_form_becomes_the_api_request_of_its_tab() -> None:
    fields = parse_form(
        b"kind=article&claim=ignored&article_title=T&article_text=Body+text"
        b"&article_date=2024-05-01&method=zofia&sources=wikipedia&sources=ddgs&model="
    )
    request = check_request(fields)
    assert request.claim is None and request.article is not None
    assert (request.article.title, request.article.text) == ("T", "Body text")
    assert request.article.date == dt.date(2024, 5, 1) and request.article.url is None
    assert (request.method, request.model, request.sources) == (
        "zofia",
        None,
        ["wikipedia", "ddgs"],
    )


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        (b"kind=claim&claim=+++", "claim", "The claim is empty"),
        (b"kind=article&article_title=only+a+title", "article.text", "text is empty"),
        (b"kind=url&url=", "url", "URL is empty"),
        (b"kind=url&url=ftp://example.org/x", "url", "String should match"),
        (b"kind=claim&claim=ok&date=yesterday", "date", "date"),
        (b"kind=other&claim=x", "kind", "choose"),
    ],
)
def test_form_mistakes_name_their_field(body: bytes, field: str, words: str) -> None:
    with pytest.raises(FormError) as caught:
        check_request(parse_form(body))
    assert (caught.value.detail.status, caught.value.detail.field) == (422, field)
    assert words in caught.value.detail.message


def test_history_pages() -> None:
    assert pages(0, 20, 0) == pages(0, 20, 5)
    first = pages(0, 20, 45)
    assert (first.number, first.count, first.previous, first.next) == (
        1,
        3,
        None,
        "/history?page=2",
    )
    last = pages(40, 20, 45)
    assert (last.number, last.previous, last.next) == (3, "/history?page=2", None)


# -- the pages over the app (the scripted fake runs the checks) ----------------------------


def test_pages_carry_a_content_policy_and_an_unknown_check_is_a_page(api) -> None:
    home = api.get("/")
    assert home.status_code == 200 and "text/html" in home.headers["content-type"]
    assert "script-src 'self'" in home.headers["content-security-policy"]
    assert 'name="api_key"' not in home.text  # no keys on this server
    missing = api.get("/checks/0123456789abcdef")
    assert missing.status_code == 404 and "No such check" in missing.text
    assert "text/html" in missing.headers["content-type"]
    assert api.get("/checks/" + "a" * 65).status_code == 404
    assert api.get("/history?page=x").status_code == 200


def test_a_check_not_yet_run_has_a_page_and_no_trace(api) -> None:
    service = api.app.state.service
    job = service.store.create(check_request(parse_form(b"kind=claim&claim=Queued.")))
    page = api.get(f"/checks/{job.id}")
    assert page.status_code == 200 and 'data-final="false"' in page.text
    assert 'id="verdict"' not in page.text and "queued" in page.text
    trace = api.get(f"/checks/{job.id}/trace.json")
    assert trace.status_code == 409 and trace.json()["error"]["code"] == "not_done"


def test_with_keys_the_form_takes_the_key_once_and_keeps_it_in_a_cookie(make_service) -> None:
    from fastapi.testclient import TestClient

    from verity.service.app import create_app
    from verity.service.keys import KeyRing, RateLimiter, hash_key, new_key

    key = new_key()
    service = make_service(keys=KeyRing({"alice": hash_key(key)}), limiter=RateLimiter(1))
    with TestClient(create_app(service)) as client:
        assert 'name="api_key"' in client.get("/").text
        refused = client.get("/history")
        assert refused.status_code == 401 and "An API key is needed" in refused.text
        form = {"kind": "claim", "claim": "The Eiffel Tower is in Paris."}
        wrong = client.post("/checks", data={**form, "api_key": "vty_wrong"})
        assert wrong.status_code == 401 and "not valid" in wrong.text
        assert key not in wrong.text and "vty_wrong" not in wrong.text  # never shown back
        sent = client.post("/checks", data={**form, "api_key": key}, follow_redirects=False)
        assert sent.status_code == 303
        cookie = sent.headers["set-cookie"]
        assert "verity_key=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert client.get(sent.headers["location"]).status_code == 200  # the cookie is sent
        assert 'name="api_key"' not in client.get("/").text
        again = client.post("/checks", data=form)
        assert again.status_code == 429 and "try again in" in again.text
        assert int(again.headers["retry-after"]) >= 1
        client.cookies.clear()
        assert client.get(sent.headers["location"]).status_code == 401


def test_a_form_post_that_is_not_a_form_is_refused_in_the_page(api) -> None:
    answer = api.post("/checks", json={"claim": "x"})
    assert answer.status_code == 415 and 'id="form-error"' in answer.text


def test_the_usage_table_says_what_a_check_cost() -> None:
    from verity.service.views import usage_rows

    def cost(usage: dict) -> str:
        return dict(usage_rows(usage))["cost"]

    assert cost({"llm_calls": 3, "cost": 0.0042, "unpriced_calls": 0}) == "$0.004200"
    assert cost({"llm_calls": 3, "cost": 0.0, "unpriced_calls": 3}) == "price unknown"
    assert cost({"llm_calls": 3}) == "-"  # stored before calls were priced: not $0
    assert cost({"llm_calls": 3, "cost": "lots", "unpriced_calls": -2}) == "$0"
