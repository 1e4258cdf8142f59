"""Where verity keeps what it builds: caches, indexes, extracted models.

Everything lives under one cache directory, ``$VERITY_CACHE_DIR`` or ``~/.cache/verity``,
so that deleting it resets verity to a fresh install. What is built there is built aside
and moved into place whole (`publish_folder`), by indexes and the graph store alike.
"""

from __future__ import annotations

import os
import shutil
import tempfile
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


def publish_folder(tmp: Path, target: Path, *, replace: bool) -> bool:
    """Move a finished folder into place in one rename; True if ``tmp`` became ``target``.

    Without ``replace`` an existing ``target`` wins (another process built the same thing
    first) and ``tmp`` is deleted. With ``replace`` the old folder is renamed aside, the new
    one renamed in, and the old one deleted, so readers never see a half-written folder.
    """
    if target.exists() and not replace:
        shutil.rmtree(tmp, ignore_errors=True)
        return False
    old: Path | None = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}-old-", dir=target.parent))
        os.replace(target, old / target.name)
    try:
        os.rename(tmp, target)
    except OSError:
        if old is not None and not target.exists():
            os.replace(old / target.name, target)  # put the previous version back
            raise
        if not target.exists():
            raise
        # Another process published the same folder in between; keep theirs.
        shutil.rmtree(tmp, ignore_errors=True)
        return False
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return True
