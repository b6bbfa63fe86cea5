"""What every handler of the service shares: who is calling (the hub's OAuth or a token), uploads in flight, fields.

The REST API's handlers (:mod:`grader.service.api`, JSON, never a redirect
to a login) and the pages' (:mod:`grader.service.handlers`, HTML from
templates, the hub's login) both build on :class:`BaseHandler`; a body of
fields (JSON or a form, read once the caller is known, its XSRF field
checked) is :class:`FieldsMixin`'s.

Example::

    >>> is_instructor({"name": "t", "admin": True, "groups": []}, "agtool-instructors")
    True
    >>> safe_next("/s/learners/ana", "/s/"), safe_next("//evil.example/", "/s/"), safe_next("/s/\\r\\nX: y", "/s/")
    ('/s/learners/ana', '/s/', '/s/')
"""

from __future__ import annotations

import json
import logging
import re

from tornado import httputil, web
from tornado.ioloop import IOLoop

from grader.limits import ACTION_BODY_BYTES
from grader.service import exports, layout
from grader.service.actions import ActionError, Context, RequestLimits, file_appeal, perform
from grader.service.actions_db import ActionLog
from grader.service.class_records import class_data
from grader.service.db import Store
from grader.service.hubauth import TokenCache
from grader.service.options import ServiceOptions
from grader.service.queue import GradingQueue

MAX_BODY = ACTION_BODY_BYTES  # bytes of one action's fields, once the caller is known (grader.limits says why)
_SAFE_PATH = re.compile(r"[A-Za-z0-9/._~%-]*\Z")

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


def attempt_id_of(text: str) -> int | None:
    """The attempt id in a URL, or None for anything that cannot be one (the route then answers 404).

    ASCII digits only, at most 2**31 - 1 (PostgreSQL's ``integer``): no
    negative, unicode, huge or empty ids reach the database.

    >>> attempt_id_of("12"), attempt_id_of("1" * 23), attempt_id_of("-1"), attempt_id_of("\u0663"), attempt_id_of("0")
    (12, None, None, None, None)
    """
    if not (text.isascii() and text.isdigit()) or len(text) > 10:
        return None
    value = int(text)
    return value if 0 < value < 2**31 else None


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


class BaseHandler(_auth_mixins(), web.RequestHandler):
    def initialize(
        self,
        store: Store,
        queue: GradingQueue,
        settings: ServiceOptions,
        hub_auth,
        cache: exports.ClassCache | None = None,
        tokens: TokenCache | None = None,
        uploads: Uploads | None = None,
    ) -> None:
        self.store, self.queue, self.conf, self.hub_auth = store, queue, settings, hub_auth
        self.cache = cache if cache is not None else exports.ClassCache()
        self.tokens = tokens if tokens is not None else TokenCache()
        self.uploads = uploads if uploads is not None else Uploads(settings.max_uploads)

    async def prepare(self) -> None:
        """Know the caller before anything else: a token from the headers (cached), else the OAuth cookie."""
        self._agtool_user = await self._caller()

    async def _caller(self) -> dict | None:
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

    async def _ask_hub(self, token: str) -> dict | None:
        # use_cache=False: the hub client's own cache keeps every token for five minutes, unbounded.
        return await self.hub_auth.user_for_token(token, use_cache=False, sync=False)

    def get_current_user(self) -> dict | None:
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


_Base = BaseHandler  # the name tests and older callers patch


def safe_next(target: str | None, prefix: str) -> str:
    """Where a form sends the browser back: a path under the service's prefix, else the prefix itself."""
    if target and target.startswith(prefix) and "//" not in target and _SAFE_PATH.match(target):
        return target
    return prefix


class FieldsMixin:
    """A streamed body of fields (JSON or a form), read once the caller is known; XSRF checked on those fields."""

    _stream_request_body = True  # what tornado's @web.stream_request_body sets

    async def prepare(self) -> None:
        self._chunks, self._size, self._body_read = [], 0, False
        await super().prepare()
        if not self._finished and self.request.method == "POST" and self.current_user is not None:
            self.request.connection.set_max_body_size(MAX_BODY)  # the caller is known: room for the texts

    def data_received(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._size <= MAX_BODY:
            self._chunks.append(chunk)

    def check_xsrf_cookie(self) -> None:
        # The hub checks a cookie's POST while learning who calls, before the body is read: the check is
        # made in fields(), on the body's _xsrf, before any action.
        if self._body_read:
            super().check_xsrf_cookie()
        else:
            self._xsrf_later = True

    def fields(self) -> dict:
        """The body's fields (413 over :data:`MAX_BODY`, 400 if unreadable), after the XSRF check of a form."""
        if self._size > MAX_BODY:
            raise web.HTTPError(413, f"the request is {self._size} bytes; at most {MAX_BODY} are read: shorten it")
        body = b"".join(self._chunks)
        ctype = self.request.headers.get("Content-Type", "")
        self._body_read = True
        if ctype.split(";")[0].strip().lower() == "application/json":
            try:
                data = json.loads(body.decode("utf-8") or "{}")
            except (UnicodeDecodeError, ValueError):
                raise web.HTTPError(400, "the body is not JSON (UTF-8)") from None
            if not isinstance(data, dict):
                raise web.HTTPError(400, "send the fields as one JSON object")
        else:
            httputil.parse_body_arguments(ctype, body, self.request.body_arguments, self.request.files)
            for name, values in self.request.body_arguments.items():  # where get_argument("_xsrf") looks
                self.request.arguments.setdefault(name, []).extend(values)
            data = {k: v[-1].decode("utf-8", "replace") for k, v in self.request.body_arguments.items()}
        if getattr(self, "_xsrf_later", False):
            self.check_xsrf_cookie()
        return data

    def action_context(self) -> Context:
        return Context(ActionLog(self.store), self.queue, self.conf.course, lambda: self.class_now()[1])

    async def act(self, kind: str) -> dict:
        """Perform ``kind`` for the caller (instructors only) with the body's fields; the action recorded."""
        fields = self.fields()
        if not self.instructor:
            raise web.HTTPError(
                403, f"instructors only (hub admins and members of the group {self.conf.instructor_group!r})"
            )
        return await self._checked(perform, self.action_context(), self.learner, kind, fields)

    async def appeal(self) -> dict:
        """File the caller's regrade request (their own attempt only; the service's limits on requests hold)."""
        fields = self.fields()
        limits = RequestLimits(self.conf.appeal_limit, self.conf.appeal_window, self.conf.max_learner_bytes)
        return await self._checked(file_appeal, ActionLog(self.store), self.learner, fields, limits)

    async def _checked(self, fn, *args):
        """``fn(*args)`` off the event loop; an :class:`ActionError` becomes its HTTP status (and ``Retry-After``)."""
        try:
            return await self.in_thread(fn, *args)
        except ActionError as exc:
            self.retry_after = exc.retry_after
            raise web.HTTPError(exc.status, str(exc).replace("%", "%%")) from None
