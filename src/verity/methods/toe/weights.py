"""Trained ToE weights on disk: one file per network, each with its manifest.

    save(net, folder, "evalnet", manifest={"hyperparameters": ..., "train_ids": [...]})
    net, manifest = load(EvalNet, folder, "evalnet")   # checksum verified
    exists(folder, "policy")

``FOLDER/NAME.pt`` holds the state dict; ``FOLDER/NAME.json`` its manifest: the part,
verity's version, the hyperparameters, the training data (dataset and example ids), the
figures of the run, and the file's SHA-256, which `load` checks before reading. Files
are read with ``weights_only`` (a weights file cannot run code) and written atomically.
The default folder is under the cache: ``<cache>/toe/weights/NAME``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

from verity.errors import ConfigError
from verity.paths import cache_dir

M = TypeVar("M", bound=nn.Module)
PARTS = ("evalnet", "policy", "aggnet")


def default_folder(name: str = "default") -> Path:
    """Where ``verity train toe`` writes unless told otherwise."""
    return cache_dir() / "toe" / "weights" / name


def exists(folder: Path, part: str) -> bool:
    """Whether the folder holds this part with its manifest."""
    return (folder / f"{part}.pt").is_file() and (folder / f"{part}.json").is_file()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _replace(target: Path, write: Any) -> None:
    handle, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    os.close(handle)
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def save(net: nn.Module, folder: Path, part: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """Write the state dict and its manifest; returns the manifest as written."""
    folder.mkdir(parents=True, exist_ok=True)
    weights = folder / f"{part}.pt"
    _replace(weights, lambda tmp: torch.save(net.state_dict(), tmp))
    full = {
        "part": part,
        "verity_version": version("verity"),
        **manifest,
        "sha256": _sha256(weights),
    }
    text = json.dumps(full, indent=2, sort_keys=True)
    _replace(folder / f"{part}.json", lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    return full


def read_manifest(folder: Path, part: str) -> dict[str, Any]:
    """The manifest of a part; `ConfigError` when missing or unreadable."""
    path = folder / f"{part}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the ToE {part} manifest {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is not a ToE weights manifest")
    return data


def load(cls: type[M], folder: Path, part: str) -> tuple[M, dict[str, Any]]:
    """A network of ``cls`` with the saved weights, in eval mode, and its manifest."""
    manifest = read_manifest(folder, part)
    weights = folder / f"{part}.pt"
    if not weights.is_file():
        raise ConfigError(f"ToE weights {weights} are missing")
    if manifest.get("sha256") != _sha256(weights):
        raise ConfigError(f"{weights} does not match the checksum in its manifest")
    net = cls()
    try:
        state = torch.load(weights, map_location="cpu", weights_only=True)
        net.load_state_dict(state)
    except (RuntimeError, ValueError, OSError) as exc:
        raise ConfigError(f"cannot load ToE weights {weights}: {exc}") from exc
    net.eval()
    return net, manifest
