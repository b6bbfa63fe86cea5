"""A newcomer's path through the lab (issue 36, "Done when"), in Chromium, from a fresh clone and the README.

The README's first command, ``make lab`` (headless: ``LAB_ARGS`` gives the
port and a token), in a fresh clone; notebook 09 and ``agtool/tools.py``
opened in the lab (the file from the file browser, as ``labs/README.md``
says); a mistake saved from the lab's editor (the ``str.isdigit()`` the
notebook warns about); the Check cell's failing row read; its replay line
run in a lab terminal, where it fails the same check; the fix saved; Check
again, all rows passed. Screenshots in ``artifacts/e2e/newcomer/``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from e2e.newcomer import (
    activate_tab,
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


@pytest.fixture
def shots(artifacts_dir):
    folder = artifacts_dir / "newcomer"
    folder.mkdir(parents=True, exist_ok=True)
    for old in [*folder.glob("*.png"), *folder.glob("*.json")]:
        old.unlink()
    return folder


def test_a_newcomer_makes_a_mistake_checks_replays_it_in_a_terminal_fixes_it_and_checks_again(
    page, tmp_path, shots, browser
):
    started = time.monotonic()
    marks = []

    def mark(what):  # seconds since the start, kept beside the screenshots
        marks.append((what, round(time.monotonic() - started, 1)))

    solution = (REPO_ROOT / "solutions" / "tools.py").read_text(encoding="utf-8")
    assert solution.count(RIGHT) == 1
    mistaken = solution.replace(RIGHT, WRONG)
    clone = fresh_clone(tmp_path / "agtool-lab")
    learner_file = clone / "agtool" / "tools.py"
    starter = learner_file.read_bytes()
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

    (shots / "timings.json").write_text(json.dumps(marks, indent=1), encoding="utf-8")
    assert (REPO_ROOT / "starter" / "tools.py").read_bytes() == starter  # the checkout's own file never edited
    assert time.monotonic() - started < 90, f"the newcomer's path took {time.monotonic() - started:.0f}s"
