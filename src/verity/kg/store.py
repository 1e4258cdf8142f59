"""Loading a graph file into a persisted pyoxigraph store, once, for kg-local.

The graph is an N-Triples or Turtle file (``.nt``, ``.ttl``, either optionally gzipped)
that uses Wikidata's own IRIs: ``wd:Q76`` (http://www.wikidata.org/entity/), direct
statements ``wdt:P26`` (http://www.wikidata.org/prop/direct/), ``rdfs:label``,
``skos:altLabel`` and ``schema:description`` in English. The loader adds the
``wd:P26 wikibase:directClaim wdt:P26`` links of Wikidata's RDF where the file lacks them.

A file is bulk-loaded into a store under ``<cache>/kg/NAME`` (``verity kg load FILE
--name NAME``, or `load_store`), together with the name index of `verity.kg.names` and a
``manifest.json`` recording the source file's path, size and modification time and the
pyoxigraph version. The build happens in a temporary folder renamed into place, under a
lock, so other processes see either no store or a complete one; later processes open it
read-only in milliseconds. A store whose manifest no longer matches (the file changed,
another file was loaded under the name, pyoxigraph was upgraded) is rebuilt by
`ensure_store`. Replacing a store while another process is reading it is not supported.

The default graph is the store ``default`` built from `kg_file`: ``$VERITY_KG_FILE``, else
``../shared/kg/wikidata_subset.nt.gz`` relative to the current directory.

    info = load_store(Path("graph.nt.gz"), "mine")   # StoreInfo(origin='built', ...)
    store_info("mine").stale                         # None while graph.nt.gz is unchanged
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, cast

from verity.errors import BadInputError, ConfigError
from verity.kg.base import is_pid
from verity.kg.names import NAMES_FORMAT, build_names
from verity.kg.templates import DIRECT, DIRECT_CLAIM, ENTITY
from verity.paths import cache_path

if TYPE_CHECKING:
    import pyoxigraph

KG_FILE_ENV = "VERITY_KG_FILE"
DEFAULT_KG_FILE = Path("..", "shared", "kg", "wikidata_subset.nt.gz")
DEFAULT_STORE = "default"
# Bump when what a store folder holds changes, so that old stores are rebuilt.
STORE_FORMAT = 1
_MANIFEST = "manifest.json"
#: The files of a store folder: the pyoxigraph database and the name index.
STORE_DB, NAMES_DB = "store", "names.sqlite"
_MANIFEST_KEYS = frozenset(
    {
        "format", "names_format", "name", "source", "rdf_format", "pyoxigraph", "triples",
        "properties", "entities", "aliases", "built_at", "load_seconds", "index_seconds",
    }
)  # fmt: skip
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_FORMATS = {".nt": "N-Triples", ".ttl": "Turtle"}


def kg_file(explicit: Path | None = None) -> Path:
    """The default graph file: ``explicit``, else ``$VERITY_KG_FILE``, else the shared subset.

    A missing file is a `ConfigError` naming the full path and where it came from.

        kg_file()    # $VERITY_KG_FILE, else ../shared/kg/wikidata_subset.nt.gz
    """
    if explicit is not None:
        chosen, origin = Path(explicit), "the argument"
    elif os.environ.get(KG_FILE_ENV):
        chosen, origin = Path(os.environ[KG_FILE_ENV]), f"${KG_FILE_ENV}"
    else:
        chosen, origin = DEFAULT_KG_FILE, "the default, relative to the current directory"
    path = (Path.cwd() / chosen.expanduser()).resolve()
    if not path.is_file():
        raise ConfigError(
            f"knowledge graph file not found: {path} (from {origin}); point the environment "
            f"variable {KG_FILE_ENV} at an N-Triples or Turtle file in Wikidata's vocabulary"
        )
    return path


def check_store_name(name: str) -> str:
    """``name`` when it can name a store folder; `BadInputError` otherwise."""
    if not _NAME.fullmatch(name):
        raise BadInputError(
            f"knowledge graph name {name!r} must be 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def store_folder(name: str, root: Path | None = None) -> Path:
    """Where the store ``name`` lives: ``root/NAME``, else ``<cache>/kg/NAME``."""
    check_store_name(name)
    if root is None:
        return cache_path("kg", name)
    root.mkdir(parents=True, exist_ok=True)
    return root / name


def pyoxigraph_version() -> str:
    """The installed pyoxigraph version, part of every store's manifest."""
    try:
        return version("pyoxigraph")
    except PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True, slots=True)
