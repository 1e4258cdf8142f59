"""The offline stand-ins for ToE's tools: what goes into each corpus, and when it is built.

Most tests build a small data folder in the real files' layout with made-up rows, so each
rule (ids, fields, skipped rows, labels kept out) is checked on a case made for it; one
test reads the real files.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from verity.bench.standins import (
    build_standin,
    corpus_name,
    ensure_standin,
    ruling_text,
    standin_documents,
    standin_kinds,
    standin_record,
)
from verity.errors import BadInputError
from verity.sources.corpus import CorpusSource, build_corpus

REAL_DATA = Path(os.environ.get("VERITY_DATA_DIR") or "../shared/datasets").resolve()

ABSTRACTS = [
    {"cord_id": "ab12cd34", "title": "Saliva testing for SARS-CoV-2",
     "abstract": ["Saliva samples detect the virus.", "Sensitivity was 97%."]},
    {"cord_id": "zz99yy88", "title": "Masks and droplets",
     "abstract": ["Masks reduce droplet spread."]},
    {"cord_id": "empty001", "title": "No abstract", "abstract": []},
    {"cord_id": "ab12cd34", "title": "Saliva testing again", "abstract": ["A copy."]},
]  # fmt: skip
RULINGS = [
    {"id": 0, "json_file_id": "12134.json", "label": "barely-true",
     "claim": "We have less Americans working now than in the 70s.", "topics": ["jobs"],
     "originator": "vicky-hartzler", "title": "", "party": "",
     "justification": "The first eight years of the decade had lower employment.\n"},
    {"id": 1, "json_file_id": "238.json", "label": "pants-fire",
     "claim": '"Obama used the ""Kuran"" when sworn in."', "topics": [],
     "originator": "chain-email", "title": "", "party": "", "justification": None},
    {"id": 2, "json_file_id": "238.json", "label": "false", "claim": "A second row, same id.",
     "topics": [], "originator": "", "title": "", "party": "", "justification": "x"},
]  # fmt: skip
SHEEPDOG_TRAIN = [
    {"idx": 0, "text": "The senate passed the farm bill on Tuesday after a long debate.",
     "label": 1},
    {"idx": 1, "text": "   ", "label": 0},
]  # fmt: skip
SHEEPDOG_TEST = [
    # The same text as a train article, spacing and case aside: kept once.
    {"idx": 0, "text": "the Senate passed the farm bill on Tuesday, after a long debate",
     "label": 0},
    {"idx": 1, "text": "The governor vetoed the water budget in a short statement.", "label": 1},
]  # fmt: skip
GOSSIP = [
    ["gossipcop-1", "Star opens a bakery", "A pop star opened a bakery in Brooklyn.", "fake"],
    ["gossipcop-2", "Empty one", "", "real"],
    ["gossipcop-3", "Couple splits", "The couple announced their split on Monday.", "real"],
]


def write_folder(root: Path) -> Path:
    def jsonl(rel: str, rows: list[dict[str, Any]]) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    jsonl("Check-COVID/corpus.json", ABSTRACTS)
    jsonl("LIAR-PLUS/val2.jsonl", RULINGS)
    jsonl("PolitiFact_SheepDog/politifact_train.jsonl", SHEEPDOG_TRAIN)
    jsonl("PolitiFact_SheepDog/politifact_test.jsonl", SHEEPDOG_TEST)
    (root / "GossipCop").mkdir()
    with (root / "GossipCop/gossipcop_complete_cleaned_less512.csv").open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["id", "title", "content", "label"])
        out.writerows(GOSSIP)
    return root


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path / "cache"))
    return write_folder(tmp_path / "datasets")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- what each corpus holds ------------------------------------------------------------


def test_academic_is_the_abstracts_under_their_cord_ids(data: Path) -> None:
    docs = standin_documents("academic", data)
    assert docs.corpus == "standin-academic" == corpus_name("academic")
    assert list(docs.documents) == [
        {"id": "ab12cd34", "title": "Saliva testing for SARS-CoV-2",
         "text": "Saliva samples detect the virus. Sensitivity was 97%."},
        {"id": "zz99yy88", "title": "Masks and droplets", "text": "Masks reduce droplet spread."},
    ]  # fmt: skip
    assert docs.record["skipped"] == {"duplicate cord_id": 1, "empty abstract": 1}
    assert docs.record["documents"] == 2
    assert docs.record["files"] == [
        {"path": "Check-COVID/corpus.json", "sha256": sha256(data / "Check-COVID/corpus.json")}
    ]


def test_factcheck_is_one_ruling_per_statement_id(data: Path) -> None:
    docs = standin_documents("factcheck", data)
    first, second = docs.documents
    assert first["id"] == "12134" and second["id"] == "238"
    assert (
        first["title"] == "PolitiFact ruling: We have less Americans working now than in the 70s."
    )
    assert first["text"] == (
        "Statement: We have less Americans working now than in the 70s.\n\n"
        "Speaker: vicky-hartzler\n\n"
        "PolitiFact rating: barely-true\n\n"
        "Justification: The first eight years of the decade had lower employment."
    )
    # CSV quoting undone; no justification, so no such field.
    assert second["text"] == (
        'Statement: Obama used the "Kuran" when sworn in.\n\n'
        "Speaker: chain-email\n\nPolitiFact rating: pants-fire"
    )
    assert set(first) == {"id", "title", "text"}  # no URL, no date
    assert docs.record["skipped"] == {"duplicate statement id": 1}
    assert docs.record["kept_without_justification"] == 1
    assert "disjoint from LIAR test" in docs.record["note"]


def test_ruling_text_leaves_out_empty_fields() -> None:
    assert ruling_text("S.", "", "true", "") == "Statement: S.\n\nPolitiFact rating: true"


def test_news_carries_no_label_and_no_file_name(data: Path) -> None:
    docs = standin_documents("news", data)
    texts = {d["text"] for d in docs.documents}
    assert texts == {
        SHEEPDOG_TRAIN[0]["text"], SHEEPDOG_TEST[1]["text"], GOSSIP[0][2], GOSSIP[2][2],
    }  # fmt: skip
    assert {d["title"] for d in docs.documents} == {"", GOSSIP[0][1], GOSSIP[2][1]}
    ids = [d["id"] for d in docs.documents]
    assert ids == sorted(ids) and all(i.startswith("news-") for i in ids)
    for doc in docs.documents:
        assert set(doc) == {"id", "title", "text"}
        for hint in ("gossipcop", "politifact", "fake", "real", "train", "test"):
            assert hint not in doc["id"]
    assert docs.record["skipped"] == {
        "gossipcop: empty content": 1,
        "politifact: empty text": 1,
        "politifact: same text as another article": 1,
    }
    assert docs.record["kept_from_politifact"] == 2 and docs.record["kept_from_gossipcop"] == 2
    assert [f["path"] for f in docs.record["files"]] == [
        "PolitiFact_SheepDog/politifact_test.jsonl",
        "PolitiFact_SheepDog/politifact_train.jsonl",
        "GossipCop/gossipcop_complete_cleaned_less512.csv",
    ]


def test_unknown_kind_lists_the_known_ones(data: Path) -> None:
    assert standin_kinds() == ["academic", "factcheck", "news"]
    with pytest.raises(BadInputError, match="academic, factcheck, news"):
        standin_documents("reddit", data)


# -- building and reusing ---------------------------------------------------------------


def test_built_searchable_and_recorded(data: Path, tmp_path: Path) -> None:
    root = tmp_path / "corpora"
    info = build_standin("academic", data, root=root)
    assert info.name == "standin-academic" and info.documents == 2
    hits = CorpusSource("standin-academic", root=root).search("saliva virus", k=2)
    assert hits[0].id == "ab12cd34#1" and hits[0].url is None and hits[0].published is None
    record = standin_record("academic", root=root)
    assert record is not None and record["documents"] == 2
    assert Path(record["documents_file"]).is_file()
    assert standin_record("news", root=root) is None  # not built


def test_building_twice_gives_the_same_corpus(data: Path, tmp_path: Path) -> None:
    root = tmp_path / "corpora"
    first = build_standin("factcheck", data, root=root)
    passages = (first.path / "passages.jsonl").read_bytes()
    record = (first.path / "standin.json").read_bytes()
    again = build_standin("factcheck", data, root=root)
    assert (again.path / "passages.jsonl").read_bytes() == passages
    assert (again.path / "standin.json").read_bytes() == record


def test_ensure_builds_once_and_again_when_the_data_changes(data: Path, tmp_path: Path) -> None:
    root = tmp_path / "corpora"
    info = ensure_standin("factcheck", data, root=root)
    manifest = info.path / "manifest.json"
    built = manifest.stat().st_mtime_ns
    assert ensure_standin("factcheck", data, root=root).documents == 2
    assert manifest.stat().st_mtime_ns == built  # reused, not rebuilt
    before = standin_record("factcheck", root=root)
    assert before is not None

    # One rating changed: as many documents as before, one of them different.
    rows = [{**RULINGS[0], "label": "true"}, *RULINGS[1:]]
    (data / "LIAR-PLUS/val2.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    changed = ensure_standin("factcheck", data, root=root)
    assert changed.documents == 2 and manifest.stat().st_mtime_ns != built
    passages = (changed.path / "passages.jsonl").read_text(encoding="utf-8")
    assert "PolitiFact rating: true" in passages
    after = standin_record("factcheck", root=root)
    assert after is not None and after["version"] != before["version"]


def test_ensure_rebuilds_a_corpus_of_that_name_built_from_other_documents(
    data: Path, tmp_path: Path
) -> None:
    root = tmp_path / "corpora"
    ensure_standin("academic", data, root=root)
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x", "text": "Something else."}) + "\n", encoding="utf-8")
    build_corpus(other, "standin-academic", root=root)  # the record is gone with the folder
    assert ensure_standin("academic", data, root=root).documents == 2


# -- the command line -------------------------------------------------------------------


def test_cli_builds_a_standin(cli, data: Path) -> None:
    code, out, err = cli(["index", "build", "--standin", "academic", "--data-dir", str(data)])
    assert code == 0, err
    assert "standin-academic" in out and "Check-COVID/corpus.json" in out
    assert "skipped (empty abstract): 1" in out
    assert standin_record("academic") is not None  # where the sources look by default


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["docs.jsonl", "--standin", "news"], "not both"),
        (["--name", "x", "--standin", "news"], "not both"),
        (["docs.jsonl"], "give PATH and --name NAME, or --standin KIND"),
        ([], "give PATH and --name NAME, or --standin KIND"),
        (["docs.jsonl", "--name", "x", "--data-dir", "d"], "--data-dir applies only with"),
        (["--standin", "reddit"], "unknown stand-in 'reddit'"),
    ],
)
def test_cli_refuses_mixed_arguments(cli, data: Path, argv: list[str], message: str) -> None:
    extra = ["--data-dir", str(data)] if "--standin" in argv and "--data-dir" not in argv else []
    code, _, err = cli(["index", "build", *argv, *extra])
    assert code == 2
    assert message in err


# -- the real files -------------------------------------------------------------------


@pytest.mark.skipif(not REAL_DATA.is_dir(), reason=f"benchmark data not at {REAL_DATA}")
def test_real_files() -> None:
    academic = standin_documents("academic", REAL_DATA)
    assert academic.record["documents"] == 347 and academic.record["skipped"] == {}
    factcheck = standin_documents("factcheck", REAL_DATA)
    assert factcheck.record["documents"] == 1_284
    # LIAR-PLUS validation statements are none of LIAR's test or train statements.
    liar = set()
    for name in ("test.tsv", "train.tsv"):
        for line in (REAL_DATA / "LIAR" / name).read_text(encoding="utf-8").splitlines():
            liar.add(line.split("\t")[0].removesuffix(".json"))
    assert not {d["id"] for d in factcheck.documents} & liar
