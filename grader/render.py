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

from grader.escape import md_cell, md_code, md_code_cell, md_fence, md_text, terminal_text
from grader.report import CheckResult, Report

PASS_MARK, FAIL_MARK = "PASS", "FAIL"
DETAIL_FIELDS = ("call", "expected", "got", "message", "hint", "reproduce")


def render_json(report: Report) -> str:
    """The stable JSON document (docs/learner.md, "The grade report as JSON") of ``report``."""
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False, sort_keys=True)


# ------------------------------------------------------------------------------ text

def render_text(report: Report) -> str:
    """A terminal report: one line per check with a PASS/FAIL mark, details under failures."""
    lines = [f"agtool-grade {terminal_text(report.path, multiline=False)}  (seed {report.seed})"]
    if report.error:
        lines += ["", _indent(report.error, "! ")]
    steps = report.steps
    for step, total in steps.items():
        lines += ["", f"Step {step}: {total['score']}/{total['max_score']} points"
                      f"{'' if total['passed'] else '  (some checks failed)'}"]
        for check in (c for c in report.checks if c.step == step):
            mark = PASS_MARK if check.passed else FAIL_MARK
            lines.append(f"  {mark}  {terminal_text(check.id, multiline=False)}  "
                         f"{terminal_text(check.title, multiline=False)}  ({check.points}/{check.max_points})")
            if not check.passed:
                lines += _text_details(check, report.error)
            elif check.message:  # kept its points: its failure was charged to another step
                lines.append(f"        note:      {terminal_text(check.message, multiline=False)}")
        output = report.output.get(str(step), "")
        if output and not total["passed"]:
            lines += [f"  output of your code during step {step}:", _indent(output.rstrip("\n"), "    | ")]
    lines += ["", f"Total: {report.summary()}  (seed {report.seed})"]
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


def _indent(text: str, first: str, rest: "str | None" = None) -> str:
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
    for step, total in report.steps.items():
        status = "passed" if total["passed"] else "not yet"
        out += ["", f"## Step {step}: {total['score']}/{total['max_score']} ({status})", "",
                "| | check | title | points |", "|---|---|---|---|"]
        step_checks = [c for c in report.checks if c.step == step]
        for check in step_checks:
            mark = PASS_MARK if check.passed else FAIL_MARK
            out.append(f"| {mark} | {md_code_cell(check.id)} | {md_cell(check.title)} | {check.points}/{check.max_points} |")
        notes = [c for c in step_checks if c.passed and c.message]  # points kept: charged to another step
        if notes:
            out += [""] + [f"- {md_code(c.id)}: {md_text(c.message)}" for c in notes]
        for check in (c for c in step_checks if not c.passed):
            out += ["", f"### {FAIL_MARK} {md_code(check.id)}: {md_text(check.title)}", ""] + _markdown_details(check, report.error)
        output = report.output.get(str(step), "")
        if output and not total["passed"]:
            out += ["", f"<details><summary>Output of your code during step {step}</summary>", "",
                    md_fence(output.rstrip("\n")), "", "</details>"]
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

FAILURE_LABELS = (("call", "call"), ("expected", "expected"), ("got", "got"), ("message", "why"),
                  ("hint", "hint"), ("reproduce", "replay"))


def failure_details(check: CheckResult) -> "list[tuple[str, str]]":
    """The labelled lines under a failed check, in reading order, empty ones left out (widget and service page).

    >>> failure_details(CheckResult("step1/x", 1, False, 0, 1, "x", message="m", call="f(1)", reproduce="r"))
    [('call', 'f(1)'), ('why', 'm'), ('replay', 'r')]
    """
    return [(label, getattr(check, name)) for name, label in FAILURE_LABELS if getattr(check, name)]
