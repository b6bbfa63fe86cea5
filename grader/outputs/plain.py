"""A learner's feedback as plain text (``feedback/<learner>.txt``), for an LMS comment box.

The same :class:`~grader.outputs.feedback.Feedback` as the Markdown file, in
words only: no Markdown syntax, no escapes, every control character removed
(:func:`grader.escape.plain_text`), so it reads the same pasted into Canvas,
Moodle or a terminal.

Example::

    >>> from grader.report import CheckResult, Report
    >>> r = Report(seed=3, path="/srv/ana/tools.py", checks=[
    ...     CheckResult("step1/names", 1, False, 0, 2, "Names <arg>", got="[]", expected="['north']")])
    >>> print(render_feedback_plain({"report": r.to_dict()}).splitlines()[0])
    Feedback on tools.py
"""

from __future__ import annotations

from grader.escape import plain_text
from grader.outputs.feedback import KEYED_NOTE, RUN_FROM, STARTER_TEXT, Feedback, build_feedback, learner_reports
from grader.outputs.record import LearnerRecord
from grader.report import Report

INDENT = "   "
LABEL_WIDTH = 10  # "expected: " and the rest lined up under it


def render_feedback_plain(record: LearnerRecord | dict) -> str:
    """Plain-text feedback for one learner (``feedback/<learner>.txt``).

    >>> report = {"seed": 1, "path": "t.py", "checks": []}
    >>> "The grade that counts: 0/0." in render_feedback_plain({"report": report})
    True
    """
    return feedback_plain_text(record, *learner_reports(record))


def feedback_plain_text(record: LearnerRecord | dict, shown: Report, counting: Report, *, starter: bool = False) -> str:
    """:func:`render_feedback_plain` from reports already parsed by :func:`~grader.outputs.feedback.learner_reports`."""
    return feedback_plain(build_feedback(record, shown, counting, starter=starter))


def _line(text: object) -> str:
    return plain_text(text, multiline=False)


def _block(text: str, prefix: str) -> list[str]:
    """A multi-line value, each line behind ``prefix`` (split on ``\\n`` only, after controls are gone)."""
    return [prefix + line for line in plain_text(text).rstrip("\n").split("\n")]


def feedback_plain(fb: Feedback) -> str:
    """:class:`~grader.outputs.feedback.Feedback` as plain text: headings in capitals, details indented."""
    out = [f"Feedback on {_line(fb.file_name)}", "", _line(fb.grade)]
    out += [_line(fb.why)] if fb.why else []
    out += ["", KEYED_NOTE] if fb.keyed else []
    out += ["", f"File: {_line(fb.file_name)}", f"Checks{' below' if fb.keyed else ''}: {fb.checks} (seed {fb.seed})"]
    if fb.error:
        out += [
            "",
            "YOUR MODULE COULD NOT BE GRADED",
            "",
            *_block(fb.error, INDENT),
            "",
            f"No check could run. To see it again: {fb.replay}",
        ]
    if fb.starter:
        out += ["", "NOT STARTED", "", STARTER_TEXT]
    if fb.failed:
        out += [
            "",
            f"WHAT TO FIX ({len(fb.failed)} {'check' if len(fb.failed) == 1 else 'checks'} failed)",
            "",
            "Start with the first: later checks often fail for the same reason. " + RUN_FROM,
        ]
    for number, check in enumerate(fb.failed, start=1):
        out += [
            "",
            f"{number}. Step {check.step}: {_line(check.title)} ({check.points}/{check.max_points})",
            f"{INDENT}{'check:':<{LABEL_WIDTH}}{_line(check.id)}",
        ]
        for label, value in check.details:
            head = f"{INDENT}{label + ':':<{LABEL_WIDTH}}"
            out += [head.rstrip(), *_block(value, INDENT * 2)] if "\n" in value else [head + _line(value)]
    if fb.not_started:
        out += ["", "NOT WRITTEN YET", ""]
        out += [
            f"{INDENT}Step {step}: {count} {'check' if count == 1 else 'checks'} met the starter's placeholder: "
            + "; ".join(_line(w) for w in which)
            for step, (count, which) in sorted(fb.not_started.items())
        ]
    for step, text in fb.output.items():
        out += ["", f"Output of your code during step {step}:", *_block(text, INDENT + "| ")]
    return "\n".join(out + _plain_steps(fb)) + "\n"


def _plain_steps(fb: Feedback) -> list[str]:
    if not fb.steps:
        return []
    lines = ["", "POINTS PER STEP", ""]
    return lines + [
        f"{INDENT}Step {step}: {score}/{top} points, {passed}/{n} checks passed"
        for step, score, top, passed, n in fb.steps
    ]