class StoreInfo:
    """What a store holds, where it came from, and whether it still matches its source.

    ``origin`` is ``"built"`` when this call loaded the file, ``"loaded"`` when an
    existing store was reused, None when only the manifest was read. ``stale`` says why
    the store will be rebuilt on its next open, None when it is current.

        info = store_info("default")
        info.triples, info.source, info.stale
    """

    name: str
    path: Path
    source: Path
    source_size: int
    source_mtime_ns: int
    rdf_format: str
    pyoxigraph: str
    triples: int
    properties: int
    entities: int
    aliases: int
    built_at: str
    load_seconds: float
    index_seconds: float
    origin: Literal["built", "loaded"] | None = None
    stale: str | None = None

    def lines(self) -> list[str]:
        """A short human description, one fact a line."""
        verb = {"built": "loaded", "loaded": "already up to date", None: "stored"}[self.origin]
        status = f"stale: {self.stale}" if self.stale else "current"
        return [
            f"knowledge graph {self.name!r} {verb}: {self.triples:,} triples, "
            f"{self.properties:,} direct properties, {self.entities:,} labelled items, "
            f"{self.aliases:,} aliases",
            f"source: {self.source} ({self.rdf_format}, {self.source_size:,} bytes), {status}",
            f"built {self.built_at} with pyoxigraph {self.pyoxigraph} in "
            f"{self.load_seconds:.1f} s (+ {self.index_seconds:.1f} s name index)",
            f"store: {self.path}",
            f"use: {'kg-local' if self.name == DEFAULT_STORE else f'kg-local:{self.name}'}",
        ]


