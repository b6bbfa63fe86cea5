"""Renderers of a :class:`~grader.report.Report`: terminal text, Markdown, JSON.

They add no judgement: every word they print comes from the report.

Example::

    >>> from grader.report import CheckResult, Report
    >>> report = Report(seed=3, path="tools.py", checks=[
    ...     CheckResult(id="step1/names", step=1, passed=True, points=2, max_points=2, title="Data names")])
    >>> print(render_text(report).splitlines()[3])
      PASS  step1/names  Data names  (2/2)
"""
from __future__ import annotations

import html
import json
import re

from grader.report import CheckResult, Report

PASS_MARK, FAIL_MARK = "PASS", "FAIL"
DETAIL_FIELDS = ("call", "expected", "got", "message", "hint", "reproduce")


def render_json(report: Report) -> str:
    """The stable JSON document (see the README) of ``report``."""
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False, sort_keys=True)


# ------------------------------------------------------------------------------ text

def render_text(report: Report) -> str:
    """A terminal report: one line per check with a PASS/FAIL mark, details under failures."""
    lines = [f"agtool-grade {report.path}  (seed {report.seed})"]
    if report.error:
        lines += ["", _indent(report.error, "! ")]
    steps = report.steps
    for step, total in steps.items():
        lines += ["", f"Step {step}: {total['score']}/{total['max_score']} points"
                      f"{'' if total['passed'] else '  (some checks failed)'}"]
        for check in (c for c in report.checks if c.step == step):
            mark = PASS_MARK if check.passed else FAIL_MARK
            lines.append(f"  {mark}  {check.id}  {check.title}  ({check.points}/{check.max_points})")
            if not check.passed:
                lines += _text_details(check, report.error)
        output = report.output.get(str(step), "")
        if output and not total["passed"]:
            lines += [f"  output of your code during step {step}:", _indent(output.rstrip("\n"), "    | ")]
    lines += ["", f"Total: {report.summary()}  (seed {report.seed})"]
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
    rest = first if rest is None else rest
    return "\n".join((first if i == 0 else rest) + line for i, line in enumerate(text.splitlines() or [""]))


# -------------------------------------------------------------------------- Markdown

def render_markdown(report: Report) -> str:
    """Feedback for a learner as Markdown: score, per-step tables, details of each failure."""
    out = [
        "# Grading report",
        "",
        f"- **Module:** `{report.path}`",
        f"- **Score:** {report.summary()}",
        f"- **Seed:** {report.seed} (run again with `--seed {report.seed}` to get the same cases)",
    ]
    if report.error:
        out += ["", "**Your module could not be graded.**", "", _fence(report.error)]
    for step, total in report.steps.items():
        status = "passed" if total["passed"] else "not yet"
        out += ["", f"## Step {step}: {total['score']}/{total['max_score']} ({status})", "",
                "| | check | title | points |", "|---|---|---|---|"]
        step_checks = [c for c in report.checks if c.step == step]
        for check in step_checks:
            mark = PASS_MARK if check.passed else FAIL_MARK
            out.append(f"| {mark} | `{check.id}` | {table_cell(check.title)} | {check.points}/{check.max_points} |")
        for check in (c for c in step_checks if not c.passed):
            out += ["", f"### {FAIL_MARK} `{check.id}`: {_plain(check.title)}", ""] + _markdown_details(check, report.error)
        output = report.output.get(str(step), "")
        if output and not total["passed"]:
            out += ["", f"<details><summary>Output of your code during step {step}</summary>", "",
                    _fence(output.rstrip("\n")), "", "</details>"]
    return "\n".join(out) + "\n"


def _markdown_details(check: CheckResult, shared_error: str) -> list[str]:
    lines = []
    for name in DETAIL_FIELDS:
        value = getattr(check, name)
        if not value or (name == "message" and value == shared_error):
            continue
        if "\n" in value:
            lines += [f"- **{name}:**", "", _fence(value, indent="  "), ""]
        elif name in ("call", "reproduce", "expected", "got"):
            lines.append(f"- **{name}:** {_code(value)}")
        else:
            lines.append(f"- **{name}:** {_plain(value)}")
    return lines


def _code(text: str) -> str:
    """Inline code that survives backticks inside ``text``."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fence(text: str, indent: str = "") -> str:
    """A fenced block longer than any backtick run in ``text`` (learner output can hold fences)."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    body = "\n".join(indent + line for line in text.splitlines())
    return f"{indent}{fence}text\n{body}\n{indent}{fence}"


def _plain(text: str) -> str:
    """Text shown as is: a message may quote learner values, which must not become HTML."""
    return html.escape(text, quote=False)


def table_cell(text: str) -> str:
    r"""Text safe inside one cell of a Markdown table: escaped, one line, no column break.

    >>> print(table_cell("a | b <c>"))
    a \| b &lt;c&gt;
    """
    return _plain(str(text)).replace("|", "\\|").replace("\n", " ")
