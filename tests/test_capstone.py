"""labs/12_capstone.ipynb: committed clean, and runs headless against the solution and the starter.

Against the solution (small N through ``AGTOOL_NOISY_N``) the outputs must hold
the tally table and a PNG plot; against the starter the notebook must end
without an error output and show one friendly message instead of a traceback.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "labs" / "12_capstone.ipynb"
SOLUTION = REPO / "solutions" / "tools.py"
STARTER = REPO / "starter" / "tools.py"


def _execute(monkeypatch, module: Path, n: int = 120) -> nbformat.NotebookNode:
    # The kernel inherits this process's environment: that is how the notebook
    # learns which module to load and how many orders to draw.
    monkeypatch.setenv("AGTOOL_MODULE", str(module))
    monkeypatch.setenv("AGTOOL_NOISY_N", str(n))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    ).execute()
    return nb


def _outputs(nb, kind: str) -> list:
    return [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.get("output_type") == kind or kind in out.get("data", {})
    ]


def test_committed_without_outputs_and_with_a_parameters_cell():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.outputs == [] and cell.execution_count is None for cell in code)
    params = [cell for cell in code if "parameters" in cell.metadata.get("tags", [])]
    assert len(params) == 1 and "AGTOOL_NOISY_N" in params[0].source and "2000" in params[0].source


def test_runs_against_the_solution_and_shows_the_table_and_the_plot(monkeypatch):
    nb = _execute(monkeypatch, SOLUTION)
    assert _outputs(nb, "error") == []
    html = "\n".join(out["data"]["text/html"] for out in _outputs(nb, "text/html"))
    # The tally: one row per route, the outcome columns, the two rates.
    for text in (
        "(a) tool called directly",
        "(b) run_naive",
        "(c) handle",
        "wrong (silent)",
        "refused (honest)",
        "tool body runs",
        "repairs that succeeded",
        "silent-wrong rate",
        "chapter before",
    ):
        assert text in html, f"{text!r} missing from the notebook's tables"
    pngs = _outputs(nb, "image/png")
    assert pngs, "the sweep plot was not shown"
    assert len(pngs[0]["data"]["image/png"]) > 10_000  # a real figure, not an empty canvas
    markdown = "\n".join(out["data"]["text/markdown"] for out in _outputs(nb, "text/markdown"))
    assert "Ready: 120 orders" in markdown
    assert "First-retry success" in markdown
    # Part two: one row per layer, the new outcome columns, the retry comparison and its plot.
    for text in (
        "(c) + resolve_sku",
        "(d) + coerce",
        "(e) + retry_with_suggestion",
        "asked back",
        "tool body runs per order",
        "bare reason",
        "with explain",
    ):
        assert text in html, f"{text!r} missing from part two's tables"
    assert len(pngs) >= 2, "part two's plot was not shown"
    assert "First-retry success here" in markdown and "Part two is not ready" not in markdown


def test_runs_against_the_starter_with_a_friendly_message(monkeypatch):
    nb = _execute(monkeypatch, STARTER, n=50)
    assert _outputs(nb, "error") == [], "the starter must not produce a traceback"
    assert _outputs(nb, "image/png") == []
    markdown = "\n".join(out["data"]["text/markdown"] for out in _outputs(nb, "text/markdown"))
    assert "Not ready yet" in markdown and "Step 1" in markdown
    assert "Part two is not ready yet" in markdown
    streams = "".join(out.get("text", "") for out in _outputs(nb, "stream"))
    assert "Traceback" not in streams


def test_a_module_that_does_not_load_gets_a_one_line_message(monkeypatch, tmp_path):
    module = tmp_path / "tools.py"
    module.write_text("def broken(:\n", encoding="utf-8")
    nb = _execute(monkeypatch, module, n=10)
    assert _outputs(nb, "error") == []
    markdown = "\n".join(out["data"]["text/markdown"] for out in _outputs(nb, "text/markdown"))
    assert "Could not load your module" in markdown and "SyntaxError" in markdown


def test_the_notebook_table_of_mistakes_follows_the_simulator():
    """The shares and mistakes the notebook explains are the ones the simulator uses."""
    from agtool_lab.noisy.model import CHAPTER_MIX, MISTAKES

    text = "\n".join(
        cell.source for cell in nbformat.read(NOTEBOOK, as_version=4).cells if cell.cell_type == "markdown"
    )
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    for category, share in CHAPTER_MIX.items():
        row = rows[category.replace("_", " ")]
        assert f"| {share:.0%} |" in row, category
    assert set(MISTAKES) == set(CHAPTER_MIX)
