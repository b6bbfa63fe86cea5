"""The grading service's limits and options: plain data, so the command line loads no web server.

(The environment's settings are :mod:`grader.settings`; these are what ``serve`` was started with.)

Example::

    >>> ServiceOptions().max_bytes == MAX_BYTES
    True
"""

from __future__ import annotations

from dataclasses import dataclass

from grader import limits

# The service's limits are declared, with their reasons, in grader.limits; these are their names here.
MAX_BYTES = limits.UPLOAD_BYTES  # the largest module a submission may carry (not SOURCE_BYTES: the service keeps it)
RATE_LIMIT, RATE_WINDOW = limits.RATE_LIMIT, limits.RATE_WINDOW
MAX_LEARNER_BYTES, MAX_UPLOADS, UPLOAD_RETRY_AFTER = limits.LEARNER_BYTES, limits.MAX_UPLOADS, limits.UPLOAD_RETRY_AFTER
PRE_AUTH_BYTES, MAX_HEADER_BYTES = limits.PRE_AUTH_BYTES, limits.HEADER_BYTES
IDLE_TIMEOUT, BODY_TIMEOUT = limits.IDLE_TIMEOUT, limits.BODY_TIMEOUT
APPEAL_LIMIT, APPEAL_WINDOW = limits.APPEAL_LIMIT, limits.APPEAL_WINDOW
CONTENT_TYPES = ("text/x-python", "application/octet-stream")  # not text/plain: a form could post that cross-site
CLASS_REFRESH = 10  # seconds between reloads of the class page
APPEAL_PREVIEW, APPEAL_PREVIEW_CHARS = 3, 200  # the class page quotes the oldest open requests, shortened; the rest
#                                              are a count and a link to class/actions


@dataclass
class ServiceOptions:
    """What the service was started with (``agtool-grade serve``'s options)."""

    prefix: str = "/"
    instructor_group: str = "agtool-instructors"
    max_bytes: int = MAX_BYTES
    rate_limit: int = RATE_LIMIT
    rate_window: float = RATE_WINDOW
    class_refresh: int = CLASS_REFRESH
    roster: object = None  # grader.outputs.lms roster entries by learner (--roster FILE): the LMS downloads
    references: dict = None  # {"reference:tools.py": text} (--reference): compared by similarity, never served
    course: object = None  # a grader.course.policy.Course (--course FILE), or None: no deadline, no attempt limit
    max_learner_bytes: int = MAX_LEARNER_BYTES
    max_uploads: int = MAX_UPLOADS
    appeal_limit: int = APPEAL_LIMIT  # regrade requests a learner may file per appeal_window (then 429)
    appeal_window: float = APPEAL_WINDOW
    sandbox_words: str = ""  # how learner code is confined, shown on the class page; "" until serve says
    insecure: bool = False  # --insecure-no-sandbox: learner code runs unconfined, and the class page says so
    lti: object = None  # a grader.service.lti_service.LtiService (--lti FILE), or None: no LMS gradebook
    settings: object = None  # the grader.settings.Settings serve read at start; None: read when needed

    def sent_to_lms(self, learner: str) -> dict | None:
        """What reached the LMS for ``learner``, by assignment id (an ISO time, or ``None``: not sent).

        ``None`` (nothing shown) without an LTI service; the LTI service answers
        through its ``sent_for(learner)`` when it has one.

        >>> ServiceOptions().sent_to_lms("ana") is None
        True
        """
        sent_for = getattr(self.lti, "sent_for", None)
        return sent_for(learner) if sent_for is not None else None
