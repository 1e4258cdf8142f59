from __future__ import annotations

import json
from pathlib import Path

from verity.batch import done_keys, read_items, run_batch
from verity.domain import Article, Claim, Label, Verdict
from verity.errors import ModelOutputError

INPUT = "\n".join(
    [
        json.dumps({"id": "a", "claim": "Paris is in France."}),
        "{not json",
        json.dumps({"claim": "Berlin is in Germany.", "date": "2020-02-03", "speaker": "Ann"}),
        json.dumps(["a list"]),
        json.dumps({"id": "b", "claim": "   "}),
        "",
        json.dumps({"id": "c", "claim": "Rome is in Italy.", "date": "yesterday"}),
        json.dumps({"id": "a", "claim": "duplicate id"}),
        json.dumps({"id": 4, "claim": "Madrid is in Spain."}),
    ]
)


def verdict_for(claim: Claim) -> Verdict:
    return Verdict(label=Label.SUPPORTED, confidence=1.0, method="test", subject=claim)


def test_bad_lines_are_named_and_good_lines_kept(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(INPUT)
    items, bad = read_items(path)
    assert [i.line for i in items] == [1, 3, 9]
    assert items[0].key == "a" and items[2].key == "4"
    assert items[1].key.startswith("sha1:")
    assert items[1].subject.speaker == "Ann"
    assert [b.line for b in bad] == [2, 4, 5, 7, 8]
    assert "not valid JSON" in bad[0].reason
    assert "duplicate id" in bad[4].reason
    assert bad[2].reason == "'claim' must be a non-empty string, not '   '"
    assert bad[3].reason == "'date' must be a date YYYY-MM-DD, not 'yesterday'"


def test_results_written_as_they_finish_and_rerun_skips_them(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(INPUT)
    items, _ = read_items(path)
    out = tmp_path / "out.jsonl"
    seen: list[str] = []

    def verify(claim: Claim) -> Verdict:
        seen.append(claim.text)
        return verdict_for(claim)

    assert run_batch(items, verify, out) == []
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", items[1].key, "4"]
    assert rows[0]["label"] == "SUPPORTED" and rows[0]["claim"] == "Paris is in France."
    seen.clear()
    run_batch(items, verify, out)
    assert seen == []
    assert len(out.read_text().splitlines()) == 3


def test_a_line_cut_by_a_crash_is_redone(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(INPUT)
    items, _ = read_items(path)
    out = tmp_path / "out.jsonl"
    good = json.dumps({"id": "a", "label": "SUPPORTED"}) + "\n"
    out.write_text(good + '{"id": "4", "label": "SUPP')  # killed mid-write
    assert done_keys(out) == {"a"}
    assert out.read_text() == good
    redone: list[str] = []
    run_batch(items, lambda c: (redone.append(c.text), verdict_for(c))[1], out)
    assert redone == ["Berlin is in Germany.", "Madrid is in Spain."]
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["a", items[1].key, "4"]


def test_failures_are_recorded_and_the_rest_go_on(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(INPUT)
    items, _ = read_items(path)
    out = tmp_path / "out.jsonl"

    def verify(claim: Claim) -> Verdict:
        if "Berlin" in claim.text:
            raise ModelOutputError("no valid answer")
        return verdict_for(claim)

    failures = run_batch(items, verify, out, concurrency=2)
    assert [f.item.line for f in failures] == [3]
    assert sorted(json.loads(x)["id"] for x in out.read_text().splitlines()) == ["4", "a"]
    errors = (tmp_path / "out.jsonl.errors.jsonl").read_text().splitlines()
    assert json.loads(errors[0])["error"] == "no valid answer"
    # A rerun retries only the failed claim.
    retried: list[str] = []
    run_batch(items, lambda c: (retried.append(c.text), verdict_for(c))[1], out)
    assert retried == ["Berlin is in Germany."]


def test_a_bad_byte_costs_its_line_only(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(
        b'{"id": "1", "claim": "Paris is in France."}\n'
        b'{"id": "2", "claim": "caf\xe9"}\n'
        b'{"id": "3", "claim": "Rome is in Italy."}\n'
    )
    items, bad = read_items(path)
    assert [i.key for i in items] == ["1", "3"]
    assert [(b.line, b.reason) for b in bad] == [(2, "not valid UTF-8")]


def test_unusable_output_is_a_clear_error(tmp_path: Path) -> None:
    import pytest

    from verity.errors import BadInputError

    with pytest.raises(BadInputError, match="is a folder"):
        run_batch([], verdict_for, tmp_path)
    with pytest.raises(BadInputError, match="does not exist"):
        run_batch([], verdict_for, tmp_path / "missing" / "out.jsonl")
    broken = tmp_path / "out.jsonl"
    broken.write_bytes(b'{"id": "\xff"}\n')
    with pytest.raises(BadInputError, match="cannot read output file"):
        run_batch([], verdict_for, broken)


def test_an_unexpected_error_on_one_claim_does_not_stop_the_batch(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(INPUT)
    items, _ = read_items(path)
    out = tmp_path / "out.jsonl"

    def verify(claim: Claim) -> Verdict:
        if "Paris" in claim.text:
            raise RuntimeError("llama exploded")
        return verdict_for(claim)

    failures = run_batch(items, verify, out)
    assert [(f.item.key, str(f.error)) for f in failures] == [("a", "llama exploded")]
    assert len(out.read_text().splitlines()) == 2
    error = json.loads((tmp_path / "out.jsonl.errors.jsonl").read_text())
    assert error["type"] == "RuntimeError" and error["line"] == 1


def article_verdict(subject: Claim | Article) -> Verdict:
    label = Label.FAKE if isinstance(subject, Article) else Label.SUPPORTED
    return Verdict(label=label, confidence=1.0, method="test", subject=subject)


def test_article_lines_beside_claim_lines(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    lines = [
        {"id": "c", "claim": "Paris is in France."},
        {"id": "a", "title": "Tower sold", "text": "The tower was sold.", "date": "2020-01-02"},
        {"text": "No title, no id.", "url": "https://news.example.org/1"},
        {"claim": "A claim key makes a claim.", "text": "ignored"},
        {"id": "e", "title": "Only a title", "text": ""},
        {"id": "d", "text": "Bad date.", "date": "2020-13-01"},
        {"id": "n", "title": "Neither claim nor text"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines))
    items, bad = read_items(path)
    assert [type(i.subject) for i in items] == [Claim, Article, Article, Claim]
    assert items[1].subject == Article(
        title="Tower sold", text="The tower was sold.", date="2020-01-02"
    )
    assert items[2].key.startswith("sha1:") and items[2].subject.title == ""
    assert [(b.line, b.reason) for b in bad] == [
        (5, "'text' must be a non-empty string, not ''"),
        (6, "'date' must be a date YYYY-MM-DD, not '2020-13-01'"),
        (7, "no 'claim' (for a claim) or 'text' (for an article)"),
    ]
    out = tmp_path / "out.jsonl"
    assert run_batch(items, article_verdict, out) == []
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["a"]["label"] == "FAKE"
    assert rows["a"]["article"] == {"title": "Tower sold", "url": None}
    assert rows["c"]["label"] == "SUPPORTED" and rows["c"]["claim"] == "Paris is in France."


def test_an_article_key_is_stable_and_differs_from_a_claim_key(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(
        json.dumps({"text": "Same words."}) + "\n" + json.dumps({"claim": "Same words."}) + "\n"
    )
    first, _ = read_items(path)
    again, _ = read_items(path)
    assert [i.key for i in first] == [i.key for i in again]
    assert first[0].key != first[1].key
