"""A grounded verdict where people read it: the web page's sentences, and the Markdown section.

``data/verdict_grounded.json`` is a real ``--json`` record: ``rag`` run with a scripted
fake model (`verity.testing.FakeChatModel`) over three listed passages, the judge citing
[1] and [3] and answering REFUTED, then the grounding check in strict mode answering,
sentence by sentence, supported, contradicted, supported (found [1]), not supported (it
cites [7], which no reference has), no claim, and leaving the sixth sentence out; the
explanation as a whole arguing for another label. Calls keep their last message cut to
100 characters and retrievals their first two passages, as the other fixtures do.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from test_views import XSS, render

from verity.domain import Claim, Evidence, Grounding, Label, Trace, Verdict
from verity.grounding.cite import reference
from verity.grounding.report import markdown, with_section
from verity.service.views import verdict_view

DATA = Path(__file__).parent / "data"


def grounded() -> dict[str, Any]:
    return json.loads((DATA / "verdict_grounded.json").read_text(encoding="utf-8"))


def verdict_of(record: dict[str, Any]) -> Verdict:
    """The fixture's record as a `Verdict` again, its grounding included."""
    return Verdict(
        label=Label(record["label"]),
        confidence=record["confidence"],
        explanation=record["explanation"],
        evidence=tuple(
            Evidence(text=e["text"], title=e["title"], source=e["source"], url=e["url"])
            for e in record["evidence"]
        ),
        method=record["method"],
        subject=Claim(text=record["claim"]),
        grounding=Grounding.model_validate(record["grounding"]),
    )


# -- the page's view --------------------------------------------------------------------


def test_the_explanation_is_cut_at_each_sentences_offsets_with_its_status() -> None:
    record = grounded()
    view = verdict_view(record).grounding
    assert view is not None
    # Every character of the explanation is in exactly one piece, in order.
    assert "".join(p.text for p in view.pieces) == record["explanation"]
    sentences = [(p.number, p.status, p.words, p.text) for p in view.pieces if p.status]
    assert sentences == [
        (1, "supported", "supported", "The Eiffel Tower stands in Paris [1]."),
        (2, "contradicted", "contradicted", "Its construction ended in 1899 [3]."),
        (3, "supported", "supported", "The tower is in France."),
        (4, "unsupported", "not supported", "It is made of wood [7]."),
        (5, "no_claim", "no claim", "All told, the claim holds."),
        (6, "unchecked", "not checked", "Its height is 330 metres."),
    ]
    assert [p.text for p in view.pieces if not p.status] == [" "] * 5
    assert (view.supported, view.factual, view.share) == (2, 4, "0.50")
    assert view.argues_against and view.ungrounded and view.mode == "strict"
    assert [name for name, _ in view.flags] == ["contradicts_label", "contradicted_sentence"]
    assert (view.calls, view.checker) == (1, "model:fake-grounded")


def test_each_sentence_links_to_the_passage_it_cites_by_the_text_it_holds() -> None:
    view = verdict_view(grounded())
    pieces = [p for p in view.grounding.pieces if p.status]
    links = [[(link.id, link.href, link.cited) for link in p.links] for p in pieces]
    assert links == [
        [("1", "#evidence-1", True)],
        # rag keeps the prompt's numbers: [3] is the second passage the verdict keeps.
        [("3", "#evidence-2", True)],
        [("1", "#evidence-1", False)],  # cites nothing; the checker found [1]
        [("7", None, True)],  # no reference has id 7: shown, linked to nothing
        [],
        [],
    ]
    assert [(e.number, e.cited_as) for e in view.evidence] == [(1, ()), (2, ("3",))]


