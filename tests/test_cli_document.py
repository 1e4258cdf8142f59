"""``verity check --document``: a whole text from a file, stdin or a URL, checked claim by claim.

The model is a loopback OpenAI-compatible endpoint (`faults.FaultServer`) that answers
each step by script: selection passes every sentence but opinions, disambiguation and
decomposition give the sentence back, and ``direct`` judges a claim REFUTED when it
mentions a record, SUPPORTED otherwise. What is tested is the command: its inputs, its
outputs, reruns, messages and exit codes.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from faults import FaultServer, Reply, Seen
from faults.model import completion
from verity import pages

TEXT = (
    "The dam was finished in 1936. Its builders broke the record for concrete. "
    "Critics called it an ugly opinion."
)
SENTENCES = ["The dam was finished in 1936.", "Its builders broke the record for concrete."]
PAGE = """<!doctype html><html><head><meta charset="utf-8">
<title>Dam story | Gazette</title>
<meta property="og:title" content="The dam at ninety">
</head><body><article><h1>The dam at ninety</h1>
<p>The dam was finished in 1936 after five years of work on the canyon walls.</p>
<p>Its builders broke the record for concrete poured in a single structure at the time.</p>
</article></body></html>"""


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no stray verity.toml
    for var in ("VERITY_METHOD", "VERITY_MODEL", "VERITY_BASE_URL", "VERITY_SOURCES",
                "VERITY_CONFIG", "OPENAI_API_KEY", "VERITY_MAX_ARTICLE_CHARS"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    # A cache of this test's own: counted requests are never answered from another's.
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path / "cache"))


def _between(text: str, tag: str) -> str:
    return text.rsplit(f"<{tag}>", 1)[1].split(f"</{tag}>", 1)[0]


class FakeEndpoint:
    """A scripted fake model endpoint on loopback, and a web page at ``/story``.

    ``failing`` holds words: a claim check whose claim has one gets an answer that is not
    JSON, every time, so that the check fails. ``claims`` replaces decomposition's answer.
    """

    def __init__(self, server: FaultServer) -> None:
        self.server = server
        self.failing: set[str] = set()
        self.claims: Callable[[str], list[str]] | None = None
        server.always(self.reply)

    @property
    def url(self) -> str:
        return f"{self.server.url}/v1"

    def reply(self, seen: Seen) -> Reply:
        if seen.method == "GET":
            return Reply(body=PAGE.encode(), content_type="text/html; charset=utf-8")
        messages = seen.json()["messages"]
        # A repair request after a bad answer adds messages: the task is in the first two.
        system, user = messages[0]["content"], messages[1]["content"]
        if "decide which sentences" in system:
            sentence = _between(user, "sentence")
            payload: dict[str, Any] = {"analysis": "", "verifiable": "opinion" not in sentence}
        elif "understandable without the text around it" in system:
            payload = {"analysis": "", "resolvable": True,
                       "decontextualized": _between(user, "sentence")}  # fmt: skip
        elif "split one sentence" in system:
            sentence = _between(user, "sentence")
            claims = self.claims(sentence) if self.claims else [sentence]
            payload = {"analysis": "", "claims": claims}
        elif "news article" in system:
            payload = {"explanation": "Made up.", "label": "FAKE", "confidence": 0.6}
        else:
            claim = _between(user, "claim")
            if any(word in claim for word in self.failing):
                return Reply.json(completion("no verdict here, only words"))
            label = "REFUTED" if "record" in claim else "SUPPORTED"
            payload = {"explanation": f"Checked.\nSecond line of {label}.", "label": label,
                       "confidence": 0.7}  # fmt: skip
        return Reply.json(completion(json.dumps(payload)))

    def judged(self, since: int = 0) -> list[Seen]:
        """The claim checks the endpoint received (after the first ``since`` requests)."""
        return [s for s in self.server.requests[since:] if s.method == "POST" and
                "<claim>" in s.json()["messages"][1]["content"]]  # fmt: skip


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with FaultServer() as server:
        yield FakeEndpoint(server)


def argv(endpoint: FakeEndpoint, source: str, *extra: str) -> list[str]:
    return ["check", "--document", source, "--method", "direct", "--model", "openai:m",
            "--base-url", endpoint.url, "--grounding", "off", "--extractor", "single",
            *extra]  # fmt: skip


def test_a_text_file_is_checked_claim_by_claim_with_progress(cli, endpoint) -> None:
    Path("dam.txt").write_text(TEXT, encoding="utf-8")
    code, out, err = cli(argv(endpoint, "dam.txt", "--json", "--progress"))
    assert code == 0, err
    record = json.loads(out)  # one JSON object: progress went to stderr
    assert out.count("\n") == 1
    assert [c["text"] for c in record["claims"]] == SENTENCES
    assert [c["label"] for c in record["claims"]] == ["SUPPORTED", "REFUTED"]
    assert record["method"] == "direct" and record["extractor"] == "claimify/single"
    assert record["complete"] is True
    lines = err.splitlines()
    assert "2 claims from 3 sentences" in lines
    assert f"C1 SUPPORTED  {SENTENCES[0]}" in lines
    assert f"C2 REFUTED  {SENTENCES[1]}" in lines


def test_json_spans_cut_the_document_at_each_claims_sentence(cli, endpoint) -> None:
    Path("dam.txt").write_text("  \n" + TEXT + "\n", encoding="utf-8")
    code, out, err = cli(argv(endpoint, "dam.txt", "--json"))
    assert code == 0, err
    record = json.loads(out)
    text = record["document"]["text"]
    for claim, sentence in zip(record["claims"], SENTENCES, strict=True):
        span = claim["spans"][0]
        assert text[span["start"] : span["end"]] == sentence
        assert claim["verdict"]["label"] == claim["label"]


def test_a_json_file_dates_every_claim_check_and_date_wins_over_it(cli, endpoint) -> None:
    record = {"title": "The dam", "text": TEXT, "url": "https://example.org/dam",
              "date": "1937-01-02"}  # fmt: skip
    Path("dam.json").write_text(json.dumps(record), encoding="utf-8")
    code, out, err = cli(argv(endpoint, "dam.json", "--json"))
    assert code == 0, err
    got = json.loads(out)
    assert got["document"]["title"] == "The dam" and got["document"]["date"] == "1937-01-02"
    judged = endpoint.judged()
    assert len(judged) == 2
    assert all("Date: 1937-01-02" in s.json()["messages"][1]["content"] for s in judged)
    before = endpoint.server.count
    code, out, err = cli(argv(endpoint, "dam.json", "--json", "--date", "1950-06-30"))
    assert code == 0, err
    assert json.loads(out)["document"]["date"] == "1950-06-30"
    judged = endpoint.judged(before)
    assert len(judged) == 2
    assert all("Date: 1950-06-30" in s.json()["messages"][1]["content"] for s in judged)
    shown = [s.json()["messages"][1]["content"] for s in endpoint.server.requests[before:]]
    assert any("Written on: 1950-06-30" in m for m in shown)  # disambiguation sees it too


def test_a_document_on_stdin(cli, endpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(TEXT.encode("utf-8"))))
    code, out, err = cli(argv(endpoint, "-", "--json"))
    assert code == 0, err
    assert [c["text"] for c in json.loads(out)["claims"]] == SENTENCES


def test_a_url_goes_through_the_guarded_fetcher(
    cli, endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = f"{endpoint.server.url}/story"
    # The guard refuses loopback: nothing is fetched, and the message says why.
    code, out, err = cli(argv(endpoint, page, "--json"))
    assert code == 2 and "cannot fetch the page: refused" in err
    assert endpoint.server.requests == []
    # A client that lets this test's loopback host through, the rest of the guard intact.
    allowed = partial(pages.make_page_client, allowed_hosts=["127.0.0.1"])
    monkeypatch.setattr(pages, "make_page_client", allowed)
    code, out, err = cli(argv(endpoint, page, "--json"))
    assert code == 0, err
    record = json.loads(out)
    assert record["document"]["title"] == "The dam at ninety"
    assert record["document"]["url"] == page
    assert [s.path for s in endpoint.server.requests if s.method == "GET"] == ["/story"]
    texts = [c["text"] for c in record["claims"]]
    assert "The dam was finished in 1936 after five years of work on the canyon walls." in texts


def test_a_rerun_with_output_checks_only_the_claim_that_failed(cli, endpoint) -> None:
    Path("dam.txt").write_text(TEXT, encoding="utf-8")
    endpoint.failing = {"record"}
    code, out, err = cli(argv(endpoint, "dam.txt", "--json", "--output", "dam.result.json"))
    assert code == 5, out  # a model that gives no valid answer, as a batch would exit
    first = json.loads(out)
    assert [c["status"] for c in first["claims"]] == ["checked", "failed"]
    assert "ModelOutputError" in first["claims"][1]["error"]
    assert "run again with --output dam.result.json" in err
    saved = json.loads(Path("dam.result.json").read_text(encoding="utf-8"))
    assert saved["complete"] is False  # saved even though a claim failed
    endpoint.failing = set()
    before = endpoint.server.count
    code, out, err = cli(argv(endpoint, "dam.txt", "--json", "--output", "dam.result.json"))
    assert code == 0, err
    again = endpoint.server.requests[before:]
    # Only the failed claim is asked about: no extraction, no check of the first claim.
    assert len(again) == 1
    assert _between(again[0].json()["messages"][-1]["content"], "claim") == SENTENCES[1]
    second = json.loads(out)
    assert second["complete"] is True
    assert second["claims"][0]["verdict"] == first["claims"][0]["verdict"]
    assert second["claims"][1]["label"] == "REFUTED"


def test_max_options_bound_each_claim_and_run_max_the_whole_document(
    cli, endpoint, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    Path("dam.txt").write_text(TEXT, encoding="utf-8")
    # direct asks once per claim: one call is each claim's whole need, and the extraction's
    # seven calls (3 selections, 2 disambiguations, 2 decompositions) are not a claim's.
    code, out, err = cli(argv(endpoint, "dam.txt", "--json", "--max-calls", "1"))
    assert code == 0, err
    assert json.loads(out)["complete"] is True
    # The whole document within 8 calls: the extraction's 7, then one claim at most. A new
    # cache, or every answer would come from the run above, and a cached answer is free.
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path / "cache-2"))
    code, out, err = cli(argv(endpoint, "dam.txt", "--json", "--run-max-calls", "8",
                              "--concurrency", "1"))  # fmt: skip
    assert code == 6, err  # a budget exceeded
    record = json.loads(out)
    assert [c["status"] for c in record["claims"]] == ["checked", "failed"]
    assert "BudgetExceededError" in record["claims"][1]["error"]
    # A claim whose check needs more than its one call (a bad answer asks again) is
    # stopped by its own budget; the other claim and the extraction are not.
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path / "cache-3"))
    endpoint.failing = {"record"}
    code, out, err = cli(argv(endpoint, "dam.txt", "--json", "--max-calls", "1"))
    assert code == 6, err
    record = json.loads(out)
    assert [c["status"] for c in record["claims"]] == ["checked", "failed"]
    assert "BudgetExceededError" in record["claims"][1]["error"]


def test_with_an_article_method_labels_the_whole_text_beside_its_claims(cli, endpoint) -> None:
    Path("dam.txt").write_text(TEXT, encoding="utf-8")
    code, out, err = cli(argv(endpoint, "dam.txt", "--json", "--with", "direct"))
    assert code == 0, err
    record = json.loads(out)
    assert record["article"]["label"] == "FAKE" and len(record["claims"]) == 2
    articles = [s for s in endpoint.server.requests if "news article" in s.body.decode()]
    assert len(articles) == 1
    assert (
        "Article text: <text>The dam was finished" in articles[0].json()["messages"][1]["content"]
    )
    code, out, err = cli(argv(endpoint, "dam.txt", "--with", "direct"))
    assert code == 0, err
    assert "Whole text (direct): FAKE" in out


def test_an_output_of_another_document_is_replaced_with_a_warning(cli, endpoint) -> None:
    Path("a.txt").write_text(TEXT, encoding="utf-8")
    Path("b.txt").write_text("The bridge opened in 1932.", encoding="utf-8")
    assert cli(argv(endpoint, "a.txt", "--json", "--output", "r.json"))[0] == 0
    code, _, err = cli(argv(endpoint, "b.txt", "--json", "--output", "r.json"))
    assert code == 0, err
    assert "r.json holds another document's result; replacing it" in err
    saved = json.loads(Path("r.json").read_text(encoding="utf-8"))
    assert [c["text"] for c in saved["claims"]] == ["The bridge opened in 1932."]


def test_an_output_file_that_is_not_a_result_is_left_alone(cli, endpoint) -> None:
    Path("a.txt").write_text(TEXT, encoding="utf-8")
    Path("notes.json").write_text('{"mine": true}', encoding="utf-8")
    code, _, err = cli(argv(endpoint, "a.txt", "--output", "notes.json"))
    assert code == 2 and "notes.json is not a document result" in err
    assert Path("notes.json").read_text(encoding="utf-8") == '{"mine": true}'
    assert endpoint.server.requests == []


MARKUP_CLAIM = "The [bold]x[/bold] tag <script>alert(1)</script> broke the record."


def test_the_report_and_the_terminal_show_markup_as_text(cli, endpoint) -> None:
    Path("dam.txt").write_text(TEXT, encoding="utf-8")
    endpoint.claims = lambda sentence: [MARKUP_CLAIM] if "record" in sentence else [sentence]
    code, out, err = cli(argv(endpoint, "dam.txt", "--report", "dam.md"))
    assert code == 0, err
    report = Path("dam.md").read_text(encoding="utf-8")
    assert "<script>" not in report and "[bold]" not in report
    assert r"\<script\>alert\(1\)\</script\>" in report
    assert r"\[bold\]x\[/bold\]" in report
    # The terminal: the claim as it is (the console wraps long lines at spaces).
    shown = " ".join(out.split())
    assert MARKUP_CLAIM in shown
    assert "Marked: SUPPORTED REFUTED" in shown
    assert "Checked." in shown and "Second line" not in shown  # the explanation's 1st line


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["a claim"], "give either a claim or --document, not both"),
        (["--article", "a.txt"], "give either --article or --document, not both"),
        (["--input", "in.jsonl", "--output", "o.jsonl"], "give either --input or --document"),
        (["--trace", "t.json"], "--trace is for one claim or article"),
        (["--speaker", "Ann"], "a document's claims have no speaker"),
        (["--engine", "ray"], "--engine and --address apply to a batch"),
        (["--with", "local"], "method 'local' does not check articles"),
        (["--extractor", "many"], "--extractor is one of claimify, single, not 'many'"),
        (["--report", "no/such/dir/r.md"], "--report no/such/dir/r.md: folder"),
        (["--date", "May 2020"], "--date must be YYYY-MM-DD"),
    ],
)
def test_options_that_do_not_fit_a_document_are_refused(
    cli, endpoint, extra: list[str], message: str
) -> None:
    Path("a.txt").write_text(TEXT, encoding="utf-8")
    base = argv(endpoint, "a.txt")
    if extra[0] == "a claim":
        base = ["check", "a claim", *base[1:]]
        extra = []
    code, out, err = cli([*base, *extra])
    assert code == 2, err
    assert message in err
    assert "Traceback" not in out + err
    assert endpoint.server.requests == []


def test_an_article_only_method_is_refused_for_a_documents_claims(cli) -> None:
    Path("a.txt").write_text(TEXT, encoding="utf-8")
    code, _, err = cli(["check", "--document", "a.txt", "--method", "zofia"])
    assert code == 2
    assert "method 'zofia' does not check claims; methods that do:" in err


def test_with_article_and_extractor_need_a_document(cli) -> None:
    code, _, err = cli(["check", "a claim", "--with", "zofia"])
    assert code == 2 and "--with, --extractor and --report apply to --document" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"  \n ", "article a.doc is empty"),
        (b'{"title": "T", "text": ', "starts with '{' but is not valid JSON"),
        (b'{"title": "T"}', "no 'text'"),
        (b"caf\xe9 au lait", "article a.doc is not valid UTF-8 (byte 4)"),
        (b"x" * 120, "more than the limit of 100"),
    ],
)
def test_a_bad_document_is_a_message_and_exit_code_2(
    cli, endpoint, monkeypatch: pytest.MonkeyPatch, content: bytes, message: str
) -> None:
    monkeypatch.setenv("VERITY_MAX_ARTICLE_CHARS", "100")
    Path("a.doc").write_bytes(content)
    code, out, err = cli(argv(endpoint, "a.doc"))
    assert code == 2
    assert message in err
    assert "Traceback" not in out + err
    assert endpoint.server.requests == []


def test_a_missing_file_and_a_bad_url_are_named(cli, endpoint) -> None:
    code, _, err = cli(argv(endpoint, "missing.txt"))
    assert code == 2 and "cannot read article missing.txt" in err
    code, _, err = cli(argv(endpoint, "ftp://example.org/a.txt"))
    assert code == 2 and "only http and https URLs can be fetched" in err


def test_a_document_line_in_a_batch_gives_a_document_result(cli, endpoint) -> None:
    lines = [{"id": "c1", "claim": "Paris is in France."},
             {"id": "d1", "document": TEXT, "title": "The dam", "date": "1937-01-02"}]  # fmt: skip
    Path("in.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    base = ["check", "--input", "in.jsonl", "--output", "out.jsonl", "--method", "direct",
            "--model", "openai:m", "--base-url", endpoint.url, "--grounding", "off"]  # fmt: skip
    code, _, err = cli(base)
    assert code == 0, err
    got = [json.loads(line) for line in Path("out.jsonl").read_text().splitlines()]
    claim, document = sorted(got, key=lambda r: r["id"])
    assert claim["label"] == "SUPPORTED" and "document" not in claim
    assert document["id"] == "d1" and document["method"] == "direct"
    assert document["document"]["title"] == "The dam"
    assert [c["text"] for c in document["claims"]] == SENTENCES
    assert document["complete"] is True
    assert all("Date: 1937-01-02" in s.json()["messages"][1]["content"]
               for s in endpoint.judged() if "Paris" not in s.body.decode())  # fmt: skip
    # Both are done: a rerun checks nothing.
    before = endpoint.server.count
    code, _, err = cli(base)
    assert code == 0 and endpoint.server.count == before
    assert "0 checked, 2 already done" in err


def test_max_options_in_a_batch_bound_each_claim_of_a_document(cli, endpoint) -> None:
    Path("in.jsonl").write_text(json.dumps({"id": "d1", "document": TEXT}) + "\n")
    command = ["check", "--input", "in.jsonl", "--output", "out.jsonl", "--method", "direct",
               "--model", "openai:m", "--base-url", endpoint.url, "--grounding", "off",
               "--max-calls", "1"]  # fmt: skip
    code, _, err = cli(command)
    assert code == 0, err
    (line,) = Path("out.jsonl").read_text().splitlines()
    assert json.loads(line)["complete"] is True


def test_a_batch_document_with_a_failed_claim_is_redone_by_a_rerun(cli, endpoint) -> None:
    Path("in.jsonl").write_text(json.dumps({"id": "d1", "document": TEXT}) + "\n")
    base = ["check", "--input", "in.jsonl", "--output", "out.jsonl", "--method", "direct",
            "--model", "openai:m", "--base-url", endpoint.url, "--grounding", "off"]  # fmt: skip
    endpoint.failing = {"record"}
    code, _, err = cli(base)
    assert code == 5, err
    assert "in.jsonl:1: 1 claim check(s) failed; a rerun retries it" in err
    endpoint.failing = set()
    code, _, err = cli(base)
    assert code == 0, err
    got = [json.loads(line) for line in Path("out.jsonl").read_text().splitlines()]
    assert [r["complete"] for r in got] == [False, True]
    assert [c["label"] for c in got[-1]["claims"]] == ["SUPPORTED", "REFUTED"]


def test_a_document_line_that_cannot_be_used_is_a_skipped_line(cli, endpoint) -> None:
    lines = [{"document": "  "}, {"document": "x" * 120}]
    Path("in.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    Path("verity.toml").write_text("[limits]\narticle_chars = 100\n")
    command = ["check", "--input", "in.jsonl", "--output", "out.jsonl", "--method", "direct",
               "--model", "openai:m", "--base-url", endpoint.url]  # fmt: skip
    code, _, err = cli(command)
    assert code == 2
    assert "in.jsonl:1: skipped: 'document' must be a non-empty string" in err
    assert "in.jsonl:2: skipped: the document has 120 characters, more than the limit of 100" in err


# --- the terminal rendering, on a result built by hand ----------------------------------------

HAND_TEXT = "Intro \x1b[31mred. The dam is tall. It broke the [bold]x[/bold] record. It <script>."


def _result() -> Any:
    from verity.documents.summary import summarise
    from verity.documents.types import ClaimResult, DocumentVerdict
    from verity.domain import Claim, Label, Usage, Verdict
    from verity.extraction.types import Document, ExtractedClaim, Span

    doc = Document(text=HAND_TEXT, title="Hand [i]made[/i]")

    def claim(n: int, sentence: str, text: str) -> ExtractedClaim:
        start = HAND_TEXT.index(sentence)
        return ExtractedClaim(id=f"C{n}", text=text, sentence_index=n,
                              spans=(Span(start=start, end=start + len(sentence)),))  # fmt: skip

    def verdict(label: Label, subject: str) -> Verdict:
        return Verdict(label=label, confidence=0.6, explanation="First [red]line[/].\nMore.",
                       method="direct", subject=Claim(text=subject))  # fmt: skip

    tall = "The dam is tall."
    broke = "It broke the [bold]x[/bold] record."
    script = "It <script>."
    results = [
        ClaimResult(claim=claim(1, tall, tall), status="checked",
                    verdict=verdict(Label.SUPPORTED, tall)),
        ClaimResult(claim=claim(2, broke, broke + " :warning:\x1b]0;pwned\x07"), status="checked",
                    verdict=verdict(Label.REFUTED, broke)),
        ClaimResult(claim=claim(3, script, "The <script> tag"), status="failed",
                    error="ModelOutputError: no valid [b]answer[/b]"),
    ]  # fmt: skip
    return DocumentVerdict(
        document=doc, method="direct", extractor="claimify/single", claims=tuple(results),
        summary=summarise(results),
        extraction_usage=Usage(llm_calls=7, prompt_tokens=84, completion_tokens=35, seconds=1.5),
    )  # fmt: skip


def test_each_claims_first_span_is_styled_in_its_labels_colour() -> None:
    from verity.render_document import marked_text

    marked = marked_text(_result())
    # The offsets still hold: the escape character was replaced one for one, not removed.
    assert len(marked.plain) == len(HAND_TEXT) and "\x1b" not in marked.plain
    spans = [(s.start, s.end, str(s.style)) for s in marked.spans]
    tall, broke, script = (HAND_TEXT.index(x) for x in ("The dam", "It broke", "It <script>"))
    assert spans == [
        (tall, tall + len("The dam is tall."), "underline green"),
        (broke, broke + len("It broke the [bold]x[/bold] record."), "underline red"),
        (script, script + len("It <script>."), "underline bright_black"),
    ]
    for start, end, _ in spans:
        assert marked.plain[start:end] == HAND_TEXT[start:end]


def test_the_rendering_shows_every_outside_text_as_it_is() -> None:
    from rich.console import Console

    from verity.render_document import document

    buffer = io.StringIO()
    document(Console(file=buffer, width=300, emoji=False, highlight=False), _result())
    shown = buffer.getvalue()
    assert "\x1b" not in shown  # no terminal here: no colour codes, and the text's escape gone
    lines = shown.splitlines()
    assert lines[0] == "Hand [i]made[/i]"
    assert "It broke the [bold]x[/bold] record. :warning:" in shown
    assert "C3  failed          " + "      The <script> tag" in lines
    assert "    First [red]line[/]." in lines and "More." not in shown
    assert "Marked: SUPPORTED  REFUTED  failed" in lines
    assert "3 claim(s) from 0 sentence(s): SUPPORTED 1, REFUTED 1, failed 1" in lines
    assert "Most in doubt: C2, C1, C3" in lines
    assert "C3 failed: ModelOutputError: no valid [b]answer[/b]" in lines
    assert "extraction: 7 model call(s), 84+35 tokens, 1.5 s in the model" in lines


def test_document_lines_without_an_id_are_told_apart(tmp_path: Path) -> None:
    from verity.batch import read_items

    lines = [{"document": "The dam is tall."}, {"document": "The dam is short."},
             {"text": "The dam is tall."}, {"document": "The dam is tall."}]  # fmt: skip
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    items, bad = read_items(path)
    assert [type(i.subject).__name__ for i in items] == ["Document", "Document", "Article"]
    assert len({i.key for i in items}) == 3
    assert [(b.line, b.reason.split(" ", 2)[:2]) for b in bad] == [(4, ["duplicate", "id"])]


def test_a_document_line_is_refused_on_ray_before_anything_runs(cli, endpoint) -> None:
    pytest.importorskip("ray")
    Path("in.jsonl").write_text(json.dumps({"id": "d1", "document": TEXT}) + "\n")
    code, _, err = cli(["check", "--input", "in.jsonl", "--output", "out.jsonl", "--method",
                        "direct", "--model", "openai:m", "--base-url", endpoint.url,
                        "--engine", "ray"])  # fmt: skip
    assert code == 2
    assert "in.jsonl:1: a document line needs --engine thread" in err
    assert not Path("out.jsonl").exists() and endpoint.server.requests == []
