"""The grading service's web application: its routes, a JSON API for notebooks and pages for people, under the hub's prefix.

This module only wires routes to handlers: the REST API's are
:mod:`grader.service.api`'s (JSON and downloads), the pages' are
:mod:`grader.service.handlers`' (HTML from the templates of
``grader/service/templates``), as JupyterHub keeps ``apihandlers/`` apart
from ``handlers/``; what they share is :mod:`grader.service.base`'s.

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
    GET  api/actions, POST api/actions/KIND, POST api/appeals   instructor actions and regrade requests (JSON)
    POST actions/KIND, POST appeals, GET class/actions         the same from the pages, and the page to answer

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

import logging
import os

from tornado import web

from grader.service import exports
from grader.service.api.actions import ActionsApiHandler, AppealsApiHandler
from grader.service.api.base import ApiHandler  # noqa: F401 - callers import it from here
from grader.service.api.classes import (
    ClassHandler,
    CourseHandler,
    GradescopeZipHandler,
    GradesCsvHandler,
    LmsCsvHandler,
    PlotHandler,
    SimilarityHandler,
)
from grader.service.api.submissions import SubmissionHandler, SubmissionsHandler
from grader.service.base import (  # noqa: F401 - callers import them here
    BaseHandler,
    Uploads,
    _Base,
    attempt_id_of,
    is_instructor,
)
from grader.service.class_records import class_data, counting_records  # noqa: F401 - callers import them from here
from grader.service.db import Store
from grader.service.exports import lms_files, similarity_of  # noqa: F401 - callers import them from here
from grader.service.handlers.actions import ActionFormsHandler, ActionsPageHandler
from grader.service.handlers.base import PageHandler  # noqa: F401 - callers import it from here
from grader.service.handlers.classes import ClassPage, SimilarityPage
from grader.service.handlers.learners import CodePage, HomePage, LearnerFeedback, LearnerPage
from grader.service.hubauth import TokenCache
from grader.service.options import ServiceOptions
from grader.service.queue import GradingQueue

log = logging.getLogger("agtool.service")


def make_app(
    store: Store, queue: GradingQueue, settings: ServiceOptions, hub_auth=None, tokens: TokenCache | None = None
) -> web.Application:
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
    args = {
        "store": store,
        "queue": queue,
        "settings": settings,
        "hub_auth": hub_auth,
        "cache": exports.ClassCache(),
        "tokens": tokens if tokens is not None else TokenCache(),
        "uploads": Uploads(settings.max_uploads),
    }
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
        from grader.service.api.lti import JwksHandler, LtiSendApiHandler
        from grader.service.handlers.lti import DeepLinkHandler, LtiPagesHandler

        routes[:0] = [
            (rf"{p}lti/jwks\.json", JwksHandler, {"lti": settings.lti}),
            (rf"{p}api/lti/send", LtiSendApiHandler, args),
            (rf"{p}(?:class/lti|lti/send)", LtiPagesHandler, args),
            (rf"{p}lti/deep-link", DeepLinkHandler, args),
        ]
    return web.Application(routes, hub_auth=hub_auth, cookie_secret=_cookie_secret(), xsrf_cookies=False)


def _cookie_secret() -> bytes:
    # HubOAuth keeps its OAuth state in a signed cookie; a fresh secret per start only logs people in again.
    return os.urandom(32)