def test_a_reference_that_is_no_passage_is_listed_and_linked_by_its_own_anchor() -> None:
    record = grounded()
    record["grounding"]["references"].append(
        {"id": "T3", "text": "Eiffel Tower | located in | Paris", "kind": "fact", "title": ""}
    )
    record["grounding"]["sentences"][2]["found"] = ["t3"]
    view = verdict_view(record).grounding
    assert [(r.id, r.anchor, r.kind) for r in view.references] == [("T3", "reference-T3", "fact")]
    third = next(p for p in view.pieces if p.number == 3)
    assert [(link.id, link.href) for link in third.links] == [("t3", "#reference-T3")]
    html = render(record)
    assert '<li id="reference-T3">' in html and 'href="#reference-T3"' in html


def test_twin_passages_are_each_taken_once_and_a_cut_reference_finds_its_passage() -> None:
    record = grounded()
    long_text = "The tower  was\nrepainted. " * 100  # 2,600 characters, spaces irregular
    record["evidence"] = [
        {"title": "A", "source": "list", "text": "Same words."},
        {"title": "B", "source": "list", "text": "Same   words."},
        {"title": "C", "source": "list", "text": long_text},
    ]
    record["grounding"]["references"] = [
        {"id": "1", "text": "Same words.", "kind": "passage", "title": "A"},
        {"id": "2", "text": "Same words.", "kind": "passage", "title": "B"},
        # What the checker is shown of a long passage: its start, cut, spaces made single.
        reference("3", long_text, "passage", "C").model_dump(),
    ]
    assert record["grounding"]["references"][2]["text"].endswith("…")
    record["grounding"]["sentences"][0]["found"] = ["1", "2", "3"]
    view = verdict_view(record).grounding
    assert view.references == ()  # each one is a passage on the page
    first = view.pieces[0]
    assert [(link.id, link.href) for link in first.links] == [
        ("1", "#evidence-1"),
        ("2", "#evidence-2"),
        ("3", "#evidence-3"),
    ]


def test_a_sentence_whose_span_does_not_hold_its_text_is_shown_plain() -> None:
    record = grounded()
    explanation = record["explanation"]
    sentences = record["grounding"]["sentences"]
    sentences[0]["start"] = True  # not a number
    sentences[1]["end"] = 10_000  # past the explanation
    sentences[2]["text"] = "Some other sentence."  # the span holds something else
    view = verdict_view(record).grounding
    assert [p.number for p in view.pieces if p.status] == [4, 5, 6]
    assert "".join(p.text for p in view.pieces) == explanation
    # A span that holds its text but starts inside the sentence before it is not cut out.
    sentences[4]["start"] = 100
    sentences[4]["text"] = explanation[100 : sentences[4]["end"]]
    view = verdict_view(record).grounding
    assert [p.number for p in view.pieces if p.status] == [4, 6]
    assert "".join(p.text for p in view.pieces) == explanation


def test_no_grounding_no_sentences_and_a_strange_status_is_not_checked() -> None:
    record = grounded()
    del record["grounding"]
    view = verdict_view(record)
    assert view.grounding is None
    html = render(record)
    assert '<div class="explanation">The Eiffel Tower stands in Paris [1].' in html
    assert "g-supported" not in html and "Grounded:" not in html
    odd = grounded()
    odd["grounding"]["sentences"][0]["status"] = "x onmouseover=alert(1)"
    view = verdict_view(odd).grounding
    assert view.pieces[0].status == "unchecked" and view.pieces[0].words == "not checked"


# -- the page -------------------------------------------------------------------------------


