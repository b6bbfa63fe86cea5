"""What the instructor downloads from the service: plots, Gradescope files, feedback, similarity, LMS files.

Each function is pure: the class's counting records (``batch``'s record
format, built by :func:`grader.service.app.class_data`) in, bytes or text
out, with ``agtool-grade batch``'s own renderers, so a download is what
``batch`` writes for the same records:

* :func:`plot_bytes`: ``plots/<name>.png`` or ``.svg`` (``grader.batch.plots``'s figures);
* :func:`gradescope_json` and :func:`gradescope_zip`: ``gradescope/<learner>/results.json``;
* :func:`feedback_markdown`: ``feedback/<learner>.md``;
* :func:`similarity_outputs`: ``similarity.html`` and ``similarity.csv`` of each learner's counting
  attempt, with the reference solution given to the check only (its text is never in the page);
* :func:`attachment`: a ``Content-Disposition`` header whose file name is safe whatever the learner's name.

:class:`ClassCache` keeps what was computed for one state of the class
(new attempts or reports change its version), so a class page that reloads
every few seconds, and its plots, cost nothing while nothing changed.

Example::

    >>> attachment("ana\\r\\nSet-Cookie: x/../feedback.md")
    'attachment; filename="ana__Set-Cookie__x_.._feedback.md"; filename*=UTF-8\\'\\'ana%0D%0ASet-Cookie%3A%20x%2F..%2Ffeedback.md'
"""
from __future__ import annotations

import io
import json
import re
import threading
import zipfile
from urllib.parse import quote

from grader.batch.discovery import unique_ids
from grader.batch.gradebook import check_stats, gradebook_frame, render_feedback, step_frame
from grader.batch.gradescope import results_json
from grader.escape import terminal_text
from grader.report import Report

PLOTS = ("score_histogram", "check_pass_rate", "step_scores")
PLOT_TYPES = {"png": "image/png", "svg": "image/svg+xml"}
# No date or version in a plot: the same class gives the same bytes (as batch's PNGs).
_METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}
# A zip member's time: fixed, so the same class gives the same zip.
_ZIP_TIME = (2000, 1, 1, 0, 0, 0)


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


# ----------------------------------------------------------------------------- plots


def plot_bytes(records: list[dict], name: str, fmt: str) -> bytes:
    """One of ``batch``'s class plots (``score_histogram``, ``check_pass_rate``, ``step_scores``) as PNG or SVG.

    >>> plot_bytes([], "step_scores", "svg")[:5]
    b'<?xml'
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from grader.batch import plots

    if name not in PLOTS or fmt not in PLOT_TYPES:
        raise KeyError(f"no plot {name}.{fmt}: plots are {', '.join(PLOTS)} as png or svg")
    if name == "score_histogram":
        fig = plots.score_histogram(gradebook_frame(records))
    elif name == "check_pass_rate":
        fig = plots.check_pass_rate(check_stats(records))
    else:
        fig = plots.step_scores(step_frame(records))
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=100, metadata=_METADATA[fmt])
    return buf.getvalue()


# ------------------------------------------------------------------------- Gradescope


def gradescope_json(record: dict) -> dict:
    """``gradescope/<learner>/results.json`` as ``batch`` writes it: the credited score under a course policy.

    >>> rec = {"learner": "ana", "report": {"seed": 1, "path": "t.py", "checks": [], "score": 0, "max_score": 0}}
    >>> gradescope_json(rec)["score"], gradescope_json({**rec, "credit": {"credited": 0.0, "max_score": 0.0,
    ...                                                   "why": "late"}})["output"].splitlines()[0]
    (0.0, 'Credited: 0/0 (late).')
    """
    shown = Report.from_dict(record.get("feedback_report") or record["report"])
    data = results_json(shown, score=Report.from_dict(record["report"]).score)
    got = record.get("credit")
    if got:  # as grader.batch.gradebook.write_outputs does for a course policy
        data["score"] = float(got["credited"])
        data["output"] = (f"Credited: {got['credited']:g}/{got['max_score']:g} ({terminal_text(got['why'])}).\n"
                          + data["output"])
        data.setdefault("extra_data", {})["credit"] = got
    return data


def gradescope_text(record: dict) -> str:
    """The bytes of one ``results.json``, as ``batch`` writes the file (UTF-8 JSON and a newline)."""
    return json.dumps(gradescope_json(record), ensure_ascii=False) + "\n"


def member_names(records: list[dict]) -> dict[str, str]:
    """Learner -> a folder name safe in a zip on every system, unique (``batch``'s learner ids).

    >>> member_names([{"learner": "../x"}, {"learner": "a b"}, {"learner": "a_b"}])
    {'../x': '_x', 'a b': 'a_b-c8687a08', 'a_b': 'a_b'}
    """
    learners = [r["learner"] for r in records]
    return dict(zip(learners, unique_ids(learners)))


def gradescope_zip(records: list[dict]) -> bytes:
    """``gradescope/<learner>/results.json`` of every learner in one zip, with the same bytes for the same records."""
    names = member_names(records)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for record in sorted(records, key=lambda r: names[r["learner"]]):
            info = zipfile.ZipInfo(f"gradescope/{names[record['learner']]}/results.json", date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, gradescope_text(record).encode("utf-8"))
    return buf.getvalue()


def feedback_markdown(record: dict) -> str:
    """``feedback/<learner>.md``: the learner's feedback as ``batch`` writes it (escaped Markdown)."""
    return render_feedback(record)


# ------------------------------------------------------------------------- similarity


def similarity_outputs(sources: "dict[str, str]", references: "dict[str, str] | None" = None) -> dict:
    """``{"html", "csv", "pairs"}`` for ``sources`` (learner -> text); references are compared, never shown.

    >>> code = "def f(a, b):\\n    return a + b * 2 - a + b * 3 - a * b + a - b * 4\\n"
    >>> out = similarity_outputs({"ana": code, "bob": code}, {"reference:tools.py": "SECRET = 1\\n" + code})
    >>> "SECRET" in out["html"], out["csv"].splitlines()[0].split(",")[:3]
    (False, ['rank', 'a', 'b'])
    """
    from grader.course.similarity import compare, similarity_csv, similarity_html

    pairs = compare(sources, references=references)
    return {"html": similarity_html(pairs, sources, references, show_references=False),
            "csv": similarity_csv(pairs), "pairs": pairs}


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
