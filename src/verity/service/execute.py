"""Running one request: the subject, the method it names, and the check with its events.

    executor = LocalExecutor(settings)          # the server's defaults (verity.config.Settings)
    verdict = executor(request, listener)       # listener(event) for each progress event

A request names at most a method, a model, sources and method settings; the rest comes
from the server's settings, as it would for ``verity check`` (`plan`). Methods are built
with `verity.api.load_method` and kept, one per distinct plan, since a method holds its
models and indexes, which take seconds to load; worker threads share them (a method is
safe to call from many threads, and the embedded model takes one call at a time).
A document's claims are extracted and checked here too (`verity.service.execute_documents`).
A URL is fetched here, in the worker, through `verity.pages.fetch_article`: a slow site
holds up its own job only. Each worker thread checks on an event loop of its own, kept
for its next check (`verity.service.loops`), where ``verify`` would make one per check.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable

from verity import events
from verity.api import load_method
from verity.config import Settings
from verity.domain import Article, Claim, Verdict
from verity.events import Listener
from verity.limits import check_subject_size
from verity.llm.budget import spending
from verity.methods.base import Method, MethodBase
from verity.redact import redact_url
from verity.service.execute_documents import DocumentOutcome, run_document
from verity.service.loops import WorkerLoops, loop_running
from verity.service.plans import Plan, plan
from verity.service.requests import CheckRequest

# Distinct plans kept loaded. Each holds model clients; the embedded model's weights are
# shared by all of them (verity.llm.local_gguf), so dropping one frees little.
log = logging.getLogger("verity.service")
CACHED_METHODS = 32

Fetch = Callable[[str], Article]


class LocalExecutor:
    """Runs requests in this process, with one method kept per distinct plan."""

    def __init__(
        self,
        defaults: Settings | None = None,
        *,
        fetch: Fetch | None = None,
        checks: int = 1,
        merge: bool = True,
    ) -> None:
        self.defaults = defaults or Settings()
        self._fetch = fetch
        # A document's near-copy claims merged by the sentence encoder (exact copies
        # always are); off for a server that should not load the encoder.
        self.merge = merge
        # Checks run at once (the workers): each method's models take that many checks'
        # calls in flight, or a server's throughput stops at one client's default slots.
        self.checks = checks
        self._methods: OrderedDict[str, Method] = OrderedDict()
        self._building: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._loops = WorkerLoops()

    def __call__(self, request: CheckRequest, listener: Listener) -> Verdict | DocumentOutcome:
        """Check the request's subject within its budget, sending each event to ``listener``.

        The request's ``budget`` is the one the server settled on when it was submitted.
        A document is checked claim by claim (`verity.service.execute_documents`).
        """
        if request.document is not None:
            return run_document(self, request, listener, plan(request, self.defaults))
        # A job stored before jobs kept their budget runs within the server's default one.
        budget = request.budget or self.defaults.budget
        with events.listening(listener) as sink, spending(budget):
            subject = request.subject()
            if subject is None:
                if sink is not None:
                    shown = redact_url(request.url or "")
                    sink.emit("milestone", f"fetching {shown}", name="service.fetch")
                subject = self._fetched(request)
            check_subject_size(subject, self.defaults.limits)
            return self._verify(self.method(plan(request, self.defaults)), subject)

    def close(self) -> None:
        """Close the workers' event loops (the server has stopped)."""
        self._loops.close()

    def _verify(self, method: Method, subject: Claim | Article) -> Verdict:
        # `MethodBase.verify` is `averify` on an event loop made for the call: the
        # worker's own loop does the same without making one. A method with a `verify`
        # of its own is called through it, and so is any method from a thread whose
        # loop is running (`verify` knows how to run there; a second loop does not).
        verify = type(method).verify
        plain = isinstance(method, MethodBase) and verify is MethodBase.verify  # type: ignore[comparison-overlap]
        if plain and not loop_running():
            return self._loops.run(method.averify(subject))
        return method.verify(subject)

    def method(self, chosen: Plan) -> Method:
        """The method of a plan, built on first use and kept (the least used dropped)."""
        key = chosen.key()
        with self._lock:
            if key in self._methods:
                self._methods.move_to_end(key)
                return self._methods[key]
            building = self._building.setdefault(key, threading.Lock())
        # One thread builds a plan's method; others asking for it wait for that one.
        with building:
            with self._lock:
                if key in self._methods:
                    return self._methods[key]
            built = load_method(
                chosen.method,
                model=chosen.model,
                sources=chosen.sources,
                roles=chosen.roles,
                grounding=chosen.grounding,  # type: ignore[arg-type]
                grounding_checker=self.defaults.grounding_checker,
                **chosen.settings,
            )
            models = getattr(built, "models", None)
            if models is not None:
                for line in models.follow(self.checks):
                    log.warning("%s", line)
            with self._lock:
                self._methods[key] = built
                while len(self._methods) > CACHED_METHODS:
                    self._methods.popitem(last=False)
                self._building.pop(key, None)
        return built

    def _fetched(self, request: CheckRequest) -> Claim | Article:
        url = request.url or ""
        if self._fetch is not None:
            article = self._fetch(url)
        else:
            from verity.pages import fetch_article

            article = fetch_article(url, limits=self.defaults.limits)
        if request.date is None:
            return article
        return article.model_copy(update={"date": request.date})
