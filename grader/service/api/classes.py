"""The REST API of the class for instructors: class rows, the gradebook, Gradescope, plots, similarity, LMS files.

Routes (relative to the prefix)::

    GET  api/class              instructors: one row per learner, pass rates, common wrong answers
    GET  api/course             the caller's due dates and attempts left (null without --course)
    GET  grades.csv             instructors: the gradebook in ``agtool-grade batch``'s columns
    GET  gradescope.zip         instructors: gradescope/<learner>/results.json of every learner
    GET  plots/NAME.png|svg     instructors: batch's plots (score_histogram, check_pass_rate, step_scores)
    GET  similarity.html, similarity.csv   instructors: shared code between the counting attempts
    GET  lms/canvas.csv, lms/moodle.csv, lms/unmatched.csv   instructors, with --roster: LMS import files

The outputs are :mod:`grader.outputs`' (as ``agtool-grade batch`` writes them),
computed off the event loop and kept while the class is unchanged
(:class:`grader.service.exports.ClassCache`); instructor actions (overrides,
extensions) are applied to the counting records first. Every download has a
``Content-Disposition: attachment`` with a safe file name
(:func:`grader.service.exports.attachment`).
"""

from __future__ import annotations

from tornado import web

from grader.outputs.gradescope_results import gradescope_zip
from grader.service import exports
from grader.service.api.base import ApiHandler
from grader.service.class_records import course_status
from grader.service.db import iso, utcnow
from grader.service.exports import lms_files, similarity_of


class CourseHandler(ApiHandler):
    def get(self) -> None:
        """The caller's due dates and attempts left (``null`` without a course file)."""
        self.send_json(
            200, course_status(self.store, self.learner, self.conf.course, self.conf.sent_to_lms(self.learner))
        )


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
