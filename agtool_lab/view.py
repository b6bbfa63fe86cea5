"""The Check cell's rendering: a Report as HTML and as text, for the widget and the service's grades.

Pure functions that decide nothing: :func:`render_html` and :func:`render_text`
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

from grader.escape import html_text, terminal_text
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
}
AFTER_LAST_STEP = "09_noisy_model.ipynb"

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
        return f"Step {step} passes: all eight steps are done. Extra: {AFTER_LAST_STEP}"
    return f"Step {step} passes. Next: {NOTEBOOKS[step + 1]}"


def failure_details(c: CheckResult) -> list[tuple[str, str]]:
    """The labelled lines shown under a failed check, in reading order, empty ones left out."""
    pairs = [
        ("call", c.call),
        ("expected", c.expected),
        ("got", c.got),
        ("why", c.message),
        ("hint", c.hint),
        ("replay", c.reproduce),
    ]
    return [(label, value) for label, value in pairs if value]


def render_text(report: Report, step: int) -> str:
    """The plain-text view of a step's report (``text/plain`` of the Check cell).

    >>> r = Report(seed=5, path="t.py", checks=[CheckResult("step1/names", 1, True, 2, 2, "Data names")])
    >>> print(render_text(r, 1))
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
    for c in report.checks:
        lines.append(f"  [{'passed' if c.passed else 'FAILED'}] {terminal_text(c.title, multiline=False)}")
        if not c.passed:
            lines.extend(f"      {label + ':':<10}{terminal_text(value)}" for label, value in failure_details(c))
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


def _check_row(c: CheckResult, *, open_details: bool = True) -> str:
    colour = _GREEN if c.passed else _RED
    mark = f'<td style="{_CELL};color:{colour};font-weight:bold">{PASS_MARK if c.passed else FAIL_MARK}</td>'
    word = f'<td style="{_CELL};color:{colour}">{"passed" if c.passed else "failed"}</td>'
    title = (f'<td style="{_CELL}">{_esc(c.title)} '
             f'<small style="color:{_GREY}"><code>{_esc(c.id)}</code></small></td>')
    if c.passed:
        details = "<td></td>"
    else:
        items = "".join(
            f'<tr><th style="{_CELL};padding-right:8px">{_esc(label)}</th>'
            f'<td style="{_CELL}"><code>{_esc(value)}</code></td></tr>'
            if label in ("call", "expected", "got", "replay")
            else f'<tr><th style="{_CELL};padding-right:8px">{_esc(label)}</th>'
            f'<td style="{_CELL}">{_esc(value)}</td></tr>'
            for label, value in failure_details(c)
        )
        # Only the first failure is unfolded: one thing to fix at a time, the rest a click away.
        summary = "<summary>details</summary>"
        details = (f'<td style="{_CELL}"><details{" open" if open_details else ""}>{summary}'
                   f"<table>{items}</table></details></td>")
    return f"<tr>{mark}{word}{title}{details}</tr>"


def render_html(report: Report, step: int) -> str:
    """The Check cell as a plain HTML table (the fallback where widgets do not run).

    Marks are words and symbols as well as colours, so the table reads the
    same where styles are stripped.

    >>> r = Report(seed=5, path="t.py", checks=[CheckResult("step1/names", 1, True, 2, 2, "Data names")])
    >>> "1/1 checks passed" in render_html(r, 1)
    True
    """
    parts = [
        # Widget HTML inherits a 28px line height from ipywidgets: too airy for a table.
        '<div class="agtool-check" style="line-height:1.45">',
        f"<p><b>Step {step}: {_esc(summary_line(report))}</b> "
        f"<small>(seed {_esc(report.seed)}, {_esc(report.path)})</small></p>",
    ]
    if report.error:
        parts.append(_error_box(report.error))
    elif not report.checks:
        parts.append(_error_box(_no_checks(step)))
    if report.checks:
        parts.append("<table>")
        parts.append("<thead><tr>" + "".join(
            f'<th style="{_CELL}">{name}</th>' for name in ("", "result", "check", "details")) + "</tr></thead>")
        parts.append("<tbody>")
        first_failure = next((c.id for c in report.checks if not c.passed), None)
        parts.extend(_check_row(c, open_details=c.id == first_failure) for c in report.checks)
        parts.append("</tbody></table>")
    printed = report.output.get(str(step), "")
    if printed:
        parts.append(
            "<details><summary>Your module printed</summary>"
            f"<pre>{_esc(printed)}</pre></details>"
        )
    follow = next_step_line(step, report)
    if follow:
        parts.append(f'<p style="color:{_GREEN}"><b>{_esc(follow)}</b></p>')
    elif len(report.failed) > 1 and not report.error:
        parts.append(f"<p>{_esc(FIRST_RED_ROW)}</p>")
    parts.append("</div>")
    return "\n".join(parts)
