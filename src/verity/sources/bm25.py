"""The BM25 index shared by the offline wiki and user corpora: build, save, load, rank.

index = BM25Index.build(["first passage", "second passage"])
index.save(folder)
ranked = BM25Index.load(folder).ranked("passage", k=5)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verity.errors import BadInputError, ConfigError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# PyStemmer objects are not safe to share between threads; tokenization takes turns.
_stem_lock = threading.Lock()


def _stemmer() -> Any:
    """The Snowball English stemmer when PyStemmer is installed, else None."""
    try:
        import Stemmer
    except ImportError:
        return None
    return Stemmer.Stemmer("english")


def stemmer_name() -> str | None:
    """``"english"`` when queries and indexes are stemmed, None when PyStemmer is missing."""
    return "english" if _stemmer() is not None else None


class BM25Index:
    """A bm25s index over a list of texts, with English stopwords and stemming.

    Scores are bm25s's defaults (the Lucene variant, k1=1.5, b=0.75).

        index = BM25Index.build(["the tower is in Paris", "bananas are yellow"])
        list(index.ranked("Paris tower"))   # [(0, 0.98...)]
        index.save(folder); BM25Index.load(folder)
    """

    def __init__(self, retriever: Any, stemmer: str | None) -> None:
        self._retriever = retriever
        self.stemmer = stemmer
        self._stem = _stemmer() if stemmer else None

    @classmethod
    def build(cls, texts: Sequence[str]) -> BM25Index:
        """Tokenize and index ``texts``; document ``i`` is ``texts[i]``."""
        import bm25s

        if not texts:
            raise BadInputError("cannot index an empty list of texts")
        stem = _stemmer()
        with _stem_lock:
            tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=stem, show_progress=False)
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        return cls(retriever, "english" if stem is not None else None)

    def save(self, folder: Path) -> None:
        """Write the index files into ``folder`` (created if needed)."""
        folder.mkdir(parents=True, exist_ok=True)
        self._retriever.save(str(folder), show_progress=False)
        meta = {"stemmer": self.stemmer, "documents": len(self)}
        (folder / "verity-bm25.json").write_text(json.dumps(meta), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path, *, mmap: bool = True) -> BM25Index:
        """Read an index written by `save`; with ``mmap`` the arrays stay on disk."""
        import bm25s

        meta = json.loads((folder / "verity-bm25.json").read_text(encoding="utf-8"))
        stemmer = meta.get("stemmer")
        if stemmer and _stemmer() is None:
            raise ConfigError(
                f"the index at {folder} was built with PyStemmer, which is not installed now: "
                "install PyStemmer or rebuild the index"
            )
        retriever = bm25s.BM25.load(str(folder), mmap=mmap, show_progress=False)
        return cls(retriever, stemmer)

    def __len__(self) -> int:
        return int(self._retriever.scores["num_docs"])

    def query_tokens(self, query: str) -> list[str]:
        """The query's tokens that the index knows, after stopwords and stemming."""
        import bm25s

        with _stem_lock:
            tokens = bm25s.tokenize(
                [query], stopwords="en", stemmer=self._stem, show_progress=False, return_ids=False
            )[0]
        vocab = self._retriever.vocab_dict
        return [t for t in tokens if t and t in vocab]

    def scores(self, query: str) -> npt.NDArray[np.float32]:
        """The BM25 score of every document for ``query`` (zeros when no term is known)."""
        # numpy here, not at the top: `verity sources` lists corpora without loading it.
        import numpy as np

        tokens = self.query_tokens(query)
        if not tokens:
            return np.zeros(len(self), dtype=np.float32)
        return np.asarray(self._retriever.get_scores(tokens), dtype=np.float32)

    def ranked(self, query: str) -> Iterator[tuple[int, float]]:
        """``(document, score)`` for every document scoring above zero, best first.

        Ties keep document order, so results are deterministic.
        """
        scores = self.scores(query)
        import numpy as np

        hits = np.flatnonzero(scores > 0)
        order = hits[np.argsort(-scores[hits], kind="stable")]
        for i in order:
            yield int(i), float(scores[i])


# -- building a corpus ---------------------------------------------------------------------


def bm25s_version() -> str:
    """The installed bm25s version, part of every index's cache key."""
    try:
        return version("bm25s")
    except PackageNotFoundError:
        return "unknown"
