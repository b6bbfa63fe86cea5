"""A newcomer's path through the lab, in Chromium, from a fresh clone under /var/tmp and the README.

The README's first command, ``make lab`` (headless: ``LAB_ARGS`` gives the
port and a token), in a fresh clone under ``/var/tmp``; notebook 09 and
``agtool/tools.py`` opened in the lab (the file from the file browser, as
``labs/README.md`` says); a mistake saved from the lab's editor (the
``str.isdigit()`` the notebook warns about); the Check cell's failing row
read; its replay line run in a lab terminal, where it fails the same check;
the fix saved; Check again, all rows passed; the Checks of notebooks 01-03
passed too. Then, in that clone where the lab was done: ``make test-fast``
passes, the instructor dashboard's demo grades the starter as given (not the
clone's ``agtool/tools.py``), and the hub recipe's template hands out the
committed starter. Screenshots and timings in ``artifacts/e2e/newcomer/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from e2e.newcomer import (
    activate_tab,
    clean_env,
    fresh_clone,
    make_lab,
    make_lab_command,
    open_in_file_browser,
    open_terminal,
    run_check_cell,
    run_in_terminal,
    save_in_editor,
)
from e2e.notebook_ui import open_notebook, output_errors, read_check_panel, run_all_cells, wait_for_check_panel
from e2e.processes import venv_bin

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = "09_coercion.ipynb"
# The mistake notebook 09 warns about: str.isdigit() accepts '３', '²' and '٣'.
RIGHT = "        if bare and all(char in _DIGIT_CHARS for char in bare):\n"
WRONG = "        if bare.isdigit():\n"
MISTAKEN_CHECK = "step9/never_coerced"

# The first failed row's open details: its replay line and what its copy button copies.
_OPEN_REPLAY_JS = """() => {
  const code = [...document.querySelectorAll('.agtool-check details[open] code.agtool-replay')][0];
  const button = code && code.nextElementSibling;
  return code && {text: code.textContent, copy: button && button.dataset.copy};
}"""


# The Check panel of the notebook in front: "N/M checks passed".
_CURRENT_PANEL_JS = """() => {
  const panels = window.jupyterapp.shell.currentWidget.node.querySelectorAll('.agtool-check');
  const text = panels.length ? panels[panels.length - 1].textContent : '';
  const m = /(\\d+)\\/(\\d+) checks passed/.exec(text);
  return m && [Number(m[1]), Number(m[2])];
}"""
FIRST_STEPS = ("01_contract_table.ipynb", "02_validate_args.ipynb", "03_call_boundary.ipynb")


@pytest.fixture
def var_tmp():
    """A folder under /var/tmp, where a newcomer's clone once failed the sandbox's allow-list test."""
    if not os.access("/var/tmp", os.W_OK):
        pytest.skip("/var/tmp is not writable here")
    top = Path(tempfile.mkdtemp(prefix="agtool-newcomer-", dir="/var/tmp"))
    yield top
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def shots(artifacts_dir):
    folder = artifacts_dir / "newcomer"
    folder.mkdir(parents=True, exist_ok=True)
    for old in [*folder.glob("*.png"), *folder.glob("*.json")]:
        old.unlink()
    return folder


def test_a_newcomer_makes_a_mistake_checks_replays_it_in_a_terminal_fixes_it_and_checks_again(
    page, tmp_path, var_tmp, shots, browser
):
    started = time.monotonic()
    marks = []

    def mark(what):  # seconds since the start, kept beside the screenshots
        marks.append((what, round(time.monotonic() - started, 1)))

    solution = (REPO_ROOT / "solutions" / "tools.py").read_text(encoding="utf-8")
    assert solution.count(RIGHT) == 1
    mistaken = solution.replace(RIGHT, WRONG)
    clone = fresh_clone(var_tmp / "agtool-lab")
    learner_file = clone / "agtool" / "tools.py"
    starter = learner_file.read_bytes()
    assert starter == (clone / "starter" / "tools.py").read_bytes()  # a fresh clone hands out the starter
    checkout_file = (REPO_ROOT / "agtool" / "tools.py").read_bytes()
    assert "jupyter lab" in make_lab_command(clone) and "--ServerApp.root_dir=" in make_lab_command(clone)

    with make_lab(clone, work=tmp_path / "work") as lab:
        mark("make lab answers")
        # The lab opens on labs/ (the Makefile's default URL); notebook 09 from there.
        page.goto(f"{lab.origin}/lab?reset&token={lab.token}")
        page.wait_for_selector(".jp-FileBrowser .jp-DirListing-item")
        open_notebook(page, lab.url_for(f"labs/{NOTEBOOK}"))
        mark("notebook 09 open, kernel idle")
        run_all_cells(page)
        mark("notebook 09 ran")
        first = wait_for_check_panel(page)
        assert str(learner_file) in first.headline, first.headline  # the clone's file, found from labs/
        assert first.passed < first.total  # the starter: step 9 is not written yet
        page.screenshot(path=str(shots / "01-notebook-09-on-the-starter.png"))

        # agtool/tools.py from the file browser (make lab serves the checkout, not labs/ alone).
        open_in_file_browser(page, "agtool", "tools.py")
        mark("tools.py open")
        assert learner_file.read_bytes() == starter
        # Steps 1-8 done, and step 9 with the notebook's warned-of mistake, saved from the lab's editor.
        save_in_editor(page, "tools.py", mistaken, learner_file)
        mark("saved")
        page.screenshot(path=str(shots / "02-tools-py-with-the-mistake.png"))

        activate_tab(page, NOTEBOOK)
        run_check_cell(page)
        mark("checked")
        failing = read_check_panel(page)
        failed = [r for r in failing.rows if not r.passed]
        assert failed and MISTAKEN_CHECK in failed[0].title, [r.title for r in failed]
        assert failing.passed < failing.total, failing.headline
        replay = page.evaluate(_OPEN_REPLAY_JS)
        assert replay and replay["text"] == replay["copy"], replay
        assert f"--only {MISTAKEN_CHECK}" in replay["text"] and f"--seed {failing.seed}" in replay["text"], replay
        page.locator(".agtool-check details[open]").first.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "03-check-fails-step9.png"))

        # The replay line, as the panel shows it, in a terminal of this lab: the same check fails there.
        open_terminal(page)
        mark("terminal open")
        printed, status = run_in_terminal(page, replay["text"])
        mark("replay line ran")
        page.screenshot(path=str(shots / "04-replay-line-in-a-lab-terminal.png"))
        assert status == 1, printed  # graded, a check failed (not 127: not found, nor 2: could not grade)
        assert f"FAIL  {MISTAKEN_CHECK}" in printed and f"seed {failing.seed}" in printed, printed
        assert "passed" in printed and "not found" not in printed

        # The fix, saved from the editor; Check again: every row of step 9 passes.
        save_in_editor(page, "tools.py", solution, learner_file)
        mark("saved")
        activate_tab(page, NOTEBOOK)
        run_check_cell(page)
        mark("checked")
        fixed = read_check_panel(page)
        assert fixed.passed == fixed.total == len(fixed.rows) == failing.total > 0, fixed.headline
        assert output_errors(page) == []
        page.locator(".jp-OutputArea-output:has(.agtool-check)").last.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "05-check-passes-after-the-fix.png"))

        # Steps 1-3: each notebook's Check cell, on the file as saved: every row passes.
        for notebook in FIRST_STEPS:
            open_notebook(page, lab.url_for(f"labs/{notebook}"))
            run_check_cell(page)
            passed, total = page.evaluate(_CURRENT_PANEL_JS)
            assert passed == total > 0, (notebook, passed, total)
        mark("checks of steps 1-3 passed")
        page.screenshot(path=str(shots / "06-step-3-passes.png"))

    in_the_lab = time.monotonic() - started
    assert (REPO_ROOT / "agtool" / "tools.py").read_bytes() == checkout_file  # the checkout's own file never edited
    assert learner_file.read_bytes() == solution.encode("utf-8")  # the whole lab, done in the clone

    # The fast tier passes in the clone where the lab was done: nothing takes the learner's file for the starter.
    fast = subprocess.run(
        ["make", "--no-print-directory", "-o", ".venv/.installed", "test-fast"],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=1800,
        env=clean_env(),
    )
    mark("make test-fast in the clone")
    tail = "\n".join((fast.stdout + fast.stderr).splitlines()[-40:])
    assert fast.returncode == 0 and " failed" not in tail, tail

    # The dashboard's demo, run headless on the clone's code: its untouched starter is the starter as given.
    grades = _dashboard_demo(clone, var_tmp)
    mark("dashboard demo graded")
    assert grades["ben"]["score"] == "0" and grades["ada"]["score"] == grades["ada"]["max_score"], grades
    # The hub recipe's template: the committed starter, never the clone's agtool/tools.py.
    handed_out = _hub_template(clone, var_tmp)
    mark("hub template made")
    assert handed_out == (clone / "starter" / "tools.py").read_bytes() == starter != learner_file.read_bytes()

    (shots / "timings.json").write_text(json.dumps(marks, indent=1), encoding="utf-8")
    assert in_the_lab < 150, f"the newcomer's path in the lab took {in_the_lab:.0f}s"


def _dashboard_demo(clone: Path, top: Path) -> dict[str, dict[str, str]]:
    """Run the clone's instructor dashboard with its demo class (kernel on the clone's code); grades.csv's rows."""
    import csv

    import nbformat
    from nbclient import NotebookClient

    home, tmp = top / "home", top / "tmp"
    home.mkdir()
    tmp.mkdir()
    notebook = nbformat.read(clone / "labs" / "instructor_dashboard.ipynb", as_version=4)
    env = {**clean_env(), "HOME": str(home), "TMPDIR": str(tmp), "PYTHONPATH": str(clone)}
    client = NotebookClient(notebook, timeout=300, kernel_name="python3")
    client.execute(cwd=str(clone / "labs"), env=env)  # the kernel's own environment: the clone's code first
    assert [p.name for p in (clone / "labs").iterdir() if p.name in ("instructor_out", "demo_class")] == []
    with (home / "agtool-dashboard" / "grades.csv").open(encoding="utf-8") as rows:
        return {row["learner"]: row for row in csv.DictReader(rows)}


def _hub_template(clone: Path, top: Path) -> bytes:
    """The clone's setup_hub.sh makes the learners' template (its venv: the clone's); the template's tools.py."""
    prefix = top / "opt"
    (prefix / "venv" / "bin").mkdir(parents=True)
    (prefix / "venv" / "bin" / "python").symlink_to(venv_bin("python"))
    script = clone / "deploy" / "jupyterhub" / "setup_hub.sh"
    done = subprocess.run(
        ["bash", "-c", f"source {script}\nPREFIX={prefix}\nmake_template"],
        env={**clean_env(), "AGTOOL_ROOT": str(top / "root"), "PYTHONPATH": str(clone)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "is not the starter" in done.stdout  # the recipe says it did not hand out the clone's own file
    return (prefix / "template" / "agtool" / "tools.py").read_bytes()
