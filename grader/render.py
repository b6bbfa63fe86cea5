"""Renderers of a :class:`~grader.report.Report`: terminal text, Markdown, JSON.

They add no judgement: every word they print comes from the report. Every
learner text is escaped for the target with :mod:`grader.escape`: control
characters shown as visible escapes in the text report, code spans, fences
and prose in the Markdown one (no link, image, HTML or math from learner
text); JSON is the report itself.

Example::

    >>> from grader.report import CheckResult, Report
    >>> report = Report(seed=3, path="tools.py", checks=[
    ...     CheckResult(id="step1/names", step=1, passed=True, points=2, max_points=2, title="Data names")])
    >>> print(render_text(report).splitlines()[3])
      PASS  step1/names  Data names  (2/2)
"""

from __future__ import annotations

import json

from grader import messages
from grader.escape import md_cell, md_code, md_code_cell, md_fence, md_text, terminal_text
from grader.report import CheckResult, Report

PASS_MARK, FAIL_MARK = "PASS", "FAIL"
DETAIL_FIELDS = ("call", "expected", "got", "message", "hint", "reproduce")


def render_json(report: Report) -> str:
    """The stable JSON document (docs/learner.md, "The grade report as JSON") of ``report``."""
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False, sort_keys=True)


# ------------------------------------------------------------------------------ text


def render_text(report: Report, *, verbose: bool = True) -> str:
    """A terminal report: one line per check with a PASS/FAIL mark, details under failures.

    ``verbose`` adds the grader's own words at the end: the ``limits:`` that held for each step and
    the ``isolation:`` learner code ran with (the instructor's business; ``agtool-grade check`` shows
    them with ``--verbose`` only).
    """
    lines = [f"agtool-grade {terminal_text(report.path, multiline=False)}  (seed {report.seed})"]
    if report.error:
        lines += ["", _indent(report.error, "! ")]
    steps = report.steps
    notes = crash_notes(report.checks)
    if one_reason(report):  # a module that does not import: one row, one replay line (as the Check panel)
        lines += [
            "",
            f"  {FAIL_MARK}  {one_reason_text(report, again='run it again')}  (0/{report.max_score})",
            _indent(whole_replay(report.checks[0].reproduce), f"        {'reproduce:':<11}"),
        ]
        steps = {}
    for step, total in steps.items():
        lines += [
            "",
            f"Step {step}: {total['score']}/{total['max_score']} points"
            f"{'' if total['passed'] else '  (some checks failed)'}",
        ]
        for check in (c for c in report.checks if c.step == step):
            mark = PASS_MARK if check.passed else FAIL_MARK
            lines.append(
                f"  {mark}  {terminal_text(check.id, multiline=False)}  "
                f"{terminal_text(check.title, multiline=False)}  ({check.points}/{check.max_points})"
            )
            if check.id in notes:  # the same crash as a row above: said once, there
                lines.append(_indent(notes[check.id], f"        {'message:':<11}", "        " + " " * 11))
            elif not check.passed:
                lines += _text_details(check, report.error)
            elif check.message:  # kept its points: its failure was charged to another step
                lines.append(f"        note:      {terminal_text(check.message, multiline=False)}")
        output = report.output.get(str(step), "")
        if output and not total["passed"]:
            lines += [f"  output of your code during step {step}:", _indent(output.rstrip("\n"), "    | ")]
    lines += ["", f"Total: {report.summary()}  (seed {report.seed})"]
    if not verbose:
        return "\n".join(lines) + "\n"
    if report.limits:
        lines.append(f"limits: {terminal_text(report.limits, multiline=False)}")
    if report.isolation:
        lines.append(f"isolation: {terminal_text(report.isolation, multiline=False)}")
    return "\n".join(lines) + "\n"


def _text_details(check: CheckResult, shared_error: str) -> list[str]:
    lines = []
    for name in DETAIL_FIELDS:
        value = getattr(check, name)
        if not value or (name == "message" and value == shared_error):
            continue  # an import failure is printed once, at the top
        lines.append(_indent(value, f"        {name + ':':<11}", "        " + " " * 11))
    return lines


