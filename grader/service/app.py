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
learner keeps at most ``max_learner_bytes`` of attempts (then 413 saying so).

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
from tornado.ioloop import IOLoop

from grader.outputs import lms
from grader.outputs.feedback import render_feedback
from grader.outputs.gradescope_results import gradescope_text, gradescope_zip
from grader.outputs.record import LearnerRecord, as_records
from grader.outputs.similarity import similarity_outputs
from grader.report import new_seed
from grader.service import action_handlers, action_pages, attempt_policy, classview, code_pages, exports, layout, pages
from grader.service.actions import apply_overrides, with_extensions
from grader.service.actions_db import ActionLog, overrides_of, terms_by_learner
from grader.service.db import Store, iso, utcnow
from grader.service.hubauth import TokenCache
from grader.service.options import CONTENT_TYPES, UPLOAD_RETRY_AFTER, ServiceOptions
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
        used = self.store.stored_bytes_of(self.learner)
        if used + size > self.conf.max_learner_bytes:
            raise web.HTTPError(413, f"your kept attempts take {used} bytes; each learner may keep at most "
                                     f"{self.conf.max_learner_bytes} bytes of attempts (sources and reports). "
                                     "Ask your instructor to remove old attempts or raise --max-learner-bytes; "
                                     "your counting grade is kept")

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


def class_data(store: Store, policy=None) -> "tuple[list[dict], list[LearnerRecord], dict]":
    """(rows per learner, the counting records, pass rates and wrong answers) from what is stored now.

    Without a course policy the best attempt counts; with one, the attempt
    ``grader.course.policy.credit`` picks, with its credited score and why.

    >>> store = Store("sqlite://")
    >>> a = store.add_attempt("ana", b"x = 1\\n", seed=1)
    >>> rows, records, outputs = class_data(store)
    >>> rows[0]["pending"], records, outputs
    (1, [], {'checks': [], 'wrong_answers': []})
    """
    actions = ActionLog(store).all()
    terms = terms_by_learner(actions)  # extensions and extra attempts, then overrides: the grade that counts
    records = apply_overrides(with_extensions(counting_records(store, policy, terms), terms), actions)
    rows = classview.class_rows(store.all_summaries(), {r.learner: r for r in records})
    return rows, records, classview.class_outputs(records)


def counting_records(store: Store, policy=None, terms: "dict | None" = None) -> "list[LearnerRecord]":
    """Each learner's counting attempt, reading the reports of those attempts only (not every attempt's).

    The choice is made on the stored scores; a course policy with check
    weights needs every graded report (the weights apply per check).
    """
    rows = store.graded_scores()
    if policy is None:
        best: dict = {}
        for r in rows:
            kept = best.get(r.learner)
            if kept is None or (r.score, r.id) >= (kept.score, kept.id):
                best[r.learner] = r
        return classview.best_records(store.with_reports(r.id for r in best.values()))
    if policy.weights:
        return attempt_policy.credited_records(store.with_reports(r.id for r in rows), policy, terms)
    return attempt_policy.credited_from_scores(rows, policy, store.with_reports, terms)


def _records(attempts, policy, actions=()) -> "list[LearnerRecord]":
    terms = terms_by_learner(actions)
    records = (attempt_policy.credited_records(attempts, policy, terms) if policy is not None
               else classview.best_records(attempts))
    return apply_overrides(with_extensions(records, terms), list(actions))


def course_status(store: Store, learner: str, policy) -> "dict | None":
    """``GET api/course`` of ``learner``: their own dates and limit; ``counted`` says when a grade was overridden."""
    log = ActionLog(store)
    actions = log.all(learner)
    shown = attempt_policy.status(store, learner, policy, terms=terms_by_learner(actions).get(learner))
    override = overrides_of(actions).get(learner)
    if shown is not None and shown.get("counted") and override is not None:
        shown["counted"] = {**shown["counted"], "credited": override["data"]["score"],
                            "why": f"set by your instructor: {override['reason']}"}
    return shown


class CourseHandler(ApiHandler):
    def get(self) -> None:
        """The caller's due dates and attempts left (``null`` without a course file)."""
        self.send_json(200, course_status(self.store, self.learner, self.conf.course))


class ClassHandler(ApiHandler):
    async def get(self) -> None:
        self.require_instructor()
        rows, _records, outputs = await self.in_thread(self.class_now)
        self.send_json(200, {"updated_at": iso(utcnow()), "learners": rows, **outputs})


class GradesCsvHandler(ApiHandler):
    async def get(self) -> None:
        self.require_instructor()
        text = await self.in_thread(self.derived, "grades.csv", _gradebook_csv)
        self.download("grades.csv", "text/csv; charset=utf-8", text)


class GradescopeZipHandler(ApiHandler):
    """Instructors: every learner's Gradescope ``results.json`` (of the counting attempt) in one zip."""

    async def get(self) -> None:
        self.require_instructor()
        body = await self.in_thread(self.derived, "gradescope.zip", gradescope_zip)
        self.download("gradescope.zip", "application/zip", body)


class PlotHandler(ApiHandler):
    """Instructors: one of ``batch``'s class plots, PNG or SVG, drawn from the counting attempts."""

    async def get(self, name: str, fmt: str) -> None:
        self.require_instructor()
        from grader.outputs.plots import PLOT_TYPES, plot_bytes  # matplotlib: only when a plot is asked for

        body = await self.in_thread(self.derived, f"plot:{name}.{fmt}", lambda records: plot_bytes(records, name, fmt))
        self.set_header("Content-Type", PLOT_TYPES[fmt])
        self.set_header("Content-Disposition", exports.attachment(f"{name}.{fmt}").replace("attachment", "inline", 1))
        self.finish(body)


