"""The lab notebooks 01-08: generated from labs/_build_notebooks.py, clean, and runnable both ways.

* The committed notebooks equal the generator's output and carry no outputs.
* The facts the notebooks teach agree with the reference solution (the STOCK
  block, the example reasons of notebook 02).
* Every notebook executes headless (nbclient) against the solution with every
  check row passed, and against the starter to the end without raising, with
  failing rows.
"""
from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parent.parent
LABS = REPO / "labs"
SOLUTION = REPO / "solutions" / "tools.py"
STARTER = REPO / "agtool" / "tools.py"
STEPS = range(1, 9)


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # LangGraph resolves State's annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def builder():
    return _load(LABS / "_build_notebooks.py", "_build_notebooks_under_test")


@pytest.fixture(scope="module")
def solution():
    return _load(SOLUTION, "agtool_solution_for_notebook_tests")


def _notebook_path(builder, step: int) -> Path:
    return LABS / builder.NOTEBOOKS[step - 1]["file"]


# --------------------------------------------------------------------------
# Static: the files
# --------------------------------------------------------------------------


@pytest.mark.parametrize("step", STEPS)
def test_committed_notebook_equals_generator_output(builder, step):
    path = _notebook_path(builder, step)
    assert path.read_text(encoding="utf-8") == builder.render(step), (
        f"{path.name} differs from labs/_build_notebooks.py; run `.venv/bin/python labs/_build_notebooks.py`"
    )


def test_widget_and_generator_agree_on_notebook_names(builder):
    from grader.notebook import NOTEBOOKS

    assert [spec["file"] for spec in builder.NOTEBOOKS] == [NOTEBOOKS[s] for s in STEPS]


@pytest.mark.parametrize("path", sorted(LABS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_is_valid_and_has_no_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: a code cell has outputs"


@pytest.mark.parametrize("step", STEPS)
def test_notebook_has_goal_why_notes_task_hints_playground_and_check(builder, step):
    nb = builder.build(step)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for part in ("**Goal:**", "## Why it matters", "## Notes", "## Your task", "<details>", "## Playground", "## Check"):
        assert part in text, f"step {step}: {part!r} missing"
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert f"from grader.notebook import check\ncheck({step})" in code
    assert any("from grader.playground import" in source for source in code)
    why = next(c.source for c in nb.cells if c.source.startswith("## Why it matters"))
    assert re.search(r"\d+(\.\d+)?%|0\.\d\d|\d+ (call )?in \d+", why), f"step {step}: no measured number in why"


def test_stock_block_of_notebook_01_is_the_solution_data(builder, solution):
    text = builder.build(1).cells[2].source
    block = re.search(r"```python\n(STOCK = \[.*?\n\])\n```", text, re.S).group(1)
    namespace: dict = {}
    exec(block, namespace)  # noqa: S102 - our own generated text
    assert namespace["STOCK"] == solution.STOCK


def test_reason_examples_of_notebook_02_agree_with_the_solution(builder, solution):
    notes = builder.build(2).cells[2].source
    rows = re.findall(r"^\| `(\{.*?\})` \| `([^`]*)`", notes, re.M)
    assert len(rows) >= 8
    for args_text, reason in rows:
        args = ast.literal_eval(args_text)
        expected = "" if reason == '""' else reason  # the table writes the empty string as ""
        assert solution.validate_args("stock_lookup", args) == expected, args_text


# --------------------------------------------------------------------------
# Executed: against the solution and against the starter
# --------------------------------------------------------------------------


def _execute(path: Path, monkeypatch, module: Path) -> nbformat.NotebookNode:
    monkeypatch.setenv("AGTOOL_MODULE", str(module))  # the kernel inherits this process's environment
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(LABS)}})
    client.execute()  # raises CellExecutionError if any cell raises
    return nb


def _check_output(nb, step: int) -> tuple[str, str]:
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.endswith(f"check({step})"))
    html = "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)
    text = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
    assert html and text, f"the Check cell of step {step} displayed nothing: {cell.outputs}"
    assert len(cell.outputs) == 1, "the report must be displayed once"
    return html, text


@pytest.mark.parametrize("step", STEPS)
def test_notebook_runs_against_the_solution_with_every_check_passed(builder, step, monkeypatch):
    nb = _execute(_notebook_path(builder, step), monkeypatch, SOLUTION)
    html, text = _check_output(nb, step)
    summary = re.search(r"(\d+)/(\d+) checks passed", text)
    assert summary and summary.group(1) == summary.group(2) != "0", text
    assert "FAILED" not in text and ">failed<" not in html and "could not be graded" not in html
    assert text.count("[passed]") == int(summary.group(2))
    assert f"Step {step} passes" in text


@pytest.mark.parametrize("step", STEPS)
def test_notebook_runs_against_the_starter_with_failing_rows(builder, step, monkeypatch):
    nb = _execute(_notebook_path(builder, step), monkeypatch, STARTER)
    html, text = _check_output(nb, step)
    assert "[FAILED]" in text and ">failed<" in html, text
    assert "passes. Next" not in text
