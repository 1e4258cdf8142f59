"""The SPARQL of the knowledge-graph layer: one text for live Wikidata and the local store.

Every query behind `KnowledgeGraph.neighbours`, `relations`, `follow` and `labels` is one of
the templates below, filled in by `render`. The ``wikidata`` backend sends the text to the
Wikidata Query Service and ``kg-local`` runs the very same text on pyoxigraph, so only
standard SPARQL 1.1 is used:

* labels come from ``rdfs:label`` filtered to English, not from the ``wikibase:label``
  service, which only the Wikidata Query Service has;
* a property's label sits on its entity (``wd:P26``), found from the direct-claim
  predicate (``wdt:P26``) through ``wikibase:directClaim``, as in Wikidata's RDF; the local
  loader adds these links when a file lacks them. (Computing the entity IRI with
  ``BIND(IRI(...))`` instead would make pyoxigraph join against every label in the store.)
* seeds and properties are listed with ``VALUES``, after `check_qids` and `check_pids`
  have checked every id, so nothing but ``wd:Q<digits>`` and ``wdt:P<digits>`` is pasted;
* literal objects are kept only without a language or in English (live Wikidata holds
  monolingual texts in hundreds of languages);
* ``in`` statements must come from an item (``wd:Q...``): live Wikidata also links
  lexeme senses to items, and `Triple` subjects are items;
* ``LIMIT`` sits in a sub-query, so labels are looked up only for the statements kept.

    query = render("neighbours_out", seeds=["Q76"], limit=50)
    query = render("follow_in", seeds=["Q30"], pids=["P27"], limit=20)
    query = render("labels", ids=["Q76", "P26"])
"""

from __future__ import annotations

from collections.abc import Iterable
from string import Template
from typing import Literal

from verity.errors import BadInputError
from verity.kg.base import Direction, check_entity_ids, check_limit, check_pids, check_qids

TemplateName = Literal[
    "neighbours_out",
    "neighbours_in",
    "relations_out",
    "relations_in",
    "follow_out",
    "follow_in",
    "labels",
]

ENTITY = "http://www.wikidata.org/entity/"
DIRECT = "http://www.wikidata.org/prop/direct/"
DIRECT_CLAIM = "http://wikiba.se/ontology#directClaim"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SKOS_ALT_LABEL = "http://www.w3.org/2004/02/skos/core#altLabel"
SCHEMA_DESCRIPTION = "http://schema.org/description"

