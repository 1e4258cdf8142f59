"""``verity serve``: the HTTP API and the web pages, with a job store and a worker pool.

verity serve                                  # http://127.0.0.1:8000, the embedded model
verity serve --port 9000 --workers 4 --db sqlite:////var/lib/verity/jobs.sqlite
verity serve --model openai:gpt-4o-mini --model openai:gpt-4o --source wikipedia
verity serve --host 0.0.0.0 --api-key-file keys.txt --allowed-host verity.example.org
verity serve --engine ray --address ray://head:10001
verity serve --max-calls 200 --max-cost 0.05 --rate-limit-calls 600   # what checks may spend

On any address but a loopback one the server refuses to start without ``--api-key-file``:
it would run checks (and spend model calls) for anyone who can reach it. It answers only
requests whose Host header is one of its names: the loopback names on a loopback address,
else the address itself and each ``--allowed-host``. ``--model`` may be given more than
once: the first is the default, and a request may name any of them. ``--max-*`` set the
most one check may spend on the server (over ``[service.budget]`` in verity.toml; a
request may ask for less, a key may have its own ceiling in ``[service.keys.NAME]``);
``--rate-limit-calls`` and ``--rate-limit-tokens`` bound each key's model calls and tokens
a minute. FastAPI and uvicorn are imported when the command runs (``pip install
'verity[service]'``).
"""

from __future__ import annotations

import contextlib
import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from verity.cli.output import (
    ApiKeyEnvOpt,
    BaseUrlOpt,
    ConfigOpt,
    MaxCallsOpt,
    MaxCostOpt,
    MaxSecondsOpt,
    MaxTokensOpt,
    budget_from,
    say,
)
from verity.errors import BadInputError, ConfigError

