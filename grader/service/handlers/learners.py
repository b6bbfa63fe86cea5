"""A learner's pages: their attempts with feedback, one attempt's code, the counting attempt's feedback files.

Routes (relative to the prefix)::

    GET  ""                     the caller's attempts with their feedback
    GET  learners/NAME          (instructors; a learner: their own) one learner's attempts
    GET  learners/NAME/feedback.md      (instructors; a learner: their own) the counting attempt's feedback
    GET  learners/NAME/results.json     (instructors; a learner: their own) its Gradescope results.json
    GET  learners/NAME/attempts/ID/code (instructors; a learner: their own) the attempt's code, numbered

Another learner's page or attempt is "not found", never "forbidden".
"""

from __future__ import annotations

from urllib.parse import quote

from tornado import web

from grader.outputs.feedback import render_feedback
from grader.outputs.gradescope_results import gradescope_text
from grader.service import action_pages, code_pages, pages
from grader.service.actions_db import ActionLog, learner_view
from grader.service.base import attempt_id_of
from grader.service.class_records import _records, course_status
from grader.service.handlers.base import PageHandler


class AttemptsPage(PageHandler):
    """A learner's attempts, and the changes their instructor made with the forms that make them."""

    def attempts_page(self, learner: str) -> str:
        attempts = [a.detail() for a in self.store.attempts_of(learner, limit=200)]
        return pages.learner_page(
            learner,
            attempts,
            prefix=self.conf.prefix,
            is_instructor=self.instructor,
            course=course_status(self.store, learner, self.conf.course, self.conf.sent_to_lms(learner)),
            chrome=self.chrome(),
            changes=self.changes(learner, attempts),
        )

    def changes(self, learner: str, attempts: list[dict]) -> dict:
        """The learner page's "Changes by your instructor": their actions, a regrade request form, instructor forms."""
        log = ActionLog(self.store)
        own = {a["id"] for a in attempts}
        actions = learner_view(log.all(learner, with_class=True), learner, own)
        limit = f"{self.conf.appeal_limit} per {self.conf.appeal_window / 60:g} minutes"
        return action_pages.changes_view(
            actions,
            log.past_results(learner),
            viewer=self.learner,
            learner=learner,
            prefix=self.conf.prefix,
            xsrf=self.xsrf(),
            attempts=attempts,
            instructor=self.instructor,
            request_limit=limit,
        )


class HomePage(AttemptsPage):
    @web.authenticated
    def get(self) -> None:
        if self.instructor:  # an instructor comes for the class, not for attempts of their own
            self.redirect(f"{self.conf.prefix}class")
            return
        self.finish(self.attempts_page(self.learner))


class LearnerPage(AttemptsPage):
    @web.authenticated
    def get(self, learner: str) -> None:
        if learner != self.learner and not self.instructor:
            raise web.HTTPError(404, "no such page")
        self.finish(self.attempts_page(learner))


class CodePage(PageHandler):
    """``learners/NAME/attempts/ID/code``: an attempt's code, escaped, with line numbers (instructors; the learner)."""

    @web.authenticated
    def get(self, learner: str, text: str) -> None:
        attempt_id = attempt_id_of(text)
        attempt = None if attempt_id is None else self.store.get(attempt_id)
        if attempt is None or attempt.learner != learner or (learner != self.learner and not self.instructor):
            raise web.HTTPError(404, "no such attempt")
        back = f"{self.conf.prefix}learners/{quote(learner, safe='')}"
        number = pages.learner_numbers(self.store.summaries_of(learner))[attempt_id]  # as the learner's page says
        self.finish(code_pages.code_page(learner, number, attempt.source, chrome=self.chrome(), back=back))


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
            self.download(f"{learner}-feedback.md", "text/markdown; charset=utf-8", render_feedback(records[0]))
        else:
            self.download(f"{learner}-results.json", "application/json; charset=utf-8", gradescope_text(records[0]))
