"""A classroom JupyterHub on localhost: dummy password login, one local lab process per learner.

The hub runs ``SimpleLocalProcessSpawner`` (every learner is the current
Unix user, with a home folder under ``home_root``) behind
``configurable-http-proxy``. Each learner's lab grades
``<home>/agtool/tools.py``: the spawner sets ``AGTOOL_MODULE`` per user,
which is how a real classroom hub points the Check cells at the learner's
own copy.

Example::

    with running_hub(work=tmp, home_root=tmp / "home", users=["alice"], password="pw",
                     proxy=chp) as hub:
        page.goto(hub.login_url)
"""
from __future__ import annotations

import contextlib
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from e2e_lab import isolated_jupyter_env
from e2e_processes import child_env, free_ports, start_logged, stop_tree, venv_bin, wait_for_http

START_TIMEOUT = 90.0

CONFIG_TEMPLATE = '''\
# Written by tests/e2e/e2e_hub.py for one test session.
c = get_config()  # noqa: F821

c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.pid_file = {proxy_pid!r}
c.JupyterHub.db_url = "sqlite:///{db}"
c.JupyterHub.cookie_secret_file = {cookie_secret!r}
c.JupyterHub.pid_file = {hub_pid!r}
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allowed_users = {users!r}

c.JupyterHub.spawner_class = "jupyterhub.spawner.SimpleLocalProcessSpawner"
c.SimpleLocalProcessSpawner.home_dir_template = {home_template!r}
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.args = [
    "--allow-root",
    "--LabApp.news_url=None",
    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 90
c.Spawner.http_timeout = 90

_jupyter_env = {jupyter_env!r}
_home_template = {home_template!r}
c.Spawner.environment = {{
    **_jupyter_env,
    # Each learner's Check cells grade the copy in that learner's home.
    "AGTOOL_MODULE": lambda spawner: _home_template.format(username=spawner.user.name) + "/agtool/tools.py",
}}
'''


@dataclass
class HubServer:
    """A running hub: where it listens and where its log is."""

    port: int
    log: Path
    home_root: Path

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def login_url(self) -> str:
        return f"{self.origin}/hub/login"

    def lab_url(self, user: str, path: str = "") -> str:
        """The URL of ``path`` (relative to the learner's home) in that learner's JupyterLab."""
        tree = f"/tree/{path}" if path else ""
        return f"{self.origin}/user/{user}/lab{tree}?reset"

    def home(self, user: str) -> Path:
        return self.home_root / user


def write_hub_config(work: Path, *, ports: list[int], home_root: Path, users: list[str], password: str,
                     proxy: str) -> Path:
    """Write ``jupyterhub_config.py`` for a localhost classroom and return its path.

    ``ports`` are three free ports: the public one (the proxy), the hub's
    own, and the proxy's API.
    """
    # The single-user servers get the same isolated Jupyter config as the
    # plain lab tests, except the data dir: that stays in each learner's home.
    jupyter_env = {k: v for k, v in isolated_jupyter_env(work / "singleuser").items()
                   if k in ("JUPYTER_CONFIG_DIR", "JUPYTERLAB_SETTINGS_DIR")}
    config = CONFIG_TEMPLATE.format(
        port=ports[0], hub_port=ports[1], proxy_api_port=ports[2], proxy=proxy,
        proxy_pid=str(work / "proxy.pid"), db=work / "jupyterhub.sqlite",
        cookie_secret=str(work / "jupyterhub_cookie_secret"), hub_pid=str(work / "jupyterhub.pid"),
        password=password, users=set(users),
        home_template=str(home_root / "{username}"), singleuser=venv_bin("jupyterhub-singleuser"),
        jupyter_env=jupyter_env,
    )
    path = work / "jupyterhub_config.py"
    path.write_text(config)
    return path


@contextlib.contextmanager
def running_hub(*, work: Path, home_root: Path, users: list[str], password: str,
                proxy: str) -> Iterator[HubServer]:
    """Start JupyterHub (and through it the proxy); stop it and every learner server after."""
    work.mkdir(parents=True, exist_ok=True)
    ports = free_ports(3)
    config = write_hub_config(work, ports=ports, home_root=home_root, users=users, password=password, proxy=proxy)
    log = work / "jupyterhub.log"
    proc = start_logged(
        [venv_bin("jupyterhub"), "-f", str(config)], log=log, cwd=work,
        env=child_env(CONFIGPROXY_AUTH_TOKEN=secrets.token_hex(16)),
    )
    hub = HubServer(port=ports[0], log=log, home_root=home_root)
    try:
        # /hub/health answers through the proxy only once hub and proxy are both up.
        wait_for_http(f"{hub.origin}/hub/health", proc=proc, log=log, timeout=START_TIMEOUT)
        yield hub
    finally:
        stop_tree(proc)
