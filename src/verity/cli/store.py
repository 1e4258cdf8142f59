"""``verity index`` and ``verity kg``: build the stores that local sources read.

verity index build docs/ --name mydocs      # then: --source corpus:mydocs
verity index build --standin academic       # ToE's offline arXiv: corpus standin-academic
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
    path: Annotated[
        Path | None, typer.Argument(help="A JSONL file or a folder of .txt/.md files.")
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Name to use as --source corpus:NAME.")
    ] = None,
    standin: Annotated[
        str | None,
        typer.Option(
            "--standin",
            help="Instead of PATH and --name: build an offline stand-in for ToE's tools from "
            "the benchmark data (academic, factcheck or news).",
        ),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help="With --standin: the benchmark data folder (default: $VERITY_DATA_DIR, "
            "else ../shared/datasets).",
        ),
    ] = None,
) -> None:
    """Index your own documents with BM25 for use as --source corpus:NAME.

    With --standin, build one of the corpora that stand in for ToE's search tools offline.
    """
    from verity import render
    from verity.errors import BadInputError

    if standin is not None:
        if path is not None or name is not None:
            raise BadInputError(
                "give either PATH and --name or --standin, not both (a stand-in's corpus "
                "name is fixed: standin-KIND)"
            )
        from verity.bench.datasets import data_dir as find_data_dir
        from verity.bench.standins import build_standin, describe, standin_record

        info = build_standin(standin, find_data_dir(data_dir))
        render.corpus_info(out, err, info)
        record = standin_record(standin)
        for line in describe(record) if record else []:
            out.print(render.clean(line), highlight=False, markup=False, soft_wrap=True)
        return
    if data_dir is not None:
        raise BadInputError("--data-dir applies only with --standin")
    if path is None or name is None:
        raise BadInputError("give PATH and --name NAME, or --standin KIND")
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
