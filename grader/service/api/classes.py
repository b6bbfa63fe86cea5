"""The class's data and its downloads for instructors: class rows, the gradebook, Gradescope, plots, similarity, LMS.

The outputs are :mod:`grader.outputs`' (as ``agtool-grade batch`` writes them),
computed off the event loop and kept while the class is unchanged
(:class:`grader.service.exports.ClassCache`); instructor actions (overrides,
extensions) are applied to the counting records first.

Example::

    >>> lms_files([], ServiceOptions()) is None
    True
"""
from __future__ import annotations

from tornado import web

from grader.outputs import lms
from grader.outputs.gradescope_results import gradescope_zip
from grader.outputs.record import as_records
from grader.outputs.similarity import similarity_outputs
from grader.service import exports
from grader.service.class_records import course_status
from grader.service.db import Store, iso, utcnow
from grader.service.handlers import ApiHandler
from grader.service.options import ServiceOptions


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
