"""Run the grading service: open the database, start the queue, listen where the hub says.

``serve(options)`` binds to ``$JUPYTERHUB_SERVICE_URL`` (the hub sets it for
a managed service; ``--url`` otherwise), routes under
``$JUPYTERHUB_SERVICE_PREFIX``, and stops the queue on SIGTERM / SIGINT.
Attempts that were being graded when it stopped stay stored as unfinished
and are graded at the next start.

Example::

    >>> bind_address("http://127.0.0.1:10101/")
    ('127.0.0.1', 10101)
"""

from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path
from urllib.parse import urlparse

from grader.service.app import make_app
from grader.service.db import Store, default_url
from grader.service.options import BODY_TIMEOUT, IDLE_TIMEOUT, MAX_HEADER_BYTES, PRE_AUTH_BYTES, ServiceOptions
from grader.service.queue import GradingQueue, KeyChanged
from grader.settings import Settings

log = logging.getLogger("agtool.service")
DEFAULT_URL = "http://127.0.0.1:10101"


def bind_address(url: str) -> tuple[str, int]:
    """Host and port to listen on, from a service URL."""
    parsed = urlparse(url)
    return parsed.hostname or "127.0.0.1", parsed.port or (443 if parsed.scheme == "https" else 80)


def normalize_prefix(prefix: str) -> str:
    """A route prefix with one slash at each end.

    >>> normalize_prefix("services/agtool-grader"), normalize_prefix("/")
    ('/services/agtool-grader/', '/')
    """
    return "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"


def http_server_options(idle: float = IDLE_TIMEOUT, body: float = BODY_TIMEOUT) -> dict:
    """The HTTP server's limits: a small body before a handler knows the caller, header and body timeouts.

    The upload route streams its body and raises the cap once the token is
    checked; slow or silent clients are cut off after ``idle`` (headers) and
    ``body`` seconds.

    >>> sorted(http_server_options())
    ['body_timeout', 'idle_connection_timeout', 'max_body_size', 'max_header_size', 'xheaders']
    """
    return {
        "max_body_size": PRE_AUTH_BYTES,
        "max_header_size": MAX_HEADER_BYTES,
        "idle_connection_timeout": idle,
        "body_timeout": body,
        "xheaders": True,
    }


def serve(args, settings: Settings | None = None) -> int:
    """Run until stopped (the ``serve`` subcommand's body); returns an exit status.

    ``settings`` (default: read now) give the hub's prefix and address when the options do not.
    """
    settings = settings or Settings.from_environ()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    data = Path(args.data_dir)
    data.mkdir(parents=True, exist_ok=True)
    store = Store(args.db or default_url(data))
    log.info("database: %s", store.engine.url.render_as_string(hide_password=True))
    prefix = normalize_prefix(args.prefix or settings.service_prefix or "/")
    options = ServiceOptions(
        prefix=prefix,
        instructor_group=args.instructor_group,
        max_bytes=args.max_bytes,
        rate_limit=args.rate_limit,
        rate_window=args.rate_window,
        course=getattr(args, "course_policy", None),
        roster=getattr(args, "roster_entries", None),
        references=getattr(args, "references", None) or {},
        max_learner_bytes=getattr(args, "max_learner_bytes", ServiceOptions.max_learner_bytes),
        max_uploads=getattr(args, "max_uploads", ServiceOptions.max_uploads),
        appeal_limit=getattr(args, "appeal_limit", ServiceOptions.appeal_limit),
        appeal_window=getattr(args, "appeal_window", ServiceOptions.appeal_window),
        insecure=bool(getattr(args, "insecure_why", "")),
        sandbox_words=getattr(args, "insecure_why", "") or f"sandbox: {args.sandbox}",
        settings=settings,
    )
    if options.insecure:
        log.warning("learner code runs WITHOUT a sandbox (%s): --insecure-no-sandbox", options.sandbox_words)
    log.info("step limits: %s", _limits_words(args.sandbox, settings))
    queue = GradingQueue(
        store,
        jobs=args.jobs,
        sandbox=args.sandbox,
        executor=args.executor,
        scheduler=args.scheduler,
        seed_key=getattr(args, "seed_key", None),
    )
    try:
        queue.start()
    except KeyChanged as exc:
        store.close()
        raise SystemExit(f"agtool-grade serve: refusing to start: {exc}") from None
    if getattr(args, "lti_config", None) is not None:  # after the queue: the sender reads what it stores
        from grader.service.lti_service import LtiService

        options.lti = LtiService(store, args.lti_config, data, policy=options.course)
        options.lti.start()
        log.info("LTI: scores go to %s; the tool's key set is %slti/jwks.json", args.lti_config.issuer, prefix)
    host, port = bind_address(args.url or settings.service_bind_url or DEFAULT_URL)

    async def main() -> None:
        app = make_app(store, queue, options)
        server = app.listen(port, address=host, **http_server_options())
        log.info(
            "agtool grading service on http://%s:%d%s (instructors: admins and group %r)",
            host,
            port,
            prefix,
            options.instructor_group,
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        server.stop()

    try:
        asyncio.run(main())
    finally:
        if options.lti is not None:
            options.lti.stop()
        queue.stop()
        store.close()
    return 0


def _limits_words(sandbox: str, settings: Settings) -> str:
    """What bounds each step's memory and processes here (cgroups, or the resource limits that stand in)."""
    from grader.engine.sandbox import IsolationUnavailable, limits_in_force, require

    try:
        return limits_in_force(require(sandbox, settings), settings)
    except (IsolationUnavailable, ValueError) as exc:
        return f"unknown ({exc})"
