"""The service: the job store, the worker pool, the keys, and the checks made on each request.

    service = Service(ServiceSettings(defaults=settings, workers=2))
    service.start()                                   # the pool starts; a crash's jobs rerun
    job = service.submit(CheckRequest(claim="..."))   # ApiError (400/422) or QueueFull (429)
    service.stop()

Every job has a budget (`verity.service.budgets`): what the request asked for, within the
caller's ceiling (the key's own from ``[service.keys]``, else ``[service.budget]``, else
``[budget]``); the job stores it with its request. With calls or tokens a minute set
(``[service]``), a submission is refused (429 ``rate_limited``) while the caller's window
is full, and each call of a running job waits for room (`verity.service.usage_limits`).

`verity.service.app.create_app` puts a `Service` on ``app.state.service``: the API routes
and the web pages both work through it. A request is checked whole before it is queued
(method, model, sources, settings, sizes), so a job fails only for reasons that appear
when it runs: a site that does not answer, a model that gives no valid answer.
"""

from __future__ import annotations

import logging
import threading
import typing
from dataclasses import dataclass, field

from filelock import FileLock, Timeout
from pydantic import ValidationError

from verity.api import resolve_method, shared_source
from verity.config import Settings
from verity.errors import BadInputError, ConfigError, UnknownNameError
from verity.limits import check_subject_size
from verity.llm.budget import Budget
from verity.methods.base import settings_for, variant_settings
from verity.methods.settings import request_fields
from verity.service import catalog
from verity.service.budgets import (
    ceiling_for,
    check_request_settings,
    config_class,
    settled_budget,
)
from verity.service.changes import Changes
from verity.service.errors import ApiError, api_error, rate_limited, settings_error
from verity.service.execute import LocalExecutor
from verity.service.execute_documents import check_document_request
from verity.service.jobs import Job, JobStore
from verity.service.pool import Executor, WorkerPool
from verity.service.requests import CheckRequest
from verity.service.responses import MethodInfo, ModelsInfo, SourcesInfo
from verity.service.usage_limits import UsageLimiter
from verity.sources.registry import source_names

log = logging.getLogger("verity.service")
# The names of this machine: a Host header a browser sends only to a loopback server.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class ServiceSettings:
    """How a server runs: the defaults of its checks, what requests may name, its bounds.

    ``defaults`` are the settings of ``verity check`` (method, model, sources, method
    settings, limits). ``models`` are further model specs a request may name besides the
    default one. ``rate_per_minute`` bounds the checks each key submits (with keys on).
    ``allowed_hosts`` are the names a request's Host header may give (any port; ``*``
    for any name): the loopback names by default, so a server on another address must
    list the names its clients use.
    """

    defaults: Settings = field(default_factory=Settings)
    models: tuple[str, ...] = ()
    workers: int = 2
    queue_size: int = 100
    max_body_bytes: int = 1 << 20
    heartbeat_seconds: float = 15.0
    rate_per_minute: int = 60
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    # Claims of one document checked at once: a request may ask for fewer, never more
    # (more is lowered to this, so a client need not know the server's number).
    document_concurrency: int = 4

    def accepted_models(self) -> tuple[str, ...]:
        """The default model's spec, then the others a request may name."""
        return tuple(dict.fromkeys((self.defaults.model.spec, *self.models)))


