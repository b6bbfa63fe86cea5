"""The Check widget's replay line in JupyterLab, in Chromium: never broken inside a word, copied exactly.

Before, the replay command wrapped ``--only`` as ``-`` / ``-only`` in a narrow
notebook, and it began with ``agtool-grade``, which a lab terminal may not
find. The line now names the kernel's interpreter, wraps only between its
words, and its copy button puts the exact line on the clipboard.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.notebook_ui import open_notebook, run_all_cells, screenshot_check_panel, wait_for_check_panel

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
FAILING_CHECK = "step2/unknown_tool"

# Words of the replay line drawn on more than one line (a word broken inside), and the line as the page holds it.
_SPLIT_WORDS_JS = """() => [...document.querySelectorAll('.agtool-check code.agtool-replay > span')]
  .filter(s => s.getClientRects().length > 1).map(s => s.textContent)"""
_OPEN_REPLAY_JS = """() => {
  const code = [...document.querySelectorAll('.agtool-check details[open] code.agtool-replay')][0];
  const button = code && code.nextElementSibling;
  return code && {text: code.textContent, copy: button && button.dataset.copy,
                  widget: !!code.closest('.widget-html-content')};
}"""


def test_the_replay_line_wraps_between_words_and_its_button_copies_it(
    page, lab_server, shutdown_kernels_after, artifacts_dir, tmp_path
):
    module = tmp_path / "agtool" / "tools.py"
    module.parent.mkdir()
    solution = (REPO_ROOT / "solutions" / "tools.py").read_text(encoding="utf-8")
    module.write_text(solution.replace('return "unknown_tool"', 'return "no_such_tool"'), encoding="utf-8")
    lab = lab_server(module)
    shutdown_kernels_after(lab)
    page.set_viewport_size({"width": 1000, "height": 900})  # the replay line (~150 characters) must wrap
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=lab.origin)
    open_notebook(page, lab.url_for("labs/02_validate_args.ipynb"))
    run_all_cells(page)
    wait_for_check_panel(page)

    line = page.evaluate(_OPEN_REPLAY_JS)
    assert line and line["widget"], "no replay line in the widget's view of the Check panel"
    assert line["text"] == line["copy"] and f"--only {FAILING_CHECK}" in line["text"], line
    assert " -m grader check " in line["text"] and not line["text"].startswith("agtool-grade"), line
    assert page.evaluate(_SPLIT_WORDS_JS) == []
    button = page.locator(".agtool-check details[open] button.agtool-copy").first
    button.click()
    page.wait_for_function(
        "() => document.querySelector('.agtool-check details[open] button.agtool-copy').textContent === 'copied'",
        timeout=10_000,
    )
    assert page.evaluate("() => navigator.clipboard.readText()") == line["copy"]
    screenshot_check_panel(page, artifacts_dir, "replay-line-narrow")
