"""A real ``jupyter lab`` server on a free localhost port, isolated from the user's Jupyter config.

Example::

    with running_lab(root_dir=repo, work=tmp, env={"AGTOOL_MODULE": "solutions/tools.py"}) as lab:
        page.goto(lab.url_for("labs/03_call_boundary.ipynb"))
"""

from __future__ import annotations

import contextlib
import json
import secrets
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from e2e.processes import child_env, free_port, start_logged, stop_tree, venv_bin, wait_for_http

START_TIMEOUT = 90.0

# Front-end plugins that would reach for the network or cover the page with
# a question (the news opt-in toast); a learner's lab keeps them, a test does not.
DISABLED_PLUGINS = {
    "@jupyterlab/apputils-extension:announcements": True,
}


@dataclass
class LabServer:
    """A running JupyterLab: where it listens, its token, its log."""

    port: int
    token: str
    root_dir: Path
    log: Path
    base: str = "/"

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url_for(self, notebook: str) -> str:
        """The URL that opens ``notebook`` (relative to the root dir) in a fresh workspace.

        ``reset`` drops whatever layout an earlier test left, so only this
        notebook (and its one kernel) is open.
        """
        quoted = urllib.parse.quote(notebook)
        return f"{self.origin}{self.base}lab/tree/{quoted}?reset&token={self.token}"

    def api(self, method: str, path: str) -> object:
        """Call the server's REST API (e.g. ``api("GET", "api/kernels")``) and decode the JSON."""
        req = urllib.request.Request(
            f"{self.origin}{self.base}{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """Stop every kernel, so one test's kernel does not eat the next test's CPU."""
        for session in self.api("GET", "api/sessions"):
            self.api("DELETE", f"api/sessions/{session['id']}")
        for kernel in self.api("GET", "api/kernels"):
            self.api("DELETE", f"api/kernels/{kernel['id']}")


def isolated_jupyter_env(work: Path, *, disable: tuple[str, ...] = ()) -> dict[str, str]:
    """Write a Jupyter config of our own under ``work`` and return the variables that select it.

    No user setting leaks in; the news toast is off; autosave is off, so
    running the repo's notebooks never writes outputs into committed files;
    ``window.jupyterapp`` is exposed for :mod:`e2e.notebook_ui`. ``disable``
    names more front-end plugins to switch off (a test uses it to take the
    widget manager away).

    Example::

        env = isolated_jupyter_env(tmp_path)   # {"JUPYTER_CONFIG_DIR": ..., ...}
    """
    config_dir = work / "jupyter-config"
    settings_dir = work / "lab-user-settings"
    (config_dir / "labconfig").mkdir(parents=True, exist_ok=True)
    page_config = {
        "disabledExtensions": {**DISABLED_PLUGINS, **{name: True for name in disable}},
        # The toolbar shows "Idle" a moment before the kernel connection is up;
        # the app object lets a test ask the real state.
        "exposeAppInBrowser": True,
    }
    (config_dir / "labconfig" / "page_config.json").write_text(json.dumps(page_config))
    docmanager = settings_dir / "@jupyterlab" / "docmanager-extension"
    docmanager.mkdir(parents=True, exist_ok=True)
    (docmanager / "plugin.jupyterlab-settings").write_text(json.dumps({"autosave": False}))
    return {
        "JUPYTER_CONFIG_DIR": str(config_dir),
        "JUPYTERLAB_SETTINGS_DIR": str(settings_dir),
        "JUPYTER_DATA_DIR": str(work / "jupyter-data"),
        "JUPYTER_RUNTIME_DIR": str(work / "jupyter-runtime"),
        "IPYTHONDIR": str(work / "ipython"),
    }


@contextlib.contextmanager
def running_lab(
    *, root_dir: Path, work: Path, env: dict[str, str], disable: tuple[str, ...] = ()
) -> Iterator[LabServer]:
    """Start ``jupyter lab`` serving ``root_dir`` with ``env`` added; stop it and its kernels after.

    ``work`` holds the config, runtime and workspace folders and the log.
    """
    port, token = free_port(), secrets.token_hex(16)
    log = work / "lab.log"
    cmd = [
        venv_bin("jupyter"),
        "lab",
        "--no-browser",
        "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        # Keep the server off the network: no news feed, no update check.
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    proc = start_logged(
        cmd,
        log=log,
        cwd=root_dir,
        env=child_env(
            **isolated_jupyter_env(work, disable=disable),
            JUPYTERLAB_WORKSPACES_DIR=str(work / "workspaces"),
            **env,
        ),
    )
    lab = LabServer(port=port, token=token, root_dir=root_dir, log=log)
    try:
        wait_for_http(f"{lab.origin}/api/status?token={token}", proc=proc, log=log, timeout=START_TIMEOUT)
        yield lab
    finally:
        stop_tree(proc)
