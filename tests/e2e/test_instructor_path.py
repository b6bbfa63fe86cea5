"""The instructor's path, in Chromium: batch a class, open the dashboard, read a feedback file.

A class of four, built with the corpus helpers (tests/defects): the starter
handed in unchanged, a crash (step 10's ``int('²')``, tests/defects/crashes.py)
and two planted mistakes of step 2. The instructor batches it with
``agtool-grade batch`` in a terminal, then opens
``labs/instructor_dashboard.ipynb`` in JupyterLab (a copy, its first cell set
to this class, ``RESUME`` on: nothing is graded twice) and runs it, then
opens one learner's ``feedback/<learner>.md``. The same numbers must show
everywhere: each check's passed/graded in ``summary.md``'s hardest checks, in
the dashboard's table and in the pass-rate plot (its PNG in the dashboard is
the file under ``plots/``, which is the drawing of the dashboard's table, whose
bars are read back); each learner's score in ``grades.csv``, the dashboard's
gradebook and their feedback file; the starter named once in both.
Screenshots in ``artifacts/e2e/instructor/``.
"""

from __future__ import annotations

import base64
import csv
import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from defects.catalog import materialise_text
from defects.crashes import materialise_crash

from e2e.lab import running_lab
from e2e.notebook_ui import open_notebook, output_errors, run_all_cells
from e2e.processes import venv_bin

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
SEED = 5
MISTAKES = {"ben": "step2/valid_passes", "cleo": "step2/unknown_tool"}
CRASH = "int_fix_isdigit"

# Every rendered HTML table of the notebook's outputs: its header and its rows, as text.
_TABLES_JS = """() => [...window.jupyterapp.shell.currentWidget.node.querySelectorAll('.jp-OutputArea-output table')]
  .map(t => ({head: [...t.querySelectorAll('thead th')].map(th => th.textContent.trim()),
              rows: [...t.querySelectorAll('tbody tr')].map(tr => [...tr.children].map(td => td.textContent.trim()))}))"""
_IMAGES_JS = """() => [...window.jupyterapp.shell.currentWidget.node.querySelectorAll('.jp-OutputArea-output img')]
  .map(i => i.getAttribute('src'))"""


def _table(tables: list, *columns: str) -> list[dict]:
    """The first table whose header holds ``columns``, as dicts (the index column's header is empty)."""
    for table in tables:
        if all(c in table["head"] for c in columns):
            return [dict(zip(table["head"], row)) for row in table["rows"]]
    raise AssertionError(f"no table with columns {columns}: {[t['head'] for t in tables]}")


def _summary_hardest(summary: str) -> dict[str, str]:
    hardest = summary.split("## Hardest checks", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"\| `([^`]+)` \| [^|]* \| (\d+/\d+) \|", hardest)}


def _plotted_rates(stats) -> dict[str, float]:
    """The pass-rate plot drawn from ``stats`` as grader.outputs.plots draws it: each bar's check and length (%)."""
    from grader.outputs.plots import check_pass_rate

    fig = check_pass_rate(stats)
    rates = {}
    for ax in fig.axes:
        step = ax.get_title().removeprefix("Step ")
        names = [t.get_text() for t in ax.get_yticklabels()]
        for name, bar in zip(names, ax.patches):
            rates[f"step{step}/{name}"] = bar.get_width()
    return rates


@pytest.fixture
def shots(artifacts_dir):
    folder = artifacts_dir / "instructor"
    folder.mkdir(parents=True, exist_ok=True)
    for old in [*folder.glob("*.png"), *folder.glob("*.json")]:
        old.unlink()
    return folder


def _class(root: Path) -> Path:
    subs = root / "submissions"
    (subs / "ana").mkdir(parents=True)
    (subs / "ana" / "tools.py").write_bytes((REPO_ROOT / "starter" / "tools.py").read_bytes())  # the starter
    crashed, _line = materialise_crash(CRASH, subs)
    crashed.parent.rename(subs / "dev")
    for learner, check in MISTAKES.items():
        (subs / learner).mkdir()
        (subs / learner / "tools.py").write_text(materialise_text(check), encoding="utf-8")
    return subs


