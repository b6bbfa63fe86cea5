"""The grading service's web application: a JSON API for notebooks and pages for people, under the hub's prefix.

Every route is under ``$JUPYTERHUB_SERVICE_PREFIX`` (``/services/agtool-grader/``
on a hub). Who is calling comes from the hub (``jupyterhub.services.auth.HubOAuth``):
the API takes a hub token in the ``Authorization: token ...`` header (a
learner's server has one: ``$JUPYTERHUB_API_TOKEN``); the pages log people in
through the hub's OAuth. Instructors are hub admins and members of the hub
group ``instructor_group``; everyone else the hub lets in is a learner and
sees only their own attempts.

Routes (relative to the prefix)::

    POST api/submissions        body: the module's bytes (Content-Type: text/x-python) -> 202 {"id", "status"}
    GET  api/submissions        the caller's attempts, newest first (instructors: ?learner=NAME)
    GET  api/submissions/ID     one attempt with its report once graded; 404 for another learner's
    GET  api/class              instructors: one row per learner, pass rates, common wrong answers
    GET  api/course             the caller's due dates and attempts left (null without --course)
    GET  grades.csv             instructors: the gradebook in ``agtool-grade batch``'s columns
    GET  lms/canvas.csv, lms/moodle.csv, lms/unmatched.csv   instructors, with --roster: LMS import files
    GET  ""                     page: the caller's attempts with their feedback
    GET  class                  page (instructors): the class, reloading itself
    GET  learners/NAME          page (instructors): one learner's attempts
    GET  learners/NAME/feedback.md   (instructors) that learner's best attempt's feedback, Markdown

Example::

    >>> settings = Settings(prefix="/services/agtool-grader/")
    >>> settings.max_bytes, settings.rate_limit, settings.rate_window
    (262144, 10, 60.0)
"""
from __future__ import annotations

import datetime as dt
import logging
import os

from tornado import web

from grader.report import new_seed
from grader.service import classview, course, pages
from grader.service.db import Store, iso, utcnow
from grader.service.queue import GradingQueue
from grader.service.settings import CONTENT_TYPES, Settings

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


class _Base(_auth_mixins(), web.RequestHandler):
    def initialize(self, store: Store, queue: GradingQueue, settings: Settings, hub_auth) -> None:
        self.store, self.queue, self.conf, self.hub_auth = store, queue, settings, hub_auth

    @property
    def learner(self) -> str:
        return self.current_user["name"]

    @property
    def instructor(self) -> bool:
        return is_instructor(self.current_user, self.conf.instructor_group)

    def set_default_headers(self) -> None:
        # Pages show learner text: even escaped, forbid scripts and framing outright.
        self.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Cache-Control", "no-store")


class ApiHandler(_Base):
    """JSON in and out; an unknown caller gets 401 JSON, never a redirect to a login page."""

    def prepare(self) -> None:
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


class SubmissionsHandler(ApiHandler):
    def post(self) -> None:
        if not self.request.headers.get("Authorization"):
            # Cookies alone never submit: only a token, which no other site can send for the learner.
            raise web.HTTPError(401, "submissions need a hub token in the Authorization header")
        ctype = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype not in CONTENT_TYPES:
            raise web.HTTPError(415, f"send the module's bytes with Content-Type: text/x-python (got {ctype!r})")
        body = self.request.body
        if len(body) > self.conf.max_bytes:
            raise web.HTTPError(413, f"the module is {len(body)} bytes; the limit is {self.conf.max_bytes}")
        if not body.strip():
            raise web.HTTPError(400, "the body is empty: send the bytes of your tools.py")
        since = utcnow() - dt.timedelta(seconds=self.conf.rate_window)
        if self.store.count_since(self.learner, since) >= self.conf.rate_limit:
            self.retry_after = int(self.conf.rate_window)
            raise web.HTTPError(429, f"at most {self.conf.rate_limit} submissions per {self.conf.rate_window:g} s; "
                                     "try again in a minute")
        refused = course.refuse(self.store, self.learner, self.conf.course)
        if refused:  # the course file's attempt limit: say when the next attempt is allowed
            self.retry_after = refused[1]
            raise web.HTTPError(429, refused[0])
        attempt_id = self.store.add_attempt(self.learner, body, seed=new_seed())  # stored, then queued
        self.queue.put(attempt_id)
        url = f"{self.conf.prefix}api/submissions/{attempt_id}"
        self.set_header("Location", url)
        self.send_json(202, {"id": attempt_id, "status": "queued", "url": url})

    def get(self) -> None:
        learner = self.get_argument("learner", None)
        if learner is not None and learner != self.learner:
            self.require_instructor()
        self.send_json(200, [a.summary() for a in self.store.attempts_of(learner or self.learner)])


class SubmissionHandler(ApiHandler):
    def get(self, attempt_id: str) -> None:
        attempt = self.store.get(int(attempt_id))
        # Another learner's attempt is "not found", not "forbidden": ids say nothing about who exists.
        if attempt is None or (attempt.learner != self.learner and not self.instructor):
            raise web.HTTPError(404, f"no attempt {attempt_id} of yours")
        self.send_json(200, attempt.detail())


def class_data(store: Store, policy=None) -> tuple[list[dict], list[dict], dict]:
    """(rows per learner, the counting records, pass rates and wrong answers) from what is stored now.

    Without a course policy the best attempt counts; with one, the attempt
    ``grader.course.policy.credit`` picks, with its credited score and why.
    """
    records = _records(store.finished(), policy)
    rows = classview.class_rows(store.all_summaries(), {r["learner"]: r for r in records})
    return rows, records, classview.class_outputs(records)


def _records(attempts, policy) -> list[dict]:
    return course.credited_records(attempts, policy) if policy is not None else classview.best_records(attempts)


