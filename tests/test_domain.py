from __future__ import annotations

from datetime import date

import pytest
from pydantic import ValidationError

from verity.domain import Claim, Evidence, Label, Trace, Usage, Verdict


def test_claim_is_stripped_validated_and_frozen() -> None:
    claim = Claim(text="  Paris is in France. ", date="2020-01-02")
    assert claim.text == "Paris is in France."
    assert claim.date == date(2020, 1, 2)
    with pytest.raises(ValidationError):
        Claim(text="   ")
    with pytest.raises(ValidationError):
        claim.text = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Claim(text="x", unknown_field=1)  # type: ignore[call-arg]


def test_confidence_and_credibility_bounds() -> None:
    subject = Claim(text="x")
    with pytest.raises(ValidationError):
        Verdict(label=Label.SUPPORTED, confidence=1.5, method="m", subject=subject)
    with pytest.raises(ValidationError):
        Evidence(text="t", source="s", credibility=-0.1)
    assert Verdict(label="REFUTED", confidence=None, method="m", subject=subject).label is (
        Label.REFUTED
    )


def test_usage_adds_up() -> None:
    total = Usage(llm_calls=1, prompt_tokens=10, seconds=0.5) + Usage(
        llm_calls=2, completion_tokens=3, cached_calls=1, seconds=0.25
    )
    assert total == Usage(
        llm_calls=3, prompt_tokens=10, completion_tokens=3, cached_calls=1, seconds=0.75
    )


def test_evidence_ref_prefers_url_then_id_then_title() -> None:
    assert Evidence(text="t", source="s", url="u", id="i", title="T").ref == "u"
    assert Evidence(text="t", source="s", id="i", title="T").ref == "i"
    assert Evidence(text="t", source="s", title="T").ref == "T"


def test_json_shape_has_required_keys_and_method_extras() -> None:
    ev = Evidence(
        text="The tower is in Paris.",
        title="Eiffel Tower",
        source="offline-wiki",
        url="https://en.wikipedia.org/wiki/Eiffel_Tower",
    )
    verdict = Verdict(
        label=Label.SUPPORTED,
        confidence=0.7,
        explanation="[1]",
        evidence=[ev],
        usage=Usage(llm_calls=1, prompt_tokens=5),
        trace=Trace(iterations=[{"p_l": True}]),
        method="rag",
        subject=Claim(text="The Eiffel Tower is in Paris."),
    )
    out = verdict.to_json_dict()
    assert out["claim"] == "The Eiffel Tower is in Paris."
    assert out["label"] == "SUPPORTED" and out["confidence"] == 0.7
    assert out["evidence"][0]["title"] == "Eiffel Tower"
    assert out["evidence"][0]["source"] == "offline-wiki"
    assert out["evidence"][0]["url"].endswith("Eiffel_Tower")
    assert set(out["usage"]) >= {"llm_calls", "prompt_tokens", "completion_tokens", "seconds"}
    assert out["trace"]["iterations"] == [{"p_l": True}]


def test_provider_metadata_is_kept_and_printed_only_when_present() -> None:
    post = Evidence(
        text="A post.", source="social", metadata={"author": "a.bsky.social", "likes": 3}
    )
    plain = Evidence(text="A page.", source="offline-wiki")
    verdict = Verdict(
        label=Label.SUPPORTED, evidence=[post, plain], method="rag", subject=Claim(text="x")
    )
    first, second = verdict.to_json_dict()["evidence"]
    assert first["metadata"] == {"author": "a.bsky.social", "likes": 3}
    assert "metadata" not in second
    assert Evidence.model_validate_json(post.model_dump_json()) == post
    with pytest.raises(ValidationError):
        Evidence(text="x", source="s", metadata={"nested": {"a": 1}})


