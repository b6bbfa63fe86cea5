"""The Check cell's rendering: a Report as HTML and as text, for the widget and the service's grades.

Pure functions that decide nothing: :func:`render_html` and :func:`check_panel_text`
turn a :class:`~grader.report.Report` into a string (learner text escaped for
HTML and for the terminal), so the Check panel (:mod:`agtool_lab.widget`) and
a submitted attempt's grade (:mod:`agtool_lab.submit`) look the same.

Example::

    >>> from grader.report import CheckResult, Report
    >>> r = Report(seed=5, path="t.py", checks=[CheckResult("step1/names", 1, True, 2, 2, "Data names")])
    >>> summary_line(r)
    '1/1 checks passed, 2/2 points'
"""

from __future__ import annotations

import datetime as dt

from agtool_lab.replay import replay_html, replay_line
from grader.escape import html_text, terminal_text
from grader.render import crash_notes, one_reason, one_reason_text, shown_details  # shared with the service's pages
from grader.report import CheckResult, Report

# The notebook of each step, so a passing step can name the next one.
NOTEBOOKS = {
    1: "01_contract_table.ipynb",
    2: "02_validate_args.ipynb",
    3: "03_call_boundary.ipynb",
    4: "04_validate_result.ipynb",
    5: "05_cache.ipynb",
    6: "06_failure_path.ipynb",
    7: "07_repair_loop.ipynb",
    8: "08_report.ipynb",
    9: "09_coercion.ipynb",
    10: "10_errors_as_prompts.ipynb",
    11: "11_identity.ipynb",
}
# Not a step: the capstone measures what every layer buys on the finished module.
AFTER_LAST_STEP = "12_capstone.ipynb"

FIRST_RED_ROW = "Start with the first failed row: later rows often fail for the same reason."
PASS_MARK, FAIL_MARK = "\u2714", "\u2718"  # check mark, ballot x
_GREEN, _RED, _GREY = "#1a7f37", "#cf222e", "#6e7781"

# --------------------------------------------------------------------------
# Pure rendering: Report -> text
# --------------------------------------------------------------------------


def summary_line(report: Report) -> str:
    """One line that counts checks, e.g. ``"7/9 checks passed, 12/15 points"``.

    >>> summary_line(Report(seed=1, path="tools.py"))
    '0/0 checks passed, 0/0 points'
    """
    return report.summary()


def next_step_line(step: int, report: Report) -> str:
    """What to do next: for a fully passing step, the next notebook; else ``""``.

    >>> ok = Report(seed=1, path="t.py", checks=[CheckResult("step2/x", 2, True, 1, 1, "x")])
    >>> next_step_line(2, ok)
    'Step 2 passes. Next: 03_call_boundary.ipynb'
    """
    if report.error or not report.checks or not report.passed:
        return ""
    if step >= max(NOTEBOOKS):
        return f"Step {step} passes: all {len(NOTEBOOKS)} steps are done. Capstone: {AFTER_LAST_STEP}"
    return f"Step {step} passes. Next: {NOTEBOOKS[step + 1]}"


def _details(c: CheckResult, runner: str | None, notes: dict[str, str] | None = None) -> list[tuple[str, str]]:
    # The replay line as it runs where the panel is shown (agtool_lab.replay); every other detail as written;
    # a row that repeats an earlier row's crash is its note only (grader.render.crash_notes).
    return [
        (label, replay_line(value, runner) if label == "replay" else value)
        for label, value in shown_details(c, notes or {})
    ]