class CourseHandler(ApiHandler):
    def get(self) -> None:
        """The caller's due dates and attempts left (``null`` without a course file)."""
        self.send_json(200, course.status(self.store, self.learner, self.conf.course))


class ClassHandler(ApiHandler):
    def get(self) -> None:
        self.require_instructor()
        rows, _records, outputs = class_data(self.store, self.conf.course)
        self.send_json(200, {"updated_at": iso(utcnow()), "learners": rows, **outputs})


class GradesCsvHandler(ApiHandler):
    def get(self) -> None:
        self.require_instructor()
        _rows, records, _outputs = class_data(self.store, self.conf.course)
        self.set_header("Content-Type", "text/csv; charset=utf-8")
        self.set_header("Content-Disposition", 'attachment; filename="grades.csv"')
        self.finish(classview.gradebook_csv(records))


class LmsCsvHandler(ApiHandler):
    """Instructors: Canvas's or Moodle's import CSV of the counting attempts, or the learners the roster missed."""

    def get(self, kind: str) -> None:
        self.require_instructor()
        if self.conf.roster is None:
            raise web.HTTPError(404, "no roster: start the service with --roster FILE (a CSV learner,lms_id)")
        from grader.course import lms

        _rows, records, _outputs = class_data(self.store, self.conf.course)
        rows = lms.grade_rows(records)
        name = (self.conf.course.name if self.conf.course is not None and self.conf.course.name else "agtool lab")
        canvas, unmatched = lms.canvas_csv(rows, self.conf.roster, assignment=name)
        text = {"canvas": canvas, "moodle": lms.moodle_csv(rows, self.conf.roster, assignment=name)[0],
                "unmatched": lms.unmatched_csv(unmatched)}[kind]
        self.set_header("Content-Type", "text/csv; charset=utf-8")
        self.set_header("Content-Disposition", f'attachment; filename="{kind}.csv"')
        self.finish(text)


class PageHandler(_Base):
    """Pages: an unknown visitor is sent to the hub's login (OAuth), then back."""

    def write_error(self, status_code: int, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        self.finish(pages.page(f"{status_code}", f"<h1>{status_code}</h1><p>{pages.esc(message)}</p>"))

    def attempts_html(self, learner: str) -> str:
        attempts = [a.detail() for a in self.store.attempts_of(learner, limit=200)]
        return pages.learner_page(learner, attempts, prefix=self.conf.prefix, is_instructor=self.instructor,
                                  course=course.status(self.store, learner, self.conf.course))


class HomePage(PageHandler):
    @web.authenticated
    def get(self) -> None:
        self.finish(self.attempts_html(self.learner))


class LearnerPage(PageHandler):
    @web.authenticated
    def get(self, learner: str) -> None:
        if learner != self.learner and not self.instructor:
            raise web.HTTPError(404, "no such page")
        self.finish(self.attempts_html(learner))


class LearnerFeedback(PageHandler):
    @web.authenticated
    def get(self, learner: str) -> None:
        if learner != self.learner and not self.instructor:
            raise web.HTTPError(404, "no such page")
        from grader.batch.gradebook import render_feedback

        records = _records([a for a in self.store.finished() if a.learner == learner], self.conf.course)
        if not records:
            raise web.HTTPError(404, f"{learner} has no graded attempt")
        self.set_header("Content-Type", "text/markdown; charset=utf-8")
        self.set_header("Content-Disposition", f'attachment; filename="{learner}-feedback.md"')
        self.finish(render_feedback(records[0]))


class ClassPage(PageHandler):
    @web.authenticated
    def get(self) -> None:
        if not self.instructor:
            raise web.HTTPError(403, "the class page is for instructors")
        rows, _records, outputs = class_data(self.store, self.conf.course)
        self.finish(pages.class_page(rows, outputs, prefix=self.conf.prefix, refresh=self.conf.class_refresh))


def make_app(store: Store, queue: GradingQueue, settings: Settings, hub_auth=None) -> web.Application:
    """The tornado application; ``hub_auth`` defaults to a ``HubOAuth`` configured from ``$JUPYTERHUB_*``."""
    from jupyterhub.services.auth import HubOAuth, HubOAuthCallbackHandler

    if hub_auth is None:
        # The singleton: HubOAuthCallbackHandler finds the same one. It reads $JUPYTERHUB_API_URL, _API_TOKEN,
        # _CLIENT_ID, _SERVICE_PREFIX and _OAUTH_ACCESS_SCOPES (the hub sets them for a managed service).
        hub_auth = HubOAuth.instance()
    p = settings.prefix
    args = {"store": store, "queue": queue, "settings": settings, "hub_auth": hub_auth}
    learner_name = r"([^/]+)"
    routes = [
        (rf"{p}api/submissions/?", SubmissionsHandler, args),
        (rf"{p}api/submissions/(\d+)", SubmissionHandler, args),
        (rf"{p}api/class", ClassHandler, args),
        (rf"{p}api/course", CourseHandler, args),
        (rf"{p}grades\.csv", GradesCsvHandler, args),
        (rf"{p}lms/(canvas|moodle|unmatched)\.csv", LmsCsvHandler, args),
        (rf"{p}oauth_callback", HubOAuthCallbackHandler),
        (rf"{p}class", ClassPage, args),
        (rf"{p}learners/{learner_name}/feedback\.md", LearnerFeedback, args),
        (rf"{p}learners/{learner_name}", LearnerPage, args),
        (rf"{p}?", HomePage, args),
    ]
    return web.Application(routes, hub_auth=hub_auth, cookie_secret=_cookie_secret(), xsrf_cookies=False)


def _cookie_secret() -> bytes:
    # HubOAuth keeps its OAuth state in a signed cookie; a fresh secret per start only logs people in again.
    return os.urandom(32)

