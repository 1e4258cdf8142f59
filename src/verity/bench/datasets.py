"""Benchmark datasets by name, read from the shared data folder with the papers' label maps.

    from verity.bench.datasets import dataset_names, load_dataset

    dataset_names()                       # ['hover', 'feverous-s', 'fever', ...]
    split = load_dataset("hover", hops=2)  # 1,126 claims
    split.description, split.checksum
    load_dataset("advfact:results/adv")   # the AdvFact set written by `verity adv build`
    load_dataset("toe-fig5")              # shipped with verity: needs no data folder

The folder is, in this order: the ``data_dir`` argument, the environment variable
``VERITY_DATA_DIR``, or ``../shared/datasets`` relative to the current directory. Each
dataset's files, split, label map and protocol are described in ``docs/datasets.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from verity.bench.base import DatasetSplit
from verity.bench.loaders.averitec import load_averitec, load_averitec_binary
from verity.bench.loaders.check_covid import load_check_covid
from verity.bench.loaders.checkthat import (
    load_ct24_checkworthy,
    load_ct24_checkworthy_dev,
    load_ct24_checkworthy_train,
)

# The data folder's rule lives with the loaders (Fig. 5's drawing needs it too); it is
# named here as well, where callers have always found it.
from verity.bench.loaders.common import DEFAULT_DATA_DIR, data_dir
from verity.bench.loaders.liar import (
    load_liar,
    load_liar_new,
    load_liar_new_3way,
    load_liar_plus,
    load_liar_train,
)
from verity.bench.loaders.news import load_gossipcop, load_politifact, load_politifact_pp
from verity.bench.loaders.pairs import load_climate_fever_evidence
from verity.bench.loaders.summeval import load_summeval
from verity.bench.loaders.wikipedia import (
    load_climate_fever,
    load_fever,
    load_fever_3way,
    load_fever_symmetric,
    load_feverous_s,
    load_hover,
)
from verity.errors import BadInputError, DatasetError, UnknownNameError

Loader = Callable[[Path], DatasetSplit]

__all__ = ["ADVFACT", "data_dir", "dataset_names", "load_dataset", "packaged"]

# The one registry of dataset names, in the order the documentation lists them.
_LOADERS: dict[str, Loader] = {
    "hover": load_hover,
    "feverous-s": load_feverous_s,
    "fever": load_fever,
    "fever-3way": load_fever_3way,
    "fever-symmetric": load_fever_symmetric,
    "liar": load_liar,
    "liar-train": load_liar_train,
    "liar-plus": load_liar_plus,
    "liar-new": load_liar_new,
    "liar-new-3way": load_liar_new_3way,
    "politifact": load_politifact,
    "politifact-pp": load_politifact_pp,
    "gossipcop": load_gossipcop,
    "check-covid": load_check_covid,
    "averitec": load_averitec,
    "averitec-binary": load_averitec_binary,
    "climate-fever": load_climate_fever,
    # Pairs of one claim and one sentence, the sentence's own label (a sentence judge's set).
    "climate-fever-evidence": load_climate_fever_evidence,
    "summeval": load_summeval,
    # Sentences judged check-worthy or not (CheckThat! 2024 Task 1, English): not a verdict
    # on truth; the lab's measure is the F1 of the check-worthy class (`DatasetSplit.positive`).
    "ct24-checkworthy": load_ct24_checkworthy,
    "ct24-checkworthy-dev": load_ct24_checkworthy_dev,
    "ct24-checkworthy-train": load_ct24_checkworthy_train,
}
# Shipped inside the package: loaded without the data folder.
_PACKAGED = ("toe-fig5",)
# Built by `verity adv build`; the one name that takes an argument, ``advfact:FOLDER``.
ADVFACT = "advfact"


def dataset_names() -> list[str]:
    """Every dataset name `load_dataset` knows, in documentation order."""
    return [*_LOADERS, *_PACKAGED, ADVFACT]


def packaged(name: str) -> bool:
    """Whether a dataset comes with verity (or from a folder it names), not the data folder."""
    base = name.partition(":")[0]
    return base in _PACKAGED or base == ADVFACT


def _load_advfact(root: Path, folder: Path | None) -> DatasetSplit:
    # Imported when asked for: no other dataset needs the AdvFact module.
    try:
        from verity.bench.loaders.advfact import load_advfact
    except ImportError as exc:
        raise DatasetError(f"the AdvFact loader is not available in this install ({exc})") from exc
    return load_advfact(root, folder)


def load_dataset(
    name: str, *, data_dir: Path | None = None, hops: int | None = None
) -> DatasetSplit:
    """Load a dataset by name: its examples, label space, label map and checksum.

    ``hops`` (2, 3 or 4) keeps only HoVer claims of that many hops; other datasets take
    no ``hops``. ``advfact`` is the AdvFact set shipped with verity and ``advfact:FOLDER``
    one written by ``verity adv build``; no other name takes a ``:`` argument. Nothing is
    fetched over the network.

        split = load_dataset("liar")
        split.label_map["half-true"]  # 'CONFLICTING'
    """
    base, colon, argument = name.partition(":")
    if base not in dataset_names():
        raise UnknownNameError("dataset", name, dataset_names())
    if colon and base != ADVFACT:
        raise BadInputError(f"only advfact takes a ':' argument, not {base} (got {name!r})")
    if hops is not None and base != "hover":
        raise BadInputError(f"hops applies only to hover, not to {name}")
    if base == ADVFACT:
        if colon and not argument.strip():
            raise BadInputError("advfact: give the folder after the colon, as advfact:DIR")
        folder = Path(argument.strip()).expanduser() if colon else None
        try:
            root = _data_dir(data_dir)
        except DatasetError:
            # AdvFact's files are its own (shipped or built): no data folder is needed.
            root = Path(data_dir) if data_dir is not None else DEFAULT_DATA_DIR
        return _load_advfact(root, folder)
    if base in _PACKAGED:
        from verity.bench.fig5 import load_toe_fig5

        return load_toe_fig5()
    root = _data_dir(data_dir)
    if hops is None:
        return _LOADERS[base](root)
    return load_hover(root, hops=hops)


# `load_dataset`'s keyword shadows the function inside it.
_data_dir = data_dir
