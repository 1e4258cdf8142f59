"""Where verity keeps what it builds: caches, indexes, extracted models.

Everything lives under one cache directory, ``$VERITY_CACHE_DIR`` or ``~/.cache/verity``,
so that deleting it resets verity to a fresh install.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The root cache directory, created on first use."""
    raw = os.environ.get("VERITY_CACHE_DIR")
    root = Path(raw).expanduser() if raw else Path.home() / ".cache" / "verity"
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_path(*parts: str) -> Path:
    """A path under the cache directory whose parent folder exists."""
    path = cache_dir().joinpath(*parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