if TYPE_CHECKING:
    from verity.service.core import Service
    from verity.service.pool import Executor


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, max=256, help="Checks run at once.")] = 2,
    document_concurrency: Annotated[
        int,
        typer.Option(min=1, max=64, help="At most this many claims of one document at once."),
    ] = 4,
    db: Annotated[
        str | None,
        typer.Option(help="Job store URL sqlite:///PATH (default: service.sqlite in the cache)."),
    ] = None,
    api_key_file: Annotated[
        Path | None,
        typer.Option(
            "--api-key-file",
            help="Hashed API keys (verity keys new); needed on a non-loopback address.",
        ),
    ] = None,
    queue: Annotated[
        int, typer.Option(min=1, max=100_000, help="Checks that may wait; then 429.")
    ] = 100,
    engine: Annotated[str, typer.Option(help="thread, or ray to run checks on Ray.")] = "thread",
    address: Annotated[
        str | None, typer.Option(help="Ray cluster address (--engine ray; default: local).")
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(help="Model spec; repeat to offer more (the first is the default)."),
    ] = None,
    method: Annotated[
        str | None, typer.Option(help="Default method (else rag for claims, zofia for articles).")
    ] = None,
    source: Annotated[
        list[str] | None, typer.Option("--source", help="Default evidence source (repeatable).")
    ] = None,
    base_url: BaseUrlOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    rate_limit: Annotated[
        int, typer.Option("--rate-limit", min=1, help="Checks per minute per API key.")
    ] = 60,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option("--cors-origin", help="An origin whose pages may call the API (repeatable)."),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="A host name clients reach the server by (repeatable; '*' for any).",
        ),
    ] = None,
    header_timeout: Annotated[
        float,
        typer.Option(
            "--header-timeout",
            min=0.1,
            max=3600,
            help="Seconds a client has to send a request's headers; then it is cut off.",
        ),
    ] = 10.0,
    max_calls: MaxCallsOpt = None,
    max_tokens: MaxTokensOpt = None,
    max_seconds: MaxSecondsOpt = None,
    max_cost: MaxCostOpt = None,
    rate_limit_calls: Annotated[
        int | None,
        typer.Option(
            "--rate-limit-calls", min=1, help="Model calls a minute per API key (all, keyless)."
        ),
    ] = None,
    rate_limit_tokens: Annotated[
        int | None,
        typer.Option("--rate-limit-tokens", min=1, help="Model tokens a minute per API key."),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Serve the HTTP API and the web pages: checks queued, run, stored, streamed live."""
    if engine not in ("thread", "ray"):
        raise BadInputError(f"--engine is thread or ray, not {engine!r}")
    if address is not None and engine != "ray":
        raise BadInputError("--address is the Ray cluster's: give it with --engine ray")
    if api_key_file is None and not is_loopback(host):
        raise ConfigError(
            f"refusing to serve on {host} without API keys: anyone who can reach it could "
            "run checks. Give --api-key-file FILE (make keys with `verity keys new NAME "
            "--file FILE`), or serve on 127.0.0.1"
        )
    hosts = allowed_hosts(host, allowed_host or [])
    uvicorn = _service_extra()

    from verity.config import settings_from_options
    from verity.service.app import create_app
    from verity.service.core import Service, ServiceSettings
    from verity.service.jobs import JobStore

    models = model or []
    defaults = settings_from_options(
        config,
        method=method,
        model=models[0] if models else None,
        base_url=base_url,
        api_key_env=api_key_env,
        sources=source,
    )
    defaults = _spending(
        defaults,
        (max_calls, max_tokens, max_seconds, max_cost),
        rate_limit_calls,
        rate_limit_tokens,
        engine,
    )
    settings = ServiceSettings(
        defaults=defaults,
        models=tuple(models[1:]),
        workers=workers,
        document_concurrency=document_concurrency,
        queue_size=queue,
        rate_per_minute=rate_limit,
        cors_origins=tuple(cors_origin or ()),
        allowed_hosts=hosts,
    )
    keys, limiter = _keys(api_key_file, rate_limit)
    store = JobStore.from_url(db)
    service = Service(
        settings,
        store=store,
        executor=_executor(engine, address, settings),
        keys=keys,
        limiter=limiter,
    )
    # Started here, not by the app, so that a store another server holds is an error
    # message and an exit code, not a failed start-up inside uvicorn.
    service.start()
    try:
        shown = "localhost" if host in ("127.0.0.1", "::1") else host
        say("default", f"verity: serving on http://{shown}:{port} (API docs at /docs)")
        say("default", f"verity: jobs stored in {store.path}; {workers} worker(s)")
        _run(uvicorn, create_app(service), service, host, port, header_timeout)
    finally:
        service.stop()
        store.close()


def _spending(
    defaults: Any,
    limits: tuple[int | None, int | None, float | None, float | None],
    calls_per_minute: int | None,
    tokens_per_minute: int | None,
    engine: str,
) -> Any:
    """The settings with the command's budget and rates over ``[service]``'s."""
    service = defaults.service
    ceiling = budget_from(service.budget or defaults.budget, *limits)
    update: dict[str, Any] = {"budget": ceiling}
    if calls_per_minute is not None:
        update["calls_per_minute"] = calls_per_minute
    if tokens_per_minute is not None:
        update["tokens_per_minute"] = tokens_per_minute
    service = service.model_copy(update=update)
    if engine == "ray" and (service.calls_per_minute or service.tokens_per_minute):
        # Each call waits for room in its key's window in the server's process; a check
        # on a Ray worker makes its calls elsewhere, where no window is kept.
        raise ConfigError(
            "model calls or tokens a minute (--rate-limit-calls, --rate-limit-tokens, "
            "[service] calls_per_minute, tokens_per_minute) need --engine thread"
        )
    return defaults.model_copy(update={"service": service})


def is_loopback(host: str) -> bool:
    """Whether ``host`` is an address only this machine can reach."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str, given: list[str]) -> tuple[str, ...]:
    """The names a request's Host header may give: the loopback ones, or those given.

    A loopback server answers to its loopback names, the bound one among them, and any
    given; another answers to the given names and to its own address when it is one
    address (not 0.0.0.0 or ::, which stand for all of the machine's).
    """
    from verity.service.core import LOOPBACK_HOSTS

    bound = host.strip().strip("[]").lower()
    names = [n.strip() for n in given if n.strip()]
    if is_loopback(host):
        return tuple(dict.fromkeys([*LOOPBACK_HOSTS, bound, *names]))
    specific = bound and not _unspecified(bound)
    found = tuple(dict.fromkeys([*names, *([bound] if specific else [])]))
    if not found:
        raise ConfigError(
            f"serving on {host or 'every address'}, the server would answer no request: "
            "give the names clients reach it by with --allowed-host NAME (repeatable), "
            "or --allowed-host '*' to answer any (behind a proxy that checks them)"
        )
    return found


def _unspecified(host: str) -> bool:
    """Whether ``host`` is 0.0.0.0 or ::, every address of the machine."""
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def _service_extra() -> Any:
    try:
        import fastapi  # noqa: F401
        import uvicorn
    except ImportError as exc:
        raise ConfigError(
            f"verity serve needs the service extra ({exc.name} is missing): "
            "pip install 'verity[service]'"
        ) from exc
    return uvicorn


def _keys(path: Path | None, per_minute: int) -> tuple[Any, Any]:
    if path is None:
        return None, None
    from verity.service.keys import KeyRing, RateLimiter

    return KeyRing.load(path), RateLimiter(per_minute)


def _executor(engine: str, address: str | None, settings: Any) -> Executor:
    from verity.service.execute import LocalExecutor

    if engine == "thread":
        return LocalExecutor(settings.defaults, checks=settings.workers)
    from functools import partial

    from verity.engines.ray import RayExecutor  # ConfigError naming the extra without Ray

    executor = RayExecutor(
        partial(LocalExecutor, settings.defaults, checks=settings.workers),
        address=address,
        concurrency=settings.workers,
    )
    executor.start()  # connect now: a cluster that is not there is said at once
    return executor


def _run(
    uvicorn: Any, app: Any, service: Service, host: str, port: int, header_timeout: float
) -> None:
    import asyncio

    class Server(uvicorn.Server):  # type: ignore[misc]
        def handle_exit(self, sig: int, frame: Any) -> None:
            # Event streams and waiting requests end first, so that the shutdown does not
            # wait on connections that would stay open as long as a check runs. This runs
            # as a signal handler: the work is handed to the event loop, not done here.
            with contextlib.suppress(RuntimeError):  # no loop running: nothing to end
                asyncio.get_running_loop().call_soon_threadsafe(service.begin_shutdown)
            super().handle_exit(sig, frame)

        async def shutdown(self, sockets: Any = None) -> None:
            await super().shutdown(sockets)
            # Running checks stop at their next step and go back to the queue, before
            # uvicorn ends the process by the signal it caught.
            await asyncio.to_thread(service.stop)

    import logging

    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    # httpx logs each request's URL, and an endpoint's URL may carry a key or password.
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)
    Server(server_config(uvicorn, app, host, port, header_timeout)).run()


def server_config(uvicorn: Any, app: Any, host: str, port: int, header_timeout: float) -> Any:
    """The server's uvicorn configuration: its HTTP protocol has a header deadline."""
    from verity.service.middleware import header_deadline

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=header_deadline(header_timeout),
        log_level="info",
        timeout_graceful_shutdown=10,
        server_header=False,
    )