def check_panel_text(report: Report, step: int, *, runner: str | None = None) -> str:
    """The Check panel of one step as plain text (``text/plain`` of the Check cell, and outside a notebook).

    Not :func:`grader.render.render_text`, the whole report for a terminal.
    ``runner`` replaces ``agtool-grade`` in replay commands (:func:`replay_line`).

    >>> r = Report(seed=5, path="t.py", checks=[CheckResult("step1/names", 1, True, 2, 2, "Data names")])
    >>> print(check_panel_text(r, 1))
    Step 1: 1/1 checks passed, 2/2 points (seed 5)
      [passed] Data names
    Step 1 passes. Next: 02_validate_args.ipynb
    """
    # Jupyter draws ANSI colours in text/plain and a terminal runs every escape:
    # learner text shows its control characters as visible escapes.
    lines = [f"Step {step}: {summary_line(report)} (seed {report.seed})"]
    if report.error:
        lines.append(f"  [ERROR] {terminal_text(report.error)}")
    elif not report.checks:
        lines.append(f"  [ERROR] {_no_checks(step)}")
    if one_reason(report):
        lines.append(f"  [FAILED] {one_reason_text(report)}")
    notes = crash_notes(report.checks)
    for c in [] if one_reason(report) else report.checks:
        lines.append(f"  [{'passed' if c.passed else 'FAILED'}] {terminal_text(c.title, multiline=False)}")
        if not c.passed:
            lines.extend(
                f"      {label + ':':<10}{terminal_text(value)}" for label, value in _details(c, runner, notes)
            )
        elif c.message:
            lines.append(f"      {'note:':<10}{terminal_text(c.message)}")
    printed = report.output.get(str(step), "")
    if printed:
        lines.append("  Your module printed:")
        lines.extend("    " + line for line in terminal_text(printed).rstrip("\n").split("\n"))
    follow = next_step_line(step, report)
    if follow:
        lines.append(follow)
    elif len(report.failed) > 1 and not report.error:
        lines.append(FIRST_RED_ROW)
    return "\n".join(lines)


def _no_checks(step: int) -> str:
    return f"The grader has no checks for step {step}: nothing was graded (a grader problem, not yours)."


def _esc(value: object) -> str:
    # Controls shown as escapes first: bidi overrides reorder HTML text too (a FAIL read as PASS).
    return html_text(terminal_text(value))


def _error_box(message: str) -> str:
    return (
        f'<div style="border:1px solid {_RED};color:{_RED};padding:6px;margin:4px 0">'
        f"<b>{FAIL_MARK} This step could not be graded.</b>"
        f'<pre style="white-space:pre-wrap;margin:4px 0 0 0">{_esc(message)}</pre></div>'
    )


# Notebook front ends right-align table cells by default; a sentence reads better left-aligned.
_CELL = "text-align:left;vertical-align:top"


def _detail_row(label: str, value: str, copy: bool) -> str:
    if label == "replay":
        shown = replay_html(value, copy=copy)
    elif label in ("call", "expected", "got"):
        shown = f"<code>{_esc(value)}</code>"
    else:
        shown = _esc(value)
    return f'<tr><th style="{_CELL};padding-right:8px">{_esc(label)}</th><td style="{_CELL}">{shown}</td></tr>'


def _one_reason_row(report: Report) -> str:
    return (
        f'<tr><td style="{_CELL};color:{_RED};font-weight:bold">{FAIL_MARK}</td>'
        f'<td style="{_CELL};color:{_RED}">failed</td>'
        f'<td style="{_CELL}" colspan="2">{_esc(one_reason_text(report))}</td></tr>'
    )


def _check_row(
    c: CheckResult,
    *,
    open_details: bool = True,
    runner: str | None = None,
    copy: bool = False,
    notes: dict[str, str] | None = None,
) -> str:
    colour = _GREEN if c.passed else _RED
    mark = f'<td style="{_CELL};color:{colour};font-weight:bold">{PASS_MARK if c.passed else FAIL_MARK}</td>'
    word = f'<td style="{_CELL};color:{colour}">{"passed" if c.passed else "failed"}</td>'
    title = f'<td style="{_CELL}">{_esc(c.title)} <small style="color:{_GREY}"><code>{_esc(c.id)}</code></small></td>'
    if c.passed and c.message:  # points kept: its failure on the learner's route is charged to another step
        details = f'<td style="{_CELL}"><small>{_esc(c.message)}</small></td>'
    elif c.passed:
        details = "<td></td>"
    else:
        items = "".join(_detail_row(label, value, copy) for label, value in _details(c, runner, notes))
        # Only the first failure is unfolded: one thing to fix at a time, the rest a click away.
        summary = "<summary>details</summary>"
        details = (
            f'<td style="{_CELL}"><details{" open" if open_details else ""}>{summary}'
            f"<table>{items}</table></details></td>"
        )
    return f"<tr>{mark}{word}{title}{details}</tr>"


