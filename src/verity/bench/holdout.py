"""Which examples a benchmark leaves out: demonstrations, and scored claims that copy one.

    held = holdout_of(split, methods)           # every registered method's demonstrations
    held.near["14862"].overlap                  # 0.905 on FEVEROUS-S: a Marvel / DC swap

A method that shows a model worked examples (LoCal's 20 decompositions, LoCal 4.3; a
baseline's demonstrations) must not be scored on them. Leaving out the demonstration
itself is not enough: HoVer and FEVEROUS write refuted claims by editing supported ones
(HoVer's claim mutation: an entity swapped, a word negated), so a scored claim can be a
demonstration with one name changed ("... Black Lightning, Marvel Comics superhero" shown
with its decomposition, "... DC Comics superhero" scored). Such a near copy is left out too.

The rule. `words` is the set of a text's word tokens (maximal runs of Unicode letters,
digits and underscores), case-folded: punctuation, order and repetition do not count. The
overlap of two claims is the Jaccard index of their word sets, |A and B| / |A or B|. A
scored claim whose overlap with any demonstration claim is at least `NEAR_COPY` (0.5) is
a near copy.

Why 0.5: replacing k of a claim's n distinct words by new ones leaves an overlap of
(n - k) / (n + k), so 0.5 is "at most a third of the words replaced". On the built-in
demonstrations against the HoVer and FEVEROUS-S dev splits, every pair at 0.5 or above is
an edit of the same claim (the lowest, exactly 0.5, two Kopaonik earthquake claims).
Below it edits (0.48, 0.47) and unrelated claims that share a template ("The author of ...
was born in ...", 0.46) meet, so no lower threshold keeps the one and not the other.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verity.bench.base import DatasetSplit
from verity.methods.base import Method, method_class, method_names

log = logging.getLogger(__name__)

# Verity's threshold; the papers hold out their demonstrations and say no more (see above).
NEAR_COPY = 0.5

_WORD = re.compile(r"\w+")


def words(text: str) -> frozenset[str]:
    """The case-folded word tokens of ``text``, as a set."""
    return frozenset(_WORD.findall(text.casefold()))


def overlap(a: str, b: str) -> float:
    """The Jaccard index of the word sets of ``a`` and ``b`` (0 when both have none)."""
    wa, wb = words(a), words(b)
    union = len(wa | wb)
    return len(wa & wb) / union if union else 0.0


@dataclass(frozen=True)
class NearCopy:
    """A scored example that is a near copy of a demonstration claim."""

    example_id: str
    demonstration: str
    overlap: float

    def to_dict(self) -> dict[str, object]:
        """The manifest's record of it."""
        return {
            "id": self.example_id,
            "overlap": round(self.overlap, 3),
            "demonstration": self.demonstration,
        }


def near_copies(
    scored: Iterable[tuple[str, str]],
    demonstrations: Iterable[str],
    threshold: float = NEAR_COPY,
) -> dict[str, NearCopy]:
    """Each scored ``(id, text)`` whose overlap with a demonstration is ``>= threshold``.

    The closest demonstration is recorded (the first one in order on a tie). An inverted
    index over the demonstrations' words keeps this to the pairs that share a word, so a
    split of many thousand claims takes a fraction of a second.
    """
    shown = sorted({text for text in demonstrations if words(text)})
    sets = [words(text) for text in shown]
    index: defaultdict[str, list[int]] = defaultdict(list)
    for number, word_set in enumerate(sets):
        for word in word_set:
            index[word].append(number)
    found: dict[str, NearCopy] = {}
    for example_id, text in scored:
        mine = words(text)
        shared: defaultdict[int, int] = defaultdict(int)
        for word in mine:
            for number in index.get(word, ()):
                shared[number] += 1
        best: NearCopy | None = None
        for number, common in sorted(shared.items()):
            score = common / (len(mine) + len(sets[number]) - common)
            if score >= threshold and (best is None or score > best.overlap):
                best = NearCopy(example_id, shown[number], score)
        if best is not None:
            found[example_id] = best
    return found


def id_claims(
    demonstration_ids: Iterable[tuple[str, str]], dataset: str, texts: Mapping[str, str]
) -> list[str]:
    """The claims of those demonstrations that are examples of ``dataset`` (by id)."""
    return [texts[i] for d, i in demonstration_ids if d == dataset and i in texts]


def _classes(methods: Sequence[str] | None) -> list[type[Any]]:
    """The classes of ``methods``, by default of every registered method."""
    if methods is not None:
        return [method_class(name) for name in methods]
    found = []
    for name in method_names():
        try:
            found.append(method_class(name))
        except (ImportError, AttributeError) as exc:
            # A plug-in that cannot be imported runs nowhere, so it shows nothing either.
            log.warning("method %s cannot be loaded, its demonstrations unknown: %s", name, exc)
    return found


def excluded_ids(methods: Sequence[str] | None = None) -> set[tuple[str, str]]:
    """(dataset, id) of every example a method shows as a demonstration.

    By default every registered method's, whichever methods a run has, so that a run of
    the baselines alone scores the same pool as a run with LoCal.
    """
    out: set[tuple[str, str]] = set()
    for cls in _classes(methods):
        ids = getattr(cls, "demonstration_ids", None)
        if callable(ids):
            out |= set(ids())
    return out


def demonstration_claims(methods: Sequence[str] | None = None) -> set[str]:
    """The claim text of every demonstration a method shows (every registered one's).

    From a method's static ``demonstration_claims()``; `holdout_of` adds the text of each
    demonstration id found in the split, for a method that names its ids only.
    """
    out: set[str] = set()
    for cls in _classes(methods):
        claims = getattr(cls, "demonstration_claims", None)
        if callable(claims):
            out |= set(claims())
    return out


@dataclass(frozen=True)
class Holdout:
    """What a run leaves out of its split: demonstrations (by id) and their near copies."""

    dataset: str
    demonstrations: frozenset[str]
    near: Mapping[str, NearCopy]

    def ids(self) -> set[tuple[str, str]]:
        """(dataset, id) of everything left out."""
        return {(self.dataset, i) for i in [*self.demonstrations, *self.near]}


def holdout_of(split: DatasetSplit, methods: Mapping[str, Method]) -> Holdout:
    """Every registered method's demonstrations in ``split``, and their near copies.

    A method of the run that was given examples of its own (a demonstrations file, an
    optimised prompt) names them on the instance, ``excluded_ids()`` and, for their text,
    ``excluded_claims()``; they are left out too.
    """
    ids = excluded_ids()
    claims = demonstration_claims()
    for method in methods.values():
        own = getattr(method, "excluded_ids", None)
        if callable(own):
            ids |= set(own())
        own_claims = getattr(method, "excluded_claims", None)
        if callable(own_claims):
            claims |= set(own_claims())
    texts = {ex.id: ex.subject.text for ex in split.examples}
    shown = frozenset(i for d, i in ids if d == split.name and i in texts)
    claims |= set(id_claims(ids, split.name, texts))
    rest = ((i, text) for i, text in texts.items() if i not in shown)
    return Holdout(split.name, shown, near_copies(rest, claims))
