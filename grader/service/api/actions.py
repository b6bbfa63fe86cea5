"""The REST API of instructor actions and regrade requests (the same as forms: :mod:`grader.service.handlers.actions`).

Routes (relative to the prefix)::

    GET  api/actions            instructors: every action (?learner=NAME: theirs); a learner: their own
    POST api/actions/KIND       instructors (JSON): extension, attempts, override, regrade, answer -> 201 the action
    POST api/appeals            a learner (JSON {"attempt", "text"}): a regrade request about their own attempt
                                (at most ``appeal_limit`` per ``appeal_window``: 429 with Retry-After; within the
                                learner's storage bound: 413)

A learner calling an instructor route gets 403. The API takes the hub token
in the ``Authorization`` header, as ``POST api/submissions`` does. Bodies are
streamed and read only once the caller is known (then up to
:data:`grader.service.base.MAX_BODY` bytes), so a long text is refused with a
message (413 or 400), not a dropped connection.
"""

from __future__ import annotations

from tornado import web

from grader.service.actions_db import ActionLog, learner_view
from grader.service.api.base import ApiHandler
from grader.service.base import FieldsMixin


class ActionsApiHandler(FieldsMixin, ApiHandler):
    """``GET api/actions``, ``POST api/actions/KIND`` (JSON)."""

    def get(self, kind: str | None = None) -> None:
        if kind:
            raise web.HTTPError(405, "POST an action")
        log = ActionLog(self.store)
        learner = self.get_argument("learner", None)
        if self.instructor:
            self.send_json(
                200,
                {
                    "actions": log.all(learner, with_class=learner is not None),
                    "past_results": log.past_results(learner),
                },
            )
            return
        own = {s["id"] for s in self.store.summaries_of(self.learner)}
        self.send_json(
            200,
            {
                "actions": learner_view(log.all(self.learner, with_class=True), self.learner, own),
                "past_results": log.past_results(self.learner),
            },
        )

    async def post(self, kind: str | None = None) -> None:
        if not kind:
            raise web.HTTPError(404, "POST api/actions/KIND: extension, attempts, override, regrade or answer")
        self.send_json(201, await self.act(kind))


class AppealsApiHandler(FieldsMixin, ApiHandler):
    """``POST api/appeals`` (JSON ``{"attempt": ID, "text": ...}``): a learner's regrade request."""

    async def post(self) -> None:
        self.send_json(201, await self.appeal())
