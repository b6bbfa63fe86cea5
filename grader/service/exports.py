"""How the service hands out the class's outputs: safe download headers and a cache per state of the class.

The outputs themselves are :mod:`grader.outputs`' functions of the class's
counting records (built by :func:`grader.service.app.class_data`), the same
ones ``agtool-grade batch`` writes files with, so a download is what
``batch`` writes for the same records:

* :func:`attachment`: a ``Content-Disposition`` header whose file name is safe whatever the learner's name.
* :func:`similarity_of` and :func:`lms_files`: the similarity report and the LMS import files of the
  counting records (the pages and the downloads both show them).

:class:`ClassCache` keeps what was computed for one state of the class
(new attempts, reports or instructor actions change its version), so a class page that reloads
every few seconds, and its plots, cost nothing while nothing changed.

Example::

    >>> attachment("ana\\r\\nSet-Cookie: x/../feedback.md")
    'attachment; filename="ana__Set-Cookie__x_.._feedback.md"; filename*=UTF-8\\'\\'ana%0D%0ASet-Cookie%3A%20x%2F..%2Ffeedback.md'
"""

from __future__ import annotations

import re
import threading
from urllib.parse import quote

from grader.course.policy import as_course
from grader.outputs import lms
from grader.outputs.record import as_records
from grader.outputs.similarity import similarity_outputs
from grader.service.db import Store
from grader.service.options import ServiceOptions


def attachment(filename: str) -> str:
    """``Content-Disposition: attachment`` naming ``filename``: an ASCII fallback and the UTF-8 name (RFC 6266).

    Quotes, backslashes, control characters, slashes and everything else
    outside ``A-Za-z0-9._-`` become ``_`` in the fallback; the ``filename*``
    form percent-encodes every byte that is not plainly safe, so no header
    can be split or a path chosen by a learner's name.

    >>> attachment("grades.csv")
    'attachment; filename="grades.csv"; filename*=UTF-8\\'\\'grades.csv'
    >>> attachment('김민준 "x".md')
    'attachment; filename="_____x_.md"; filename*=UTF-8\\'\\'%EA%B9%80%EB%AF%BC%EC%A4%80%20%22x%22.md'
    """
    fallback = re.sub(r"[^A-Za-z0-9._-]", "_", filename).lstrip(".") or "download"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


# ------------------------------------------------------------------------------ cache


class ClassCache:
    """Values computed for one version of the class (``Store.version()``); a new version drops them all.

    >>> cache = ClassCache()
    >>> cache.get((1, 1), "x", lambda: "computed"), cache.get((1, 1), "x", lambda: "again")
    ('computed', 'computed')
    >>> cache.get((2, 1), "x", lambda: "again")
    'again'
    """

    def __init__(self):
        self._version = None
        self._values: dict = {}
        self._lock = threading.Lock()

    def get(self, version, key, compute):
        with self._lock:
            if version != self._version:
                self._version, self._values = version, {}
            if key in self._values:
                return self._values[key]
        value = compute()  # outside the lock: a plot or a similarity run takes a while
        with self._lock:
            if version == self._version:
                self._values[key] = value
        return value


# ------------------------------------------------------------------------------ outputs


def similarity_of(store: Store, records, references: dict[str, str] | None) -> dict:
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


def lms_files(records, settings: ServiceOptions) -> dict[str, str] | None:
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
    course = as_course(settings.course)
    name = course.policy.name if course is not None and course.policy.name else "agtool lab"
    return lms.lms_files(records, settings.roster, assignment=name)
