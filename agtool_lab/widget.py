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
:func:`render_html` and :func:`check_panel_text` turn a Report into a string and
decide nothing.

Example (in a notebook cell)::

    from agtool_lab.widget import check
    check(3)
"""

from __future__ import annotations

import dataclasses
import sys
import traceback
from collections.abc import Callable

import ipywidgets as widgets

from agtool_lab import submit as service
from agtool_lab.load import ENV_VAR, learner_path
from agtool_lab.submit_panel import SubmitControls
from agtool_lab.view import check_panel_text, render_html, summary_line
from grader.escape import shell_join
from grader.render import failure_details
from grader.report import Report, new_seed
from grader.settings import Settings, current

__all__ = ["CheckPanel", "check", "grade_step", "kernel_runner", "working_on"]

GradeFn = Callable[..., Report]


def kernel_runner() -> str:
    """The shell words that run ``agtool-grade`` with this kernel's own interpreter, quoted.

    Replay commands start with these instead of ``agtool-grade``: a JupyterLab
    terminal is a login shell on a hub, whose ``/etc/profile`` drops the lab's
    environment from ``PATH``, while this interpreter's path works anywhere.

    >>> kernel_runner().endswith(" -m grader")
    True
    """
    return shell_join([sys.executable, "-m", "grader"])


# --------------------------------------------------------------------------
# Grading without raising into the notebook
# --------------------------------------------------------------------------


def _error_report(message: str, *, path: str = "", seed: int | None = None) -> Report:
    return Report(seed=seed if seed is not None else 0, path=path, error=message)


def _default_grade(path, *, steps, seed) -> Report:
    # Imported late: grading pulls in the engine client's child-process machinery, and a
    # failure to import it must become a red box, not a traceback.
    from grader.grading import grade

    # The Check runs learner code as the graded run does: in the commands' sandbox
    # (``auto`` unless $AGTOOL_SANDBOX says), so a module sees the same files, account, module name,
    # path shape and environment under a Check as when it is graded: detecting the grader gains nothing.
    settings = current()
    return grade(path, steps=steps, seed=seed, settings=settings.with_values(sandbox=settings.sandbox or "auto"))


def grade_step(step: int, *, path=None, seed: int | None = None, grade: GradeFn | None = None) -> Report:
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
    a browser; ``rerun()`` is what the button calls. Where the class has a
    grading service (:func:`agtool_lab.submit.configured`) a Submit button
    beside it calls ``send()``, and a line beside them shows the course's due
    date and the learner's attempts left (``refresh_course()``, asked when
    the panel is made and after each submit). Without a service the panel is
    Check alone and asks nothing of the network.

    >>> from grader.report import CheckResult
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
            layout=widgets.Layout(width="auto", flex="0 0 auto"),
        )
        self.status = widgets.Label(layout=widgets.Layout(flex="0 0 auto"))
        self.button.on_click(lambda _button: self.rerun())
        buttons = [self.button]
        # Beside Check, where the class has a grading service: the attempt that is kept and counts,
        # and the course line (due date, attempts left) that says whether to press it now.
        self.submit_button = self.submitted = self.course_label = self.controls = None
        if service.configured():  # Submit, its confirmation and the course line: agtool_lab.submit_panel
            self.controls = SubmitControls(path, step, self.status)
            self.submit_button, self.submitted = self.controls.button, self.controls.submitted
            self.course_label = self.controls.course_label
            buttons.append(self.submit_button)
        row = [*buttons, self.status] + ([self.course_label] if self.course_label is not None else [])
        children = [self.body, widgets.HBox(row, layout=widgets.Layout(align_items="center"))]
        super().__init__(children + ([self.controls.below] if self.controls is not None else []))
        self._show(report)
        if self.course_label is not None:
            self.refresh_course()

    @property
    def rows(self) -> list[dict]:
        """One dict per check: ``id``, ``title``, ``passed`` and, for failures, the details."""
        return [
            {"id": c.id, "title": c.title, "passed": c.passed, **dict(failure_details(c))} for c in self.report.checks
        ]

    @property
    def summary(self) -> str:
        return summary_line(self.report)

    def rerun(self, seed: int | None = None) -> Report:
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

    def send(self):
        """Submit the file now (the confirmation's button calls this), show the grade, refresh the course line."""
        return self.controls.send()

    def refresh_course(self) -> service.CourseStatus:
        """Ask the service for the due date and attempts left and show them beside the buttons (never raises)."""
        return self.controls.refresh_course()

    @property
    def course_info(self) -> service.CourseStatus | None:
        return self.controls.info if self.controls is not None else None

    def _show(self, report: Report) -> None:
        self.report = report
        self.body.value = render_html(report, self.step, runner=kernel_runner(), copy=True)
        self.status.value = f"seed {report.seed}"

    def _repr_mimebundle_(self, **kwargs):
        # The widget view where a widget manager runs; HTML and text elsewhere.
        data = super()._repr_mimebundle_(**kwargs) or {}
        data["text/plain"] = check_panel_text(self.report, self.step, runner=kernel_runner())
        data["text/html"] = render_html(self.report, self.step, runner=kernel_runner())
        return data


# --------------------------------------------------------------------------
# The Check cell
# --------------------------------------------------------------------------


def working_on(path=None, *, settings: Settings | None = None) -> str:
    """Say which file the Check cells and playgrounds of this notebook use; never raises.

    ``settings`` defaults to this kernel's environment, read now.

    >>> working_on("/no/such/file.py").startswith("No module found")
    True
    """
    settings = settings or current()
    try:
        file = learner_path(path, settings=settings)
    except Exception as exc:
        return f"No module found: {exc}"
    origin = f" (set by ${ENV_VAR})" if not path and settings.module else ""
    return f"This notebook works on {file}{origin}."


@dataclasses.dataclass
class CheckedReport(Report):
    """The Report that ``check`` returns; as a cell's last value it shows its panel once.

    ``check`` has already displayed the panel, so the first automatic display
    of the returned value is skipped: the result never appears twice.
    """

    panel: CheckPanel | None = dataclasses.field(default=None, repr=False, compare=False)
    _skip_next_display: bool = dataclasses.field(default=False, repr=False, compare=False)

    def _ipython_display_(self) -> None:
        if self._skip_next_display:
            self._skip_next_display = False
            return
        from IPython.display import display

        display(self.panel if self.panel is not None else check_panel_text(self, 0))


def check(step: int, *, path=None, seed: int | None = None) -> Report:
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
        print(check_panel_text(report, step, runner=kernel_runner()))
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
