"""Drive a notebook in a real JupyterLab page the way a learner does, and read the Check panel.

Everything here works on a Playwright ``Page`` showing JupyterLab (plain or
behind JupyterHub). Waits are bounded; a timeout raises with what was seen.

Example::

    open_notebook(page, lab.url_for("labs/03_call_boundary.ipynb"))
    run_all_cells(page)
    panel = read_check_panel(page)
    assert panel.passed == panel.total > 0
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only a type: collecting these tests must not need the e2e extra
    from playwright.sync_api import Page

OPEN_TIMEOUT_MS = 90_000
RUN_TIMEOUT_MS = 120_000
CLICK_TIMEOUT_MS = 60_000

# The toolbar says "Idle" as soon as the kernel model exists, a moment before
# the kernel's websocket is connected; a "Run All Cells" in that moment is
# dropped. So readiness is read from the application (exposeAppInBrowser).
_KERNEL_READY_JS = """() => {
  const app = window.jupyterapp;
  const panel = app && app.shell.currentWidget;
  const kernel = panel && panel.sessionContext && panel.sessionContext.session
                 && panel.sessionContext.session.kernel;
  return !!kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle'
         && !!panel.content && panel.content.widgets.length > 0;
}"""

# Every code cell has an execution count and the kernel is idle again.
_ALL_RAN_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel.sessionContext.session.kernel;
  const code = panel.content.widgets.filter(c => c.model.type === 'code');
  return kernel.status === 'idle' && code.length > 0
         && code.every(c => c.model.executionCount !== null)
         && ![...panel.node.querySelectorAll('.jp-InputPrompt')].some(e => e.textContent.includes('[*]'));
}"""

# Everything about the Check panel, read in one go from the DOM. The panel is
# the last ``.agtool-check`` on the page (a notebook has one Check cell).
_READ_PANEL_JS = """() => {
  const all = [...document.querySelectorAll('.jp-OutputArea-output .agtool-check')];
  if (!all.length) return null;
  const root = all[all.length - 1];
  const widget = root.closest('.jupyter-widgets');
  const rows = [...root.querySelectorAll(':scope > table > tbody > tr')].map(tr => {
    const td = tr.querySelectorAll(':scope > td');
    return {mark: td[0].textContent.trim(), word: td[1].textContent.trim(),
            colour: getComputedStyle(td[1]).color, title: td[2].innerText.trim()};
  });
  const box = widget && widget.closest('.widget-vbox, .jupyter-widgets.widget-container');
  const status = box ? [...box.querySelectorAll('.widget-label')].map(e => e.textContent).join(' ') : '';
  return {
    in_widget: !!widget,
    headline: (root.querySelector(':scope > p') || {textContent: ''}).textContent,
    rows: rows,
    status: status,
    panels_total: all.length,
    panels_in_widgets: all.filter(e => e.closest('.jupyter-widgets')).length,
  };
}"""

_SUMMARY_RE = re.compile(r"(\d+)/(\d+) checks passed")
_SEED_RE = re.compile(r"seed (\d+)")


@dataclass
class CheckRow:
    """One row of the panel: the mark, ``passed``/``failed``, its CSS colour and the check title."""

    mark: str
    word: str
    colour: str
    title: str

    @property
    def passed(self) -> bool:
        return self.word == "passed"


@dataclass
class CheckPanelView:
    """What the learner sees in the Check panel, parsed."""

    in_widget: bool
    headline: str
    status: str
    rows: list[CheckRow] = field(default_factory=list)
    panels_total: int = 0
    panels_in_widgets: int = 0

    @property
    def passed(self) -> int:
        return int(_SUMMARY_RE.search(self.headline).group(1))

    @property
    def total(self) -> int:
        return int(_SUMMARY_RE.search(self.headline).group(2))

    @property
    def seed(self) -> int:
        """The seed the headline names (``(seed 123, path)``)."""
        return int(_SEED_RE.search(self.headline).group(1))


def open_notebook(page: Page, url: str, *, timeout_ms: int = OPEN_TIMEOUT_MS) -> None:
    """Load ``url`` (a ``lab/tree/...`` URL) and wait until its kernel is connected and idle."""
    page.goto(url, timeout=timeout_ms)
    page.wait_for_selector(".jp-NotebookPanel", timeout=timeout_ms)
    page.wait_for_function(_KERNEL_READY_JS, timeout=timeout_ms)


def run_all_cells(page: Page, *, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Menu *Run > Run All Cells*, then wait until every code cell has run and the kernel is idle."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    page.wait_for_function(_ALL_RAN_JS, timeout=timeout_ms, polling=250)


def wait_for_check_panel(page: Page, *, timeout_ms: int = RUN_TIMEOUT_MS) -> CheckPanelView:
    """Wait until a Check panel with a summary line is on the page, then read it."""
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-OutputArea-output .agtool-check')]
                 .some(e => /checks passed/.test(e.textContent))""",
        timeout=timeout_ms,
    )
    return read_check_panel(page)


def read_check_panel(page: Page) -> CheckPanelView:
    """Parse the last Check panel of the page; raise if there is none."""
    data = page.evaluate(_READ_PANEL_JS)
    if data is None:
        raise AssertionError("no Check panel (.agtool-check) in any output of the page")
    rows = [CheckRow(**r) for r in data.pop("rows")]
    return CheckPanelView(rows=rows, **data)


def try_new_random_values(page: Page, *, timeout_ms: int = CLICK_TIMEOUT_MS) -> CheckPanelView:
    """Click the panel's *Try new random values* and wait until it shows a new seed."""
    before = read_check_panel(page).seed
    page.get_by_role("button", name="Try new random values").last.click()
    page.wait_for_function(
        """(before) => {
          const all = [...document.querySelectorAll('.jp-OutputArea-output .agtool-check')];
          const m = all.length && /seed (\\d+)/.exec(all[all.length - 1].textContent);
          return !!m && Number(m[1]) !== before;
        }""",
        arg=before,
        timeout=timeout_ms,
    )
    return read_check_panel(page)


def screenshot_check_panel(page: Page, folder, name: str) -> None:
    """Save ``<name>.png`` (the page, scrolled to the panel) and ``<name>-panel.png`` (the panel only).

    JupyterLab scrolls inside its own panes, so a full-page screenshot shows
    only the viewport; the element screenshot holds the whole panel.
    """
    panel = page.locator(".jp-OutputArea-output:has(.agtool-check)").last
    panel.locator(".agtool-check").scroll_into_view_if_needed()
    page.screenshot(path=str(folder / f"{name}.png"))
    panel.screenshot(path=str(folder / f"{name}-panel.png"))


# What JupyterLab shows when a cell raised or a widget view could not be built.
_OUTPUT_ERROR_MARKERS = ("Traceback (most recent call last)", "Error displaying widget")


def output_errors(page: Page) -> list[str]:
    """The start of every output in the open notebook that shows a traceback or a broken widget.

    >>> output_errors(page)   # doctest: +SKIP
    []
    """
    texts = page.evaluate(
        """() => [...window.jupyterapp.shell.currentWidget.node
                  .querySelectorAll('.jp-OutputArea-output')].map(e => e.textContent)"""
    )
    return [t[:300] for t in texts if any(marker in t for marker in _OUTPUT_ERROR_MARKERS)]
