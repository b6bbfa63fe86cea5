"""The HTTP side of instructor actions: JSON API and HTML forms, mixed into the service's handlers in ``app.py``.

Routes (relative to the prefix; ``app.make_app`` lists them)::

    GET  api/actions            instructors: every action (?learner=NAME: theirs); a learner: their own
    POST api/actions/KIND       instructors (JSON): extension, attempts, override, regrade, answer -> 201 the action
    POST api/appeals            a learner (JSON {"attempt", "text"}): a regrade request about their own attempt
                                (at most ``appeal_limit`` per ``appeal_window``: 429 with Retry-After; within the
                                learner's storage bound: 413)
    POST actions/KIND           the same as forms (instructors), then back to the page (303)
    POST appeals                a learner's regrade request as a form, then back to their page (303)
    GET  class/actions          page (instructors): open requests with answer forms, the class regrade, the log

A learner calling an instructor route gets 403. The API takes the hub token
in the ``Authorization`` header, as ``POST api/submissions`` does; a form
comes with the hub's login cookie and must carry the page's ``_xsrf`` field
(JupyterHub's check, :mod:`jupyterhub._xsrf_utils`). Bodies are streamed and
read only once the caller is known (then up to :data:`MAX_BODY` bytes), so a
long text is refused with a message (413 or 400), not a dropped connection;
the XSRF check then runs on the body's fields, before anything is done.

Example::

    >>> safe_next("/s/learners/ana", "/s/"), safe_next("//evil.example/", "/s/"), safe_next("/s/\\r\\nX: y", "/s/")
    ('/s/learners/ana', '/s/', '/s/')
"""
from __future__ import annotations

import json
import re

from tornado import httputil, web

from grader.service import action_pages
from grader.service.actions import ActionError, Context, RequestLimits, file_appeal, perform
from grader.service.actions_db import REGRADE, ActionLog

MAX_BODY = 64 * 1024  # bytes of one action's fields, once the caller is known (texts are capped in characters)
_SAFE_PATH = re.compile(r"[A-Za-z0-9/._~%-]*\Z")


def safe_next(target: "str | None", prefix: str) -> str:
    """Where a form sends the browser back: a path under the service's prefix, else the prefix itself."""
    if target and target.startswith(prefix) and "//" not in target and _SAFE_PATH.match(target):
        return target
    return prefix


def learner_view(actions: "list[dict]", learner: str, own_ids: "set[int]") -> "list[dict]":
    """The actions as ``learner`` may see them: a class-wide regrade lists only their own attempts.

    >>> learner_view([{"kind": "regrade", "learner": None, "data": {"scope": "all", "attempts": [1, 2]}}], "ana", {2})
    [{'kind': 'regrade', 'learner': None, 'data': {'scope': 'all', 'attempts': [2]}}]
    """
    shown = []
    for a in actions:
        if a["learner"] is None and a["kind"] == REGRADE:
            a = {**a, "data": {**a["data"], "attempts": [i for i in a["data"].get("attempts", []) if i in own_ids]}}
        shown.append(a)
    return shown


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
            raise web.HTTPError(403, f"instructors only (hub admins and members of the group "
                                     f"{self.conf.instructor_group!r})")
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


class ActionsApi(FieldsMixin):
    """``GET api/actions``, ``POST api/actions/KIND`` (JSON; mixed into ``app.ApiHandler``)."""

    def get(self, kind: "str | None" = None) -> None:
        if kind:
            raise web.HTTPError(405, "POST an action")
        log = ActionLog(self.store)
        learner = self.get_argument("learner", None)
        if self.instructor:
            self.send_json(200, {"actions": log.all(learner, with_class=learner is not None),
                                 "past_results": log.past_results(learner)})
            return
        own = {s["id"] for s in self.store.summaries_of(self.learner)}
        self.send_json(200, {"actions": learner_view(log.all(self.learner, with_class=True), self.learner, own),
                             "past_results": log.past_results(self.learner)})

    async def post(self, kind: "str | None" = None) -> None:
        if not kind:
            raise web.HTTPError(404, "POST api/actions/KIND: extension, attempts, override, regrade or answer")
        self.send_json(201, await self.act(kind))


class AppealsApi(FieldsMixin):
    """``POST api/appeals`` (JSON ``{"attempt": ID, "text": ...}``): a learner's regrade request."""

    async def post(self) -> None:
        self.send_json(201, await self.appeal())


class ActionForms(FieldsMixin):
    """``POST actions/KIND`` and ``POST appeals`` as forms (mixed into ``app.PageHandler``): 303 back to the page."""

    @web.authenticated
    async def post(self, kind: "str | None" = None) -> None:
        if kind:
            await self.act(kind)
        else:
            await self.appeal()
        self.redirect(safe_next(self.request.body_arguments.get("next", [b""])[-1].decode("utf-8", "replace"),
                                self.conf.prefix), status=303)


class ActionsPage:
    """``class/actions``: the page without reloads where instructors answer requests and regrade the class."""

    @web.authenticated
    def get(self) -> None:
        if not self.instructor:
            raise web.HTTPError(403, "the instructor actions page is for instructors")
        log = ActionLog(self.store)
        self.finish(action_pages.actions_page(log.all(), log.past_results(), prefix=self.conf.prefix,
                                              xsrf=self.xsrf_form_html(), chrome=self.chrome()))