def test_an_instructor_batches_a_class_opens_the_dashboard_and_reads_feedback_with_one_set_of_numbers(
    page, tmp_path, shots, browser
):
    from grader.batch import load_records
    from grader.outputs import class_tables
    from grader.outputs.plots import check_pass_rate, save_png

    started = time.monotonic()
    marks = []

    def mark(what):
        marks.append((what, round(time.monotonic() - started, 1)))

    root = tmp_path / "course"
    subs = _class(root)
    out = root / "out"
    done = subprocess.run(
        [
            venv_bin("agtool-grade"),
            "batch",
            str(subs),
            "--out",
            str(out),
            "--seed",
            str(SEED),
            "--jobs",
            "2",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
    )
    mark("batched")
    assert done.returncode in (0, 1), done.stderr[-2000:]
    summary = (out / "summary.md").read_text(encoding="utf-8")
    hardest = _summary_hardest(summary)
    assert hardest and "## Submitted the starter unchanged" in summary and "- ana" in summary
    grades = {row["learner"]: row for row in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    assert sorted(grades) == ["ana", "ben", "cleo", "dev"]

    # The dashboard, as the instructor opens it: a copy beside the class, its first cell set to it.
    notebook = json.loads((REPO_ROOT / "labs" / "instructor_dashboard.ipynb").read_text(encoding="utf-8"))
    first = next(c for c in notebook["cells"] if c["cell_type"] == "code")
    source = "".join(first["source"])
    for name, value in (
        ("SUBMISSIONS", repr(str(subs))),
        ("OUT", repr(str(out))),
        ("SEED", str(SEED)),
        ("JOBS", "2"),
        ("RESUME", "True"),
    ):
        source, n = re.subn(rf"^{name} = [^#\n]*", f"{name} = {value}  ", source, flags=re.M)
        assert n == 1, name
    first["source"] = source
    (root / "instructor_dashboard.ipynb").write_text(json.dumps(notebook), encoding="utf-8")

    with running_lab(root_dir=root, work=tmp_path / "work", env={}) as lab:
        try:
            open_notebook(page, lab.url_for("instructor_dashboard.ipynb"))
            run_all_cells(page, timeout_ms=180_000)
            mark("dashboard ran")
            assert output_errors(page) == []
            page.screenshot(path=str(shots / "01-dashboard.png"))
            tables = page.evaluate(_TABLES_JS)
            images = page.evaluate(_IMAGES_JS)
            text = page.evaluate("() => window.jupyterapp.shell.currentWidget.node.textContent")
            assert "0 graded now" in text  # RESUME: the dashboard read the batch's results, graded nothing again
            assert "Submitted the starter unchanged" in text  # summary.md, shown at the dashboard's end
            for i, (what, selector) in enumerate((("gradebook", "table"), ("plots", "img"))):
                shown = page.locator(f".jp-OutputArea-output:has({selector})").first
                shown.scroll_into_view_if_needed()
                shown.screenshot(path=str(shots / f"0{i + 2}-dashboard-{what}.png"))

            # One learner's feedback file, opened in the lab.
            page.goto(lab.url_for("out/feedback/ben.md"))
            page.wait_for_function(
                "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
                " return !!w && w.title.label === 'ben.md' && w.context.isReady; }"
            )
            feedback_shown = page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.toString()")
            page.screenshot(path=str(shots / "05-feedback-ben.png"))
            mark("feedback read")
        finally:
            lab.shutdown_kernels()

    # Each learner's score: grades.csv, the dashboard's gradebook and (ben) the feedback file.
    book = {row["learner"]: row for row in _table(tables, "learner", "score", "max_score")}
    assert sorted(book) == sorted(grades)
    for learner, row in grades.items():
        assert (book[learner]["score"], book[learner]["max_score"]) == (row["score"], row["max_score"]), learner
    assert f"{grades['ben']['score']}/{grades['ben']['max_score']}" in feedback_shown
    assert feedback_shown == (out / "feedback" / "ben.md").read_text(encoding="utf-8")
    assert MISTAKES["ben"] in feedback_shown

    # Each check's passed/graded: summary.md, the dashboard's hardest checks, the plot.
    dashboard = {row["check"]: f"{row['passed']}/{row['graded']}" for row in _table(tables, "check", "pass_rate")}
    assert dashboard and all(dashboard[check] == shown for check, shown in hardest.items() if check in dashboard)
    assert set(dashboard) <= set(hardest) or len(dashboard) == 10, (dashboard, hardest)
    graded = {shown.split("/")[1] for shown in hardest.values()}
    assert graded == {"3"}, hardest  # ben, cleo and dev: the starter unchanged is left out of every rate

    records = load_records(out)
    tables_now = class_tables(records)
    plot_file = out / "plots" / "check_pass_rate.png"
    assert f"data:image/png;base64,{base64.b64encode(plot_file.read_bytes()).decode()}" in images
    drawn = save_png(check_pass_rate(tables_now["checks"]), tmp_path / "redrawn.png")
    assert drawn.read_bytes() == plot_file.read_bytes()  # the PNG shown is the drawing of the dashboard's table
    bars = _plotted_rates(tables_now["checks"])
    for check, shown in hardest.items():
        passed, of = map(int, shown.split("/"))
        assert bars[check] == pytest.approx(100 * passed / of, abs=0.01), (check, bars[check], shown)  # rates: 4 places
    mark("compared")
    (shots / "timings.json").write_text(json.dumps(marks, indent=1), encoding="utf-8")
    assert time.monotonic() - started < 90, marks
