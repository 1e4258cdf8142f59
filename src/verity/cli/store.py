"""``verity index`` and ``verity kg``: build the stores that local sources read.

verity index build docs/ --name mydocs      # then: --source corpus:mydocs
verity kg load graph.nt.gz --name mygraph   # then: kg-local:mygraph
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from verity.cli.output import err, out

index_app = typer.Typer(no_args_is_help=True, help="Build indexes of your own documents.")
kg_app = typer.Typer(
    no_args_is_help=True, help="Load and inspect offline knowledge graphs (Wikidata vocabulary)."
)


@index_app.command("build")
def index_build(
    path: Annotated[Path, typer.Argument(help="A JSONL file or a folder of .txt/.md files.")],
    name: Annotated[str, typer.Option("--name", help="Name to use as --source corpus:NAME.")],
) -> None:
    """Index your own documents with BM25 for use as --source corpus:NAME."""
    from verity import render
    from verity.sources.corpus import build_corpus

    info = build_corpus(path, name)
    render.corpus_info(out, err, info)


@kg_app.command("load")
def kg_load(
    file: Annotated[
        Path, typer.Argument(help="N-Triples (.nt) or Turtle (.ttl) file, optionally .gz.")
    ],
    name: Annotated[str, typer.Option("--name", help="Name to use as kg-local:NAME.")],
    force: Annotated[
        bool, typer.Option("--force", help="Load again even if the store is up to date.")
    ] = False,
) -> None:
    """Bulk-load a graph in Wikidata's RDF vocabulary into a store for kg-local:NAME."""
    from verity import render
    from verity.kg.store import load_store

    for line in load_store(file, name, force=force).lines():
        out.print(render.clean(line), highlight=False, markup=False, soft_wrap=True)


@kg_app.command("info")
def kg_info(
    name: Annotated[
        str, typer.Argument(help="A name given to `verity kg load` (kg-local: default).")
    ],
) -> None:
    """Show what a loaded knowledge graph holds and whether its source file changed."""
    from verity import render
    from verity.kg.store import store_info

    for line in store_info(name).lines():
        out.print(render.clean(line), highlight=False, markup=False, soft_wrap=True)
