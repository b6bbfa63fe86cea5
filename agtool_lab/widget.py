"""The Check cell of the lab notebooks: ``check(step)`` grades the learner's file and shows it.

``check`` grades the module on disk (``agtool/tools.py``, or ``$AGTOOL_MODULE``)
through :func:`grader.grading.grade`, which imports the learner's code in child
processes -- so an edit is seen by the next ``check`` without restarting the
kernel -- and shows the :class:`~grader.report.Report` as a panel: one row per
check, the failing call with expected vs got, the message, the hint and the
seed, a summary line and a "Try new random values" button.

The panel is an ipywidgets box whose display bundle also carries a plain HTML
table and a text rendering, so a notebook opened where widgets do not run
(nbconvert, a GitHub preview) still reads well. The rendering is pure:
:func:`render_html` and :func:`render_text` turn a Report into a string and
decide nothing.

Example (in a notebook cell)::

    from agtool_lab.widget import check
    check(3)
"""
from __future__ import annotations

import dataclasses
import os
import traceback
from typing import Callable

import ipywidgets as widgets

from agtool_lab.load import ENV_VAR, learner_path
from grader.escape import html_text, terminal_text
from grader.report import CheckResult, Report, new_seed

__all__ = ["NOTEBOOKS", "CheckPanel", "check", "render_html", "render_text", "working_on"]

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

GradeFn = Callable[..., Report]


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


def _failure_details(c: CheckResult) -> list[tuple[str, str]]:
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
            lines.extend(f"      {label + ':':<10}{terminal_text(value)}" for label, value in _failure_details(c))
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
            for label, value in _failure_details(c)
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


# --------------------------------------------------------------------------
# Grading without raising into the notebook
# --------------------------------------------------------------------------


def _error_report(message: str, *, path: str = "", seed: "int | None" = None) -> Report:
    return Report(seed=seed if seed is not None else 0, path=path, error=message)


def _default_grade(path, *, steps, seed) -> Report:
    # Imported late: the runner pulls in the child-process machinery, and a
    # failure to import it must become a red box, not a traceback.
    from grader.grading import grade

    return grade(path, steps=steps, seed=seed)


def grade_step(step: int, *, path=None, seed: "int | None" = None, grade: GradeFn | None = None) -> Report:
    """Grade one step of the learner's module; every failure comes back inside the Report.

    >>> grade_step(1, path="/no/such/file.py").error.startswith("/no/such/file.py does not exist")
    True
    """
    try:
        file = learner_path(path)
    except Exception as exc:  # a bad path is the learner's to fix, shown as text
        return _error_report(str(exc), path=str(path or ""), seed=seed)
    try:
        return (grade or _default_grade)(file, steps=[step], seed=seed)
    except Exception as exc:  # the notebook must never see a grader traceback raised
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return _error_report(f"The grader itself failed: {detail}", path=str(file), seed=seed)


# --------------------------------------------------------------------------
# The widget
# --------------------------------------------------------------------------


