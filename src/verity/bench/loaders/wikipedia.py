"""Claim datasets checked against Wikipedia.

HoVer, FEVEROUS-S, FEVER (binary and 3-way), FEVER-Symmetric and Climate-FEVER.

    split = load_hover(Path("../shared/datasets"), hops=2)
    split.examples[0].meta["num_hops"]  # 2
"""

from __future__ import annotations

import re
from pathlib import Path

from verity.bench.base import DatasetSplit, Example
from verity.bench.loaders.common import (
    BINARY_PREDICTIONS,
    DataReader,
    as_records,
    at_row,
    build_split,
    int_field,
    label_names,
    list_field,
    map_label,
    str_field,
)
from verity.domain import Claim, Evidence, Label, Stance
from verity.errors import BadInputError

BINARY = (Label.SUPPORTED, Label.REFUTED)
THREE_WAY = (Label.SUPPORTED, Label.REFUTED, Label.NOT_ENOUGH_INFO)
FOUR_WAY = (Label.SUPPORTED, Label.REFUTED, Label.NOT_ENOUGH_INFO, Label.CONFLICTING)

HOVER_LABELS = {"SUPPORTED": Label.SUPPORTED, "NOT_SUPPORTED": Label.REFUTED}
FEVEROUS_LABELS = {"supports": Label.SUPPORTED, "refutes": Label.REFUTED}
FEVER_LABELS = {
    "SUPPORTS": Label.SUPPORTED,
    "REFUTES": Label.REFUTED,
    "NOT ENOUGH INFO": Label.NOT_ENOUGH_INFO,
}
FEVER_BINARY_LABELS = {k: v for k, v in FEVER_LABELS.items() if v is not Label.NOT_ENOUGH_INFO}
CLIMATE_LABELS = {
    "SUPPORTS": Label.SUPPORTED,
    "REFUTES": Label.REFUTED,
    "NOT_ENOUGH_INFO": Label.NOT_ENOUGH_INFO,
    "DISPUTED": Label.CONFLICTING,
}
CLIMATE_STANCES = {
    "SUPPORTS": Stance.SUPPORTS,
    "REFUTES": Stance.REFUTES,
    "NOT_ENOUGH_INFO": Stance.NEUTRAL,
}

HOPS = (2, 3, 4)
# `[[Target_page|shown text]]` or `[[Target]]`; the shown text may itself hold a bracket
# (IPA transcriptions), so it runs to the first closing pair.
_WIKI_LINK = re.compile(r"\[\[(?:[^\[\]|]*\|)?(.*?)\]\]")
# A link cut in two by the sentence split leaves a bare `[[Target|` or `]]` behind.
_LINK_FRAGMENT = re.compile(r"\[\[(?:[^\[\]|]*\|)?|\]\]")
# FEVER's sentences are PTB-tokenised; brackets are the one token a reader cannot guess.
_PTB_BRACKETS = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}
_PTB_TOKEN = re.compile("|".join(map(re.escape, _PTB_BRACKETS)))


def strip_wiki_links(text: str) -> str:
    """Wiki-link markup replaced by the text it shows.

    strip_wiki_links("a [[Plantation_house|plantation house]] near [[Pittsview]]")
    # 'a plantation house near Pittsview'
    strip_wiki_links("state]] of [[Illinois|Illinois]]")  # 'state of Illinois'
    """
    return _LINK_FRAGMENT.sub("", _WIKI_LINK.sub(r"\1", text))


def _ptb_brackets(text: str) -> str:
    return _PTB_TOKEN.sub(lambda m: _PTB_BRACKETS[m.group(0)], text)


def _stance(raw: str) -> Stance:
    if raw not in CLIMATE_STANCES:
        raise ValueError(f"unknown evidence label {raw!r}")
    return CLIMATE_STANCES[raw]