def _indent(text: str, first: str, rest: str | None = None) -> str:
    # Escaped first, then split on "\n" only: str.splitlines() also breaks at
    # \r, \x0c, \x1c.. and \u2028, lines a learner could forge that way.
    rest = first if rest is None else rest
    lines = terminal_text(text).rstrip("\n").split("\n") if text else [""]
    return "\n".join((first if i == 0 else rest) + line for i, line in enumerate(lines))


# -------------------------------------------------------------------------- Markdown


def render_markdown(report: Report) -> str:
    """Feedback for a learner as Markdown: score, per-step tables, details of each failure."""
    out = [
        "# Grading report",
        "",
        f"- **Module:** {md_code(report.path)}",
        f"- **Score:** {report.summary()}",
        f"- **Seed:** {report.seed} (run again with `--seed {report.seed}` to get the same cases)",
    ]
    if report.isolation:
        out.append(f"- **Isolation:** {md_text(report.isolation)}")
    if report.error:
        out += ["", "**Your module could not be graded.**", "", md_fence(report.error)]
    same_crash = crash_notes(report.checks)
    for step, total in report.steps.items():
        status = "passed" if total["passed"] else "not yet"
        out += [
            "",
            f"## Step {step}: {total['score']}/{total['max_score']} ({status})",
            "",
            "| | check | title | points |",
            "|---|---|---|---|",
        ]
        step_checks = [c for c in report.checks if c.step == step]
        for check in step_checks:
            mark = PASS_MARK if check.passed else FAIL_MARK
            out.append(
                f"| {mark} | {md_code_cell(check.id)} | {md_cell(check.title)} | {check.points}/{check.max_points} |"
            )
        notes = [c for c in step_checks if c.passed and c.message]  # points kept: charged to another step
        if notes:
            out += [""] + [f"- {md_code(c.id)}: {md_text(c.message)}" for c in notes]
        for check in (c for c in step_checks if not c.passed):
            out += ["", f"### {FAIL_MARK} {md_code(check.id)}: {md_text(check.title)}", ""]
            out += (
                [f"- **message:** {md_text(same_crash[check.id])}"]
                if check.id in same_crash
                else _markdown_details(check, report.error)
            )
        output = report.output.get(str(step), "")
        if output and not total["passed"]:
            out += [
                "",
                f"<details><summary>Output of your code during step {step}</summary>",
                "",
                md_fence(output.rstrip("\n")),
                "",
                "</details>",
            ]
    return "\n".join(out) + "\n"


def _markdown_details(check: CheckResult, shared_error: str) -> list[str]:
    lines = []
    for name in DETAIL_FIELDS:
        value = getattr(check, name)
        if not value or (name == "message" and value == shared_error):
            continue
        if "\n" in value:
            lines += [f"- **{name}:**", "", md_fence(value, indent="  "), ""]
        elif name in ("call", "reproduce", "expected", "got"):
            lines.append(f"- **{name}:** {md_code(value)}")
        else:
            lines.append(f"- **{name}:** {md_text(value)}")
    return lines


# -------------------------------------------------------------------------- what a failed check shows


def one_reason(report: Report) -> bool:
    """Whether every check failed for the report's one failure (a module that does not import): one row says so.

    >>> why = "Your module could not be imported: SyntaxError at tools.py line 3: bad"
    >>> one_reason(Report(seed=1, path="t.py", error=why, checks=[CheckResult("step1/a", 1, False, 0, 1, "A",
    ...                                                                       message=why)]))
    True
    """
    return bool(report.error and report.checks) and all(
        not c.passed and c.message == report.error for c in report.checks
    )


def _steps_words(steps: list[int]) -> str:
    if len(steps) == 1:
        return f"step {steps[0]}"
    if steps == list(range(steps[0], steps[-1] + 1)):
        return f"steps {steps[0]}-{steps[-1]}"
    return "steps " + ", ".join(map(str, steps))


