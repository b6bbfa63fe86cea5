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
    GET  api/submissions/ID     one attempt with its report once graded; 404 for another learner's, or a bad id
    GET  api/class              instructors: one row per learner, pass rates, common wrong answers
    GET  api/course             the caller's due dates and attempts left (null without --course)
    GET  grades.csv             instructors: the gradebook in ``agtool-grade batch``'s columns
    GET  gradescope.zip         instructors: gradescope/<learner>/results.json of every learner
    GET  plots/NAME.png|svg     instructors: batch's plots (score_histogram, check_pass_rate, step_scores)
    GET  similarity.html, similarity.csv   instructors: shared code between the counting attempts
    GET  lms/canvas.csv, lms/moodle.csv, lms/unmatched.csv   instructors, with --roster: LMS import files
    GET  ""                     page: the caller's attempts with their feedback
    GET  class                  page (instructors): the class, reloading itself
    GET  learners/NAME          page (instructors; a learner: their own): one learner's attempts
    GET  learners/NAME/feedback.md      (instructors; a learner: their own) the counting attempt's feedback
    GET  learners/NAME/results.json     (instructors; a learner: their own) its Gradescope results.json
    GET  learners/NAME/attempts/ID/code (instructors; a learner: their own) page: the attempt's code, numbered
    GET  similarity, similarity/compare?a=NAME&b=NAME   pages (instructors): similar pairs, two codes side by side
    GET  api/actions, POST api/actions/KIND, POST api/appeals, POST actions/KIND, POST appeals, GET class/actions
                                instructor actions and regrade requests (grader.service.action_handlers)

Hostile callers: the caller is known from the headers before any body byte
is read (``POST api/submissions`` streams its body, and only after the token
is checked may it exceed ``PRE_AUTH_BYTES``); token answers are awaited, never
blocking the event loop, and cached briefly (:mod:`grader.service.hubauth`);
at most ``max_uploads`` uploads are read at once (then 503, Retry-After); a
learner keeps at most ``max_learner_bytes`` of attempts and regrade requests
(then 413 saying so) and files at most ``appeal_limit`` requests per
``appeal_window`` (then 429, Retry-After); the class page counts the open
requests instead of quoting them all.

Every download has a ``Content-Disposition: attachment`` with a safe file
name (:func:`grader.service.exports.attachment`). The class's outputs
(:mod:`grader.outputs`, as ``batch`` writes them) are computed off the event loop and kept while the class is unchanged
(:class:`grader.service.exports.ClassCache`).

Example::

    >>> settings = ServiceOptions(prefix="/services/agtool-grader/")
    >>> settings.max_bytes, settings.rate_limit, settings.rate_window
    (262144, 10, 60.0)
