"""The grading service's limits and options: plain data, so the command line loads no web server.

(The environment's settings are :mod:`grader.settings`; these are what ``serve`` was started with.)

Example::

    >>> ServiceOptions().max_bytes == MAX_BYTES
    True
"""
from __future__ import annotations

from dataclasses import dataclass

MAX_BYTES = 256 * 1024  # a tools.py is a few kB; this cap keeps one request from filling the database
RATE_LIMIT, RATE_WINDOW = 10, 60.0  # submissions per learner per window (seconds)
CONTENT_TYPES = ("text/x-python", "application/octet-stream")  # not text/plain: a form could post that cross-site
CLASS_REFRESH = 10  # seconds between reloads of the class page
MAX_LEARNER_BYTES = 128 * 1024 * 1024  # kept per learner (sources and reports, ~1 MB an attempt): over it, 413
MAX_UPLOADS = 32  # authenticated uploads being read at once; more get 503 with Retry-After
UPLOAD_RETRY_AFTER = 5  # seconds a 503 for too many uploads asks the client to wait
PRE_AUTH_BYTES = 8 * 1024  # the most body tornado reads before a handler has checked the caller (GETs need none)
MAX_HEADER_BYTES = 32 * 1024  # request line and headers (the hub's cookies fit many times over)
IDLE_TIMEOUT = 10.0  # seconds a connection may take to send its headers, or sit idle between requests
BODY_TIMEOUT = 30.0  # seconds a client may take to send a whole body (a 256 KiB module on a slow link is ~1 s)
APPEAL_LIMIT, APPEAL_WINDOW = 5, 3600.0  # regrade requests per learner per window (seconds): over it, 429
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
    course: object = None  # a grader.course.policy.Policy (--course FILE), or None: no deadline, no attempt limit
    max_learner_bytes: int = MAX_LEARNER_BYTES
    max_uploads: int = MAX_UPLOADS
    appeal_limit: int = APPEAL_LIMIT  # regrade requests a learner may file per appeal_window (then 429)
    appeal_window: float = APPEAL_WINDOW
    sandbox_words: str = ""  # how learner code is confined, shown on the class page; "" until serve says
    insecure: bool = False  # --insecure-no-sandbox: learner code runs unconfined, and the class page says so
    lti: object = None  # a grader.service.lti_service.LtiService (--lti FILE), or None: no LMS gradebook