def test_a_passage_date_is_printed_only_when_known() -> None:
    import datetime as dt

    dated = Evidence(text="A report.", source="news", published=dt.date(2024, 3, 5))
    verdict = Verdict(
        label=Label.SUPPORTED,
        evidence=[dated, Evidence(text="A page.", source="offline-wiki")],
        method="rag",
        subject=Claim(text="x"),
    )
    first, second = verdict.to_json_dict()["evidence"]
    assert first["published"] == "2024-03-05" and "published" not in second


def test_label_must_fit_the_subject() -> None:
    from verity.domain import Article

    with pytest.raises(ValidationError, match="not a verdict for a claim"):
        Verdict(label=Label.FAKE, method="m", subject=Claim(text="x"))
    with pytest.raises(ValidationError, match="not a verdict for an article"):
        Verdict(label=Label.SUPPORTED, method="m", subject=Article(text="body"))
    assert Verdict(label=Label.REAL, method="m", subject=Article(text="body")).label is Label.REAL


def test_a_check_worthiness_label_fits_a_sentence_and_never_an_article() -> None:
    from verity.domain import CHECKWORTHY_LABELS, Article

    assert [label.value for label in CHECKWORTHY_LABELS] == ["CHECK_WORTHY", "NOT_CHECK_WORTHY"]
    sentence = Claim(text="We're consuming 50 percent of the world's cocaine.")
    for name in ("CHECK_WORTHY", "NOT_CHECK_WORTHY"):
        verdict = Verdict(label=Label(name), method="m", subject=sentence)
        assert verdict.to_json_dict()["label"] == name
        with pytest.raises(ValidationError, match="not a verdict for an article"):
            Verdict(label=Label(name), method="m", subject=Article(text="body"))
    # The truth labels of a claim still fit it, and an article's still do not.
    assert Verdict(label=Label.REFUTED, method="m", subject=sentence).label is Label.REFUTED
    with pytest.raises(ValidationError, match="not a verdict for a claim"):
        Verdict(label=Label.REAL, method="m", subject=sentence)


def test_the_grounding_checker_is_told_what_a_check_worthiness_label_means() -> None:
    import asyncio
    import json

    from verity.grounding import ground
    from verity.llm.client import ModelClient
    from verity.testing import FakeChatModel

    answer = json.dumps(
        {"sentences": [{"n": 1, "status": "no_claim", "references": []}],
         "argues_for_label": "yes"}
    )  # fmt: skip
    meanings = {
        "CHECK_WORTHY": "the sentence holds a claim worth checking",
        "NOT_CHECK_WORTHY": "the sentence does not hold a claim worth checking",
    }
    for name, meaning in meanings.items():
        fake = FakeChatModel([answer], model=f"fake-grounding-{name}")
        verdict = Verdict(
            label=Label(name), method="m", explanation="It states a figure.",
            subject=Claim(text="Crime rose 12 percent."),
        )  # fmt: skip
        grounding = asyncio.run(ground(verdict, [], ModelClient(fake)))
        assert grounding.error is None
        prompt = "\n".join(m.content for m in fake.requests[0][0])
        assert f"{name} ({meaning})" in prompt


def test_errors_with_parts_survive_a_trip_to_another_process() -> None:
    import pickle

    from verity.errors import MissingKeyError, ModelOutputError, UnknownNameError

    unknown = pickle.loads(pickle.dumps(UnknownNameError("method", "nope", ["rag", "direct"])))
    assert (unknown.kind, unknown.name, unknown.known) == ("method", "nope", ["rag", "direct"])
    assert str(unknown) == "unknown method 'nope'; known: direct, rag"
    missing = pickle.loads(pickle.dumps(MissingKeyError("brave", "BRAVE_API_KEY")))
    assert (missing.service, missing.env_var) == ("brave", "BRAVE_API_KEY")
    bad = pickle.loads(pickle.dumps(ModelOutputError("no valid answer", raw="{oops")))
    assert (str(bad), bad.raw) == ("no valid answer", "{oops")