"""
from __future__ import annotations

import datetime as dt
import logging
import os
from urllib.parse import quote

from tornado import web

from grader.outputs.feedback import render_feedback
from grader.outputs.gradescope_results import gradescope_text
from grader.report import new_seed
from grader.service import action_handlers, action_pages, attempt_policy, code_pages, exports, layout, pages
from grader.service.actions_db import INSTRUCTOR_KINDS, ActionLog, kept_bytes
from grader.service.class_handlers import (ClassHandler, CourseHandler, GradesCsvHandler, GradescopeZipHandler,
                                           LmsCsvHandler, PlotHandler, SimilarityHandler, lms_files, similarity_of)
from grader.service.class_records import _records, course_status
from grader.service.class_records import class_data, counting_records  # noqa: F401 - callers import them from here
from grader.service.db import Store, utcnow
from grader.service.handlers import ApiHandler, Uploads, _Base, attempt_id_of  # noqa: F401
from grader.service.handlers import is_instructor  # noqa: F401 - callers import it from here
from grader.service.hubauth import TokenCache
from grader.service.options import APPEAL_PREVIEW, CONTENT_TYPES, UPLOAD_RETRY_AFTER, ServiceOptions
from grader.service.queue import GradingQueue
from grader.settings import current

log = logging.getLogger("agtool.service")


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
            raise web.HTTPError(503, f"{self.uploads.cap} uploads are being received; try again in "
                                     f"{UPLOAD_RETRY_AFTER} s")
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
            raise web.HTTPError(429, f"at most {self.conf.rate_limit} submissions per {self.conf.rate_window:g} s; "
                                     "try again in a minute")
        refused = attempt_policy.refuse(self.store, self.learner, self.conf.course, exclude=not_stored,
                                        terms=ActionLog(self.store).terms(self.learner))
        if refused:  # the course file's attempt limit: say when the next attempt is allowed
            self.retry_after = refused[1]
            raise web.HTTPError(429, refused[0])
        used = kept_bytes(self.store, self.learner)  # attempts and regrade requests: one bound
        if used + size > self.conf.max_learner_bytes:
            raise web.HTTPError(413, f"your kept attempts and regrade requests take {used} bytes; each learner may "
                                     f"keep at most {self.conf.max_learner_bytes} bytes (sources, reports and "
                                     "regrade requests). Ask your instructor to remove old attempts or raise "
                                     "--max-learner-bytes; your counting grade is kept")

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
        self.send_json(202, {"id": attempt_id, "status": "queued", "url": url})

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
            raise web.HTTPError(404, "no such attempt of yours" if attempt_id is None
                                else f"no attempt {attempt_id} of yours")
        self.send_json(200, attempt.detail())


class PageHandler(_Base):
    """Pages: an unknown visitor is sent to the hub's login (OAuth), then back."""

    def write_error(self, status_code: int, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        if getattr(self, "retry_after", None):  # a form over a limit (send_error cleared the headers)
            self.set_header("Retry-After", str(self.retry_after))
        chrome = self.chrome() if self.current_user else None
        self.finish(pages.page(f"{status_code}", f"<h1>{status_code}</h1><p>{pages.esc(message)}</p>", chrome=chrome))

    def chrome(self) -> "layout.Chrome":
        """Who reads the page and where the hub is (its stylesheet, logo, home and the reader's lab)."""
        under_hub = (self.conf.settings or current()).hub_api_url  # $JUPYTERHUB_API_URL, read by grader.settings
        hub_prefix = getattr(self.hub_auth, "hub_prefix", "") if under_hub else ""
        return layout.Chrome(prefix=self.conf.prefix, hub_prefix=hub_prefix or "", user=self.learner,
                             instructor=self.instructor)

    def attempts_html(self, learner: str) -> str:
        attempts = [a.detail() for a in self.store.attempts_of(learner, limit=200)]
        document = pages.learner_page(learner, attempts, prefix=self.conf.prefix, is_instructor=self.instructor,
                                      course=course_status(self.store, learner, self.conf.course),
                                      chrome=self.chrome())
        return action_pages.insert_section(document, self.changes_html(learner, attempts))

    def changes_html(self, learner: str, attempts: "list[dict]") -> str:
        """The learner page's "Changes by your instructor": their actions, a regrade request form, instructor forms."""
        log = ActionLog(self.store)
        own = {a["id"] for a in attempts}
        actions = action_handlers.learner_view(log.all(learner, with_class=True), learner, own)
        limit = f"{self.conf.appeal_limit} per {self.conf.appeal_window / 60:g} minutes"
        return action_pages.changes_section(actions, log.past_results(learner), viewer=self.learner, learner=learner,
                                            prefix=self.conf.prefix, xsrf=self.xsrf_form_html(), attempts=attempts,
                                            instructor=self.instructor, request_limit=limit)


class CodePage(PageHandler):
    """``learners/NAME/attempts/ID/code``: an attempt's code, escaped, with line numbers (instructors; the learner)."""

    @web.authenticated
    def get(self, learner: str, text: str) -> None:
        attempt_id = attempt_id_of(text)
        attempt = None if attempt_id is None else self.store.get(attempt_id)
        if attempt is None or attempt.learner != learner or (learner != self.learner and not self.instructor):
            raise web.HTTPError(404, "no such attempt")
        back = f"{self.conf.prefix}learners/{quote(learner, safe='')}"
        number = pages.learner_numbers(self.store.summaries_of(learner))[attempt_id]  # as the learner's page says
        self.finish(code_pages.code_page(learner, number, attempt.source, chrome=self.chrome(), back=back))


class SimilarityPage(PageHandler):
    """``similarity``: the similar pairs; ``similarity/compare?a=&b=``: two counting attempts side by side."""

    @web.authenticated
    async def get(self, compare: "str | None" = None) -> None:
        if not self.instructor:
            raise web.HTTPError(403, "the similarity pages are for instructors")
        if not compare:
            out = await self.in_thread(self.derived, "similarity",
                                       lambda records: similarity_of(self.store, records, self.conf.references))
            self.finish(code_pages.similarity_page(out["pairs"], prefix=self.conf.prefix, chrome=self.chrome()))
            return
        records = {r.learner: r for r in (await self.in_thread(self.class_now))[1]}
        names = [self.get_argument("a", ""), self.get_argument("b", "")]
        if any(name not in records for name in names):
            raise web.HTTPError(404, "both learners need a counting attempt")
        sources = self.store.sources([records[name].attempt for name in names])
        left, right = ((name, pages.learner_numbers(self.store.summaries_of(name))[records[name].attempt],
                        sources.get(records[name].attempt, b"")) for name in names)
        self.finish(code_pages.compare_page(left, right, prefix=self.conf.prefix, chrome=self.chrome()))


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
    """``learners/NAME/feedback.md`` and ``learners/NAME/results.json``: the counting attempt, as ``batch`` writes them."""

    @web.authenticated
    def get(self, learner: str, kind: str) -> None:
        if learner != self.learner and not self.instructor:
            raise web.HTTPError(404, "no such page")
        records = _records(self.store.finished_of(learner), self.conf.course, ActionLog(self.store).all(learner))
        if not records:
            raise web.HTTPError(404, f"{learner} has no graded attempt")
        if kind == "feedback.md":
            self.download(f"{learner}-feedback.md", "text/markdown; charset=utf-8",
                          render_feedback(records[0]))
        else:
            self.download(f"{learner}-results.json", "application/json; charset=utf-8",
                          gradescope_text(records[0]))


class ClassPage(PageHandler):
    @web.authenticated
    async def get(self) -> None:
        if not self.instructor:
            raise web.HTTPError(403, "the class page is for instructors")
        rows, _records, outputs = await self.in_thread(self.class_now)
        lms = await self.in_thread(self.derived, "lms", lambda records: lms_files(records, self.conf))
        document = pages.class_page(rows, outputs, prefix=self.conf.prefix, refresh=self.conf.class_refresh,
                                    chrome=self.chrome(),
                                    unmatched=None if lms is None else lms["list"],
                                    reference=bool(self.conf.references),
                                    insecure=self.conf.sandbox_words if self.conf.insecure else "")
        # The open regrade requests as a count, the oldest few quoted and a link (class/actions has every text and
        # the answer forms), and the log of what instructors did: the page stays small however many requests come.
        log = ActionLog(self.store)
        self.finish(action_pages.insert_section(document, action_pages.class_summary(
            log.open_requests(APPEAL_PREVIEW), log.all(kinds=INSTRUCTOR_KINDS), log.past_results(),
            prefix=self.conf.prefix)))


class ActionsApiHandler(action_handlers.ActionsApi, ApiHandler):
    """``GET api/actions``, ``POST api/actions/KIND``."""


class AppealsApiHandler(action_handlers.AppealsApi, ApiHandler):
    """``POST api/appeals``."""


class ActionFormsHandler(action_handlers.ActionForms, PageHandler):
    """``POST actions/KIND``, ``POST appeals``."""


class ActionsPageHandler(action_handlers.ActionsPage, PageHandler):
    """``GET class/actions``."""


def make_app(store: Store, queue: GradingQueue, settings: ServiceOptions, hub_auth=None,
             tokens: "TokenCache | None" = None) -> web.Application:
    """The tornado application; ``hub_auth`` defaults to a ``HubOAuth`` configured from ``$JUPYTERHUB_*``.

    ``tokens``: the cache of the hub's answers about tokens (default: a new :class:`TokenCache`).
    """
    from jupyterhub.services.auth import HubOAuth, HubOAuthCallbackHandler

    from grader.outputs.plots import PLOTS

    if hub_auth is None:
        # The singleton: HubOAuthCallbackHandler finds the same one. It reads $JUPYTERHUB_API_URL, _API_TOKEN,
        # _CLIENT_ID, _SERVICE_PREFIX and _OAUTH_ACCESS_SCOPES (the hub sets them for a managed service).
        hub_auth = HubOAuth.instance()
    p = settings.prefix
    args = {"store": store, "queue": queue, "settings": settings, "hub_auth": hub_auth,
            "cache": exports.ClassCache(), "tokens": tokens if tokens is not None else TokenCache(),
            "uploads": Uploads(settings.max_uploads)}
    learner_name = r"([^/]+)"
    routes = [
        (rf"{p}api/submissions/?", SubmissionsHandler, args),
        (rf"{p}api/submissions/([^/]+)", SubmissionHandler, args),
        (rf"{p}api/class", ClassHandler, args),
        (rf"{p}api/course", CourseHandler, args),
        (rf"{p}grades\.csv", GradesCsvHandler, args),
        (rf"{p}lms/(canvas|moodle|unmatched)\.csv", LmsCsvHandler, args),
        (rf"{p}gradescope\.zip", GradescopeZipHandler, args),
        (rf"{p}plots/({'|'.join(PLOTS)})\.(png|svg)", PlotHandler, args),
        (rf"{p}similarity\.(html|csv)", SimilarityHandler, args),
        (rf"{p}similarity(?:/(compare))?", SimilarityPage, args),
        (rf"{p}learners/{learner_name}/attempts/([^/]+)/code", CodePage, args),
        (rf"{p}oauth_callback", HubOAuthCallbackHandler),
        (rf"{p}class", ClassPage, args),
        (rf"{p}api/actions(?:/(extension|attempts|override|regrade|answer))?", ActionsApiHandler, args),
        (rf"{p}api/appeals", AppealsApiHandler, args),
        (rf"{p}(?:actions/(extension|attempts|override|regrade|answer)|appeals)", ActionFormsHandler, args),
        (rf"{p}class/actions", ActionsPageHandler, args),
        (rf"{p}learners/{learner_name}/(feedback\.md|results\.json)", LearnerFeedback, args),
        (rf"{p}learners/{learner_name}", LearnerPage, args),
        (rf"{p}?", HomePage, args),
    ]
    if settings.lti is not None:  # --lti FILE: the key set, "send grades to the LMS", the LTI page
        from grader.service import lti_handlers

        routes[:0] = lti_handlers.routes(p, settings.lti, args, ApiHandler, PageHandler)
    return web.Application(routes, hub_auth=hub_auth, cookie_secret=_cookie_secret(), xsrf_cookies=False)


def _cookie_secret() -> bytes:
    # HubOAuth keeps its OAuth state in a signed cookie; a fresh secret per start only logs people in again.
    return os.urandom(32)