def render_html(
    report: Report, step: int, *, heading: str | None = None, runner: str | None = None, copy: bool = False
) -> str:
    """The Check cell as a plain HTML table (the fallback where widgets do not run).

    Marks are words and symbols as well as colours, so the table reads the
    same where styles are stripped. ``heading`` replaces ``Step N`` before
    the summary (a submitted attempt's report covers every step).
    ``runner`` replaces ``agtool-grade`` in replay commands
    (:func:`replay_line`); ``copy`` adds a button that copies each one.
    A module that does not import is one row, not one per check.

    >>> r = Report(seed=5, path="t.py", checks=[CheckResult("step1/names", 1, True, 2, 2, "Data names")])
    >>> "1/1 checks passed" in render_html(r, 1)
    True
    """
    parts = [
        # Widget HTML inherits a 28px line height from ipywidgets: too airy for a table.
        '<div class="agtool-check" style="line-height:1.45">',
        f"<p><b>{_esc(heading or f'Step {step}')}: {_esc(summary_line(report))}</b> "
        f"<small>(seed {_esc(report.seed)}, {_esc(report.path)})</small></p>",
    ]
    if report.error:
        parts.append(_error_box(report.error))
    elif not report.checks:
        parts.append(_error_box(_no_checks(step)))
    if report.checks:
        parts.append("<table>")
        parts.append(
            "<thead><tr>"
            + "".join(f'<th style="{_CELL}">{name}</th>' for name in ("", "result", "check", "details"))
            + "</tr></thead>"
        )
        parts.append("<tbody>")
        first_failure = next((c.id for c in report.checks if not c.passed), None)
        if one_reason(report):
            parts.append(_one_reason_row(report))
        else:
            notes = crash_notes(report.checks)
            parts.extend(
                _check_row(c, open_details=c.id == first_failure, runner=runner, copy=copy, notes=notes)
                for c in report.checks
            )
        parts.append("</tbody></table>")
    printed = report.output.get(str(step), "")
    if printed:
        parts.append(f"<details><summary>Your module printed</summary><pre>{_esc(printed)}</pre></details>")
    follow = next_step_line(step, report)
    if follow:
        parts.append(f'<p style="color:{_GREEN}"><b>{_esc(follow)}</b></p>')
    elif len(report.failed) > 1 and not report.error:
        parts.append(f"<p>{_esc(FIRST_RED_ROW)}</p>")
    parts.append("</div>")
    return "\n".join(parts)


# --------------------------------------------------------------------------
# The course line: due date and attempts left, from the service's api/course
# --------------------------------------------------------------------------

COURSE_SEP = " \u00b7 "  # middle dot between the parts of the course line


def _moment(value: object) -> dt.datetime | None:
    # The service sends ISO 8601 with a Z; Python 3.10's fromisoformat does not read the Z.
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    text = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.replace(tzinfo=dt.timezone.utc) if moment.tzinfo is None else moment