def test_the_page_highlights_each_sentence_says_its_status_and_links_its_passage() -> None:
    html = render(grounded())
    assert (
        '<span class="sentence g-contradicted" id="sentence-2">Its construction ended in 1899 [3].'
        '</span><span class="g-tag g-contradicted"> contradicted: <a href="#evidence-2" '
        'class="g-cited" aria-label="cites reference 3">[3]</a></span>'
    ) in html
    assert '<li class="passage" value="2" id="evidence-2">' in html
    assert '<span class="cited-as">cited as [3]</span>' in html
    assert 'aria-label="found by the checker: reference 1">found [1]</a>' in html
    assert "[7] not among the references" in html
    assert '<span class="g-tag g-unchecked"> not checked</span>' in html
    assert "Grounded: 2 of 4 factual sentence(s) supported by what they cite (share 0.50)" in html
    assert "<code>model:fake-grounded</code> in strict mode, in 1 call(s) of 354 tokens" in html
    assert "Warning: the explanation argues against REFUTED." in html
    assert '<p class="ungrounded" id="ungrounded" role="alert"><strong>UNGROUNDED</strong> ' in html
    assert "(contradicts_label, contradicted_sentence)" in html


def test_the_banner_is_for_strict_mode_with_flags_and_the_warning_for_a_no() -> None:
    on = grounded()
    on["grounding"]["mode"] = "on"
    html = render(on)
    assert "UNGROUNDED" not in html and "Warning: the explanation argues against" in html
    assert "<code>contradicted_sentence</code>" in html  # the flags are listed all the same
    clean = grounded()
    clean["grounding"].update(flags=[], consistent_with_label=None)
    html = render(clean)
    assert "UNGROUNDED" not in html and "argues against" not in html
    agreed = grounded()
    agreed["grounding"]["consistent_with_label"] = True
    assert "argues against" not in render(agreed)


def test_a_failed_check_says_why_beside_its_unchecked_sentences() -> None:
    record = grounded()
    record["grounding"].update(
        error="ModelOutputError: no valid answer", flags=[], grounded_share=None,
        consistent_with_label=None,
    )  # fmt: skip
    for sentence in record["grounding"]["sentences"]:
        sentence.update(status="unchecked", found=[])
    html = render(record)
    assert "Grounding not checked: ModelOutputError: no valid answer" in html
    assert "Grounded: 0 of 0 factual sentence(s)" in html and "(share" not in html
    assert html.count('class="g-tag g-unchecked"') == 6


def test_outside_text_in_a_grounding_is_escaped_and_ids_make_no_markup() -> None:
    record = grounded()
    hostile = "Fine. " + XSS
    record["explanation"] = hostile
    record["grounding"]["sentences"] = [
        {"text": "Fine.", "start": 0, "end": 5, "status": "supported", "cites": [XSS],
         "found": []},
        {"text": XSS, "start": 6, "end": len(hostile), "status": "unsupported", "cites": [],
         "found": [XSS[:20]]},
    ]  # fmt: skip
    record["grounding"]["references"].append(
        {"id": XSS[:20], "text": XSS, "kind": XSS, "title": XSS}
    )
    record["grounding"]["checker"] = XSS
    record["grounding"]["flags"] = [XSS]
    html = render(record)
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    view = verdict_view(record).grounding
    (listed,) = view.references
    assert listed.anchor == "reference-_script_alert_1___sc"  # letters, digits, _ and - only
    assert f'id="{listed.anchor}"' in html and f'href="#{listed.anchor}"' in html


# -- the service's JSON ----------------------------------------------------------------------


class GroundedExecutor:
    """A fake executor: every check answers with the fixture's grounded verdict."""

    def __call__(self, request: Any, listener: Any) -> Verdict:
        return verdict_of(grounded())


def test_a_jobs_result_carries_the_grounding_in_its_json(make_service) -> None:
    from fastapi.testclient import TestClient

    from verity.service.app import create_app

    with TestClient(create_app(make_service(GroundedExecutor()))) as api:
        done = api.post("/v1/checks?wait=30", json={"claim": "The Eiffel Tower is in Paris."})
        job = done.json()
        assert job["status"] == "done"
        assert job["verdict"]["grounding"] == grounded()["grounding"]
        page = api.get(job["links"]["page"])
        assert 'id="sentence-2"' in page.text and 'href="#evidence-2"' in page.text


# -- the Markdown section -------------------------------------------------------------------


