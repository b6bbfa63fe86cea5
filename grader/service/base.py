"""The service's request handlers' common base: who is calling (the hub's OAuth or token), uploads in flight.

``ApiHandler`` answers JSON and never redirects to a login; pages build on
:class:`grader.service.app.PageHandler`. Split from :mod:`grader.service.app`
so the class's export handlers (:mod:`grader.service.class_handlers`) share it
without an import cycle.

Example::

    >>> is_instructor({"name": "t", "admin": True, "groups": []}, "agtool-instructors")
    True
"""
from __future__ import annotations

import logging

from tornado import web
from tornado.ioloop import IOLoop

from grader.service import exports, layout, pages
from grader.service.actions_db import ActionLog
from grader.service.class_records import class_data
from grader.service.db import Store
from grader.service.hubauth import TokenCache
from grader.service.options import ServiceOptions
from grader.service.queue import GradingQueue

log = logging.getLogger("agtool.service")


def is_instructor(user: dict, group: str) -> bool:
    """Hub admins and members of ``group`` are instructors.

    >>> is_instructor({"name": "t", "admin": False, "groups": ["agtool-instructors"]}, "agtool-instructors")
    True
    >>> is_instructor({"name": "ana", "admin": False, "groups": []}, "agtool-instructors")
    False
    """
    return bool(user.get("admin")) or group in (user.get("groups") or [])


def _auth_mixins():
    """HubOAuthenticated, imported late: only a server needs JupyterHub (the ``service`` extra)."""
    from jupyterhub.services.auth import HubOAuthenticated

    return HubOAuthenticated


def attempt_id_of(text: str) -> "int | None":
    """The attempt id in a URL, or None for anything that cannot be one (the route then answers 404).

    ASCII digits only, at most 2**31 - 1 (PostgreSQL's ``integer``): no
    negative, unicode, huge or empty ids reach the database.

    >>> attempt_id_of("12"), attempt_id_of("1" * 23), attempt_id_of("-1"), attempt_id_of("\u0663"), attempt_id_of("0")
    (12, None, None, None, None)
    """
    if not (text.isascii() and text.isdigit()) or len(text) > 10:
        return None
    value = int(text)
    return value if 0 < value < 2 ** 31 else None


class Uploads:
    """How many uploads are being read now, against a cap (one per application: every handler shares it)."""

    def __init__(self, cap: int):
        self.cap, self.now = cap, 0

    def enter(self) -> bool:
        if self.now >= self.cap:
            return False
        self.now += 1
        return True

    def leave(self) -> None:
        self.now = max(0, self.now - 1)


class _Base(_auth_mixins(), web.RequestHandler):
    def initialize(self, store: Store, queue: GradingQueue, settings: ServiceOptions, hub_auth,
                   cache: "exports.ClassCache | None" = None, tokens: "TokenCache | None" = None,
                   uploads: "Uploads | None" = None) -> None:
        self.store, self.queue, self.conf, self.hub_auth = store, queue, settings, hub_auth
        self.cache = cache if cache is not None else exports.ClassCache()
        self.tokens = tokens if tokens is not None else TokenCache()
        self.uploads = uploads if uploads is not None else Uploads(settings.max_uploads)

    async def prepare(self) -> None:
        """Know the caller before anything else: a token from the headers (cached), else the OAuth cookie."""
        self._agtool_user = await self._caller()

    async def _caller(self) -> "dict | None":
        from jupyterhub.services.auth import UserNotAllowed

        token = self.hub_auth.get_token(self, in_cookie=False)
        if token:
            model = await self.tokens.user(token, self._ask_hub)
        else:
            model = await self.hub_auth.get_user(self, sync=False)  # the pages' OAuth cookie: awaited too
        if not model:
            return None
        try:
            return self.check_hub_user(dict(model))
        except UserNotAllowed:
            def forbid(*_args, **_kwargs):  # as HubAuthenticated: never a login redirect loop
                raise web.HTTPError(403, "this hub account may not use the grading service")
            self.redirect = forbid
            return None

    async def _ask_hub(self, token: str) -> "dict | None":
        # use_cache=False: the hub client's own cache keeps every token for five minutes, unbounded.
        return await self.hub_auth.user_for_token(token, use_cache=False, sync=False)

    def get_current_user(self) -> "dict | None":
        return getattr(self, "_agtool_user", None)

    async def in_thread(self, fn, *args):
        """Run ``fn(*args)`` off the event loop (class outputs parse every report; plots and similarity take a while)."""
        return await IOLoop.current().run_in_executor(None, fn, *args)

    def class_now(self, version=None) -> tuple[list[dict], list[dict], dict]:
        """:func:`class_data` for the class as stored now, computed once per version of the class."""
        version = self.class_version() if version is None else version
        return self.cache.get(version, "class", lambda: class_data(self.store, self.conf.course))

    def class_version(self) -> tuple:
        """The attempts' version and the newest instructor action: an extension or override changes the outputs."""
        return self.store.version(), ActionLog(self.store).version()

    def derived(self, key: str, fn):
        """``fn(counting records)`` for the class as stored now, computed once per version of the class."""
        version = self.class_version()
        records = self.class_now(version)[1]
        return self.cache.get(version, key, lambda: fn(records))

    def download(self, filename: str, ctype: str, body) -> None:
        self.set_header("Content-Type", ctype)
        self.set_header("Content-Disposition", exports.attachment(filename))
        self.finish(body)

    @property
    def learner(self) -> str:
        return self.current_user["name"]

    @property
    def instructor(self) -> bool:
        return is_instructor(self.current_user, self.conf.instructor_group)

    def set_default_headers(self) -> None:
        # Pages show learner text: even escaped, forbid scripts and framing outright.
        self.set_header("Content-Security-Policy", layout.csp())  # one script: local times, allowed by its hash
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Cache-Control", "no-store")


class ApiHandler(_Base):
    """JSON in and out; an unknown caller gets 401 JSON, never a redirect to a login page."""

    async def prepare(self) -> None:
        await super().prepare()
        if self.current_user is None:
            self.send_json(401, {"error": "authenticate with a hub token: Authorization: token <JUPYTERHUB_API_TOKEN>"})

    def send_json(self, status: int, data) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(pages.json_text(data))

    def write_error(self, status_code: int, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        self.set_header("Content-Type", "application/json; charset=utf-8")
        if getattr(self, "retry_after", None):  # send_error cleared the headers set before the raise
            self.set_header("Retry-After", str(self.retry_after))
        self.finish(pages.json_text({"error": message}))

    def require_instructor(self) -> None:
        if not self.instructor:
            raise web.HTTPError(403, f"instructors only (hub admins and members of the group "
                                     f"{self.conf.instructor_group!r})")
