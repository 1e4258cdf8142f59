"""A small hand-written graph in Wikidata's RDF vocabulary, for fast checks of every template.

Items: Q1 "Alpha City" (alias "Alphaville", a description, a population literal, an
English and a French motto), Q2 "Beta Person" (aliases "Betty", "B. Person"), Q3 "Gamma
Country", Q4 with no label at all, Q5 a second, smaller "Alpha City", Q6 with only a French
label, Q9 and Q10 both "Delta" (Q10, the later id, has the higher degree), Q11 "Betty".
Properties: P1 "located in", P2 "place of birth", P3 "population", P4 with no label,
P5 "motto".

Degrees (direct statements as subject or object): Q1 5, Q2 2, Q3 4, Q10 2, others 1 or 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
ALT = "http://www.w3.org/2004/02/skos/core#altLabel"
DESCRIPTION = "http://schema.org/description"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"


def statement(s: str, p: str, o: str) -> str:
    return f"<{WD}{s}> <{WDT}{p}> <{WD}{o}> ."


def text(s: str, predicate: str, value: str, lang: str = "en") -> str:
    return f'<{WD}{s}> <{predicate}> "{value}"@{lang} .'


SMALL_LINES = [
    text("Q1", LABEL, "Alpha City"),
    text("Q1", ALT, "Alphaville"),
    text("Q1", DESCRIPTION, "a city made up for tests"),
    text("Q2", LABEL, "Beta Person"),
    text("Q2", ALT, "Betty"),
    text("Q2", ALT, "B. Person"),
    text("Q3", LABEL, "Gamma Country"),
    text("Q5", LABEL, "Alpha City"),
    text("Q5", DESCRIPTION, "a smaller namesake"),
    text("Q6", LABEL, "Ville Sixième", "fr"),
    text("Q9", LABEL, "Delta"),
    text("Q10", LABEL, "Delta"),
    text("Q11", LABEL, "Betty"),
    text("P1", LABEL, "located in"),
    text("P2", LABEL, "place of birth"),
    text("P3", LABEL, "population"),
    text("P5", LABEL, "motto"),
    text("P5", LABEL, "devise", "fr"),
    statement("Q2", "P2", "Q1"),
    statement("Q1", "P1", "Q3"),
    statement("Q5", "P1", "Q3"),
    statement("Q2", "P4", "Q4"),
    statement("Q6", "P1", "Q3"),
    statement("Q10", "P1", "Q3"),
    f'<{WD}Q10> <{WDT}P3> "7"^^<{XSD_INTEGER}> .',
    f'<{WD}Q1> <{WDT}P3> "12345"^^<{XSD_INTEGER}> .',
    text("Q1", WDT + "P5", "Alpha forever"),
    text("Q1", WDT + "P5", "Alpha pour toujours", "fr"),
]


def write_small(path: Path, extra: list[str] | None = None) -> Path:
    path.write_text("\n".join(SMALL_LINES + (extra or [])) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def small_nt(tmp_path: Path) -> Path:
    """The small graph as an N-Triples file."""
    return write_small(tmp_path / "small.nt")


@pytest.fixture
def graph_writer():
    """A function writing the small graph, with extra lines, to a path."""
    return write_small