def test_the_markdown_section_gives_each_sentence_its_status_and_ids() -> None:
    grounding = Grounding.model_validate(grounded()["grounding"])
    text = markdown(grounding, "REFUTED")
    assert text.splitlines()[:2] == ["## Grounding", ""]
    assert "**UNGROUNDED** (contradicts\\_label, contradicted\\_sentence)." in text
    assert "**Warning:** the explanation argues against REFUTED." in text
    assert "- Grounded share: 0.50 (2 of 4 factual sentence(s) supported)" in text
    assert "- Argues for the label REFUTED: **no, it argues for another verdict**" in text
    assert "- Flags: contradicts\\_label, contradicted\\_sentence" in text
    rows = text.splitlines()[-6:]
    assert rows == [
        "| 1 | The Eiffel Tower stands in Paris \\[1\\]. | supported | \\[1\\] | \\[1\\] |",
        "| 2 | Its construction ended in 1899 \\[3\\]. | **contradicted** | \\[3\\] | \\[3\\] |",
        "| 3 | The tower is in France. | supported | - | \\[1\\] |",
        "| 4 | It is made of wood \\[7\\]. | **not supported** | \\[7\\] | - |",
        "| 5 | All told, the claim holds. | no claim | - | - |",
        "| 6 | Its height is 330 metres. | not checked | - | - |",
    ]


def test_the_markdown_section_warns_only_when_it_should() -> None:
    grounding = Grounding.model_validate(grounded()["grounding"])
    calm = grounding.model_copy(update={"mode": "on", "consistent_with_label": True})
    text = markdown(calm, "REFUTED")
    assert "UNGROUNDED" not in text and "Warning" not in text
    assert "- Argues for the label REFUTED: yes" in text
    unclear = grounding.model_copy(update={"consistent_with_label": None, "flags": ()})
    text = markdown(unclear, "REFUTED")
    assert "UNGROUNDED" not in text and "Warning" not in text  # unclear is no "no"
    assert ": unclear" in text and "- Flags: none" in text


def test_markup_in_a_sentence_stays_text_in_its_table_row() -> None:
    grounding = Grounding.model_validate(grounded()["grounding"])
    bad = "A | b ![x](javascript:alert(1)) <img src=x>\n| c | d |"
    first = grounding.sentences[0].model_copy(update={"text": bad})
    text = markdown(grounding.model_copy(update={"sentences": (first,)}), "REFUTED")
    row = text.splitlines()[-1]
    assert row.replace("\\|", "").count("|") == 6  # five cells: none added by the sentence
    assert "\\<img src=x\\>" in row and "\\]\\(javascript" in row
    assert re.search(r"(?<!\\)[<>\[\]()]", row) is None  # every markup character escaped


def test_the_traces_markdown_gains_the_section_and_a_trace_without_one_does_not() -> None:
    verdict = verdict_of(grounded())
    kept = verdict.model_copy(update={"trace": Trace(markdown="### Iteration 1\n\nx\n")})
    with_it = with_section(kept)
    shown = (with_it.trace.model_extra or {})["markdown"]
    assert shown.startswith("### Iteration 1\n\nx\n\n## Grounding\n")
    assert shown.endswith("| 6 | Its height is 330 metres. | not checked | - | - |")
    assert with_section(verdict) is verdict  # no markdown in its trace: left as it is
    ungrounded = kept.model_copy(update={"grounding": None})
    assert with_section(ungrounded) is ungrounded


def test_the_fixture_is_what_the_method_and_the_checker_write() -> None:
    # The record holds together as the domain checks it: its grounding validates, its
    # spans index its explanation, and writing the verdict again gives the same grounding.
    record = grounded()
    again = verdict_of(copy.deepcopy(record)).to_json_dict()
    assert again["grounding"] == record["grounding"]
    for sentence in record["grounding"]["sentences"]:
        assert record["explanation"][sentence["start"] : sentence["end"]] == sentence["text"]
