"""How the service hands out the class's outputs: safe download headers and a cache per state of the class.

The outputs themselves are :mod:`grader.outputs`' functions of the class's
counting records (built by :func:`grader.service.app.class_data`), the same
ones ``agtool-grade batch`` writes files with, so a download is what
``batch`` writes for the same records:

* :func:`attachment`: a ``Content-Disposition`` header whose file name is safe whatever the learner's name.

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