def _rdf_format(file: Path) -> str:
    suffixes = [s.lower() for s in file.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    label = _FORMATS.get(suffixes[-1] if suffixes else "")
    if label is None:
        raise BadInputError(
            f"{file}: unknown RDF format; expected .nt (N-Triples) or .ttl (Turtle), "
            "optionally gzipped (.nt.gz, .ttl.gz)"
        )
    return label


def fingerprint(file: Path) -> dict[str, Any]:
    """What identifies a source file's content cheaply: its full path, size and mtime."""
    stat = file.stat()
    return {"path": str(file.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of the store in ``folder``; None when there is none or it is unreadable.

    A manifest without every field this version writes counts as none: its store is
    rebuilt rather than misread.
    """
    try:
        manifest = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or not manifest.keys() >= _MANIFEST_KEYS:
        return None
    source = manifest["source"]
    if not isinstance(source, dict) or not {"path", "size", "mtime_ns"} <= source.keys():
        return None
    return manifest


def _version_mismatch(manifest: dict[str, Any]) -> str | None:
    if manifest.get("format") != STORE_FORMAT or manifest.get("names_format") != NAMES_FORMAT:
        return (
            f"store format {manifest.get('format')!r}/{manifest.get('names_format')!r}, "
            f"this verity writes {STORE_FORMAT}/{NAMES_FORMAT}"
        )
    if manifest.get("pyoxigraph") != pyoxigraph_version():
        return (
            f"built with pyoxigraph {manifest.get('pyoxigraph')}, "
            f"{pyoxigraph_version()} is installed"
        )
    return None


def _stale(manifest: dict[str, Any] | None, file: Path | None) -> str | None:
    """Why the store of ``manifest`` does not match ``file``; None when it does."""
    if manifest is None:
        return "not built yet"
    reason = _version_mismatch(manifest)
    if reason is not None or file is None:
        return reason
    recorded, current = manifest.get("source", {}), fingerprint(file)
    if recorded.get("path") != current["path"]:
        return f"built from {recorded.get('path')}, not {current['path']}"
    if recorded != current:
        return f"{file} changed since it was loaded (size or modification time)"
    return None


def _info(
    manifest: dict[str, Any],
    folder: Path,
    origin: Literal["built", "loaded"] | None,
    stale: str | None = None,
) -> StoreInfo:
    source = manifest["source"]
    return StoreInfo(
        name=manifest["name"],
        path=folder,
        source=Path(source["path"]),
        source_size=int(source["size"]),
        source_mtime_ns=int(source["mtime_ns"]),
        rdf_format=manifest["rdf_format"],
        pyoxigraph=manifest["pyoxigraph"],
        triples=int(manifest["triples"]),
        properties=int(manifest["properties"]),
        entities=int(manifest["entities"]),
        aliases=int(manifest["aliases"]),
        built_at=manifest["built_at"],
        load_seconds=float(manifest["load_seconds"]),
        index_seconds=float(manifest["index_seconds"]),
        origin=origin,
        stale=stale,
    )


@contextlib.contextmanager
def _build_lock(folder: Path) -> Iterator[None]:
    """Serialise builds of one store across processes, so the second reuses the first's."""
    from filelock import FileLock

    # Blocking on purpose: a second process waits for the build instead of repeating it.
    with FileLock(str(folder.parent / f".{folder.name}.lock")):
        yield


def _open_rdf(file: Path) -> IO[bytes]:
    if file.suffix.lower() == ".gz":
        # A GzipFile reads like any binary file; typeshed just does not call it IO[bytes].
        return cast(IO[bytes], gzip.GzipFile(file, "rb"))
    return file.open("rb")


def _link_properties(store: pyoxigraph.Store) -> list[str]:
    """Add ``wd:P wikibase:directClaim wdt:P`` for every direct property; their ids.

    Wikidata's RDF links each property to its direct-claim predicate, and the templates
    find property labels through that link; graph files often leave it out.
    """
    import pyoxigraph

    found = store.query("SELECT DISTINCT ?p WHERE { ?s ?p ?o }")
    if not isinstance(found, pyoxigraph.QuerySolutions):
        raise TypeError("expected SELECT results")
    iris = [str(getattr(solution["p"], "value", "")) for solution in found]
    pids = sorted(
        i[len(DIRECT) :] for i in iris if i.startswith(DIRECT) and is_pid(i[len(DIRECT) :])
    )
    link = pyoxigraph.NamedNode(DIRECT_CLAIM)
    store.extend(
        pyoxigraph.Quad(
            pyoxigraph.NamedNode(ENTITY + pid), link, pyoxigraph.NamedNode(DIRECT + pid)
        )
        for pid in pids
    )
    return pids


def _build(file: Path, folder: Path, name: str) -> dict[str, Any]:
    import pyoxigraph

    from verity.paths import publish_folder

    label = _rdf_format(file)
    rdf_format = (
        pyoxigraph.RdfFormat.TURTLE if label == "Turtle" else pyoxigraph.RdfFormat.N_TRIPLES
    )
    # Taken before reading: a file that changes during the load is rebuilt next time.
    source = fingerprint(file)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder.parent))
    try:
        store = pyoxigraph.Store(str(tmp / STORE_DB))
        start = time.perf_counter()
        try:
            with _open_rdf(file) as stream:
                store.bulk_load(stream, rdf_format)
        except SyntaxError as exc:
            raise BadInputError(f"{file} is not valid {label}: {exc}") from exc
        except OSError as exc:
            raise BadInputError(f"cannot read {file}: {exc}") from exc
        load_seconds = time.perf_counter() - start
        triples = len(store)
        start = time.perf_counter()
        properties = _link_properties(store)
        entities, aliases = build_names(store, tmp / NAMES_DB, properties)
        manifest = {
            "format": STORE_FORMAT,
            "names_format": NAMES_FORMAT,
            "name": name,
            "source": source,
            "rdf_format": label,
            "pyoxigraph": pyoxigraph_version(),
            "triples": triples,
            "properties": len(properties),
            "entities": entities,
            "aliases": aliases,
            "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "load_seconds": round(load_seconds, 3),
            "index_seconds": round(time.perf_counter() - start, 3),
        }
        (tmp / _MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        del store  # closes the database before its folder is renamed
        publish_folder(tmp, folder, replace=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return manifest


def ensure_store(
    name: str, file: Path | None, root: Path | None, *, force: bool = False
) -> StoreInfo:
    """The store ``name``, built from ``file`` (else its recorded source) when not current.

    `ConfigError` when there is no such store and no file, or when the store must be
    rebuilt and its source file is gone.
    """
    folder = store_folder(name, root)
    with _build_lock(folder):
        manifest = read_manifest(folder)
        if file is None:
            if manifest is None:
                raise ConfigError(
                    f"no knowledge graph named {name!r} in {folder.parent}; "
                    f"load one with: verity kg load FILE --name {name}"
                )
            recorded = Path(manifest["source"]["path"])
            if not recorded.is_file():
                reason = _version_mismatch(manifest)
                if reason is not None:
                    raise ConfigError(
                        f"knowledge graph {name!r} must be rebuilt ({reason}) but its source "
                        f"{recorded} is gone; load it again with: verity kg load FILE --name {name}"
                    )
                return _info(manifest, folder, "loaded")
            file = recorded
        reason = "a rebuild was asked for" if force else _stale(manifest, file)
        if reason is None and manifest is not None:
            return _info(manifest, folder, "loaded")
        return _info(_build(file, folder, name), folder, "built")


def load_store(
    file: Path, name: str, *, root: Path | None = None, force: bool = False
) -> StoreInfo:
    """Bulk-load ``file`` into the store ``name`` unless it already holds exactly that file.

    This is ``verity kg load FILE --name NAME``. `BadInputError` for a missing or
    malformed file or a bad name.

        info = load_store(Path("graph.nt.gz"), "mine")
        info.origin, info.triples     # ('built', 977044)
    """
    path = Path(file).expanduser().resolve()
    if not path.is_file():
        raise BadInputError(f"knowledge graph file not found: {path}")
    _rdf_format(path)
    return ensure_store(check_store_name(name), path, root, force=force)


def store_info(name: str, *, root: Path | None = None) -> StoreInfo:
    """What the store ``name`` holds, without opening or rebuilding it.

    `ConfigError` when there is no such store. ``stale`` says whether its next open
    will rebuild it.
    """
    folder = store_folder(name, root)
    manifest = read_manifest(folder)
    if manifest is None:
        known = ", ".join(i.name for i in list_stores(root)) or "none"
        raise ConfigError(
            f"no knowledge graph named {name!r} in {folder.parent} (loaded: {known}); "
            f"load one with: verity kg load FILE --name {name}"
        )
    source = Path(manifest["source"]["path"])
    stale = _stale(manifest, source) if source.is_file() else _version_mismatch(manifest)
    return _info(manifest, folder, None, stale)


def list_stores(root: Path | None = None) -> list[StoreInfo]:
    """Every store with a readable manifest, by name."""
    parent = root if root is not None else cache_path("kg", DEFAULT_STORE).parent
    if not parent.is_dir():
        return []
    found = []
    for folder in sorted(parent.iterdir()):
        manifest = read_manifest(folder) if not folder.name.startswith(".") else None
        if manifest is not None:
            found.append(_info(manifest, folder, None))
    return found
