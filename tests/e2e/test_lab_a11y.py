"""axe-core (WCAG 2.1 AA) on the Check widget in JupyterLab, in Chromium: no serious or critical violation.

axe is scoped to the widget's output area: JupyterLab's own chrome is not
ours. Against the starter the panel shows failed rows with their details
(call, expected, got, replay), the state with the most to read; against the
solution, every row passes. Screenshots: ``artifacts/e2e/a11y-check-*.png``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.axe import check_page
from e2e.notebook_ui import open_notebook, output_errors, run_all_cells, wait_for_check_panel

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECK_OUTPUT = ".jp-OutputArea-output:has(.agtool-check)"  # the widget's own output area


@pytest.mark.parametrize(
    "module, name",
    [(REPO_ROOT / "starter" / "tools.py", "starter"), (REPO_ROOT / "solutions" / "tools.py", "solution")],
)
def test_the_check_widget_has_no_serious_or_critical_axe_violation(
    module, name, page, lab_server, shutdown_kernels_after, artifacts_dir
):
    lab = lab_server(module)
    shutdown_kernels_after(lab)
    open_notebook(page, lab.url_for("labs/02_validate_args.ipynb"))
    run_all_cells(page)
    panel = wait_for_check_panel(page)
    assert panel.in_widget and output_errors(page) == []
    assert (panel.passed < panel.total) if name == "starter" else (panel.passed == panel.total)
    found = check_page(page, artifacts_dir, f"check-widget-{name}", scope=CHECK_OUTPUT)
    assert found.passes > 0
