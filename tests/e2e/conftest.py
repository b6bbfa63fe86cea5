"""Fixtures of the end-to-end tests: Chromium through Playwright, JupyterLab servers, a page.

Every test module here sets ``pytestmark = pytest.mark.e2e``. What they need from the machine
(Debian's ``/usr/bin/chromium``, the ``e2e`` extra, ``configurable-http-proxy``
from npm) is installed by ``make test`` / ``.ci/run``. When something is
missing the test *fails* under CI (``$CI`` set) -- a skipped browser test
proves nothing -- and is skipped with the reason on a developer's machine.

Screenshots go to ``artifacts/e2e/`` (kept out of git); a failing test also
leaves ``FAILED-<test>.png`` there.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest
from helpers import skip_missing

REPO_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO_ROOT / "artifacts" / "e2e"
CHROMIUM = os.environ.get("AGTOOL_E2E_CHROMIUM", "/usr/bin/chromium")
# Flags that keep the browser off the network and away from a sandbox that
# root in a container cannot set up.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1400, "height": 1000}
CHP_LOCAL = REPO_ROOT / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"


def missing(reason: str) -> None:
    """A prerequisite is absent: fail in CI, skip (saying how to install it) elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: e2e tests must run, not skip)", pytrace=False)
    skip_missing(reason)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    # Keep each phase's report on the item, so the page fixture can tell
    # whether the test failed and leave a screenshot of the moment.
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, headless, driven by Playwright (never ``playwright install``).

    One per test module, closed at its end: Playwright's sync API leaves its event loop marked as
    running in the main thread while it is open, so a later test's ``asyncio.run`` would fail.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed: pip install -e '.[e2e]' (make test does it)")
    if not os.access(CHROMIUM, os.X_OK):
        missing(f"{CHROMIUM} not found: apt-get install -y chromium (.ci/run does it)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser, request, artifacts_dir):
    """A fresh browser context and page; on failure, a screenshot of where it stopped."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(60_000)
    page = context.new_page()
    yield page
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        with contextlib.suppress(Exception):
            page.screenshot(path=str(artifacts_dir / f"FAILED-{request.node.name}.png"), full_page=True)
    context.close()


def notebooks_with_saved_outputs() -> list[str]:
    """Committed notebooks under ``labs/`` that hold outputs or execution counts (there must be none)."""
    import nbformat

    dirty = []
    for path in sorted((REPO_ROOT / "labs").glob("*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        if any(c.get("outputs") or c.get("execution_count") for c in cells if c.cell_type == "code"):
            dirty.append(path.name)
    return dirty


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    """``lab_server(module)``: a JupyterLab on the repo with ``AGTOOL_MODULE=<module>``, one per module.

    Servers live for the session and stop at its end. The repo's notebooks
    are run in the browser but must never be saved with their outputs
    (autosave is off in the isolated config); the end of the session checks it.
    """
    from e2e.lab import running_lab

    saved_before = notebooks_with_saved_outputs()
    servers: dict[str, object] = {}
    with contextlib.ExitStack() as stack:

        def start(module: Path):
            key = str(module)
            if key not in servers:
                work = tmp_path_factory.mktemp(f"lab-{module.parent.name}")
                servers[key] = stack.enter_context(
                    running_lab(root_dir=REPO_ROOT, work=work, env={"AGTOOL_MODULE": key})
                )
            return servers[key]

        yield start
    saved_by_us = sorted(set(notebooks_with_saved_outputs()) - set(saved_before))
    assert not saved_by_us, f"the browser saved outputs into committed notebooks: {saved_by_us}"


@pytest.fixture
def shutdown_kernels_after():
    """``shutdown_kernels_after(lab)``: stop that server's kernels when the test ends."""
    labs = []
    yield labs.append
    for lab in labs:
        with contextlib.suppress(Exception):
            lab.shutdown_kernels()


@pytest.fixture(scope="session")
def configurable_http_proxy() -> str:
    """The ``configurable-http-proxy`` executable: the repo-local npm install, else one on PATH."""
    if os.access(CHP_LOCAL, os.X_OK):
        return str(CHP_LOCAL)
    found = shutil.which("configurable-http-proxy")
    if not found:
        missing("configurable-http-proxy not found: make e2e-deps (npm install into .venv/node)")
    return found