class Service:
    """The parts of a running server, shared by the API routes and the web pages."""

    def __init__(
        self,
        settings: ServiceSettings | None = None,
        *,
        store: JobStore | None = None,
        executor: Executor | None = None,
        keys: typing.Any = None,
        limiter: typing.Any = None,
    ) -> None:
        self.settings = settings or ServiceSettings()
        self.store = store or JobStore()
        self.executor = executor or LocalExecutor(
            self.settings.defaults, checks=self.settings.workers
        )
        self.changes = Changes()
        limits = self.settings.defaults.service
        # Model calls and tokens a minute per key: counted here, for every job in flight.
        self.usage_limits = UsageLimiter(limits.calls_per_minute, limits.tokens_per_minute)
        self.pool = WorkerPool(
            self.store,
            self.executor,
            workers=self.settings.workers,
            queue_size=self.settings.queue_size,
            changes=self.changes,
            usage_limits=self.usage_limits,
        )
        # verity.service.keys.KeyRing and RateLimiter, or None: no key needed.
        self.keys, self.limiter = keys, limiter
        self._stopping = threading.Event()
        self._stopped = False
        self._db_lock: FileLock | None = None

    # -- life -----------------------------------------------------------------------------

    def start(self) -> None:
        """Claim the job store, then start the workers (jobs a crash left run again)."""
        if self.pool.started:
            return
        if self.store.path != ":memory:":
            lock = FileLock(self.store.path + ".lock", timeout=0)
            try:
                lock.acquire()
            except Timeout as exc:
                # Two servers on one store would both run what a crash left behind.
                raise ConfigError(
                    f"another verity server uses the job store {self.store.path}"
                ) from exc
            self._db_lock = lock
        self.pool.start()

    @property
    def stopping(self) -> bool:
        """Whether the server is shutting down (event streams end, no new jobs start)."""
        return self._stopping.is_set()

    def begin_shutdown(self) -> None:
        """Tell event streams to end, so the server's shutdown does not wait on them."""
        self._stopping.set()
        self.changes.wake_all()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the workers (running jobs are queued again) and release the job store."""
        if self._stopped:
            return
        self._stopped = True
        self.begin_shutdown()
        self.pool.stop(timeout)
        close = getattr(self.executor, "close", None)
        if callable(close):  # an engine's executor holds a cluster connection
            close()
        if self._db_lock is not None:
            self._db_lock.release()
            self._db_lock = None

    # -- checks ---------------------------------------------------------------------------

    def submit(self, request: CheckRequest, *, key: str | None = None) -> Job:
        """Check a request, then queue it; `ApiError` for a bad one, `QueueFull` past the bound."""
        if self.stopping:
            raise ApiError(503, "unavailable", "the server is shutting down")
        method = self.check_request(request)
        budget = settled_budget(request.budget, self.ceiling(key))
        wait = self.usage_limits.retry_after(key)
        if wait is not None:
            raise rate_limited(wait, "model calls or tokens")
        stored = request.model_copy(update={"budget": budget})
        if request.document is not None:
            stored = stored.model_copy(update={"concurrency": self.document_concurrency(request)})
        return self.pool.submit(stored, method=method, key=key)

    def document_concurrency(self, request: CheckRequest) -> int:
        """How many of a document's claims its job checks at once: as asked, within the limit."""
        limit = max(1, self.settings.document_concurrency)
        return min(request.concurrency or limit, limit)

    def ceiling(self, key: str | None) -> Budget:
        """The most one check of ``key`` may spend on this server."""
        defaults = self.settings.defaults
        return ceiling_for(defaults.service, defaults.budget, key)

    def check_request(self, request: CheckRequest) -> str:
        """Everything about a request that can be known before it runs; its method's name."""
        method = self._method(request)
        self._model(request.model)
        for spec in request.sources or ():
            self._source(spec)
        self._settings(method, request.settings)
        if request.document is not None:
            check_document_request(request, self.settings.defaults.limits)
        subject = request.subject()
        if subject is not None:
            try:
                check_subject_size(subject, self.settings.defaults.limits)
            except BadInputError as exc:
                where = "claim" if request.claim is not None else "article.text"
                raise ApiError(422, "too_long", str(exc), field=where) from exc
        return method

    def job(self, job_id: str, *, key: str | None = None) -> Job:
        """The job with this id that ``key`` may see (every job when keys are off)."""
        job = self.store.get(job_id, key=key)
        if job is None:
            raise ApiError(404, "not_found", "no check with this id")
        return job

    def _method(self, request: CheckRequest) -> str:
        kind = request.kind()
        try:
            named = request.method_name(self.settings.defaults.method)
            if named is not None:
                variant_settings(named)  # an unknown variant first: its name is not quoted
            name = resolve_method(named, kind)
        except UnknownNameError as exc:
            error = api_error(exc)
            error.field = "method"
            if exc.kind != "method":
                base = name_base(named or "")
                error.valid = [f"{base}/{v}" for v in exc.known]
            raise error from exc
        except BadInputError as exc:
            accepting = [
                m.name for m in catalog.methods_info() if catalog.kind_name(kind) in m.accepts
            ]
            # The command line's message quotes the method named; this one does not.
            what = catalog.kind_name(kind)
            raise ApiError(
                400,
                "unsuitable_method",
                f"this method does not check {what}s; the methods that do are listed in valid",
                field="method",
                valid=accepting,
            ) from exc
        return name

    def _model(self, spec: str | None) -> None:
        accepted = self.settings.accepted_models()
        if spec is None or spec in accepted:
            return
        # The spec sent is not repeated: it may be long, or hold a path or a key.
        raise ApiError(
            400,
            "unknown_model",
            f"this model is not offered here: this server accepts {', '.join(accepted)}",
            field="model",
            valid=list(accepted),
        )

    def _source(self, spec: str) -> None:
        configured = tuple(self.settings.defaults.sources)
        if not catalog.requestable_source(spec, configured):
            offered = sorted({*source_names(), *configured})
            raise ApiError(
                400,
                "unknown_source",
                "this source is not offered here (a source's argument is set by the "
                "server's operator)",
                field="sources",
                valid=offered,
            )
        try:
            shared_source(spec)  # cheap, and says now if a key or an index is missing
        except ConfigError as exc:
            error = api_error(exc)
            error.field = "sources"
            raise error from exc

    def _settings(self, method: str, given: dict[str, typing.Any]) -> None:
        check_request_settings(method, given)  # 400 server_setting before anything reads it
        config = config_class(method)
        if config is None:
            return  # a plug-in without a typed config takes no settings from a request
        merged = {
            **variant_settings(method),
            **settings_for(method, self.settings.defaults.methods),
            **given,
        }
        try:
            config.model_validate(merged)
        except ValidationError as exc:
            raise settings_error(method, exc, sorted(request_fields(config))) from exc

    # -- what the server offers -----------------------------------------------------------

    def methods_info(self) -> list[MethodInfo]:
        """Every method a request may name."""
        return catalog.methods_info()

    def sources_info(self) -> SourcesInfo:
        """Every source, and the ones used when a request names none."""
        return catalog.sources_info(tuple(self.settings.defaults.sources))

    def models_info(self) -> ModelsInfo:
        """The default model and every spec a request may name."""
        return catalog.models_info(
            self.settings.defaults.model.spec, self.settings.accepted_models()
        )


def name_base(name: str) -> str:
    """``zofia`` of ``zofia/no-debate``."""
    return name.partition("/")[0]
