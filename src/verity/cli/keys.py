"""``verity keys``: the API keys of ``verity serve``.

verity keys new alice --file keys.txt       # prints alice's key once; keys.txt keeps its hash
verity serve --host 0.0.0.0 --api-key-file keys.txt --allowed-host verity.example.org
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from verity.cli.output import err, out

keys_app = typer.Typer(no_args_is_help=True, help="Make API keys for verity serve.")


@keys_app.command("new")
def keys_new(
    name: Annotated[
        str, typer.Argument(help="Who the key is for: letters, digits, '.', '_', '-', '@'.")
    ],
    file: Annotated[
        Path,
        typer.Option("--file", help="The key file (created owner-only when missing)."),
    ],
) -> None:
    """Make a key, append its hash to --file, and print the key (only this once)."""
    from verity.service.keys import add_key

    key = add_key(file, name)
    # The key alone on stdout, so that it can be piped; what to do with it on stderr.
    out.print(key, markup=False, highlight=False, soft_wrap=True)
    err.print(
        f"the key of {name} is above; {file} keeps only its hash, so it cannot be shown "
        "again: hand it over now",
        markup=False,
        highlight=False,
    )