def _span(seconds: float) -> str:
    seconds = int(abs(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} day{'s' if days != 1 else ''}" + (f" {hours} h" if hours else "")
    if hours:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    if minutes:
        return f"{minutes} min"
    return f"{secs} s"


def when_text(value: object, now: dt.datetime | None = None) -> str:
    """A time from the service as a learner reads it: UTC to the minute, and how far away.

    A value that is not an ISO time is shown as it came.

    >>> now = dt.datetime(2026, 3, 1, 10, 0, tzinfo=dt.timezone.utc)
    >>> when_text("2026-03-03T12:30:00Z", now), when_text("2026-03-01T09:55:00Z", now)
    ('2026-03-03 12:30 UTC (in 2 days 2 h)', '2026-03-01 09:55 UTC (5 min ago)')
    >>> when_text("next Tuesday", now)
    'next Tuesday'
    """
    moment = _moment(value)
    if moment is None:
        return str(value)
    now = now or dt.datetime.now(dt.timezone.utc)
    delta = (moment - now).total_seconds()
    shown = moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"{shown} ({'in ' + _span(delta) if delta >= 0 else _span(delta) + ' ago'})"


def _count(value: object) -> int | None:
    # bool is an int in Python: a True here is a malformed answer, not 1.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _percent(value: object) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{round(100 * value)}%"
    return str(value)


def _points(value: object) -> str:
    # A credited score is a float (80% of 7 points); shown to two decimals at most, 133.0 as 133.
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{round(value, 2):g}"
    return str(value)


def course_line(course: object, now: dt.datetime | None = None) -> str:
    """The learner's course status in one line: due date, late credit, attempts left, which attempt counts.

    ``course`` is the service's ``GET api/course`` answer; fields it lacks are
    left out and fields it adds are ignored, so an older or newer service
    still gives a line. ``""`` when there is no course policy (``None``).
    Times are counted from ``now``, else the service's ``now``, else this
    machine's clock.

    >>> now = dt.datetime(2026, 3, 1, 10, 0, tzinfo=dt.timezone.utc)
    >>> print(course_line({"due": "2026-03-01T12:00:00Z", "counts": "best", "limit": 3,
    ...                    "window_minutes": 60, "attempts_left": 2, "next_allowed": None}, now))
    Due 2026-03-01 12:00 UTC (in 2 h) · Attempts left: 2 of 3 per 60 minutes · Your best attempt counts
    >>> course_line(None)
    ''
    """
    if not isinstance(course, dict):
        return ""
    # The service's clock, where it sends one, says how far the due date is: the kernel's may be off.
    now = now or _moment(course.get("now"))
    parts = [*_deadline_parts(course, now), *_attempt_parts(course, now), *_counting_parts(course)]
    # One line whatever the service sent: a newline or a bidi control in a course name stays visible text.
    return terminal_text(COURSE_SEP.join(parts), multiline=False)


def _deadline_parts(course: dict, now: dt.datetime | None) -> list[str]:
    # The course's name and due dates, then the period the learner is in now.
    parts = []
    name = course.get("name")
    due = course.get("due")
    if due:
        head = f"Due {when_text(due, now)}"
        if course.get("late_due"):
            credit = course.get("late_credit")
            head += f", late until {when_text(course['late_due'], now)}"
            head += f" for {_percent(credit)} of the points" if credit is not None else ""
        parts.append(f"{name}: {head}" if name else head)
    elif name:
        parts.append(str(name))
    period = course.get("period_now")
    if period == "late":
        credit = course.get("credit_now", course.get("late_credit"))
        parts.append(f"Now late: {_percent(credit)} credit" if credit is not None else "Now late")
    elif period == "after the late date":
        parts.append("Past the deadline: no credit, still graded for feedback")
    return parts


def _attempt_parts(course: dict, now: dt.datetime | None) -> list[str]:
    # The attempt limit: how many are left, and when the next one is allowed when none is.
    limit = course.get("limit")
    if not limit:
        return []
    parts = []
    left = _count(course.get("attempts_left"))
    used = _count(course.get("attempts_used"))
    if left is None and used is not None and _count(limit) is not None:
        left = max(0, limit - used)
    window = course.get("window_minutes")
    per = f" per {window:g} minutes" if isinstance(window, (int, float)) and not isinstance(window, bool) else ""
    if left is not None:
        parts.append(f"Attempts left: {left} of {limit}{per}")
    else:
        parts.append(f"At most {limit} attempts{per}")
    if course.get("next_allowed") and (left is None or left == 0):
        parts.append(f"next attempt allowed {when_text(course['next_allowed'], now)}")
    return parts


def _counting_parts(course: dict) -> list[str]:
    # Which attempt counts, by rule and (when the service says) which one it is now.
    parts = []
    counts = course.get("counts")
    if counts == "best":
        parts.append("Your best attempt counts")
    elif counts == "last":
        parts.append("Your last attempt on time counts")
    counted = course.get("counted")
    if isinstance(counted, dict) and counted.get("attempt") is not None:
        score = (
            f": {_points(counted.get('credited'))}/{_points(counted.get('max_score'))}"
            if counted.get("credited") is not None and counted.get("max_score") is not None
            else ""
        )
        parts.append(f"counting now: attempt {counted['attempt']}{score}")
    return parts


def assignment_lines(course: object, now: dt.datetime | None = None) -> list[str]:
    """A line per assignment of a course of several (``[]`` otherwise): its name and steps, due date, attempts
    left, credited grade and, when the service sends grades to an LMS, whether this one was sent.

    >>> now = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
    >>> for line in assignment_lines({"assignments": [{"id": "lab-a", "name": "Lab A", "steps": [1, 2],
    ...     "due": "2030-01-10T23:59:00Z", "limit": 2, "attempts_left": 1, "window_minutes": 60,
    ...     "counted": {"credited": 7.5, "max_score": 10}, "lms": None}]}, now):
    ...     print(line)
    Lab A (steps 1, 2) · due 2030-01-10 23:59 UTC (in 9 days 23 h) · attempts left: 1 of 2 · credited 7.5/10 · not sent to the LMS
    """
    if not isinstance(course, dict) or not isinstance(course.get("assignments"), list):
        return []
    now = now or _moment(course.get("now"))
    return [_assignment_line(a, now) for a in course["assignments"] if isinstance(a, dict)]


def _assignment_line(a: dict, now: dt.datetime | None) -> str:
    steps = a.get("steps")
    head = str(a.get("name") or a.get("id") or "assignment")
    if isinstance(steps, list) and steps:
        head += f" (steps {', '.join(str(s) for s in steps)})"
    parts = [head]
    if a.get("due"):
        parts.append(f"due {when_text(a['due'], now)}")
    left, limit = _count(a.get("attempts_left")), _count(a.get("limit"))
    if limit:
        parts.append(f"attempts left: {left} of {limit}" if left is not None else f"at most {limit} attempts")
    counted = a.get("counted")
    if isinstance(counted, dict) and counted.get("credited") is not None:
        parts.append(f"credited {_points(counted['credited'])}/{_points(counted.get('max_score'))}")
    else:
        parts.append("not graded yet")
    if "lms" in a:  # the service sends grades to an LMS: say whether this one got there
        parts.append(f"sent to the LMS {when_text(a['lms'], now)}" if a["lms"] else "not sent to the LMS")
    # One line whatever the service sent: an assignment's name is text, shown as text.
    return terminal_text(COURSE_SEP.join(parts), multiline=False)


def course_html(course: object, now: dt.datetime | None = None) -> str:
    """The course line as HTML (``""`` without a policy); every value from the service is escaped.

    >>> course_html({"name": "<b>lab</b>", "due": "2026-03-01T12:00:00Z"},
    ...             dt.datetime(2026, 3, 1, 10, 0, tzinfo=dt.timezone.utc))
    '<span class="agtool-course" style="color:#6e7781">&lt;b&gt;lab&lt;/b&gt;: Due 2026-03-01 12:00 UTC (in 2 h)</span>'
    """
    line = course_line(course, now)
    lines = [line, *assignment_lines(course, now)] if line else []
    return "<br>".join(f'<span class="agtool-course" style="color:{_GREY}">{_esc(text)}</span>' for text in lines)


def notice_html(text: str) -> str:
    """A one-line note for the learner (the service cannot be reached, a refused submission), escaped.

    >>> notice_html("could not reach <http://h/>")
    '<span class="agtool-notice" style="color:#9a6700">could not reach &lt;http://h/&gt;</span>'
    """
    return f'<span class="agtool-notice" style="color:#9a6700">{_esc(text)}</span>'
