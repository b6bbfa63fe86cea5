"""A classroom JupyterHub on localhost: dummy password login, one local lab process per learner.

The hub runs ``SimpleLocalProcessSpawner`` (every learner is the current
Unix user, with a home folder under ``home_root``) behind
``configurable-http-proxy``. Each learner's lab grades
``<home>/agtool/tools.py``: the spawner sets ``AGTOOL_MODULE`` per user,
which is how a real classroom hub points the Check cells at the learner's
own copy.

With ``service=GradingService(...)`` the hub also runs the agtool grading
service (``python -m grader.service``) as a hub-managed service, with the
roles, group and server token scopes of ``deploy/jupyterhub/jupyterhub_config.py``:
learners' servers get ``$AGTOOL_SERVICE_URL`` and a token that may reach the
service, so the Check panel offers Submit; members of ``agtool-instructors``
see the class page.

Example::

    with running_hub(work=tmp, home_root=tmp / "home", users=["alice"], password="pw",
                     proxy=chp) as hub:
        log_in(page, hub, "alice", "pw")
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from e2e.lab import isolated_jupyter_env
from e2e.processes import child_env, free_ports, start_logged, stop_tree, venv_bin, wait_for_http

START_TIMEOUT = 90.0
REPO_ROOT = Path(__file__).resolve().parents[2]
SPAWN_TIMEOUT_MS = 120_000

CONFIG_TEMPLATE = """\
# Written by tests/e2e/hub.py for one test session.
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
"""

# The grading service as deploy/jupyterhub/jupyterhub_config.py runs it: managed by the hub, its roles,
# the instructors' group, and learner servers whose token may reach it and who know its URL.
SERVICE_TEMPLATE = """
c.JupyterHub.services = [{{
    "name": {name!r},
    "url": "http://127.0.0.1:{port}",
    "command": {command!r},
    "cwd": {cwd!r},
    "oauth_no_confirm": True,
    "environment": {environment!r},
}}]
c.JupyterHub.load_groups = {{"agtool-instructors": {{"users": {instructors!r}}}}}
c.JupyterHub.load_roles = [
    {{"name": "user", "scopes": ["self", "access:services!service={name}"]}},
    {{"name": {name!r}, "scopes": ["list:users", "read:users:name", "read:groups"], "services": [{name!r}]}},
]
c.Spawner.server_token_scopes = [
    "users:activity!user", "access:servers!server", "access:services!service={name}",
]
c.Spawner.environment["AGTOOL_SERVICE_URL"] = "http://127.0.0.1:{port}/services/{name}/"
"""


@dataclass
class GradingService:
    """The agtool grading service to run in the hub: its options and who the instructors are.

    ``args`` are more ``agtool-grade serve`` options (e.g. ``["--course", path]``);
    ``instructors`` are the members of the hub group ``agtool-instructors``
    (they must be among the hub's users too).
    """

    name: str = "agtool-grader"
    args: list[str] = field(default_factory=list)
    instructors: list[str] = field(default_factory=list)
    jobs: int = 1  # one grading worker: the machine's two cores are shared with the hub, a lab and Chromium


@dataclass
class HubServer:
    """A running hub: where it listens and where its log is."""

    port: int
    log: Path
    home_root: Path
    service: GradingService | None = None

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

    @property
    def service_url(self) -> str:
        """The grading service's pages and API through the hub's proxy (``.../services/agtool-grader/``)."""
        return f"{self.origin}/services/{self.service.name}/"


def write_hub_config(
    work: Path,
    *,
    ports: list[int],
    home_root: Path,
    users: list[str],
    password: str,
    proxy: str,
    service: GradingService | None = None,
) -> Path:
    """Write ``jupyterhub_config.py`` for a localhost classroom and return its path.

    ``ports`` are three free ports: the public one (the proxy), the hub's
    own, and the proxy's API; a fourth for the grading service with ``service``.
    """
    # The single-user servers get the same isolated Jupyter config as the
    # plain lab tests, except the data dir: that stays in each learner's home.
    jupyter_env = {
        k: v
        for k, v in isolated_jupyter_env(work / "singleuser").items()
        if k in ("JUPYTER_CONFIG_DIR", "JUPYTERLAB_SETTINGS_DIR")
    }
    config = CONFIG_TEMPLATE.format(
        port=ports[0],
        hub_port=ports[1],
        proxy_api_port=ports[2],
        proxy=proxy,
        proxy_pid=str(work / "proxy.pid"),
        db=work / "jupyterhub.sqlite",
        cookie_secret=str(work / "jupyterhub_cookie_secret"),
        hub_pid=str(work / "jupyterhub.pid"),
        password=password,
        users=set(users),
        home_template=str(home_root / "{username}"),
        singleuser=venv_bin("jupyterhub-singleuser"),
        jupyter_env=jupyter_env,
    )
    if service is not None:
        data = work / "service"
        data.mkdir(parents=True, exist_ok=True)
        config += SERVICE_TEMPLATE.format(
            name=service.name,
            port=ports[3],
            cwd=str(data),
            instructors=list(service.instructors),
            command=[
                sys.executable,
                "-m",
                "grader.service",
                "--data-dir",
                str(data),
                "--jobs",
                str(service.jobs),
                *service.args,
            ],
            # A managed service gets only these variables (and PATH, LANG ...) from the hub.
            environment={"AGTOOL_SANDBOX": "auto"},
        )
    path = work / "jupyterhub_config.py"
    path.write_text(config)
    return path


@contextlib.contextmanager
def running_hub(
    *, work: Path, home_root: Path, users: list[str], password: str, proxy: str, service: GradingService | None = None
) -> Iterator[HubServer]:
    """Start JupyterHub (and through it the proxy and ``service``); stop it, every learner server and the service after."""
    work.mkdir(parents=True, exist_ok=True)
    ports = free_ports(4 if service is not None else 3)
    config = write_hub_config(
        work, ports=ports, home_root=home_root, users=users, password=password, proxy=proxy, service=service
    )
    log = work / "jupyterhub.log"
    proc = start_logged(
        [venv_bin("jupyterhub"), "-f", str(config)],
        log=log,
        cwd=work,
        env=child_env(CONFIGPROXY_AUTH_TOKEN=secrets.token_hex(16)),
    )
    hub = HubServer(port=ports[0], log=log, home_root=home_root, service=service)
    try:
        # /hub/health answers through the proxy only once hub and proxy are both up.
        wait_for_http(f"{hub.origin}/hub/health", proc=proc, log=log, timeout=START_TIMEOUT)
        if service is not None:
            # 401 through the proxy (no token): the hub started the service, routed it, and it answers.
            wait_for_http(f"{hub.service_url}api/submissions", proc=proc, log=log, timeout=START_TIMEOUT, ok=(401,))
        yield hub
    finally:
        stop_tree(proc)


# ---------------------------------------------------------------------------- in the browser


def give_home(home: Path, *, tools_source: Path, notebooks: tuple[str, ...] = ()) -> None:
    """A learner's home as a classroom hands it out: ``agtool/`` with ``tools_source`` as its module, plus notebooks of ``labs/``."""
    shutil.copytree(REPO_ROOT / "agtool", home / "agtool", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(tools_source, home / "agtool" / "tools.py")
    for name in notebooks:
        shutil.copyfile(REPO_ROOT / "labs" / name, home / name)


def submit_login(page, hub: HubServer, user: str, password: str, *, url: str | None = None) -> None:
    """Fill in and send the hub's login form, at ``url`` (default: the hub's login page) or where it redirected."""
    page.goto(url or hub.login_url)
    page.fill("#username_input", user)
    page.fill("#password_input", password)
    page.click("#login_submit")


def log_in(page, hub: HubServer, user: str, password: str) -> None:
    """Log ``user`` in and wait until the hub has spawned their server and JupyterLab is on the page."""
    submit_login(page, hub, user, password)
    page.wait_for_url(re.compile(rf"/user/{user}/lab"), timeout=SPAWN_TIMEOUT_MS)
    page.wait_for_selector("#jp-main-dock-panel", timeout=90_000)
