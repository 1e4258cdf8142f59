"""How a batch or a benchmark runs its items: threads in this process, or Ray workers.

    work = Checks(verifier)                 # a batch's work (verity.batch)
    with engine_for("ray", address=None) as engine:     # or "thread"
        engine.run(work, items, on_result, concurrency=4)

An engine is handed three things: the *work* (what to do with an item, as a `Work`: it
builds, once per worker, the function that checks one item), the *items*, and a callback
that the engine calls in the driver process, once per item, in the order results arrive.
The callback is where results are written, so the store or the output file has one
writer whatever the engine: a Ray worker never touches it.

`ThreadEngine` (`verity.engines.thread`) builds the work once and runs the items in a pool
of threads, as verity always did. `RayEngine` (`verity.engines.ray`) sends the work to
Ray actors on an existing cluster (or a local one), each building it once, and keeps at
most ``concurrency`` items in flight; an item whose worker died is run again, and after
too many deaths recorded as that item's error (`WorkerLostError`). Ray is an optional
extra: without it, ``--engine ray`` is a `ConfigError` that says how to install it.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, Protocol, TypeVar

from verity.errors import BadInputError, VerityError

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")
ItemT_contra = TypeVar("ItemT_contra", contravariant=True)
ResultT_co = TypeVar("ResultT_co", covariant=True)

#: The engines ``--engine`` accepts.
ENGINES = ("thread", "ray")


class WorkerLostError(VerityError):
    """The worker running an item died (more often than an item is run again)."""


class Work(Protocol[ItemT_contra, ResultT_co]):
    """What an engine does with each item; to run on Ray it must be picklable.

    ``build`` is called once per worker (once in all for threads) and returns the function
    that checks one item; models load there, not in the constructor. That function records
    an item's own failure in its result; ``failed`` gives the result of an item that could
    not be run at all (its worker died, the function raised).
    """

    def build(self) -> Callable[[ItemT_contra], ResultT_co]:
        """The function that checks one item, ready to be called from several threads."""
        ...

    def failed(self, item: ItemT_contra, error: Exception) -> ResultT_co:
        """The result that records ``error`` as this item's outcome."""
        ...


class Engine(Protocol):
    """Runs a `Work` over items; used as a context manager around one or more runs."""

    #: Whether the items run in this process (its peak memory then means something).
    local: bool

    def __enter__(self) -> Engine: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def run(
        self,
        work: Work[ItemT, ResultT],
        items: Iterable[ItemT],
        on_result: Callable[[ItemT, ResultT], None],
        *,
        concurrency: int = 1,
    ) -> None:
        """Check every item, calling ``on_result`` in this process once per item."""
        ...


def engine_for(name: str, *, address: str | None = None) -> Engine:
    """The engine ``--engine NAME`` asks for; nothing starts until it is entered.

        engine_for("thread")
        engine_for("ray", address="ray://head:10001")   # ConfigError without Ray

    ``address`` is a Ray cluster's address (``auto`` for the one ``ray start`` began on
    this machine); None starts a local cluster, unless ``RAY_ADDRESS`` names one.
    """
    if name == "thread":
        if address is not None:
            raise BadInputError("--address is a Ray cluster's address: use it with --engine ray")
        from verity.engines.thread import ThreadEngine

        return ThreadEngine()
    if name == "ray":
        from verity.engines.ray import RayEngine

        return RayEngine(address=address)
    raise BadInputError(f"--engine must be {' or '.join(ENGINES)}, not {name!r}")


def portable_error(error: Exception) -> Exception:
    """``error`` as an exception that survives being sent to another process.

    An exception is pickled as its class and its arguments; one whose constructor takes
    other arguments than its message (a plug-in's error, say) cannot be rebuilt
    on the other side, and would fail there, after the worker that knew it is gone. Such an
    error becomes the nearest class above it that can be rebuilt from its message, so
    that the message and the kind of error (hence the exit code) arrive.
    """
    if _survives(error):
        return error
    message = str(error) or type(error).__name__
    for cls in type(error).__mro__:
        if not (isinstance(cls, type) and issubclass(cls, Exception)):
            continue
        try:
            candidate = cls(message)
        except Exception:  # noqa: BLE001 - a constructor that wants more: try the parent
            continue
        if _survives(candidate):
            return candidate
    return Exception(message)  # pragma: no cover - Exception(message) always survives


def _survives(error: Exception) -> bool:
    try:
        back: Any = pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - any failure means it cannot travel
        return False
    return type(back) is type(error) and str(back) == str(error)


__all__ = [
    "ENGINES",
    "Engine",
    "Work",
    "WorkerLostError",
    "engine_for",
    "portable_error",
]
