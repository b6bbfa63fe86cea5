"""Submit beside a Check cell: a confirmation before an attempt that counts, disabled when none is left.

:class:`SubmitControls` is the part of the Check panel (:class:`agtool_lab.widget.CheckPanel`)
that talks to the class grading service: the Submit button, a confirmation row
(ipywidgets buttons, no browser dialog) that says which steps are graded and
how many attempts are left, the course line, the last grade and, beside it, a
refusal in one plain sentence (the last grade stays). With no attempt left,
Submit is disabled and the line says when the next one is allowed.

The sentences are pure functions of the service's ``api/course`` answer:

    >>> status = {"limit": 3, "attempts_left": 0, "next_allowed": "2026-03-01T11:00:00Z"}
    >>> blocked(status, now=dt.datetime(2026, 3, 1, 10, 18, tzinfo=dt.timezone.utc))
    'No attempt left: your next attempt is allowed 2026-03-01 11:00 UTC (in 42 min).'
"""

from __future__ import annotations

import datetime as dt
import re

from agtool_lab import submit as service
from agtool_lab.view import notice_html, when_text
from grader.escape import html_text
from grader.report import STEPS

_ISO = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d)?Z\b")


def blocked(status: dict | None, now: dt.datetime | None = None) -> str:
    """Why Submit is disabled now (``""``: it is not): no attempt left, and when the next one is allowed.

    >>> blocked({"limit": 3, "attempts_left": 1}), blocked(None)
    ('', '')
    """
    if not isinstance(status, dict) or not status.get("limit") or status.get("attempts_left") != 0:
        return ""
    when = status.get("next_allowed")
    return (
        "No attempt left: your next attempt is allowed " + when_text(when, now) + "."
        if when
        else "No attempt left in this course."
    )


def steps_graded(step: int) -> str:
    """Which steps a submitted attempt grades: the whole module, whichever notebook it is sent from.

    >>> steps_graded(2)
    'It grades your whole module, steps 1 to 11, not only step 2.'
    """
    return f"It grades your whole module, steps {STEPS[0]} to {STEPS[-1]}, not only step {step}."


def confirmation(step: int, status: dict | None) -> str:
    """The question asked before an attempt that counts: what is kept, which steps, attempts left after it.

    >>> confirmation(2, {"limit": 3, "attempts_left": 2})  # doctest: +NORMALIZE_WHITESPACE
    'Submit this file? The class grading service keeps the attempt and it can count toward your grade.
     It grades your whole module, steps 1 to 11, not only step 2. It uses 1 of your 2 attempts left.'
    """
    words = [
        "Submit this file? The class grading service keeps the attempt and it can count toward your grade.",
        steps_graded(step),
    ]
    left = status.get("attempts_left") if isinstance(status, dict) else None
    if isinstance(left, int) and not isinstance(left, bool) and status.get("limit"):
        words.append(f"It uses 1 of your {left} attempt{'s' if left != 1 else ''} left.")
    return " ".join(words)


def refusal_text(message: str, now: dt.datetime | None = None, *, kept: bool = True) -> str:
    """The service's refusal as one plain sentence, its ISO times as the widget shows times (``kept``: a grade shown).

    >>> refusal_text("the grading service answered 429: at most 3 attempts per 60 minutes; your next attempt "
    ...              "is allowed at 2026-03-01T11:00:00Z", dt.datetime(2026, 3, 1, 10, 0, tzinfo=dt.timezone.utc))
    'Not submitted: at most 3 attempts per 60 minutes; your next attempt is allowed at 2026-03-01 11:00 UTC (in 1 h). Your last grade stays as shown.'
    """
    text = re.sub(r"^the grading service answered \d{3}: ", "", message)
    text = _ISO.sub(lambda m: when_text(m.group(0), now), text)
    return f"Not submitted: {text.rstrip('.')}." + (" Your last grade stays as shown." if kept else "")


class SubmitControls:
    """Submit, its confirmation, the course line, the last grade and a refusal beside it (ipywidgets).

    ``path`` is the file sent, ``step`` the notebook's step (to say the whole
    module is graded), ``status`` the panel's label that says what is going on.
    """

    def __init__(self, path, step: int, status):
        import ipywidgets as widgets

        self.path, self.step, self.status = path, step, status
        self.info: service.CourseStatus | None = None
        auto = widgets.Layout(width="auto", flex="0 0 auto")
        self.button = widgets.Button(
            description="Submit",
            icon="upload",
            button_style="primary",
            layout=auto,
            tooltip="Send this file to the class grading service: the attempt is kept "
            "and graded there (you confirm first)",
        )
        self.confirm = widgets.Button(description="Confirm submit", button_style="warning", layout=auto)
        self.cancel = widgets.Button(description="Cancel", layout=auto)
        self.question = widgets.HTML()
        self.asking = widgets.HBox(
            [self.question, self.confirm, self.cancel], layout=widgets.Layout(display="none", align_items="center")
        )
        # The line takes the room the buttons leave; the buttons never shrink to make room for it.
        self.course_label = widgets.HTML(layout=widgets.Layout(margin="0 0 0 12px", flex="1 1 auto"))
        self.notice = widgets.HTML()  # a refusal: beside the last grade, never instead of it
        self.submitted = widgets.HTML()
        self.below = widgets.VBox([self.asking, self.notice, self.submitted])
        self.button.on_click(lambda _b: self.ask())
        self.confirm.on_click(lambda _b: self.send())
        self.cancel.on_click(lambda _b: self._close())

    def ask(self) -> str:
        """Show the confirmation row (nothing is sent yet); returns its sentence."""
        self.question.value = f"<b>{html_text(confirmation(self.step, self._status()))}</b>"
        self.asking.layout.display = "flex"
        return confirmation(self.step, self._status())

    def _close(self) -> None:
        self.asking.layout.display = "none"

    def _status(self) -> dict | None:
        return self.info.status if self.info is not None else None

    def send(self):
        """Submit now: the grade replaces the last grade; a refusal goes beside it; the course line is asked again."""
        self._close()
        self.button.disabled = True
        seed_text = self.status.value
        self.status.value = "submitted, waiting for the grade ..."
        try:
            shown = service.submit(self.path, show_course=False, step=self.step)  # this step's rows alone
        except Exception as exc:  # submit() says what went wrong itself; this is a last guard against a traceback
            shown = service.Refused(f"Submit failed: {type(exc).__name__}: {exc}")
        finally:
            self.button.disabled = False
        if isinstance(shown, service.Refused):
            self.notice.value = notice_html(refusal_text(shown.text, kept=bool(self.submitted.value)))
        else:
            self.notice.value = ""
            self.submitted.value = shown._repr_html_()
        self.status.value = seed_text
        self.refresh_course()
        return shown

    def refresh_course(self) -> service.CourseStatus:
        """Ask the service for the due date and attempts left, show them, and disable Submit with none left."""
        self.info = service.course_status()
        reason = blocked(self.info.status) if not self.info.problem else ""
        self.button.disabled = bool(reason)
        self.button.tooltip = reason or "Send this file to the class grading service (you confirm first)"
        self.course_label.value = self.info._repr_html_() + (f" {notice_html(reason)}" if reason else "")
        return self.info
