"""The near-copy rule, at its boundary, and the hold-out of every registered method's
demonstrations from every run, whichever methods it has."""

from __future__ import annotations

from pathlib import Path

import pytest

from verity.bench.base import DatasetSplit, Example
from verity.bench.holdout import holdout_of, near_copies, overlap, words
from verity.domain import Claim, Label
from verity.methods.local import agents

# Twenty distinct words, and the first ten of them.
DEMO = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet "
    "kilo lima mike november oscar papa quebec romeo sierra tango"
)
KEPT = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"


def test_words_are_case_folded_tokens_without_punctuation_order_or_repeats() -> None:
    assert words("Marvel, marvel! DC's (1979)") == {"marvel", "dc", "s", "1979"}
    assert words("Nord-Trøndelag") == {"nord", "trøndelag"}


def test_overlap_is_the_jaccard_index_of_the_word_sets() -> None:
    # {a, b, c, d} and {a, b, c, e}: 3 shared of 5 in all.
    assert overlap("a b c d", "A, b. c e") == pytest.approx(3 / 5)
    assert overlap("", "") == 0.0


def test_the_threshold_is_half_the_words_shared() -> None:
    # Half the demonstration's 20 words and nothing else: 10 shared of 20 in all -> 0.5.
    at = KEPT
    # The same and one new word: 10 shared of 21 -> 0.476, just below.
    below = f"{KEPT} zulu"
    assert overlap(DEMO, at) == 0.5
    assert overlap(DEMO, below) == pytest.approx(10 / 21)
    found = near_copies([("at", at), ("below", below), ("same", DEMO.upper())], [DEMO])
    assert sorted(found) == ["at", "same"]
    assert found["at"].overlap == 0.5 and found["at"].demonstration == DEMO
    assert found["same"].overlap == 1.0


def test_the_closest_demonstration_is_the_one_recorded() -> None:
    claim = "Peter Gambi made the suit of Black Lightning, a DC Comics superhero."
    marvel = "Peter Gambi made the suit of Black Lightning, a Marvel Comics superhero."
    other = "Peter Gambi made the suit."
    (found,) = near_copies([("1", claim)], [other, marvel]).values()
    # 12 words each, 11 shared: 11 / 13.
    assert found.demonstration == marvel and found.overlap == pytest.approx(11 / 13)


def _split(name: str, texts: dict[str, str]) -> DatasetSplit:
    examples = tuple(
        Example(id=i, subject=Claim(text=t), label=Label.SUPPORTED) for i, t in texts.items()
    )
    return DatasetSplit(
        name=name,
        examples=examples,
        labels=(Label.SUPPORTED, Label.REFUTED),
        files=(Path("x.json"),),
        checksum="0",
        description="a small split",
        label_map={},
    )


def test_every_registered_methods_demonstrations_are_held_out_with_no_method_in_the_run() -> None:
    demo = agents.demos("feverous")[0]
    edited = demo["claim"].replace("eight", "nine")
    split = _split(
        "feverous-s",
        {str(demo["id"]): demo["claim"], "sibling": edited, "other": "The sky is green."},
    )
    held = holdout_of(split, {})  # no method in this run: a baselines-only run is the same
    assert held.demonstrations == {str(demo["id"])}
    assert set(held.near) == {"sibling"}
    assert held.near["sibling"].demonstration == demo["claim"]
    assert held.ids() == {("feverous-s", str(demo["id"])), ("feverous-s", "sibling")}


def test_a_hover_demonstration_from_another_split_still_holds_out_its_near_copies() -> None:
    # The HoVer demonstrations come from the unscored test release: not in the split by
    # id, only by their text.
    demo = agents.demos("hover")[0]["claim"]
    words_of = demo.split()
    edited = " ".join([*words_of[:-1], "Elsewhere."])
    split = _split("hover", {"dev-1": edited, "dev-2": "Nothing alike here at all."})
    held = holdout_of(split, {})
    assert held.demonstrations == frozenset()
    assert set(held.near) == {"dev-1"}


class _GivenExamples:
    """A method given demonstrations of its own (a file): it names their ids and claims."""

    def excluded_ids(self) -> set[tuple[str, str]]:
        return {("toy", "d1")}

    def excluded_claims(self) -> set[str]:
        return {"Mount Everest is the highest mountain on Earth."}


def test_a_methods_own_demonstrations_and_their_near_copies_are_held_out() -> None:
    split = _split(
        "toy",
        {
            "d1": "A file demonstration.",
            "s1": "Mount Everest is the tallest mountain on Earth.",
            "k": "Rivers flow downhill.",
        },
    )
    held = holdout_of(split, {"m": _GivenExamples()})  # type: ignore[dict-item]
    assert held.demonstrations == {"d1"} and set(held.near) == {"s1"}


def test_a_demonstration_named_by_id_only_is_compared_by_its_text_in_the_split() -> None:
    # A method that names ids only (no claim texts): the split's own text of that id is
    # what its near copies are measured against. Here the text is made up, so only that
    # path can find the sibling.
    split = _split(
        "feverous-s",
        {
            "32472": "Zebras live on the moon and eat cheese daily.",
            "s": "Zebras live on the moon and eat cheese weekly.",
        },
    )
    held = holdout_of(split, {})
    assert held.demonstrations == {"32472"} and set(held.near) == {"s"}