def load_hover(root: Path, *, hops: int | None = None) -> DatasetSplit:
    """HoVer dev, all claims or those of one hop count (2, 3 or 4)."""
    if hops is not None and hops not in HOPS:
        raise BadInputError(f"hover has 2-, 3- and 4-hop claims; got hops={hops}")
    reader = DataReader(root, "HOVER")
    name = "hover_dev_release_v1.1.json"
    path = reader.path(name)
    examples: list[Example] = []
    total = 0
    for index, obj in enumerate(as_records(reader.json(name), path)):
        with at_row(path, f"item {index}"):
            num_hops = int_field(obj, "num_hops")
            total += 1
            if hops is not None and num_hops != hops:
                continue
            raw = str_field(obj, "label")
            facts = [[str(title), int(sentence)] for title, sentence in obj["supporting_facts"]]
            examples.append(
                Example(
                    id=str_field(obj, "uid"),
                    subject=Claim(text=str_field(obj, "claim")),
                    label=map_label(HOVER_LABELS, raw),
                    meta={
                        "label": raw,
                        "num_hops": num_hops,
                        "supporting_facts": facts,
                        "hpqa_id": obj.get("hpqa_id"),
                    },
                )
            )
    title = "HoVer dev" if hops is None else f"HoVer dev, {hops}-hop claims"
    notes = [] if hops is None else [f"Other hop counts left out: {total - len(examples):,}."]
    return build_split(
        reader,
        name="hover",
        title=title,
        examples=examples,
        labels=BINARY,
        label_map=label_names(HOVER_LABELS),
        prediction_map=BINARY_PREDICTIONS,
        paper="ProgramFC (Pan et al. 2023) and LoCal: NOT_SUPPORTED counted as REFUTED",
        notes=[*notes, "No gold text: supporting facts are (page, sentence) pointers in meta."],
    )


def load_feverous_s(root: Path) -> DatasetSplit:
    """FEVEROUS-S: the sentence-only dev claims with their gold sentences."""
    reader = DataReader(root, "FEVEROUS-S")
    name = "dev.json"
    path = reader.path(name)
    examples: list[Example] = []
    for index, obj in enumerate(as_records(reader.json(name), path)):
        with at_row(path, f"item {index}"):
            raw = str_field(obj, "label")
            gold: list[Evidence] = []
            for line in str_field(obj, "evidence").splitlines():
                page, tab, sentence = line.partition("\t")
                if not tab:
                    raise ValueError(f"evidence line without a page title: {line[:60]!r}")
                gold.append(
                    Evidence(text=strip_wiki_links(sentence), title=page, source="feverous-s")
                )
            if not gold:
                raise ValueError("no gold evidence")
            examples.append(
                Example(
                    id=str(int_field(obj, "id")),
                    subject=Claim(text=str_field(obj, "claim")),
                    label=map_label(FEVEROUS_LABELS, raw),
                    gold=tuple(gold),
                    meta={"label": raw, "challenge": obj.get("challenge")},
                )
            )
    return build_split(
        reader,
        name="feverous-s",
        title="FEVEROUS-S dev (sentence evidence only)",
        examples=examples,
        labels=BINARY,
        label_map=label_names(FEVEROUS_LABELS),
        prediction_map=BINARY_PREDICTIONS,
        paper="ProgramFC (Pan et al. 2023) and LoCal: gold sentences, binary",
        has_gold=True,
    )


