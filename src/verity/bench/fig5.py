r"""ToE's Fig. 5 claim set: 30 claims, six categories of five (2 true, 2 false, 1 uncertain).

ToE §IV-B "manually collected 30 claims across six categories" (political, scientific,
health, historical, celebrity, other) to show which tools its agent picks for which kind of
claim, and to run the tool ablation of Tab. III. The claims were not published. verity
draws a set of the same shape from the shared datasets with the written rules below and a
fixed seed, and ships the draw with each claim's provenance (dataset, file, id, original
label, the rule that put it in its category):

    split = load_toe_fig5()                    # the shipped file: no data folder needed
    split.examples[0].meta["category"]         # 'political'
    split.examples[0].meta["provenance"]       # {'dataset': 'liar', 'file': 'LIAR/test.tsv', ...}

The shipped file is exactly what seed 0 gives; to draw it again:

    python -m verity.bench.fig5 --data-dir ../shared/datasets --seed 0 \
        --out src/verity/bench/data/toe_fig5.jsonl

Rules, one pool per category, each claim's label mapped to true / false / uncertain:

- political: LIAR test statements none of whose LIAR subjects is in
  `HEALTH_SCIENCE_SUBJECTS` (true = mostly-true, true; false = pants-fire, false,
  barely-true; uncertain = half-true), less the topics of PolitiFact's Flip-O-Meter
  ("On banning earmarks."), which name a subject and make no claim: a statement that
  begins with "On " and has no comma.
- health: Check-COVID test (SUPPORT / REFUTE / NOTENOUGHINFO).
- scientific: Climate-FEVER (SUPPORTS / REFUTES / NOT_ENOUGH_INFO; DISPUTED left out).
- celebrity, historical, other: FEVER paper_dev (SUPPORTS / REFUTES / NOT ENOUGH INFO),
  split by `fever_category`: a celebrity word first (`CELEBRITY_WORDS`), then a history
  word (`HISTORY_WORDS`, `HISTORY_NAMES`) or a year before 1950; the rest is other.

In each pool `random.Random(seed)` draws 2 true, 2 false, then 1 uncertain claim (file
order before the draw). True is SUPPORTED and false REFUTED; in the file, uncertain keeps
its source's label: CONFLICTING for LIAR's half-true, NOT_ENOUGH_INFO elsewhere.

Scored, the set has the paper's three classes (§IV-A: true, false, uncertain; §IV-B: "two
true, two false, and one uncertain"): every uncertain claim's gold label is `UNCERTAIN`
(its source's label stays in ``meta["label"]``), and a verdict of either uncertain label
counts as uncertain, so an uncertain verdict is right on all six uncertain claims, ToE's
(§IV-A: 0.4 <= v <= 0.6) and any other method's.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verity.bench.base import DatasetSplit, Example
from verity.bench.loaders.check_covid import load_check_covid
from verity.bench.loaders.common import DataReader, at_row, build_split, data_dir, str_field
from verity.bench.loaders.liar import load_liar
from verity.bench.loaders.wikipedia import load_climate_fever, load_fever_3way
from verity.domain import Claim, Label
from verity.errors import DatasetError, VerityError

# ToE §IV-B and Fig. 5: six categories, each "two true, two false, and one uncertain".
CATEGORIES = ("political", "scientific", "health", "historical", "celebrity", "other")
DRAWS = (("true", 2), ("false", 2), ("uncertain", 1))
SEED = 0
DATA_FILE = Path(__file__).parent / "data" / "toe_fig5.jsonl"
# §IV-A: one three-way verdict, true / false / uncertain. Uncertain is one class here; the
# label naming it is NOT_ENOUGH_INFO (five of the six sources' own), and CONFLICTING, LIAR's
# half-true, is read as the same class.
UNCERTAIN = Label.NOT_ENOUGH_INFO
SPACE = (Label.SUPPORTED, Label.REFUTED, UNCERTAIN)
AS_UNCERTAIN = {Label.CONFLICTING: UNCERTAIN}

# LIAR subjects (column 4 of test.tsv) that make a statement a health or science claim
# rather than a political one; compared in lower case ("Alcohol" is capitalised there).
HEALTH_SCIENCE_SUBJECTS = frozenset(
    {
        # health
        "health-care", "public-health", "medicare", "medicaid", "abortion", "drugs",
        "marijuana", "alcohol", "ebola", "food-safety", "disability",
        # science, environment, technology
        "science", "climate-change", "environment", "energy", "nuclear", "technology",
        "space", "weather", "natural-disasters", "oil-spill", "cap-and-trade", "water",
        "animals",
    }
)  # fmt: skip

# Acting, music and fame: whole words, any case.
CELEBRITY_WORDS = (
    "actor", "actors", "actress", "actresses", "acts", "acted", "acting", "singer",
    "singers", "songwriter", "songwriters", "rapper", "rappers", "musician", "musicians",
    "starred", "starring", "film", "films", "movie", "movies", "album", "albums", "song",
    "songs", "band", "bands", "celebrity", "celebrities", "model", "models", "modeled",
    "modelled", "modeling", "modelling", "TV", "television", "sitcom", "comedian",
    "comedians", "director", "directors", "directed", "screenwriter", "screenwriters",
    "screenwriting", "Hollywood", "franchise", "Grammy", "Grammys", "Oscar", "Oscars",
    "Emmy", "Emmys", "famous", "fame",
)  # fmt: skip
# History: whole words in lower case only. Capitalised, these words are mostly parts of
# names and titles in FEVER ("Regina King", "Reign Over Me", "20th Century Fox"); the
# capitalised forms that do name history are `HISTORY_NAMES`. "founded" is not a history
# word: in FEVER it mostly dates companies and bands of the 1990s (a founding before 1950
# is caught by its year). Nor is "historical": there it names a genre ("historical fiction").
HISTORY_WORDS = (
    "war", "wars", "empire", "empires", "dynasty", "dynasties", "century", "centuries",
    "king", "kings", "queen", "queens", "ancient", "battle", "battles", "revolution",
    "revolutions", "emperor", "emperors", "medieval", "colonial", "reign", "reigned",
    "pharaoh", "pharaohs", "monarch", "monarchy", "treaty", "prehistoric", "renaissance",
    "history",
)  # fmt: skip
# Capitalised historical names: "Battle of France", "King of Hungary", "Vietnam War",
# "Ottoman Empire", "Ming Dynasty", "French Revolution", "the Renaissance" (not "Star Wars").
HISTORY_NAMES = re.compile(
    r"\b(?:Battle|Siege|Treaty|King|Queen|Emperor|Empress) of\b"
    r"|\b(?!Star\b)[A-Z][\w'’-]* (?:War|Wars|Empire|Dynasty|Revolution)\b"
    r"|\bRenaissance\b"
)
OLD_YEAR = 1950  # a year before this one makes a claim historical
# A Flip-O-Meter entry in LIAR: "On toll roads." (a comma means a claim follows the topic).
_TOPIC_ONLY = re.compile(r"On [^,]*")


def _words(words: Iterable[str]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b", re.IGNORECASE)


_CELEBRITY = _words(CELEBRITY_WORDS)
_HISTORY = re.compile(r"\b(?:" + "|".join(map(re.escape, HISTORY_WORDS)) + r")\b")
# A four-digit year, also as a decade ("1920s"). A three-digit number counts only with an
# era marker ("476 AD", "AD 800", "50 BC"): bare, it is more often a count ("100 episodes").
_YEAR = re.compile(r"\b(\d{4})s?\b")
_ERA = re.compile(r"\b\d{1,4} ?(?:BC|BCE|AD|CE)\b|\bAD ?\d{1,4}\b")  # case matters: "ad"


def fever_category(claim: str) -> tuple[str, str]:
    """The category of a FEVER claim and the rule that gave it, as written in provenance.

    Celebrity words win over history words, which win over years:

        fever_category("Tom Cruise starred in Top Gun.")  # ('celebrity', "celebrity: ...")
        fever_category("The Battle of Hastings was in 1066.")[1]  # "... has 'Battle of'"
        fever_category("Paris is in France.")[0]  # 'other'
    """
    if match := _CELEBRITY.search(claim):
        return "celebrity", f"celebrity: the claim has {match.group(0)!r}"
    if match := _HISTORY.search(claim) or HISTORY_NAMES.search(claim):
        return "historical", f"historical: the claim has {match.group(0)!r}"
    for year in _YEAR.finditer(claim):
        if 1000 <= int(year.group(1)) < OLD_YEAR:
            return "historical", f"historical: the claim has the year {year.group(0)!r}"
    if match := _ERA.search(claim):
        return "historical", f"historical: the claim has the year {match.group(0)!r}"
    return "other", "other: no celebrity word, no history word, no year before 1950"


def _truth(label: Label) -> str:
    if label is Label.SUPPORTED:
        return "true"
    if label is Label.REFUTED:
        return "false"
    return "uncertain"


@dataclass(frozen=True)
class Candidate:
    """A claim that may be drawn: its text, label and where it comes from."""

    category: str
    claim: str
    label: Label
    dataset: str
    file: str
    id: str
    original_label: str
    rule: str
    speaker: str | None = None

    @property
    def truth(self) -> str:
        """``true``, ``false`` or ``uncertain``: what the draw balances."""
        return _truth(self.label)

    def record(self, number: int) -> dict[str, Any]:
        """The line written to the data file, with id ``CATEGORY-NUMBER``."""
        line: dict[str, Any] = {
            "id": f"{self.category}-{number}",
            "category": self.category,
            "claim": self.claim,
            "label": self.label.value,
        }
        if self.speaker:
            line["speaker"] = self.speaker
        line["provenance"] = {
            "dataset": self.dataset,
            "file": self.file,
            "id": self.id,
            "original_label": self.original_label,
            "rule": self.rule,
        }
        return line


def _political(split: DatasetSplit) -> list[Candidate]:
    found = []
    for example in split.examples:
        subjects = [str(s) for s in example.meta["subjects"]]
        if any(s.lower() in HEALTH_SCIENCE_SUBJECTS for s in subjects):
            continue
        if _TOPIC_ONLY.fullmatch(example.subject.text.strip()):
            continue
        speaker = example.subject.speaker if isinstance(example.subject, Claim) else None
        found.append(
            Candidate(
                category="political",
                claim=example.subject.text,
                label=example.label,
                dataset=split.name,
                file="LIAR/test.tsv",
                id=example.id,
                original_label=str(example.meta["label"]),
                rule="political: LIAR test statement with no health or science subject "
                f"(subjects: {', '.join(subjects) or 'none'}), not a Flip-O-Meter topic",
                speaker=speaker,
            )
        )
    return found


def _from_split(
    split: DatasetSplit, category: str, file: str, rule: str, skip: Label | None = None
) -> list[Candidate]:
    return [
        Candidate(
            category=category,
            claim=e.subject.text,
            label=e.label,
            dataset=split.name,
            # Check-COVID's test split is two files: the example says which.
            file=f"{file}/{e.meta['file']}" if "file" in e.meta else file,
            id=e.id,
            original_label=str(e.meta["label"]),
            rule=rule,
        )
        for e in split.examples
        if e.label is not skip
    ]


def candidate_pools(root: Path) -> dict[str, list[Candidate]]:
    """Every claim each category may draw from, in file order."""
    pools: dict[str, list[Candidate]] = {name: [] for name in CATEGORIES}
    pools["political"] = _political(load_liar(root))
    pools["health"] = _from_split(
        load_check_covid(root), "health", "Check-COVID", "health: Check-COVID test claim"
    )
    pools["scientific"] = _from_split(
        load_climate_fever(root),
        "scientific",
        "Climate-FEVER/climate-fever.jsonl",
        "scientific: Climate-FEVER claim (DISPUTED left out)",
        skip=Label.CONFLICTING,
    )
    fever = load_fever_3way(root)
    for example in fever.examples:
        category, rule = fever_category(example.subject.text)
        pools[category].append(
            Candidate(
                category=category,
                claim=example.subject.text,
                label=example.label,
                dataset=fever.name,
                file="FEVER/paper_dev.jsonl",
                id=example.id,
                original_label=str(example.meta["label"]),
                rule=rule,
            )
        )
    return pools


def draw(pools: dict[str, list[Candidate]], seed: int = SEED) -> list[dict[str, Any]]:
    """2 true, 2 false and 1 uncertain claim per category, as data-file lines.

    Each category draws with its own ``random.Random(seed)``, so one pool changing leaves
    the other categories' claims as they were.
    """
    lines: list[dict[str, Any]] = []
    for category in CATEGORIES:
        rng = random.Random(seed)
        pool = pools[category]
        picked: list[Candidate] = []
        for truth, count in DRAWS:
            matching = [c for c in pool if c.truth == truth]
            if len(matching) < count:
                raise DatasetError(
                    f"fig5: the {category} pool has {len(matching)} {truth} claim(s), "
                    f"{count} needed"
                )
            picked.extend(rng.sample(matching, count))
        lines.extend(c.record(n) for n, c in enumerate(picked, 1))
    return lines


def draw_fig5(root: Path, seed: int = SEED) -> list[dict[str, Any]]:
    """The Fig. 5 set drawn from the datasets under ``root``: 30 data-file lines."""
    return draw(candidate_pools(root), seed)


def write_fig5(lines: Sequence[dict[str, Any]], out: Path) -> None:
    """Write the lines as JSONL (UTF-8, one object a line, keys in a fixed order)."""
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"cannot write the Fig. 5 set to {out}: {exc}") from exc


def load_toe_fig5(path: Path | None = None) -> DatasetSplit:
    """The Fig. 5 set shipped with verity (or the JSONL at ``path``) as a `DatasetSplit`."""
    path = Path(path) if path is not None else DATA_FILE
    reader = DataReader(path.parent.parent, path.parent.name)
    where = reader.path(path.name)
    examples: list[Example] = []
    for line, obj in reader.jsonl(path.name):
        with at_row(where, f"line {line}"):
            category = str_field(obj, "category")
            if category not in CATEGORIES:
                raise ValueError(f"unknown category {category!r}")
            source_label = Label(str_field(obj, "label"))
            label = AS_UNCERTAIN.get(source_label, source_label)
            provenance = obj["provenance"]
            if not isinstance(provenance, dict):
                raise TypeError("field 'provenance' must be an object")
            examples.append(
                Example(
                    id=str_field(obj, "id"),
                    subject=Claim(
                        text=str_field(obj, "claim"),
                        speaker=str_field(obj, "speaker", optional=True) or None,
                    ),
                    label=label,
                    meta={
                        "label": source_label.value,
                        "category": category,
                        "provenance": provenance,
                    },
                )
            )
    per_category = Counter(e.meta["category"] for e in examples)
    return build_split(
        reader,
        name="toe-fig5",
        title="ToE Fig. 5 set, drawn from the shared datasets",
        examples=examples,
        labels=SPACE,
        label_map={
            Label.CONFLICTING.value: UNCERTAIN.value,
            **{label.value: label.value for label in SPACE},
        },
        prediction_map=AS_UNCERTAIN,
        paper="ToE §IV-B / Fig. 5: 6 categories x (2 true, 2 false, 1 uncertain); the "
        "paper's hand-collected claims are not public, these are drawn by written rules",
        notes=[
            "Per category: " + ", ".join(f"{c} {per_category[c]}" for c in CATEGORIES) + ".",
            "Three classes (ToE §IV-A): uncertain is one class, NOT_ENOUGH_INFO; LIAR's "
            "half-true (CONFLICTING in the file) is scored as it, and so is a CONFLICTING "
            "verdict.",
        ],
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Draw the set and write it: ``python -m verity.bench.fig5 --data-dir DIR --out FILE``."""
    parser = argparse.ArgumentParser(
        prog="python -m verity.bench.fig5", description="Draw ToE's Fig. 5 claim set."
    )
    parser.add_argument("--data-dir", type=Path, default=None, help="the shared datasets")
    parser.add_argument("--seed", type=int, default=SEED, help=f"default {SEED}")
    parser.add_argument("--out", type=Path, default=DATA_FILE, help="the JSONL to write")
    args = parser.parse_args(argv)
    try:
        lines = draw_fig5(data_dir(args.data_dir), args.seed)
        write_fig5(lines, args.out)
    except VerityError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {len(lines)} claims to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
