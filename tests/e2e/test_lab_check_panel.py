"""The Check cell of each lab notebook, run by a learner in JupyterLab in Chromium.

Against the reference solution every row of the panel passes; against the
starter rows fail and are shown red; "Try new random values" grades again in
the page with a new seed. The panel must be the ipywidgets view, not the
HTML fallback that JupyterLab would show if the widget could not render.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.lab import running_lab
from e2e.notebook_ui import (
    open_notebook,
    output_errors,
    run_all_cells,
    screenshot_check_panel,
    try_new_random_values,
    wait_for_check_panel,
)

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]

SOLUTION = REPO_ROOT / "solutions" / "tools.py"
STARTER = REPO_ROOT / "starter" / "tools.py"
# The step notebooks 01-11 (12 is the capstone: no Check cell).
NOTEBOOKS = sorted(p.name for p in (REPO_ROOT / "labs").glob("[01][0-9]_*.ipynb") if int(p.name[:2]) <= 11)
STEP_11 = "11_identity.ipynb"
RED = "rgb(207, 34, 46)"  # agtool_lab.widget's failure colour, as the browser computes it
GREEN = "rgb(26, 127, 55)"
WIDGET_MANAGER = "@jupyter-widgets/jupyterlab-manager"


def run_notebook(page, lab, notebook):
    """Open, Run All, and return the Check panel; no cell may raise and no widget may break."""
    open_notebook(page, lab.url_for(f"labs/{notebook}"))
    run_all_cells(page)
    panel = wait_for_check_panel(page)
    assert output_errors(page) == [], f"{notebook}: an output shows a traceback or a broken widget"
    return panel


def assert_rendered_as_widget(panel):
    assert panel.in_widget, "the Check panel is the HTML fallback, not the ipywidgets view"
    assert panel.panels_total == panel.panels_in_widgets, "some Check output fell back to HTML"


def test_every_step_notebook_is_present():
    assert len(NOTEBOOKS) == 11 and NOTEBOOKS[-1] == STEP_11, NOTEBOOKS


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_solution_passes_every_row_of_the_check_widget(
    notebook, page, lab_server, shutdown_kernels_after, artifacts_dir
):
    lab = lab_server(SOLUTION)
    shutdown_kernels_after(lab)
    panel = run_notebook(page, lab, notebook)
    screenshot_check_panel(page, artifacts_dir, f"solution-{notebook[:-6]}")

    assert_rendered_as_widget(panel)
    assert str(SOLUTION) in panel.headline, "AGTOOL_MODULE of the server did not reach the kernel"
    assert panel.total > 0, panel.headline
    assert panel.passed == panel.total == len(panel.rows), panel.headline
    assert [r.title for r in panel.rows if not r.passed] == []
    assert {r.colour for r in panel.rows} == {GREEN}


def test_step_11_check_grades_identity_resolution_in_jupyterlab(
    page, lab_server, shutdown_kernels_after, artifacts_dir
):
    # Step 11 grades against product tables the grader makes per seed: the panel must show
    # its rows passed for the solution, and a second seed must pass as well.
    lab = lab_server(SOLUTION)
    shutdown_kernels_after(lab)
    first = run_notebook(page, lab, STEP_11)
    assert_rendered_as_widget(first)
    assert first.total > 0 and first.passed == first.total, first.headline
    assert any("step11/" in r.title or "resolve" in r.title.lower() for r in first.rows), [r.title for r in first.rows]
    second = try_new_random_values(page)
    screenshot_check_panel(page, artifacts_dir, "solution-11-new-random-values")
    assert second.seed != first.seed and second.passed == second.total == first.total


def test_try_new_random_values_regrades_with_a_new_seed(page, lab_server, shutdown_kernels_after, artifacts_dir):
    lab = lab_server(SOLUTION)
    shutdown_kernels_after(lab)
    first = run_notebook(page, lab, "03_call_boundary.ipynb")
    assert f"seed {first.seed}" in first.status

    second = try_new_random_values(page)
    screenshot_check_panel(page, artifacts_dir, "solution-03-new-random-values")

    assert second.seed != first.seed
    assert f"seed {second.seed}" in second.status, "the label under the button kept the old seed"
    assert_rendered_as_widget(second)
    assert second.passed == second.total == first.total > 0


@pytest.mark.parametrize("notebook", ["01_contract_table.ipynb", "03_call_boundary.ipynb", STEP_11])
def test_starter_shows_red_failing_rows(notebook, page, lab_server, shutdown_kernels_after, artifacts_dir):
    lab = lab_server(STARTER)
    shutdown_kernels_after(lab)
    panel = run_notebook(page, lab, notebook)
    screenshot_check_panel(page, artifacts_dir, f"starter-{notebook[:-6]}")

    assert_rendered_as_widget(panel)
    assert str(STARTER) in panel.headline
    failed = [r for r in panel.rows if not r.passed]
    assert panel.total == len(panel.rows) > 0
    assert panel.passed < panel.total and failed, panel.headline
    assert {r.colour for r in failed} == {RED}
    assert {r.mark for r in failed} == {"\u2718"}


def test_without_the_widget_manager_the_panel_is_the_html_fallback(page, tmp_path, artifacts_dir):
    # The widget assertions above must be able to fail: with the widgets
    # front-end switched off, JupyterLab shows the panel's text/html fallback,
    # which has the same rows but no .jupyter-widgets around it.
    with running_lab(
        root_dir=REPO_ROOT, work=tmp_path, env={"AGTOOL_MODULE": str(SOLUTION)}, disable=(WIDGET_MANAGER,)
    ) as lab:
        try:
            panel = run_notebook(page, lab, "03_call_boundary.ipynb")
            screenshot_check_panel(page, artifacts_dir, "fallback-03_call_boundary")
        finally:
            lab.shutdown_kernels()
    assert panel.passed == panel.total > 0
    assert not panel.in_widget
    with pytest.raises(AssertionError):
        assert_rendered_as_widget(panel)
