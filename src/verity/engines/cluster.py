"""Reaching a Ray cluster, and a small pool of actors on it, shared by the Ray engine and executor.

    ray = require_ray()                     # ConfigError naming the extra without it
    with Cluster(address=None) as cluster:  # a local cluster, stopped on exit
        pool = ActorPool(ItemWorker, (work,), cluster=cluster, concurrency=8, retries=2)
        actor = pool.take()                 # the actor with the fewest calls in flight
        ...
        pool.give_back(actor)
        pool.close()

A cluster that was already connected (by the caller, or a test session) is used as it is
and left running; a local cluster this module started is stopped when its `Cluster`
closes. Each actor reserves one CPU of the cluster and takes several calls at once in
threads: a check mostly waits for a model or a source, and the method and its models are
built once per actor, then shared by its threads, as in the thread engine.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import socket
import threading
from collections.abc import Sequence
from types import ModuleType, TracebackType
from typing import Any

from verity.errors import ConfigError

INSTALL_HINT = "pip install 'verity[ray]'"
#: Times a call is run again after its worker died, unless told otherwise.
DEFAULT_RETRIES = 2
#: Seconds a cluster's address has to accept a connection.
PROBE_SECONDS = 5.0


def require_ray() -> ModuleType:
    """The ``ray`` module; `ConfigError` saying how to install it when it is missing."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            f"--engine ray needs Ray, an optional extra: {INSTALL_HINT} ({exc})"
        ) from exc
    return ray


class Cluster:
    """A connection to a Ray cluster: ``address``, else ``$RAY_ADDRESS``, else a new local one.

    ``num_cpus`` sizes a local cluster (default: every CPU of this machine); it cannot be
    given for an existing cluster, which has its own.
    """

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None) -> None:
        self.ray = require_ray()
        self.address = address
        self.num_cpus = num_cpus
        self._started = False

    def __enter__(self) -> Cluster:
        self.connect()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def connect(self) -> None:
        """Connect, or start a local cluster; nothing to do when already connected."""
        if self.ray.is_initialized():
            return
        local = self.address is None and not os.environ.get("RAY_ADDRESS")
        options: dict[str, Any] = {
            "include_dashboard": False,
            "logging_level": logging.WARNING,
            # Workers' own output stays in the cluster's logs: results and errors come
            # back as values, and the terminal keeps the progress bar.
            "log_to_driver": False,
        }
        if local:
            # A cluster verity starts for itself reports nothing to anyone; a user who
            # wants Ray's usage statistics sets the variable to 1.
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            if self.num_cpus is not None:
                options["num_cpus"] = self.num_cpus
        elif self.num_cpus is not None:
            raise ConfigError("num_cpus sizes a local Ray cluster; an existing one has its own")
        else:
            probe(self.address or os.environ.get("RAY_ADDRESS", ""))
        try:
            self.ray.init(address=self.address, **options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = self.address or os.environ.get("RAY_ADDRESS") or "a local cluster"
            raise ConfigError(f"cannot reach Ray at {where}: {exc}") from exc
        self._started = True

    def cpus(self) -> int:
        """The CPUs of the whole cluster (at least 1)."""
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def close(self) -> None:
        """Disconnect, stopping the local cluster if this connection started it."""
        if self._started:
            self._started = False
            self.ray.shutdown()


_HOST_PORT = re.compile(r"^(?P<host>\[[0-9a-fA-F:]+\]|[^:/\s]+):(?P<port>\d{1,5})$")


def probe(address: str, timeout: float = PROBE_SECONDS) -> None:
    """`ConfigError` when a ``HOST:PORT`` address does not answer at all.

    Ray retries an unreachable address for minutes before it gives up; a plain TCP
    connection says at once that nothing listens there. Other forms of address
    (``auto``, ``ray://...``) are left to Ray.
    """
    found = _HOST_PORT.match(address.strip())
    if found is None:
        return
    host = found["host"].strip("[]")
    try:
        with socket.create_connection((host, int(found["port"])), timeout=timeout):
            pass
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise ConfigError(f"cannot reach the Ray cluster at {address}: {reason}") from exc


def lost(ray: ModuleType) -> tuple[type[BaseException], ...]:
    """The errors that mean a worker, its node or its results are gone (not the item's fault)."""
    e = ray.exceptions
    return (
        e.RayActorError,
        e.WorkerCrashedError,
        e.NodeDiedError,
        e.ObjectLostError,
        e.OwnerDiedError,
        e.OutOfMemoryError,
        e.LocalRayletDiedError,
    )


def cause_of(error: BaseException) -> Exception:
    """What a remote call raised: the original exception when Ray brought it back."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, Exception) else RuntimeError(str(error))


class ActorPool:
    """Actors of one class sharing ``concurrency`` calls at once; the least busy is taken.

    There are as many actors as the cluster has CPUs, at most ``concurrency``; each runs up
    to its share of the calls in threads, plus one thread kept for control calls (a
    cancel must not wait behind the checks it cancels). An actor whose worker dies is
    started again by Ray, as often as it takes, and each call it was running is run
    again up to ``retries`` times.
    """

    def __init__(
        self,
        actor_class: type,
        args: Sequence[Any],
        *,
        cluster: Cluster,
        concurrency: int,
        retries: int = DEFAULT_RETRIES,
    ) -> None:
        ray = cluster.ray
        self.size = max(1, min(concurrency, cluster.cpus()))
        self.per_actor = math.ceil(max(1, concurrency) / self.size)
        remote = ray.remote(actor_class).options(
            num_cpus=1,
            max_concurrency=self.per_actor + 1,
            max_restarts=-1,
            max_task_retries=retries,
        )
        self.actors = [remote.remote(*args) for _ in range(self.size)]
        self._busy = [0] * self.size
        self._lock = threading.Lock()
        self._free = threading.Condition(self._lock)
        self._ray = ray

    def ready(self) -> None:
        """Wait until every actor has built its work; a build error is raised here."""
        try:
            self._ray.get([actor.ready.remote() for actor in self.actors])
        except self._ray.exceptions.RayTaskError as exc:
            raise cause_of(exc) from None

    def take(self) -> int:
        """The index of the least busy actor with room for a call, waiting for one."""
        with self._free:
            while min(self._busy) >= self.per_actor:
                self._free.wait()
            index = self._busy.index(min(self._busy))
            self._busy[index] += 1
            return index

    def give_back(self, index: int) -> None:
        """A call on actor ``index`` is over."""
        with self._free:
            self._busy[index] -= 1
            self._free.notify()

    def close(self) -> None:
        """Stop every actor (they would otherwise keep their CPUs until the driver exits)."""
        for actor in self.actors:
            # An actor already gone is what is wanted.
            with contextlib.suppress(Exception):
                self._ray.kill(actor)
        self.actors = []