class CheckPanel(widgets.VBox):
    """The Check cell's panel: the rendered report and a button that re-grades with a new seed.

    ``rows`` and ``summary`` expose the data model so it can be tested without
    a browser; ``rerun()`` is what the button calls.

    >>> r = Report(seed=5, path="t.py", checks=[CheckResult("step1/names", 1, True, 2, 2, "Data names")])
    >>> CheckPanel(1, r, path="t.py").summary
    '1/1 checks passed, 2/2 points'
    """

    def __init__(self, step: int, report: Report, *, path=None, grade: GradeFn | None = None):
        self.step = step
        self.path = path
        self._grade = grade
        self.report = report
        self.body = widgets.HTML()
        self.button = widgets.Button(
            description="Try new random values",
            icon="refresh",
            tooltip="Grade this step again with a new seed (new sku, region and limit values)",
            layout=widgets.Layout(width="auto"),
        )
        self.status = widgets.Label()
        self.button.on_click(lambda _button: self.rerun())
        super().__init__([self.body, widgets.HBox([self.button, self.status])])
        self._show(report)

    @property
    def rows(self) -> list[dict]:
        """One dict per check: ``id``, ``title``, ``passed`` and, for failures, the details."""
        return [
            {"id": c.id, "title": c.title, "passed": c.passed, **dict(_failure_details(c))}
            for c in self.report.checks
        ]

    @property
    def summary(self) -> str:
        return summary_line(self.report)

    def rerun(self, seed: "int | None" = None) -> Report:
        """Grade again (with ``seed``, or a fresh one) and update the panel in place."""
        seed = new_seed(avoid=self.report.seed) if seed is None else seed
        self.button.disabled = True
        self.status.value = f"grading with seed {seed} ..."
        try:
            report = grade_step(self.step, path=self.path, seed=seed, grade=self._grade)
        finally:
            self.button.disabled = False
        self._show(report)
        return report

    def _show(self, report: Report) -> None:
        self.report = report
        self.body.value = render_html(report, self.step)
        self.status.value = f"seed {report.seed}"

    def _repr_mimebundle_(self, **kwargs):
        # The widget view where a widget manager runs; HTML and text elsewhere.
        data = super()._repr_mimebundle_(**kwargs) or {}
        data["text/plain"] = render_text(self.report, self.step)
        data["text/html"] = render_html(self.report, self.step)
        return data


# --------------------------------------------------------------------------
# The Check cell
# --------------------------------------------------------------------------


def working_on(path=None) -> str:
    """Say which file the Check cells and playgrounds of this notebook use; never raises.

    >>> working_on("/no/such/file.py").startswith("No module found")
    True
    """
    try:
        file = learner_path(path)
    except Exception as exc:
        return f"No module found: {exc}"
    origin = f" (set by ${ENV_VAR})" if not path and os.environ.get(ENV_VAR) else ""
    return f"This notebook works on {file}{origin}."


@dataclasses.dataclass
class CheckedReport(Report):
    """The Report that ``check`` returns; as a cell's last value it shows its panel once.

    ``check`` has already displayed the panel, so the first automatic display
    of the returned value is skipped: the result never appears twice.
    """

    panel: "CheckPanel | None" = dataclasses.field(default=None, repr=False, compare=False)
    _skip_next_display: bool = dataclasses.field(default=False, repr=False, compare=False)

    def _ipython_display_(self) -> None:
        if self._skip_next_display:
            self._skip_next_display = False
            return
        from IPython.display import display

        display(self.panel if self.panel is not None else render_text(self, 0))


def check(step: int, *, path=None, seed: "int | None" = None) -> Report:
    """Grade ``step`` of the learner's module on disk, show the panel, return the Report.

    ``path`` defaults to ``$AGTOOL_MODULE`` or ``agtool/tools.py``; ``seed``
    defaults to a new random one (the panel shows it). Never raises.

    Example (in a notebook cell)::

        check(3)
    """
    report = grade_step(step, path=path, seed=seed)
    fields = {f.name: getattr(report, f.name) for f in dataclasses.fields(Report)}
    result = CheckedReport(**fields)
    result.panel = CheckPanel(step, report, path=path)
    shell = _ipython_shell()
    if shell is None:  # a plain Python session: text is all there is
        print(render_text(report, step))
        return result
    from IPython.display import display

    display(result.panel)
    _skip_display_until_cell_ends(shell, result)
    return result


def _ipython_shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def _skip_display_until_cell_ends(shell, result: CheckedReport) -> None:
    # The cell's last value is displayed before post_run_cell fires; after
    # the cell, `result` typed alone in a later cell shows the panel again.
    result._skip_next_display = True

    def _reset(*_args) -> None:
        result._skip_next_display = False
        shell.events.unregister("post_run_cell", _reset)

    shell.events.register("post_run_cell", _reset)