class SimilarityHandler(ApiHandler):
    """Instructors: ``similarity.html`` / ``similarity.csv`` of each learner's counting attempt.

    The reference solution (``--reference``) is given to the comparison only:
    its text is never in the page, and learners never reach this route.
    """

    async def get(self, kind: str) -> None:
        self.require_instructor()
        out = await self.in_thread(self.similarity)
        if kind == "html":
            self.download("similarity.html", "text/html; charset=utf-8", out["html"])
        else:
            self.download("similarity.csv", "text/csv; charset=utf-8", out["csv"])

    def similarity(self) -> dict:
        return self.derived("similarity", lambda records: similarity_of(self.store, records, self.conf.references))


def similarity_of(store: Store, records, references: "dict[str, str] | None") -> dict:
    """:func:`grader.outputs.similarity.similarity_outputs` of each learner's counting attempt's stored source.

    References are compared, never shown: the page reaches more people than a batch's folder.

    >>> store = Store("sqlite://")
    >>> code = b"def f(a, b):\\n    return a + b * 2 - a + b * 3 - a * b + a - b * 4 + a * a - b * b\\n"
    >>> ids = [store.add_attempt(who, code, seed=1) for who in ("ana", "bob")]
    >>> out = similarity_of(store, [{"learner": "ana", "attempt": ids[0], "report": {}},
    ...                             {"learner": "bob", "attempt": ids[1], "report": {}}], None)
    >>> [(p.a, p.b, p.kind) for p in out["pairs"]]
    [('ana', 'bob', 'pair')]
    """
    records = as_records(records)
    sources = store.sources([r.attempt for r in records])
    texts = {r.learner: sources[r.attempt].decode("utf-8", "replace") for r in records if r.attempt in sources}
    return similarity_outputs(texts, references or None, show_references=False)


def lms_files(records, settings: ServiceOptions) -> "dict[str, str] | None":
    """:func:`grader.outputs.lms.lms_files` of the counting records (None without a roster).

    >>> from grader.outputs.lms import read_roster_text
    >>> records = [{"learner": "ana", "report": {"score": 5, "max_score": 10}}]
    >>> files = lms_files(records, ServiceOptions(roster=read_roster_text("learner,lms_id\\nana,7\\nbob,8\\n")))
    >>> files["canvas"].splitlines()[2], files["list"]
    ('ana,7,,,,5', [('bob', 'in the roster, but no graded submission')])
    >>> lms_files(records, ServiceOptions()) is None
    True
    """
    if settings.roster is None:
        return None
    name = settings.course.name if settings.course is not None and settings.course.name else "agtool lab"
    return lms.lms_files(records, settings.roster, assignment=name)


def _gradebook_csv(records) -> str:
    from grader.outputs.gradebook import gradebook_csv  # pandas: only when the gradebook is asked for

    return gradebook_csv(records)


class LmsCsvHandler(ApiHandler):
    """Instructors: Canvas's or Moodle's import CSV of the counting attempts, or the learners the roster missed."""

    async def get(self, kind: str) -> None:
        self.require_instructor()
        if self.conf.roster is None:
            raise web.HTTPError(404, "no roster: start the service with --roster FILE (a CSV learner,lms_id)")
        files = await self.in_thread(self.derived, "lms", lambda records: lms_files(records, self.conf))
        self.download(f"{kind}.csv", "text/csv; charset=utf-8", files[kind])


class PageHandler(_Base):
    """Pages: an unknown visitor is sent to the hub's login (OAuth), then back."""

    def write_error(self, status_code: int, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        chrome = self.chrome() if self.current_user else None
        self.finish(pages.page(f"{status_code}", f"<h1>{status_code}</h1><p>{pages.esc(message)}</p>", chrome=chrome))

    def chrome(self) -> "layout.Chrome":
        """Who reads the page and where the hub is (its stylesheet, logo, home and the reader's lab)."""
        hub_prefix = getattr(self.hub_auth, "hub_prefix", "") if os.environ.get("JUPYTERHUB_API_URL") else ""
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
        return action_pages.changes_section(actions, log.past_results(learner), viewer=self.learner, learner=learner,
                                            prefix=self.conf.prefix, xsrf=self.xsrf_form_html(), attempts=attempts,
                                            instructor=self.instructor)


class CodePage(PageHandler):
    """``learners/NAME/attempts/ID/code``: an attempt's code, escaped, with line numbers (instructors; the learner)."""

    @web.authenticated
    def get(self, learner: str, text: str) -> None:
        attempt_id = attempt_id_of(text)
        attempt = None if attempt_id is None else self.store.get(attempt_id)
        if attempt is None or attempt.learner != learner or (learner != self.learner and not self.instructor):
            raise web.HTTPError(404, "no such attempt")
        back = f"{self.conf.prefix}learners/{quote(learner, safe='')}"
        self.finish(code_pages.code_page(learner, attempt_id, attempt.source, chrome=self.chrome(), back=back))


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
        left, right = ((name, records[name].attempt, sources.get(records[name].attempt, b"")) for name in names)
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
        log = ActionLog(self.store)  # the class's actions and open regrade requests (answered on class/actions)
        self.finish(action_pages.insert_section(document, action_pages.class_section(
            log.all(), log.past_results(), prefix=self.conf.prefix, xsrf="", forms=False)))


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
    return web.Application(routes, hub_auth=hub_auth, cookie_secret=_cookie_secret(), xsrf_cookies=False)


def _cookie_secret() -> bytes:
    # HubOAuth keeps its OAuth state in a signed cookie; a fresh secret per start only logs people in again.
    return os.urandom(32)