PREFIXES = f"""\
PREFIX wd: <{ENTITY}>
PREFIX wdt: <{DIRECT}>
PREFIX wikibase: <http://wikiba.se/ontology#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""

# Pieces shared by several templates; each full template is spelled out below.
_IS_DIRECT = f'FILTER(STRSTARTS(STR(?p), "{DIRECT}"))'
_ENGLISH_OR_PLAIN = 'FILTER(!isLiteral(?o) || LANG(?o) = "" || LANG(?o) = "en")'
_FROM_ITEM = f'FILTER(STRSTARTS(STR(?s), "{ENTITY}Q"))'
_LABEL_PROPERTY = (
    "OPTIONAL { ?pEntity wikibase:directClaim ?p . "
    '?pEntity rdfs:label ?pLabel . FILTER(LANG(?pLabel) = "en") }'
)
_TRIPLE_LABELS = f"""\
  OPTIONAL {{ ?s rdfs:label ?sLabel . FILTER(LANG(?sLabel) = "en") }}
  {_LABEL_PROPERTY}
  OPTIONAL {{ ?o rdfs:label ?oLabel . FILTER(LANG(?oLabel) = "en") }}
}}"""

NEIGHBOURS_OUT = f"""\
{PREFIXES}SELECT ?s ?sLabel ?p ?pLabel ?o ?oLabel WHERE {{
  {{
    SELECT ?s ?p ?o WHERE {{
      VALUES ?s {{ $seeds }}
      ?s ?p ?o .
      {_IS_DIRECT}
      {_ENGLISH_OR_PLAIN}
    }}
    LIMIT $limit
  }}
{_TRIPLE_LABELS}
"""

NEIGHBOURS_IN = f"""\
{PREFIXES}SELECT ?s ?sLabel ?p ?pLabel ?o ?oLabel WHERE {{
  {{
    SELECT ?s ?p ?o WHERE {{
      VALUES ?o {{ $seeds }}
      ?s ?p ?o .
      {_IS_DIRECT}
      {_FROM_ITEM}
    }}
    LIMIT $limit
  }}
{_TRIPLE_LABELS}
"""

FOLLOW_OUT = f"""\
{PREFIXES}SELECT ?s ?sLabel ?p ?pLabel ?o ?oLabel WHERE {{
  {{
    SELECT ?s ?p ?o WHERE {{
      VALUES ?s {{ $seeds }}
      VALUES ?p {{ $pids }}
      ?s ?p ?o .
      {_ENGLISH_OR_PLAIN}
    }}
    LIMIT $limit
  }}
{_TRIPLE_LABELS}
"""

FOLLOW_IN = f"""\
{PREFIXES}SELECT ?s ?sLabel ?p ?pLabel ?o ?oLabel WHERE {{
  {{
    SELECT ?s ?p ?o WHERE {{
      VALUES ?o {{ $seeds }}
      VALUES ?p {{ $pids }}
      ?s ?p ?o .
      {_FROM_ITEM}
    }}
    LIMIT $limit
  }}
{_TRIPLE_LABELS}
"""

# The count runs over at most `limit` statements, so that a hub (Q5 "human" is the object
# of millions of statements on Wikidata) costs a bounded time online and offline.
RELATIONS_OUT = f"""\
{PREFIXES}SELECT ?p ?pLabel ?count WHERE {{
  {{
    SELECT ?p (COUNT(*) AS ?count) WHERE {{
      {{
        SELECT ?p WHERE {{
          VALUES ?s {{ $seeds }}
          ?s ?p ?o .
          {_IS_DIRECT}
          {_ENGLISH_OR_PLAIN}
        }}
        LIMIT $limit
      }}
    }}
    GROUP BY ?p
  }}
  {_LABEL_PROPERTY}
}}
ORDER BY DESC(?count)
"""

RELATIONS_IN = f"""\
{PREFIXES}SELECT ?p ?pLabel ?count WHERE {{
  {{
    SELECT ?p (COUNT(*) AS ?count) WHERE {{
      {{
        SELECT ?p WHERE {{
          VALUES ?o {{ $seeds }}
          ?s ?p ?o .
          {_IS_DIRECT}
          {_FROM_ITEM}
        }}
        LIMIT $limit
      }}
    }}
    GROUP BY ?p
  }}
  {_LABEL_PROPERTY}
}}
ORDER BY DESC(?count)
"""

LABELS = f"""\
{PREFIXES}SELECT ?e ?label WHERE {{
  VALUES ?e {{ $ids }}
  ?e rdfs:label ?label .
  FILTER(LANG(?label) = "en")
}}
"""

TEMPLATES: dict[TemplateName, Template] = {
    "neighbours_out": Template(NEIGHBOURS_OUT),
    "neighbours_in": Template(NEIGHBOURS_IN),
    "relations_out": Template(RELATIONS_OUT),
    "relations_in": Template(RELATIONS_IN),
    "follow_out": Template(FOLLOW_OUT),
    "follow_in": Template(FOLLOW_IN),
    "labels": Template(LABELS),
}


_BY_STEP: dict[tuple[str, Direction], TemplateName] = {
    ("neighbours", "out"): "neighbours_out",
    ("neighbours", "in"): "neighbours_in",
    ("relations", "out"): "relations_out",
    ("relations", "in"): "relations_in",
    ("follow", "out"): "follow_out",
    ("follow", "in"): "follow_in",
}


def template_for(
    step: Literal["neighbours", "relations", "follow"], direction: Direction
) -> TemplateName:
    """The template of one hop step in one direction: ``("follow", "in")`` -> ``follow_in``."""
    return _BY_STEP[(step, direction)]


def render(
    name: TemplateName,
    *,
    seeds: Iterable[str] = (),
    pids: Iterable[str] = (),
    ids: Iterable[str] = (),
    limit: int = 100,
) -> str:
    """The query text of template ``name`` for these (checked) ids.

    ``seeds`` are item ids, ``pids`` property ids (for ``follow_*``), ``ids`` items or
    properties (for ``labels``). Every id is checked against its pattern first and a list
    must not be empty; a bad id or an empty list is `BadInputError`.

        render("relations_in", seeds=["Q76"], limit=1000)
    """
    try:
        template = TEMPLATES[name]
    except KeyError:
        raise BadInputError(f"no SPARQL template named {name!r}") from None
    values: dict[str, str] = {"limit": str(check_limit(limit))}
    if name == "labels":
        values["ids"] = _values(check_entity_ids(ids), "entity ids")
    else:
        values["seeds"] = _values(check_qids(seeds), "seeds")
    if name.startswith("follow_"):
        values["pids"] = " ".join(f"wdt:{pid}" for pid in _nonempty(check_pids(pids), "pids"))
    return template.substitute(values)


def _nonempty(values: list[str], what: str) -> list[str]:
    if not values:
        raise BadInputError(f"no {what} given")
    return values


def _values(ids: list[str], what: str) -> str:
    return " ".join(f"wd:{i}" for i in _nonempty(ids, what))