def one_reason_text(report: Report, *, again: str = "run Check again") -> str:
    """The one row that stands for every check when :func:`one_reason` holds: what it needs, no hint.

    >>> why = "Your module could not be imported: NameError: name 'x' is not defined"
    >>> r = Report(seed=1, path="t.py", error=why, checks=[CheckResult(f"step2/c{i}", 2, False, 0, 1, "c", message=why)
    ...                                                    for i in range(14)])
    >>> one_reason_text(r)
    'All 14 checks of step 2 need your module to import: fix the error above, then run Check again.'
    """
    count = len(report.checks)
    checks = f"All {count} checks" if count > 1 else "The check"
    where = f"{checks} of {_steps_words(sorted({c.step for c in report.checks}))}"
    if report.error.startswith(messages.IMPORT_FAILED):
        return f"{where} need{'s' if count == 1 else ''} your module to import: fix the error above, then {again}."
    return f"{where} failed for the reason above."


def whole_replay(reproduce: str) -> str:
    """A check's replay command without its ``--only ID``: the same run of every check.

    >>> whole_replay("agtool-grade check t.py --only step1/names --seed 3")
    'agtool-grade check t.py --seed 3'
    """
    words = reproduce.split(" ")
    if "--only" in words[:-1]:
        at = words.index("--only")
        del words[at : at + 2]
    return " ".join(words)


FAILURE_LABELS = (
    ("call", "call"),
    ("expected", "expected"),
    ("got", "got"),
    ("message", "why"),
    ("hint", "hint"),
    ("reproduce", "replay"),
)


def _crash(check: CheckResult) -> str:
    """What a failed check saw raised (its ``got`` or message), or ``""`` when it did not fail on a crash."""
    if check.passed:
        return ""
    if check.got.startswith(
        "raised "
    ):  # the error and, when seen, its line: another call reaching it is the same crash
        return check.got
    return check.message if check.message.startswith("Your code raised ") else ""


def crash_notes(checks: list[CheckResult]) -> dict[str, str]:
    """``{check id: note}`` for the failed rows that only repeat an earlier row's crash in the same step.

    One crash is shown once: the first row of a step that failed on a call raising an
    error keeps its details (the call, the line of the crash); a later row of the step whose call
    raised the same error at the same line is a note that it follows from it. Points are not changed.

    >>> got = "raised ValueError: bad (line 9, in f)"
    >>> rows = [CheckResult(f"step10/{n}", 10, False, 0, 1, n, call="f(1)", got=got) for n in "abc"]
    >>> sorted(crash_notes(rows))
    ['step10/b', 'step10/c']
    """
    first: dict[tuple[int, str], str] = {}
    notes = {}
    for check in checks:
        crash = _crash(check)
        if not crash:
            continue
        key = (check.step, crash)
        if key in first:
            notes[check.id] = messages.same_crash(first[key])
        else:
            first[key] = check.id
    return notes


def shown_details(check: CheckResult, notes: dict[str, str]) -> list[tuple[str, str]]:
    """:func:`failure_details`, or the one note of a row that repeats an earlier crash (:func:`crash_notes`).

    >>> shown_details(CheckResult("step1/x", 1, False, 0, 1, "x", call="f()"), {"step1/x": "Follows."})
    [('why', 'Follows.')]
    """
    return [("why", notes[check.id])] if check.id in notes else failure_details(check)


def failure_details(check: CheckResult) -> list[tuple[str, str]]:
    """The labelled lines under a failed check, in reading order, empty ones left out (widget and service page).

    >>> failure_details(CheckResult("step1/x", 1, False, 0, 1, "x", message="m", call="f(1)", reproduce="r"))
    [('call', 'f(1)'), ('why', 'm'), ('replay', 'r')]
    """
    return [(label, getattr(check, name)) for name, label in FAILURE_LABELS if getattr(check, name)]
