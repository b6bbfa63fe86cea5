"""labs/12_capstone.ipynb: committed clean, and runs headless against the solution and the starter.

Against the solution (small N through ``AGTOOL_NOISY_N``) the outputs must hold
the tally table and a PNG plot; against the starter the notebook must end
without an error output and show one friendly message instead of a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "labs" / "12_capstone.ipynb"
SOLUTION = REPO / "solutions" / "tools.py"
STARTER = REPO / "starter" / "tools.py"


BENCH_TASKS = 20


def _execute(monkeypatch, module: Path, n: int = 120, endpoint: str = "") -> nbformat.NotebookNode:
    # The kernel inherits this process's environment: that is how the notebook
    # learns which module to load, how many orders and tasks to draw, and which model to ask.
    monkeypatch.setenv("AGTOOL_MODULE", str(module))
    monkeypatch.setenv("AGTOOL_NOISY_N", str(n))
    monkeypatch.setenv("AGTOOL_BENCH_TASKS", str(BENCH_TASKS))
    for name in ("AGTOOL_MODEL_URL", "AGTOOL_MODEL_NAME", "AGTOOL_MODEL_KEY"):
        monkeypatch.delenv(name, raising=False)
    if endpoint:
        monkeypatch.setenv("AGTOOL_MODEL_URL", endpoint)
        monkeypatch.setenv("AGTOOL_MODEL_NAME", "agtool-stand-in")
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
    # Part three: the research-style table with its intervals, the sweep plot, the references and the cost.
    _assert_part_three(nb, html, markdown)
    streams = "".join(out.get("text", "") for out in _outputs(nb, "stream"))
    assert "Model in pick: seeded stand-in (error rate 30%)" in streams
    assert f"{BENCH_TASKS} tasks x 4 trials" in streams
    assert len(pngs) >= 3, "part three's sweep plot was not shown"
    assert "<td>NaN</td>" in html  # the stand-in reports no tokens: the cost table says so


def _assert_part_three(nb, html: str, markdown: str) -> None:
    for text in (
        "+ validation",
        "+ coercion",
        "+ errors as prompts",
        "+ repair",
        "+ cache",
        "+ identity resolution",
        "success [95% CI]",
        "pass^4",
        "invalid-call rate",
        "recovery rate",
        "wrong-entity rate",
        "tool-body runs per task",
        "model calls per task",
        "tokens per task",
        "tau-bench retail, gpt-4o",
        "0.58 → 0.94",
        "model calls (this run)",
    ):
        assert text in html, f"{text!r} missing from part three's tables"
    assert re.search(r"\d\.\d\d \[\d\.\d\d, \d\.\d\d\]", html), "no rate with its 95% interval"
    assert "**+ identity resolution**: success" in markdown and "Part three is not ready" not in markdown


def test_runs_against_the_starter_with_a_friendly_message(monkeypatch):
    nb = _execute(monkeypatch, STARTER, n=50)
    assert _outputs(nb, "error") == [], "the starter must not produce a traceback"
    assert _outputs(nb, "image/png") == []
    markdown = "\n".join(out["data"]["text/markdown"] for out in _outputs(nb, "text/markdown"))
    assert "Not ready yet" in markdown and "Step 1" in markdown
    assert "Part two is not ready yet" in markdown
    assert "Part three is not ready yet" in markdown
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


def test_part_three_runs_against_a_model_endpoint_on_loopback(monkeypatch):
    """AGTOOL_MODEL_URL set: part three asks the endpoint (here the stand-in server), the same table follows."""
    from agtool_lab.load import load_module
    from agtool_lab.noisy.chat import draw_tasks
    from agtool_lab.noisy.stand_in_server import StandInServer

    tasks = draw_tasks(load_module(str(SOLUTION)), BENCH_TASKS, seed=0)  # the notebook's SEED
    with StandInServer(tasks, error_rate=0.3) as server:
        nb = _execute(monkeypatch, SOLUTION, n=20, endpoint=server.url)
        bodies = list(server.requests)
    assert _outputs(nb, "error") == []
    # Seven configurations of 20 tasks x 4 trials, one call or more each, every one a sentence it knew.
    assert len(bodies) >= 7 * BENCH_TASKS * 4
    assert {b["messages"][1]["content"] for b in bodies} == {t.text for t in tasks}
    html = "\n".join(out["data"]["text/html"] for out in _outputs(nb, "text/html"))
    markdown = "\n".join(out["data"]["text/markdown"] for out in _outputs(nb, "text/markdown"))
    _assert_part_three(nb, html, markdown)
    streams = "".join(out.get("text", "") for out in _outputs(nb, "stream"))
    assert f"Model in pick: agtool-stand-in at {server.url}" in streams
    assert "The same table for the seeded stand-in (error rate 30%), to compare" in markdown
    assert html.count("success [95% CI]") == 2
    # The endpoint reports usage, so every configuration has its tokens; nothing failed on the way.
    assert "<td>NaN</td>" not in html and "Some runs ended" not in markdown


def test_a_hostile_message_from_the_module_is_shown_as_text(monkeypatch, tmp_path):
    """Part two and three say why they cannot run; what the learner's code raised cannot become HTML or a link."""
    module = tmp_path / "tools.py"
    module.write_text(
        SOLUTION.read_text(encoding="utf-8")
        + "\n\ndef resolve_sku(query):\n"
        + "    raise ValueError('<img src=x onerror=alert(1)> [click](javascript:alert(1))')\n",
        encoding="utf-8",
    )
    nb = _execute(monkeypatch, module, n=30)
    assert _outputs(nb, "error") == []
    markdown = "\n".join(out["data"]["text/markdown"] for out in _outputs(nb, "text/markdown"))
    assert "Part two is not ready yet" in markdown and "Part three is not ready yet" in markdown
    assert "<img" not in markdown
    assert "[click](javascript" not in markdown and markdown.count("\\[click\\](javascript") == 2
    assert markdown.count("&lt;img src=x onerror=alert(1)&gt;") == 2
