"""A stand-in JupyterHub and the grading service behind the real ``HubOAuth`` client, on loopback.

Shared by the service's hostile-load tests (tests/test_service_hardening.py),
its seed-policy tests (tests/test_service_seed_policy.py) and its action tests
(tests/test_service_actions.py); :func:`database_url` gives the storage tests
(tests/test_service.py too) a fresh SQLite or PostgreSQL database. The stand-in hub
answers ``GET /hub/api/user`` as JupyterHub does for the tokens of
:data:`HUB_USERS`; :class:`Service` runs ``grader.service.app`` with
``serve``'s HTTP server options on a free port, in a tornado loop of its own.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import urllib.error
import urllib.request

import pytest

from grader.service.db import Store

SERVICE = "agtool-grader"
PREFIX = f"/services/{SERVICE}/"
SCOPE = f"access:services!service={SERVICE}"
HUB_USERS = {
    "tok-alice": {"name": "alice", "admin": False, "groups": []},
    "tok-bob": {"name": "bob", "admin": False, "groups": []},
    "tok-slow": {"name": "slow", "admin": False, "groups": []},
    "tok-teacher": {"name": "teacher", "admin": False, "groups": ["agtool-instructors"]},
}


def failing_report(got: str) -> dict:
    """A stored report of one passed and one failed check whose ``got`` is ``got`` (the pages' tests put hostile
    text there)."""
    return {
        "seed": 7,
        "path": "tools.py",
        "score": 1,
        "max_score": 3,
        "steps": {},
        "output": {},
        "error": "",
        "checks": [
            {"id": "step1/names", "step": 1, "passed": True, "points": 1, "max_points": 1, "title": "Data names"},
            {
                "id": "step2/limit",
                "step": 2,
                "passed": False,
                "points": 0,
                "max_points": 2,
                "title": "Rejects a limit <= 0",
                "call": "validate_args('lookup', {'limit': 0})",
                "expected": "'type:limit'",
                "got": got,
                "message": "the limit was accepted",
                "hint": "check limit > 0",
                "reproduce": "agtool-grade check tools.py --only step2/limit --seed 7",
            },
        ],
    }


def postgres_url() -> str | None:
    """``$AGTOOL_TEST_POSTGRES_URL``; under CI its absence fails the test (``.ci/run`` must start PostgreSQL).

    Under pytest-xdist each worker gets a schema of its own in that database
    (its name, e.g. ``gw0``, first on the search path): two workers never drop
    each other's tables.
    """
    url = os.environ.get("AGTOOL_TEST_POSTGRES_URL")
    if not url and os.environ.get("CI"):
        pytest.fail("AGTOOL_TEST_POSTGRES_URL is not set under CI: .ci/run must start PostgreSQL", pytrace=False)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not url or not worker.isalnum():
        return url
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{worker}"'))
    engine.dispose()
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{worker}"


def empty_postgres(url: str) -> str:
    """``url`` with every table dropped (each test starts from no schema: the migrations create it)."""
    from sqlalchemy import MetaData, create_engine

    engine = create_engine(url)
    tables = MetaData()
    tables.reflect(engine)  # whatever the latest revision made, never a list to keep in step with it
    tables.drop_all(engine)
    engine.dispose()
    return url


def database_url(kind: str, folder) -> str:
    """A fresh, empty database: ``kind`` ``sqlite`` (a file in ``folder``) or ``postgresql`` (the test server's)."""
    if kind == "sqlite":
        return f"sqlite:///{folder / 'service.sqlite'}"
    url = postgres_url()
    if not url:
        pytest.skip("set AGTOOL_TEST_POSTGRES_URL=postgresql+psycopg://user:pw@host/db to run on PostgreSQL")
    return empty_postgres(url)


class _LoopThread:
    """A tornado IOLoop of its own on a daemon thread; ``call(fn)`` runs ``fn`` there and returns its result."""

    def __init__(self):
        from tornado.ioloop import IOLoop

        ready = threading.Event()

        def run():
            asyncio.set_event_loop(asyncio.new_event_loop())
            self.loop = IOLoop.current()
            ready.set()
            self.loop.start()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(10)

    def call(self, fn):
        done, box = threading.Event(), []

        def inner():
            try:
                box.append((True, fn()))
            except BaseException as exc:  # handed back to the caller's thread
                box.append((False, exc))
            done.set()

        self.loop.add_callback(inner)
        assert done.wait(30), "the loop thread did not answer"
        ok, value = box[0]
        if not ok:
            raise value
        return value

    def stop(self):
        self.loop.add_callback(self.loop.stop)
        self.thread.join(10)


class FakeHub:
    """``GET /hub/api/user`` as JupyterHub answers it: the token's user, or 403; counts and can delay answers."""

    def __init__(self):
        from tornado import web

        hub = self
        self.calls: list[str] = []
        self.delay = {"tok-slow": 1.5}

        class User(web.RequestHandler):
            async def get(self):
                token = self.request.headers.get("Authorization", "").split(" ", 1)[-1]
                hub.calls.append(token)
                await asyncio.sleep(hub.delay.get(token, 0))
                if token not in HUB_USERS:
                    self.set_status(403)
                    self.finish({"error": "no such token"})
                    return
                self.finish({**HUB_USERS[token], "kind": "user", "scopes": [SCOPE]})

        self.thread = _LoopThread()
        self.port = _free_port()
        self.thread.call(lambda: web.Application([(r"/hub/api/user", User)]).listen(self.port, "127.0.0.1"))
        self.api = f"http://127.0.0.1:{self.port}/hub/api"

    def stop(self):
        self.thread.stop()


class NoGrading:
    """The queue's face the web handlers use, grading nothing (the HTTP cases are about requests)."""

    def __init__(self):
        self.put_ids: list[int] = []
        self.unstored: set[int] = set()

    def put(self, attempt_id, learner=None):
        self.put_ids.append(attempt_id)

    def not_stored(self):
        return set(self.unstored)


class Service:
    """The service's application behind the real HubOAuth client and ``serve``'s HTTP server options."""

    def __init__(
        self, store: Store, hub: FakeHub, *, queue=None, idle: float = 1.0, body: float = 1.0, tokens=None, **options
    ):
        from jupyterhub.services.auth import HubOAuth

        from grader.service.app import make_app
        from grader.service.options import ServiceOptions
        from grader.service.serve import http_server_options

        self.store, self.queue = store, queue or NoGrading()
        self.settings = ServiceOptions(prefix=PREFIX, **options)
        self.auth = auth = HubOAuth(
            api_token="service-token",
            api_url=hub.api,
            oauth_client_id=f"service-{SERVICE}",
            access_scopes={SCOPE},
            base_url=PREFIX,
            hub_prefix="/hub/",
        )
        self.thread = _LoopThread()
        self.port = _free_port()
        server_options = http_server_options(idle=idle, body=body)

        def start():
            app = make_app(store, self.queue, self.settings, hub_auth=auth, tokens=tokens)
            return app.listen(self.port, address="127.0.0.1", **server_options)

        self.server = self.thread.call(start)
        self.base = f"http://127.0.0.1:{self.port}{PREFIX}"

    def request(
        self,
        method: str,
        path: str,
        token: str | None = None,
        body: bytes | None = None,
        ctype: str = "text/x-python",
        timeout: float = 20,
    ):
        headers = {"Authorization": f"token {token}"} if token else {}
        if body is not None:
            headers["Content-Type"] = ctype
        req = urllib.request.Request(self.base + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def stop(self):
        self.thread.call(self.server.stop)
        self.thread.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
