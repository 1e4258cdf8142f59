"""``python -m verity.cli``: the ``verity`` command, for when the console script is not on PATH."""

from verity.cli import main

main()
