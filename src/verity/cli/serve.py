"""``verity serve``: the HTTP API and the web pages, with a job store and a worker pool.

verity serve                                  # http://127.0.0.1:8000, the embedded model
verity serve --port 9000 --workers 4 --db sqlite:////var/lib/verity/jobs.sqlite
verity serve --model openai:gpt-4o-mini --model openai:gpt-4o --source wikipedia
verity serve --host 0.0.0.0 --api-key-file keys.txt        # keys: verity keys new NAME
verity serve --engine ray --address ray://head:10001

On any address but a loopback one the server refuses to start without ``--api-key-file``:
it would run checks (and spend model calls) for anyone who can reach it. ``--model`` may
be given more than once: the first is the default, and a request may name any of them.
FastAPI and uvicorn are imported when the command runs (``pip install 'verity[service]'``).
"""

from __future__ import annotations

import contextlib
import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from verity.cli.output import ApiKeyEnvOpt, BaseUrlOpt, ConfigOpt, say
from verity.errors import BadInputError, ConfigError

if TYPE_CHECKING:
    from verity.service.core import Service
    from verity.service.pool import Executor


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, max=256, help="Checks run at once.")] = 2,
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
    settings = ServiceSettings(
        defaults=defaults,
        models=tuple(models[1:]),
        workers=workers,
        queue_size=queue,
        rate_per_minute=rate_limit,
        cors_origins=tuple(cors_origin or ()),
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
        _run(uvicorn, create_app(service), service, host, port)
    finally:
        service.stop()
        store.close()


def is_loopback(host: str) -> bool:
    """Whether ``host`` is an address only this machine can reach."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
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


def _run(uvicorn: Any, app: Any, service: Service, host: str, port: int) -> None:
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
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="info",
        timeout_graceful_shutdown=10,
        server_header=False,
    )
    Server(config).run()