def _fever(root: Path, *, binary: bool) -> DatasetSplit:
    reader = DataReader(root, "FEVER")
    name = "paper_dev.jsonl"
    path = reader.path(name)
    examples: list[Example] = []
    dropped = 0
    for line, obj in reader.jsonl(name):
        with at_row(path, f"line {line}"):
            raw = str_field(obj, "label")
            label = map_label(FEVER_LABELS, raw)
            if binary and label is Label.NOT_ENOUGH_INFO:
                dropped += 1
                continue
            pages = sorted(
                {str(ev[2]) for group in obj["evidence"] for ev in group if ev[2] is not None}
            )
            examples.append(
                Example(
                    id=str(int_field(obj, "id")),
                    subject=Claim(text=str_field(obj, "claim")),
                    label=label,
                    meta={"label": raw, "evidence_pages": pages},
                )
            )
    if binary:
        return build_split(
            reader,
            name="fever",
            title="FEVER paper_dev, binary",
            examples=examples,
            labels=BINARY,
            label_map=label_names(FEVER_BINARY_LABELS),
            prediction_map=BINARY_PREDICTIONS,
            paper="WKGFC: SUPPORTS / REFUTES, NOT ENOUGH INFO claims dropped",
            notes=[f"NOT ENOUGH INFO claims left out: {dropped:,} (binary protocol)."],
        )
    return build_split(
        reader,
        name="fever-3way",
        title="FEVER paper_dev, 3-way",
        examples=examples,
        labels=THREE_WAY,
        label_map=label_names(FEVER_LABELS),
        paper="FEVER 3-way (Thorne et al. 2018): SUPPORTS / REFUTES / NOT ENOUGH INFO",
    )


def load_fever(root: Path) -> DatasetSplit:
    """FEVER paper_dev as a binary task: NOT ENOUGH INFO claims are left out."""
    return _fever(root, binary=True)


def load_fever_3way(root: Path) -> DatasetSplit:
    """FEVER paper_dev with all three classes."""
    return _fever(root, binary=False)


def load_fever_symmetric(root: Path) -> DatasetSplit:
    """FEVER-Symmetric v0.2 dev: claim and its one evidence sentence."""
    reader = DataReader(root, "FEVER")
    name = "fever_symmetric_dev.jsonl"
    path = reader.path(name)
    examples: list[Example] = []
    for line, obj in reader.jsonl(name):
        with at_row(path, f"line {line}"):
            raw = str_field(obj, "label")
            sentence = _ptb_brackets(str_field(obj, "evidence"))
            examples.append(
                Example(
                    id=str_field(obj, "id"),
                    subject=Claim(text=_ptb_brackets(str_field(obj, "claim"))),
                    label=map_label(FEVER_BINARY_LABELS, raw),
                    gold=(Evidence(text=sentence, source="fever-symmetric"),),
                    meta={"label": raw},
                )
            )
    return build_split(
        reader,
        name="fever-symmetric",
        title="FEVER-Symmetric v0.2 dev",
        examples=examples,
        labels=BINARY,
        label_map=label_names(FEVER_BINARY_LABELS),
        prediction_map=BINARY_PREDICTIONS,
        paper="FEVER-Symmetric (Schuster et al. 2019): claim-evidence pairs, binary",
        has_gold=True,
    )


def load_climate_fever(root: Path) -> DatasetSplit:
    """Climate-FEVER: claims with the five Wikipedia sentences annotated for each."""
    reader = DataReader(root, "Climate-FEVER")
    name = "climate-fever.jsonl"
    path = reader.path(name)
    examples: list[Example] = []
    for line, obj in reader.jsonl(name):
        with at_row(path, f"line {line}"):
            raw = str_field(obj, "claim_label")
            gold = tuple(
                Evidence(
                    text=str_field(ev, "evidence"),
                    title=str_field(ev, "article"),
                    id=str_field(ev, "evidence_id"),
                    source="climate-fever",
                    stance=_stance(str_field(ev, "evidence_label")),
                )
                for ev in list_field(obj, "evidences")
            )
            examples.append(
                Example(
                    id=str_field(obj, "claim_id"),
                    subject=Claim(text=str_field(obj, "claim")),
                    label=map_label(CLIMATE_LABELS, raw),
                    gold=gold,
                    meta={"label": raw},
                )
            )
    return build_split(
        reader,
        name="climate-fever",
        title="Climate-FEVER",
        examples=examples,
        labels=FOUR_WAY,
        label_map=label_names(CLIMATE_LABELS),
        paper="Climate-FEVER (Diggelmann et al. 2020) claim labels, DISPUTED as CONFLICTING",
        has_gold=True,
    )
