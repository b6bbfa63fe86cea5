"""The REST API of attempts: a learner's module in (streamed, read only once the caller and the limits allow it), attempts out.

Routes (relative to the prefix)::

    POST api/submissions        body: the module's bytes (Content-Type: text/x-python) -> 202 {"id", "status"}
    GET  api/submissions        the caller's attempts, newest first (instructors: ?learner=NAME)
    GET  api/submissions/ID     one attempt with its report once graded; 404 for another learner's, or a bad id

Hostile callers: the caller is known from the headers before any body byte
is read (only after the token is checked may the body exceed
``PRE_AUTH_BYTES``); at most ``max_uploads`` uploads are read at once (then
503, Retry-After); a learner keeps at most ``max_learner_bytes`` of attempts
and regrade requests (then 413 saying so); the rate limit and the course's
attempt limit answer 429 with Retry-After.
"""

from __future__ import annotations

import datetime as dt

from tornado import web

from grader.report import new_seed
from grader.service import attempt_policy
from grader.service.actions_db import ActionLog, kept_bytes
from grader.service.api.base import ApiHandler
from grader.service.base import attempt_id_of
from grader.service.db import utcnow
from grader.service.options import CONTENT_TYPES, UPLOAD_RETRY_AFTER


@web.stream_request_body
class SubmissionsHandler(ApiHandler):
    """``POST``: the body is streamed, read only once the caller, the limits and the upload cap allow it."""

    async def prepare(self) -> None:
        self._chunks, self._size, self._entered = [], 0, False
        await super().prepare()  # 401 for an unknown caller: the connection closes, no body byte read
        if self._finished or self.request.method != "POST":
            return
        self.admit(int(self.request.headers.get("Content-Length") or 0))
        if not self.uploads.enter():
            self.retry_after = UPLOAD_RETRY_AFTER
            raise web.HTTPError(
                503, f"{self.uploads.cap} uploads are being received; try again in {UPLOAD_RETRY_AFTER} s"
            )
        self._entered = True
        self.request.connection.set_max_body_size(self.conf.max_bytes)  # the real cap, now the caller is known

    def data_received(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._size <= self.conf.max_bytes:  # over it (chunked bodies), post() answers 413 with nothing kept
            self._chunks.append(chunk)

    def on_finish(self) -> None:
        self._leave()

    def on_connection_close(self) -> None:
        self._leave()
        super().on_connection_close()

    def _leave(self) -> None:
        if getattr(self, "_entered", False):
            self._entered = False
            self.uploads.leave()

    def admit(self, size: int) -> None:
        """Refuse an upload before its body is read: no token, wrong type, too big, over a limit."""
        if not self.request.headers.get("Authorization"):
            # Cookies alone never submit: only a token, which no other site can send for the learner.
            raise web.HTTPError(401, "submissions need a hub token in the Authorization header")
        ctype = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype not in CONTENT_TYPES:
            raise web.HTTPError(415, f"send the module's bytes with Content-Type: text/x-python (got {ctype!r})")
        if size > self.conf.max_bytes:
            raise web.HTTPError(413, f"the module is {size} bytes; the limit is {self.conf.max_bytes}")
        self.check_limits(size)

    def check_limits(self, size: int) -> None:
        """The rate limit, the course's attempt limit and the learner's storage bound (errors never count)."""
        since = utcnow() - dt.timedelta(seconds=self.conf.rate_window)
        not_stored = self.queue.not_stored()
        if self.store.count_since(self.learner, since, not_stored) >= self.conf.rate_limit:
            self.retry_after = int(self.conf.rate_window)
            raise web.HTTPError(
                429,
                f"at most {self.conf.rate_limit} submissions per {self.conf.rate_window:g} s; try again in a minute",
            )
        refused = attempt_policy.refuse(
            self.store,
            self.learner,
            self.conf.course,
            exclude=not_stored,
            terms=ActionLog(self.store).terms(self.learner),
        )
        if refused:  # the course file's attempt limit: say when the next attempt is allowed
            self.retry_after = refused[1]
            raise web.HTTPError(429, refused[0])
        used = kept_bytes(self.store, self.learner)  # attempts and regrade requests: one bound
        if used + size > self.conf.max_learner_bytes:
            raise web.HTTPError(
                413,
                f"your kept attempts and regrade requests take {used} bytes; each learner may "
                f"keep at most {self.conf.max_learner_bytes} bytes (sources, reports and "
                "regrade requests). Ask your instructor to remove old attempts or raise "
                "--max-learner-bytes; your counting grade is kept",
            )

    def post(self) -> None:
        if self._size > self.conf.max_bytes:
            raise web.HTTPError(413, f"the module is {self._size} bytes; the limit is {self.conf.max_bytes}")
        body = b"".join(self._chunks)
        if not body.strip():
            raise web.HTTPError(400, "the body is empty: send the bytes of your tools.py")
        self.check_limits(len(body))  # again: another upload of the same learner may have been stored meanwhile
        attempt_id = self.store.add_attempt(self.learner, body, seed=new_seed())  # stored, then queued
        self.queue.put(attempt_id, self.learner)
        url = f"{self.conf.prefix}api/submissions/{attempt_id}"
        self.set_header("Location", url)
        self.send_json(
            202,
            {
                "id": attempt_id,
                "number": self.store.attempt_number(self.learner, attempt_id),
                "status": "queued",
                "url": url,
            },
        )

    def get(self) -> None:
        learner = self.get_argument("learner", None)
        if learner is not None and learner != self.learner:
            self.require_instructor()
        self.send_json(200, self.store.summaries_of(learner or self.learner))


class SubmissionHandler(ApiHandler):
    def get(self, text: str) -> None:
        attempt_id = attempt_id_of(text)
        attempt = None if attempt_id is None else self.store.get(attempt_id)
        # Another learner's attempt is "not found", not "forbidden": ids say nothing about who exists.
        if attempt is None or (attempt.learner != self.learner and not self.instructor):
            raise web.HTTPError(
                404, "no such attempt of yours" if attempt_id is None else f"no attempt {attempt_id} of yours"
            )
        self.send_json(200, {**attempt.detail(), "number": self.store.attempt_number(attempt.learner, attempt.id)})
