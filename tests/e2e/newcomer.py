"""What the newcomer's path needs beyond :mod:`e2e.notebook_ui`: ``make lab`` in a fresh clone, the editor, a terminal.

:func:`make_lab` starts the lab the way the README says (``make lab``, with
``LAB_ARGS`` for a headless start on a free port with a token) in a clone of
this checkout whose ``.venv`` is this checkout's (so ``make`` installs
nothing: the stamp is taken as up to date). The clone's ``agtool/tools.py``
is the one the lab edits: the real one is never touched.

Example::

    with make_lab(clone, work=tmp) as lab:
        page.goto(lab.url_for("labs/09_coercion.ipynb"))
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from e2e.lab import START_TIMEOUT, LabServer, isolated_jupyter_env
from e2e.processes import free_port, start_logged, stop_tree, wait_for_http

if TYPE_CHECKING:
    from playwright.sync_api import Page

REPO_ROOT = Path(__file__).resolve().parents[2]
# make's own variables from a parent make (CI's `make test`) would change what `make lab` prints and does.
_PARENT_MAKE = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")


def clean_env() -> dict[str, str]:
    """This process's environment without a parent make's, pytest's or the grader's own variables.

    What a command run in a clone (``make test-fast``, a kernel) gets: a nested make or pytest must not
    take the outer run's workers, options or settings for its own.
    """
    return {
        k: v
        for k, v in os.environ.items()
        if k not in _PARENT_MAKE and not k.startswith("PYTEST_") and k != "COLUMNS" and not _grader_setting(k)
    }


def _grader_setting(name: str) -> bool:
    """A grader setting of this run (``$AGTOOL_SANDBOX``...), not the tests' own (``$AGTOOL_TEST_POSTGRES_URL``)."""
    return name.startswith("AGTOOL_") and not name.startswith(("AGTOOL_TEST_", "AGTOOL_E2E_"))


def fresh_clone(dest: Path) -> Path:
    """``git clone`` of this checkout's HEAD into ``dest``, its ``.venv`` a link to this checkout's."""
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(REPO_ROOT), str(dest)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (dest / ".venv").symlink_to(REPO_ROOT / ".venv")
    return dest


@contextlib.contextmanager
def make_lab(top: Path, *, work: Path) -> Iterator[LabServer]:
    """``make lab LAB_ARGS="--no-browser --port=P --IdentityProvider.token=T ..."`` in ``top``; stopped after.

    ``-o .venv/.installed``: the clone's stamp is older than its fresh ``pyproject.toml``, and a
    set-up run would install the clone into the shared venv. Everything else is the README's command.
    """
    port, token = free_port(), secrets.token_hex(16)
    lab_args = (
        f"--no-browser --ServerApp.ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 "
        f"--IdentityProvider.token={token} "
        # Off the network in a test: no news feed, no update check.
        "--LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"
    )
    env = {k: v for k, v in os.environ.items() if k not in _PARENT_MAKE and not k.startswith("AGTOOL_")}
    env.update(isolated_jupyter_env(work), JUPYTERLAB_WORKSPACES_DIR=str(work / "workspaces"))
    log = work / "make-lab.log"
    proc = start_logged(
        ["make", "--no-print-directory", "-o", ".venv/.installed", "lab", f"LAB_ARGS={lab_args}"],
        log=log,
        cwd=top,
        env=env,
    )
    lab = LabServer(port=port, token=token, root_dir=top, log=log)
    try:
        wait_for_http(f"{lab.origin}/api/status?token={token}", proc=proc, log=log, timeout=START_TIMEOUT)
        yield lab
    finally:
        with contextlib.suppress(Exception):
            lab.shutdown_kernels()
        with contextlib.suppress(Exception):
            for terminal in lab.api("GET", "api/terminals"):
                lab.api("DELETE", f"api/terminals/{terminal['name']}")
        stop_tree(proc)


def make_lab_command(top: Path) -> str:
    """The command line ``make -n lab`` prints in ``top`` (what :func:`make_lab` runs)."""
    env = {k: v for k, v in os.environ.items() if k not in _PARENT_MAKE}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "-o", ".venv/.installed", "lab"],
        cwd=top,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )
    return " ".join(line.strip().rstrip("\\") for line in done.stdout.splitlines())


# ---------------------------------------------------------------------------- the editor

_CURRENT_EDITOR_JS = """(name) => {
  const w = window.jupyterapp.shell.currentWidget;
  return !!w && w.title.label === name && !!w.content && !!w.content.editor && w.context.isReady;
}"""


