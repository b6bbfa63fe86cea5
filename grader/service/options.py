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
