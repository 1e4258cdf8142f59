"""One-property follows read straight from a pyoxigraph store's indexes, rows as SPARQL gives.

The ``follow_out`` and ``follow_in`` templates list their one property in ``VALUES ?p``,
and with two seeds or more pyoxigraph plans that as a scan of every statement of the
property, joined with the seeds afterwards: reading "instance of" (P31) from two items
scanned all 153,765 P31 statements of the offline subset, 0.4 to 0.9 s for one or two
rows. Looking each seed up in the store's indexes takes well under a millisecond.

`follow_rows` returns what the template returns, in the same order: the scan yields the
statements by object, then subject, each in `verity.kg.keyorder` order, so the seeds'
lookups are merged in that order before ``limit`` cuts them, and labels are joined as the
template's ``OPTIONAL`` s join them. Where the indexes cannot settle that order or those
rows (objects other than IRIs from two seeds, whose order depends on how pyoxigraph
encodes values; an entity or property with two English labels, which the template turns
into two rows), it returns None and the caller runs the template. Tests compare both on
every seed set of a small graph (tests/kg/test_kg_follow.py) and on the offline subset
(tests/kg/test_kg_subset.py).

    rows = follow_rows(store, ["Q76", "Q13133"], "P69", "out", limit=50)
    # [{'s': Term('uri', '.../Q76'), 'sLabel': ..., 'p': ..., 'o': ..., 'oLabel': ...}, ...]
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, Any

from verity.kg.base import Direction
from verity.kg.keyorder import iri_key
from verity.kg.sparql import Row, Term, literal_term
from verity.kg.templates import DIRECT, DIRECT_CLAIM, ENTITY, RDFS_LABEL

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import pyoxigraph

_ITEM = ENTITY + "Q"


class Unsettled(Exception):
    """The indexes alone cannot give the template's rows: run the template."""


def row_term(node: Any) -> Term:
    """A pyoxigraph term as a result row holds it (`verity.kg.sparql.Term`)."""
    import pyoxigraph

    if isinstance(node, pyoxigraph.NamedNode):
        return Term("uri", node.value)
    if isinstance(node, pyoxigraph.Literal):
        return literal_term(node.value, node.language, node.datatype.value)
    return Term("bnode", str(getattr(node, "value", node)))


def follow_rows(
    store: pyoxigraph.Store, seeds: Sequence[str], pid: str, direction: Direction, limit: int
) -> list[Row] | None:
    """The rows of ``follow_<direction>`` for checked ``seeds`` and one property, or None.

    None when only the template can give them (see the module documentation).
    """
    try:
        if direction == "out":
            found = _out(store, seeds, pid, limit)
        else:
            found = list(islice(_in(store, seeds, pid), limit))
        return _labelled(store, found, pid)
    except Unsettled:
        return None


def _out(
    store: pyoxigraph.Store, seeds: Sequence[str], pid: str, limit: int
) -> list[tuple[Any, Any]]:
    """(subject, object) pairs by object, then subject: the property's index order.

    Each seed's statements come from the subject index, objects already in key order. IRIs
    come before blank nodes and literals in every index, so the other objects follow the
    IRIs, in their seed's order; from two seeds their order is pyoxigraph's encoding of
    values, which is not computed here.
    """
    import pyoxigraph

    prop, graph = pyoxigraph.NamedNode(DIRECT + pid), pyoxigraph.DefaultGraph()
    iris: list[tuple[int, int, Any, Any]] = []
    others: dict[str, list[tuple[Any, Any]]] = {}
    for seed in seeds:
        subject = pyoxigraph.NamedNode(ENTITY + seed)
        for quad in store.quads_for_pattern(subject, prop, None, graph):
            obj = quad.object
            if isinstance(obj, pyoxigraph.NamedNode):
                iris.append((iri_key(obj.value), iri_key(subject.value), subject, obj))
            elif _english_or_plain(obj):
                others.setdefault(seed, []).append((subject, obj))
    iris.sort(key=lambda found: (found[0], found[1]))
    pairs = [(s, o) for _, _, s, o in iris[:limit]]
    if len(pairs) < limit and others:
        if len(others) > 1:
            raise Unsettled
        pairs.extend(next(iter(others.values()))[: limit - len(pairs)])
    return pairs


def _english_or_plain(obj: Any) -> bool:
    """The templates' literal filter: no language, or English; any other term passes."""
    import pyoxigraph

    if not isinstance(obj, pyoxigraph.Literal):
        return True
    return obj.language in (None, "", "en")


def _in(store: pyoxigraph.Store, seeds: Sequence[str], pid: str) -> Iterator[tuple[Any, Any]]:
    """(subject, object) pairs by object (the seeds in key order), then subject.

    The property's index holds each seed's subjects in key order already; only item
    subjects count, as in the template.
    """
    import pyoxigraph

    prop, graph = pyoxigraph.NamedNode(DIRECT + pid), pyoxigraph.DefaultGraph()
    for seed in sorted(seeds, key=lambda q: iri_key(ENTITY + q)):
        obj = pyoxigraph.NamedNode(ENTITY + seed)
        for quad in store.quads_for_pattern(None, prop, obj, graph):
            subject = quad.subject
            if isinstance(subject, pyoxigraph.NamedNode) and subject.value.startswith(_ITEM):
                yield subject, obj


def _labelled(store: pyoxigraph.Store, pairs: list[tuple[Any, Any]], pid: str) -> list[Row]:
    """The template's rows: each pair with its subject's, property's and object's label."""
    import pyoxigraph

    prop = pyoxigraph.NamedNode(DIRECT + pid)
    p_label = _property_label(store, prop)
    labels: dict[str, Term | None] = {}

    def label_of(node: Any) -> Term | None:
        if isinstance(node, pyoxigraph.Literal):
            return None  # no statement has a literal subject
        key = str(node)  # <iri> or _:id, so an IRI and a blank node never share a key
        if key not in labels:
            labels[key] = _one_label(store, node)
        return labels[key]

    rows: list[Row] = []
    for subject, obj in pairs:
        row: dict[str, Term] = {"s": row_term(subject)}
        if (s_label := label_of(subject)) is not None:
            row["sLabel"] = s_label
        row["p"] = row_term(prop)
        if p_label is not None:
            row["pLabel"] = p_label
        row["o"] = row_term(obj)
        if (o_label := label_of(obj)) is not None:
            row["oLabel"] = o_label
        rows.append(row)
    return rows


def _english(store: pyoxigraph.Store, node: Any) -> list[Term]:
    import pyoxigraph

    label = pyoxigraph.NamedNode(RDFS_LABEL)
    return [
        row_term(quad.object)
        for quad in store.quads_for_pattern(node, label, None, pyoxigraph.DefaultGraph())
        if isinstance(quad.object, pyoxigraph.Literal) and quad.object.language == "en"
    ]


def _one_label(store: pyoxigraph.Store, node: Any) -> Term | None:
    """The English label, None without one; two would make two rows of one statement."""
    found = _english(store, node)
    if len(found) > 1:
        raise Unsettled
    return found[0] if found else None


def _property_label(store: pyoxigraph.Store, prop: Any) -> Term | None:
    """The English label of the property entity linked to ``wdt:P..`` by directClaim."""
    import pyoxigraph

    link = pyoxigraph.NamedNode(DIRECT_CLAIM)
    found = [
        label
        for quad in store.quads_for_pattern(None, link, prop, pyoxigraph.DefaultGraph())
        for label in _english(store, quad.subject)
    ]
    if len(found) > 1:
        raise Unsettled
    return found[0] if found else None