def open_in_file_browser(page: Page, *parts: str) -> None:
    """Open a file from the file browser as a learner does: its root, then double-click each name."""
    page.locator(".jp-FileBrowser .jp-BreadCrumbs-home").first.click()
    for name in parts:
        item = page.locator(
            ".jp-FileBrowser .jp-DirListing-item",
            has=page.locator(".jp-DirListing-itemText", has_text=re.compile(f"^{re.escape(name)}$")),
        )
        item.first.dblclick()
    page.wait_for_function(_CURRENT_EDITOR_JS, arg=parts[-1], timeout=60_000)


def activate_tab(page: Page, label: str) -> None:
    """Click the main area's tab called ``label``."""
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=label).first.click()
    page.wait_for_function("(l) => window.jupyterapp.shell.currentWidget.title.label === l", arg=label)


def save_in_editor(page: Page, label: str, text: str, on_disk: Path, *, timeout: float = 30.0) -> None:
    """Replace the open editor's text with ``text`` and save it with Ctrl+S; wait until ``on_disk`` holds it."""
    activate_tab(page, label)
    page.evaluate("(t) => window.jupyterapp.shell.currentWidget.content.model.sharedModel.setSource(t)", text)
    page.locator(".jp-FileEditor .cm-content").first.click()
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + timeout
    while on_disk.read_text(encoding="utf-8") != text:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the lab did not save {on_disk} within {timeout:.0f}s")
        time.sleep(0.1)
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")


# ---------------------------------------------------------------------------- the Check cell, again

_CHECK_CELL_JS = """() => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  const i = nb.widgets.findIndex(c => c.model.type === 'code' && /\\bcheck\\(\\d+\\)/.test(c.model.sharedModel.source));
  if (i >= 0) nb.widgets[i].node.setAttribute('data-e2e', 'check-cell');
  return {index: i, count: i < 0 ? null : nb.widgets[i].model.executionCount};
}"""
_CHECK_RAN_JS = """([i, before]) => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cell = panel.content.widgets[i];
  return panel.sessionContext.session.kernel.status === 'idle' && cell.model.executionCount !== null
         && cell.model.executionCount !== before
         && /checks passed/.test((cell.node.querySelector('.agtool-check') || {textContent: ''}).textContent);
}"""


def run_check_cell(page: Page, *, timeout_ms: int = 120_000) -> None:
    """Click into the notebook's Check cell and press Shift+Enter; wait for its new panel."""
    found = page.evaluate(_CHECK_CELL_JS)
    assert found["index"] >= 0, "no Check cell (check(N)) in the notebook"
    editor = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) [data-e2e=check-cell] .jp-InputArea-editor")
    editor.scroll_into_view_if_needed()
    editor.click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(_CHECK_RAN_JS, arg=[found["index"], found["count"]], timeout=timeout_ms, polling=250)


# ---------------------------------------------------------------------------- a terminal

_TERMINAL_TEXT_JS = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const term = w && w.content && w.content._term;
  if (!term) return null;
  const b = term.buffer.active, lines = [];
  for (let i = 0; i < b.length; i++) lines.push(b.getLine(i).translateToString(true));
  return lines.join('\\n');
}"""


def open_terminal(page: Page) -> None:
    """File > New > Terminal, as a learner opens one; wait until its shell shows a prompt."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^File$")).click()
    page.locator(".lm-Menu-item", has=page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^New$"))).hover()
    page.locator(".lm-Menu-item", has=page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Terminal$"))).click()
    page.wait_for_selector(".jp-Terminal .xterm", timeout=60_000)
    page.wait_for_function(
        f"() => {{ const t = ({_TERMINAL_TEXT_JS})(); return !!t && t.trim().length > 0; }}", timeout=60_000
    )


def run_in_terminal(page: Page, command: str, *, timeout_ms: int = 120_000) -> tuple[str, int]:
    """Type ``command`` and Enter in the open terminal, then ask the shell its exit status; (what it printed, status)."""
    marker = f"agtool-e2e-{secrets.token_hex(4)}"
    page.locator(".jp-Terminal .xterm").first.click()
    page.keyboard.type(command + "\n")
    page.keyboard.type(f'echo "{marker}=$?"\n')
    page.wait_for_function(
        f"() => new RegExp('^{marker}=\\\\d+', 'm').test(({_TERMINAL_TEXT_JS})() || '')",
        timeout=timeout_ms,
        polling=250,
    )
    text = page.evaluate(_TERMINAL_TEXT_JS)
    status = int(re.search(rf"^{marker}=(\d+)", text, re.M).group(1))
    start = text.rfind(command[:40])
    return text[start : text.rfind(f'echo "{marker}')], status
