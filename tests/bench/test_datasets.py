"""Dataset loaders against the real benchmark files in ../shared/datasets.

Expected ids and label counts are computed here from the raw files with the json and csv
modules, independently of the loaders, and the label maps are spelled out by hand.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import os
import shutil
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from verity.bench.base import DatasetSplit
from verity.bench.datasets import data_dir, dataset_names, load_dataset
from verity.bench.loaders.liar import undo_csv_quoting
from verity.bench.loaders.wikipedia import strip_wiki_links
from verity.domain import Article, Claim, Label, Stance
from verity.errors import BadInputError, DatasetError, UnknownNameError

ROOT = Path(os.environ.get("VERITY_DATA_DIR") or "../shared/datasets").resolve()

pytestmark = pytest.mark.skipif(
    not ROOT.is_dir(),
    reason=f"benchmark data not found at {ROOT}; set VERITY_DATA_DIR to the datasets folder",
)

REQUIRED = [
    "hover",
    "feverous-s",
    "fever",
    "fever-symmetric",
    "liar",
    "liar-plus",
    "liar-new",
    "politifact",
    "politifact-pp",
    "gossipcop",
    "check-covid",
    "averitec",
    "climate-fever",
    "summeval",
]

# Sizes from the datasets' README, or after the documented filtering.
TOTALS = {
    "hover": 4_000,
    "feverous-s": 2_962,
    "fever": 6_666,  # 9,999 minus 3,333 NOT ENOUGH INFO
    "fever-3way": 9_999,
    "fever-symmetric": 708,
    "liar": 1_283,
    "liar-plus": 1_283,
    "liar-new": 1_957,
    "politifact": 90,
    "politifact-pp": 291,  # HF 97 + HR 194
    "gossipcop": 2_717,  # 2,786 minus 69 with empty content
    "check-covid": 229,
    "averitec": 500,
    "averitec-binary": 465,  # 500 minus 35 Not Enough Evidence
    "climate-fever": 1_535,
    "summeval": 1_600,
}

S, R, N, C = "SUPPORTED", "REFUTED", "NOT_ENOUGH_INFO", "CONFLICTING"
TOE = {
    "pants-fire": R,
    "false": R,
    "barely-true": R,
    "half-true": C,
    "mostly-true": S,
    "true": S,
}
LIAR_NEW = {**TOE, "half-true": R}
LABEL_MAPS: dict[str, dict[str, str]] = {
    "hover": {"SUPPORTED": S, "NOT_SUPPORTED": R},
    "feverous-s": {"supports": S, "refutes": R},
    "fever": {"SUPPORTS": S, "REFUTES": R},
    "fever-3way": {"SUPPORTS": S, "REFUTES": R, "NOT ENOUGH INFO": N},
    "fever-symmetric": {"SUPPORTS": S, "REFUTES": R},
    "liar": TOE,
    "liar-plus": TOE,
    "liar-new": LIAR_NEW,
    "politifact": {"0": "REAL", "1": "FAKE"},
    "politifact-pp": {"HF": "FAKE", "HR": "REAL"},
    "gossipcop": {"real": "REAL", "fake": "FAKE"},
    "check-covid": {"SUPPORT": S, "REFUTE": R, "NOTENOUGHINFO": N},
    "averitec": {
        "Supported": S,
        "Refuted": R,
        "Not Enough Evidence": N,
        "Conflicting Evidence/Cherrypicking": C,
    },
    "averitec-binary": {
        "Supported": S,
        "Refuted": R,
        "Conflicting Evidence/Cherrypicking": R,
    },
    "climate-fever": {"SUPPORTS": S, "REFUTES": R, "NOT_ENOUGH_INFO": N, "DISPUTED": C},
    "summeval": {"consistency = 5": S, "consistency < 5": R},
}
BINARY_CLAIMS = {
    "hover",
    "feverous-s",
    "fever",
    "fever-symmetric",
    "liar-new",
    "averitec-binary",
    "summeval",
}
WITH_GOLD = {
    "feverous-s",
    "fever-symmetric",
    "liar-plus",
    "check-covid",
    "averitec",
    "averitec-binary",
    "climate-fever",
    "summeval",
}
ARTICLES = {"politifact", "politifact-pp", "gossipcop"}


@cache
def split(name: str, hops: int | None = None) -> DatasetSplit:
    return load_dataset(name, hops=hops)


# -- the raw files, read without the loaders ----------------------------------------------


def _json(rel: str) -> Any:
    return json.loads((ROOT / rel).read_text(encoding="utf-8"))


def _jsonl(rel: str) -> list[Any]:
    lines = (ROOT / rel).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _tsv(rel: str) -> list[list[str]]:
    text = (ROOT / rel).read_text(encoding="utf-8")
    return list(csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE))


Raw = list[tuple[str, str]]  # (id, canonical label) in file order


def raw_hover() -> Raw:
    m = LABEL_MAPS["hover"]
    return [(r["uid"], m[r["label"]]) for r in _json("HOVER/hover_dev_release_v1.1.json")]


def raw_feverous() -> Raw:
    m = LABEL_MAPS["feverous-s"]
    return [(str(r["id"]), m[r["label"]]) for r in _json("FEVEROUS-S/dev.json")]


def raw_fever() -> Raw:
    m = LABEL_MAPS["fever"]
    rows = _jsonl("FEVER/paper_dev.jsonl")
    return [(str(r["id"]), m[r["label"]]) for r in rows if r["label"] != "NOT ENOUGH INFO"]


def raw_fever_3way() -> Raw:
    m = LABEL_MAPS["fever-3way"]
    return [(str(r["id"]), m[r["label"]]) for r in _jsonl("FEVER/paper_dev.jsonl")]


def raw_fever_symmetric() -> Raw:
    m = LABEL_MAPS["fever-symmetric"]
    return [(r["id"], m[r["label"]]) for r in _jsonl("FEVER/fever_symmetric_dev.jsonl")]


def raw_liar() -> Raw:
    return [(r[0].removesuffix(".json"), TOE[r[1]]) for r in _tsv("LIAR/test.tsv") if r]


def raw_liar_plus() -> Raw:
    rows = _jsonl("LIAR-PLUS/test2.jsonl")
    return [(r["json_file_id"].removesuffix(".json"), TOE[r["label"]]) for r in rows]


def raw_liar_new() -> Raw:
    return [(str(r["example_id"]), LIAR_NEW[r["label"]]) for r in _jsonl("LIAR-New/LIAR-New.jsonl")]


def raw_politifact() -> Raw:
    rows = _jsonl("PolitiFact_SheepDog/politifact_test.jsonl")
    return [(f"test:{r['idx']}", "FAKE" if r["label"] == 1 else "REAL") for r in rows]


def raw_politifact_pp() -> Raw:
    out: Raw = []
    for part, label in (("HF", "FAKE"), ("HR", "REAL")):
        out += [
            (f"{part}:{r['id']}", label) for r in _json(f"PolitiFact++_Su2023/{part}.json").values()
        ]
    return out


def raw_gossipcop() -> Raw:
    with (ROOT / "GossipCop/gossipcop_complete_cleaned_less512.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    return [(r["id"], r["label"].upper()) for r in rows if r["content"].strip()]


def raw_check_covid() -> Raw:
    m = LABEL_MAPS["check-covid"]
    rows = _jsonl("Check-COVID/covidCheck_test_composed.json")
    rows += _jsonl("Check-COVID/covidCheck_test_extracted.json")
    return [(r["id"], m[r["label"]]) for r in rows]


def raw_averitec() -> Raw:
    m = LABEL_MAPS["averitec"]
    return [(str(i), m[r["label"]]) for i, r in enumerate(_json("AVeriTeC/dev.json"))]


def raw_averitec_binary() -> Raw:
    m = LABEL_MAPS["averitec-binary"]
    rows = enumerate(_json("AVeriTeC/dev.json"))
    return [(str(i), m[r["label"]]) for i, r in rows if r["label"] != "Not Enough Evidence"]


def raw_climate_fever() -> Raw:
    m = LABEL_MAPS["climate-fever"]
    return [
        (r["claim_id"], m[r["claim_label"]]) for r in _jsonl("Climate-FEVER/climate-fever.jsonl")
    ]


def raw_summeval() -> Raw:
    rows = _jsonl("SummEval/summeval.jsonl")
    return [
        (f"{r['article_id']}:{r['summary_id']}", S if r["consistency"] == 5 else R) for r in rows
    ]


RAW: dict[str, Callable[[], Raw]] = {
    "hover": raw_hover,
    "feverous-s": raw_feverous,
    "fever": raw_fever,
    "fever-3way": raw_fever_3way,
    "fever-symmetric": raw_fever_symmetric,
    "liar": raw_liar,
    "liar-plus": raw_liar_plus,
    "liar-new": raw_liar_new,
    "politifact": raw_politifact,
    "politifact-pp": raw_politifact_pp,
    "gossipcop": raw_gossipcop,
    "check-covid": raw_check_covid,
    "averitec": raw_averitec,
    "averitec-binary": raw_averitec_binary,
    "climate-fever": raw_climate_fever,
    "summeval": raw_summeval,
}


# -- every dataset ------------------------------------------------------------------------


def test_names_cover_the_issue() -> None:
    names = dataset_names()
    assert set(REQUIRED) <= set(names)
    assert set(TOTALS) == set(RAW)
    # ToE's datasets are checked in test_datasets_toe.py, the pair sets in
    # test_datasets_pairs.py, CheckThat! 2024 in test_datasets_checkthat.py.
    assert set(names) - set(TOTALS) == {
        "liar-train", "liar-new-3way", "toe-fig5", "advfact", "climate-fever-evidence",
        "ct24-checkworthy", "ct24-checkworthy-dev", "ct24-checkworthy-train",
    }  # fmt: skip


@pytest.mark.parametrize("name", list(TOTALS))
def test_size_ids_and_labels_match_the_raw_file(name: str) -> None:
    loaded = split(name)
    raw = RAW[name]()
    assert len(loaded.examples) == TOTALS[name] == len(raw)
    assert [e.id for e in loaded.examples] == [i for i, _ in raw]
    assert len({e.id for e in loaded.examples}) == len(loaded.examples)
    assert Counter(e.label.value for e in loaded.examples) == Counter(lab for _, lab in raw)
    assert {e.label for e in loaded.examples} <= set(loaded.labels)
    assert loaded.name == name


@pytest.mark.parametrize("name", list(TOTALS))
def test_label_map_and_prediction_map(name: str) -> None:
    loaded = split(name)
    assert loaded.label_map == LABEL_MAPS[name]
    if name in BINARY_CLAIMS:
        assert loaded.labels == (Label.SUPPORTED, Label.REFUTED)
        assert loaded.map_prediction(Label.NOT_ENOUGH_INFO) is Label.REFUTED
        assert loaded.map_prediction(Label.CONFLICTING) is Label.REFUTED
    elif name in ("liar", "liar-plus", "liar-new-3way", "liar-train"):
        # ToE's 3-way protocol: "cannot tell" is its uncertain class.
        assert loaded.prediction_map == {Label.NOT_ENOUGH_INFO: Label.CONFLICTING}
    elif name == "check-covid":
        assert loaded.prediction_map == {Label.CONFLICTING: Label.NOT_ENOUGH_INFO}
    else:
        assert loaded.prediction_map == {}
    kind = Article if name in ARTICLES else Claim
    assert all(isinstance(e.subject, kind) for e in loaded.examples)
    assert loaded.paper
    assert f"{len(loaded.examples):,} examples" in loaded.description


@pytest.mark.parametrize("name", list(TOTALS))
def test_gold_evidence_where_promised(name: str) -> None:
    loaded = split(name)
    assert loaded.has_gold == (name in WITH_GOLD)
    with_gold = sum(1 for e in loaded.examples if e.gold)
    if name == "liar-plus":
        assert with_gold == len(loaded.examples) - 25  # 25 rows without a justification
    elif name in WITH_GOLD:
        assert with_gold == len(loaded.examples)
    else:
        assert with_gold == 0
    # A protocol variant's gold names the dataset it comes from.
    origin = name.removesuffix("-binary")
    assert all(ev.source == origin for e in loaded.examples for ev in e.gold)


@pytest.mark.parametrize("name", list(TOTALS))
def test_checksum_is_sha256_of_the_files_in_path_order(name: str) -> None:
    loaded = split(name)
    assert list(loaded.files) == sorted(loaded.files, key=lambda p: p.as_posix())
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in loaded.files)).hexdigest()
    assert loaded.checksum == digest
    assert all(p.is_relative_to(ROOT) for p in loaded.files)


# -- HoVer --------------------------------------------------------------------------------


@pytest.mark.parametrize(("hops", "count"), [(2, 1_126), (3, 1_835), (4, 1_039)])
def test_hover_hops_filter(hops: int, count: int) -> None:
    rows = [r for r in _json("HOVER/hover_dev_release_v1.1.json") if r["num_hops"] == hops]
    loaded = split("hover", hops)
    assert len(loaded.examples) == count == len(rows)
    assert {e.meta["num_hops"] for e in loaded.examples} == {hops}
    expected = Counter(LABEL_MAPS["hover"][r["label"]] for r in rows)
    assert Counter(e.label.value for e in loaded.examples) == expected
    assert f"{hops}-hop" in loaded.description


def test_hover_hops_must_be_2_3_or_4_and_only_for_hover() -> None:
    with pytest.raises(BadInputError, match="hops=5"):
        load_dataset("hover", hops=5)
    with pytest.raises(BadInputError, match="only to hover"):
        load_dataset("liar", hops=2)


def test_hover_keeps_supporting_facts_in_meta() -> None:
    first = split("hover").examples[0]
    assert first.meta["supporting_facts"] == [["Life Goes On (Fergie song)", 2], ["M.I.L.F. $", 1]]
    assert first.meta["label"] == "SUPPORTED"


# -- claim datasets -----------------------------------------------------------------------


def test_feverous_gold_sentences_lose_the_link_markup_and_keep_the_page() -> None:
    loaded = split("feverous-s")
    example = next(e for e in loaded.examples if e.id == "3385")
    assert len(example.gold) == 5
    assert example.gold[0].title == "Glenn–Thompson Plantation"
    assert example.gold[0].text == (
        "The Glenn–Thompson Plantation (also known as Cedar Heights Plantation) is a historic "
        "plantation house near Pittsview in Russell County, Alabama."
    )
    texts = [ev.text for e in loaded.examples for ev in e.gold]
    assert not any("[[" in t or "]]" in t for t in texts)


def test_strip_wiki_links() -> None:
    assert strip_wiki_links("a [[A_b|shown]] and [[Plain]]") == "a shown and Plain"
    assert strip_wiki_links("IPA: [[Russian|[ˈzapədʲnʲɪk]]) were") == "IPA: [ˈzapədʲnʲɪk) were"
    assert strip_wiki_links("state]] of [[Illinois|Illinois]]") == "state of Illinois"


def test_fever_binary_drops_nei_and_says_so() -> None:
    assert "3,333" in split("fever").description
    assert split("fever-3way").labels == (Label.SUPPORTED, Label.REFUTED, Label.NOT_ENOUGH_INFO)


def test_fever_symmetric_gold_is_its_sentence_with_brackets_restored() -> None:
    rows = {r["id"]: r for r in _jsonl("FEVER/fever_symmetric_dev.jsonl")}
    for example in split("fever-symmetric").examples:
        (ev,) = example.gold
        raw = rows[example.id]["evidence"]
        assert ev.text == raw.replace("-LRB-", "(").replace("-RRB-", ")").replace(
            "-LSB-", "["
        ).replace("-RSB-", "]")


def test_climate_fever_evidence_sentences_with_stances() -> None:
    loaded = split("climate-fever")
    assert all(len(e.gold) == 5 for e in loaded.examples)
    first = loaded.examples[0]
    assert first.gold[1].id == "Global warming:14"
    assert first.gold[1].title == "Global warming"
    assert first.gold[1].stance is Stance.SUPPORTS
    assert first.gold[0].stance is Stance.NEUTRAL
    disputed = [e for e in loaded.examples if e.meta["label"] == "DISPUTED"]
    assert disputed and all(e.label is Label.CONFLICTING for e in disputed)


def test_liar_half_true_row_maps_to_conflicting_with_speaker_and_context() -> None:
    example = next(e for e in split("liar").examples if e.id == "5209")
    assert example.meta["label"] == "half-true"
    assert example.label is Label.CONFLICTING
    assert isinstance(example.subject, Claim)
    assert example.subject.speaker == "rob-cornilles"
    assert example.meta["context"] == "a radio show"
    assert example.meta["party"] == "republican"


def test_liar_plus_justification_is_gold_and_csv_quoting_undone() -> None:
    loaded = split("liar-plus")
    example = next(e for e in loaded.examples if e.id == "11096")
    assert example.label is Label.REFUTED
    (ev,) = example.gold
    assert ev.text.startswith('Trump said that McCain "has done nothing to help the vets.')
    quoted = next(e for e in loaded.examples if e.subject.text.startswith("Says Vice President"))
    assert quoted.subject.text == (
        'Says Vice President Joe Biden "admits that the American people are being scammed" '
        "with the economic stimulus package."
    )
    assert "25" in loaded.description


def test_undo_csv_quoting() -> None:
    assert undo_csv_quoting('"He said ""no"" twice."\n') == 'He said "no" twice.'
    assert undo_csv_quoting('"A quote" then text') == '"A quote" then text'
    assert undo_csv_quoting("plain ") == "plain"


def test_liar_new_counts_partly_true_as_refuted_and_has_dates() -> None:
    loaded = split("liar-new")
    half = [e for e in loaded.examples if e.meta["label"] == "half-true"]
    assert len(half) == 147 and all(e.label is Label.REFUTED for e in half)
    first = loaded.examples[0]
    assert isinstance(first.subject, Claim)
    assert first.subject.date == dt.date(2021, 10, 10)


def test_check_covid_gold_sentences_and_corpus() -> None:
    loaded = split("check-covid")
    abstracts = {r["cord_id"]: r for r in _jsonl("Check-COVID/corpus.json")}
    assert loaded.corpus is not None and loaded.corpus.is_file()
    docs = _jsonl(str(loaded.corpus))
    assert len(docs) == 347
    assert {d["id"] for d in docs} == set(abstracts)
    assert all(set(d) == {"id", "title", "text"} and d["text"] for d in docs)
    rows = {r["id"]: r for r in _jsonl("Check-COVID/covidCheck_test_composed.json")}
    rows |= {r["id"]: r for r in _jsonl("Check-COVID/covidCheck_test_extracted.json")}
    for example in loaded.examples:
        row = rows[example.id]
        sentences = abstracts[row["cord_id"]]["abstract"]
        assert [ev.text for ev in example.gold] == [
            sentences[e["sent_index"]] for e in row["evidence_set"]
        ]
        assert {ev.title for ev in example.gold} == {abstracts[row["cord_id"]]["title"]}
    # A second load reuses the corpus file it wrote.
    assert load_dataset("check-covid").corpus == loaded.corpus


def test_averitec_gold_is_the_qa_pairs_with_urls_and_claims_carry_dates() -> None:
    loaded = split("averitec")
    raw = _json("AVeriTeC/dev.json")
    answers = sum(len(q["answers"]) for r in raw for q in r["questions"])
    assert sum(len(e.gold) for e in loaded.examples) == answers
    first = loaded.examples[0]
    assert isinstance(first.subject, Claim)
    assert first.subject.date == dt.date(2020, 10, 31)
    assert first.gold[0].text.startswith("Q: Where was the claim first published\nA: ")
    assert first.gold[0].url == raw[0]["questions"][0]["answers"][0]["source_url"]
    speakers = sum(1 for r in raw if r["speaker"])
    assert sum(1 for e in loaded.examples if getattr(e.subject, "speaker", None)) == speakers


def test_summeval_checks_a_summary_against_its_source_article() -> None:
    loaded = split("summeval")
    raw = {f"{r['article_id']}:{r['summary_id']}": r for r in _jsonl("SummEval/summeval.jsonl")}
    for example in loaded.examples[:50]:
        row = raw[example.id]
        assert example.subject.text == row["summary"].strip()
        (ev,) = example.gold
        assert ev.text == row["article"].strip()
        assert example.meta["consistency"] == row["consistency"]


# -- article datasets ---------------------------------------------------------------------


def test_gossipcop_leaves_out_empty_articles_and_says_how_many() -> None:
    loaded = split("gossipcop")
    assert "empty content left out: 69" in loaded.description
    first = loaded.examples[0]
    assert isinstance(first.subject, Article)
    assert first.subject.title.startswith("Zayn Malik shared")


def test_politifact_pp_keeps_the_article_released_as_both_fake_and_real() -> None:
    loaded = split("politifact-pp")
    ids = {e.id for e in loaded.examples}
    assert {"HF:politifact14940", "HR:politifact14940"} <= ids
    assert "politifact14940" in loaded.description
    assert all(getattr(e.subject, "title", "") for e in loaded.examples)


# -- the data folder, errors and the checksum ---------------------------------------------


def _copy(rel: str, dest: Path) -> Path:
    target = dest / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / rel, target)  # content only: the originals are read-only
    return target


def test_missing_data_dir_names_the_path_and_the_fix(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    with pytest.raises(DatasetError) as info:
        load_dataset("liar", data_dir=missing)
    assert str(missing) in str(info.value)
    assert "VERITY_DATA_DIR" in str(info.value)


def test_missing_file_names_its_full_path(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as info:
        load_dataset("liar", data_dir=tmp_path)
    assert str(tmp_path / "LIAR" / "test.tsv") in str(info.value)


def test_data_dir_order_argument_env_then_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "shared" / "datasets").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    (tmp_path / "env").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.delenv("VERITY_DATA_DIR", raising=False)
    assert data_dir() == (tmp_path / "shared" / "datasets").resolve()
    monkeypatch.setenv("VERITY_DATA_DIR", str(tmp_path / "env"))
    assert data_dir() == (tmp_path / "env").resolve()
    assert data_dir(Path("../shared/datasets")) == (tmp_path / "shared" / "datasets").resolve()
    monkeypatch.setenv("VERITY_DATA_DIR", str(tmp_path / "gone"))
    with pytest.raises(DatasetError, match="VERITY_DATA_DIR"):
        data_dir()


def test_unknown_dataset_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match="hover"):
        load_dataset("hovr")


def test_checksum_pins_the_bytes_not_the_location(tmp_path: Path) -> None:
    rel = "FEVER/fever_symmetric_dev.jsonl"
    copy = _copy(rel, tmp_path)
    assert (
        load_dataset("fever-symmetric", data_dir=tmp_path).checksum
        == split("fever-symmetric").checksum
    )
    data = bytearray(copy.read_bytes())
    at = data.index(b"Daggering")
    data[at] = ord("d")  # one byte of one claim
    copy.write_bytes(bytes(data))
    changed = load_dataset("fever-symmetric", data_dir=tmp_path)
    assert changed.checksum != split("fever-symmetric").checksum
    assert changed.checksum == hashlib.sha256(bytes(data)).hexdigest()


def test_malformed_row_names_file_and_line(tmp_path: Path) -> None:
    copy = _copy("LIAR/test.tsv", tmp_path)
    lines = copy.read_text(encoding="utf-8").split("\n")
    fields = lines[2].split("\t")
    fields[1] = "mostly-false"
    lines[2] = "\t".join(fields)
    copy.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_dataset("liar", data_dir=tmp_path)
    message = str(info.value)
    assert str(copy) in message and "line 3" in message and "mostly-false" in message


def test_malformed_json_line_names_file_and_line(tmp_path: Path) -> None:
    copy = _copy("LIAR-New/LIAR-New.jsonl", tmp_path)
    lines = copy.read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4][:-1]
    copy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"line 5: malformed JSON"):
        load_dataset("liar-new", data_dir=tmp_path)


def test_missing_field_names_file_and_item(tmp_path: Path) -> None:
    copy = _copy("AVeriTeC/dev.json", tmp_path)
    rows = json.loads(copy.read_text(encoding="utf-8"))
    del rows[7]["claim_date"]
    copy.write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"dev\.json: item 7: missing field 'claim_date'"):
        load_dataset("averitec", data_dir=tmp_path)


@pytest.mark.parametrize("name", ["liar-new-3way", "liar-train"])
def test_toe_three_way_splits_count_cannot_tell_as_uncertain(name: str) -> None:
    loaded = split(name)
    assert loaded.labels == (Label.SUPPORTED, Label.REFUTED, Label.CONFLICTING)
    assert loaded.map_prediction(Label.NOT_ENOUGH_INFO) is Label.CONFLICTING
    assert loaded.map_prediction(Label.REFUTED) is Label.REFUTED
