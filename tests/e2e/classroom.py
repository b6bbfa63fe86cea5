"""A real classroom for tests and the service load benchmark: a JupyterHub with alice, bob and teacher,
its proxy, and the grading service behind it (started, killed and restarted by the caller).

Example::

    >>> SERVICE
    'agtool-grader'
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from grader.service.db import ERROR, GRADED

REPO = Path(__file__).resolve().parents[2]
SOLUTION = (REPO / "solutions" / "tools.py").read_bytes()

SERVICE = "agtool-grader"
HUB_CONFIG = """\
c = get_config()  # noqa: F821
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.pid_file = {work!r} + "/proxy.pid"
c.JupyterHub.db_url = "sqlite:///{work}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = {work!r} + "/cookie_secret"
c.JupyterHub.pid_file = {work!r} + "/jupyterhub.pid"
c.JupyterHub.cleanup_proxy = True
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = "pw"
c.Authenticator.allowed_users = {{"alice", "bob", "teacher"}}
c.JupyterHub.load_groups = {{"agtool-instructors": {{"users": ["teacher"]}}}}
# The service runs outside the hub (the test starts, kills and restarts it); the roles are the recipe's.
# The test starts it once the hub answers, so the hub's start-up wait for an external service to answer
# (a service's `timeout`, 30 s since JupyterHub 6.0; older ones have no such key) is cut to 1 s: the
# hub routes the service either way, and each start of this class waited out the 30 s.
from jupyterhub.services.service import Service
_started_after_the_hub = {{"timeout": 1}} if "timeout" in Service.class_trait_names() else {{}}
c.JupyterHub.services = [
    {{"name": "{service}", "url": "http://127.0.0.1:{service_port}", "api_token": {service_token!r},
      "oauth_no_confirm": True, **_started_after_the_hub}},
    {{"name": "test-admin", "api_token": {admin_token!r}}},
]
c.JupyterHub.load_roles = [
    {{"name": "user", "scopes": ["self", "access:services!service={service}"]}},
    {{"name": "{service}", "scopes": ["list:users", "read:users:name", "read:groups"], "services": ["{service}"]}},
    {{"name": "test-admin", "scopes": ["admin:users", "tokens"], "services": ["test-admin"]}},
]
"""


def http(
    method: str, url: str, *, token: str | None = None, body: bytes | None = None, ctype: str = "text/x-python"
) -> tuple[int, object, bytes]:
    headers = {"Authorization": f"token {token}"} if token else {}
    if body is not None:
        headers["Content-Type"] = ctype
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.headers, resp.read()  # an HTTPMessage: case-blind (the proxy lowercases)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


class Classroom:
    """A hub with alice, bob (learners) and teacher (in agtool-instructors), and the service behind it."""

    def __init__(self, work: Path, proxy: str, db: str):
        from e2e.processes import free_ports

        self.work, self.db = work, db
        self.port, hub_port, proxy_api, self.service_port = free_ports(4)
        self.service_token, self.admin_token = secrets.token_hex(16), secrets.token_hex(16)
        work.mkdir(parents=True, exist_ok=True)
        (work / "jupyterhub_config.py").write_text(
            HUB_CONFIG.format(
                port=self.port,
                hub_port=hub_port,
                proxy_api_port=proxy_api,
                proxy=proxy,
                work=str(work),
                service=SERVICE,
                service_port=self.service_port,
                service_token=self.service_token,
                admin_token=self.admin_token,
            )
        )
        self.hub_api = f"http://127.0.0.1:{hub_port}/hub/api"
        self.origin = f"http://127.0.0.1:{self.port}"
        self.base = f"{self.origin}/services/{SERVICE}/"
        self.hub = self.service = None
        self.tokens: dict[str, str] = {}

    def start_hub(self) -> None:
        from e2e.processes import child_env, start_logged, venv_bin, wait_for_http

        self.hub = start_logged(
            [venv_bin("jupyterhub"), "-f", str(self.work / "jupyterhub_config.py")],
            log=self.work / "hub.log",
            cwd=self.work,
            env=child_env(CONFIGPROXY_AUTH_TOKEN=secrets.token_hex(16)),
        )
        wait_for_http(f"{self.origin}/hub/health", proc=self.hub, log=self.work / "hub.log", timeout=90)
        for user in ("alice", "bob", "teacher"):
            status, _, body = http(
                "POST",
                f"{self.hub_api}/users/{user}/tokens",
                token=self.admin_token,
                body=json.dumps({"note": "test", "scopes": [f"access:services!service={SERVICE}"]}).encode(),
                ctype="application/json",
            )
            assert status == 201, body
            self.tokens[user] = json.loads(body)["token"]

    def start_service(self, *extra: str) -> None:
        from e2e.processes import child_env, start_logged, wait_for_http

        env = child_env(
            JUPYTERHUB_API_TOKEN=self.service_token,
            JUPYTERHUB_API_URL=self.hub_api,
            JUPYTERHUB_BASE_URL="/",
            JUPYTERHUB_SERVICE_NAME=SERVICE,
            JUPYTERHUB_SERVICE_PREFIX=f"/services/{SERVICE}/",
            JUPYTERHUB_SERVICE_URL=f"http://127.0.0.1:{self.service_port}",
            JUPYTERHUB_CLIENT_ID=f"service-{SERVICE}",
            JUPYTERHUB_OAUTH_CALLBACK_URL=f"/services/{SERVICE}/oauth_callback",
            JUPYTERHUB_OAUTH_ACCESS_SCOPES=json.dumps([f"access:services!service={SERVICE}"]),
            JUPYTERHUB_HOST="",
            AGTOOL_SANDBOX="none",
        )
        log = self.work / "service.log"
        self.service = start_logged(
            [
                sys.executable,
                "-m",
                "grader.service",
                "--db",
                self.db,
                "--jobs",
                "2",
                "--data-dir",
                str(self.work / "data"),
                "--insecure-no-sandbox",
                *extra,
            ],
            log=log,
            cwd=self.work,
            env=env,
        )
        # Through the proxy: 401 from the service (no token) means hub, proxy route and service are all up.
        wait_for_http(f"{self.base}api/submissions", proc=self.service, log=log, timeout=90, ok=(401,))

    def kill_service(self) -> None:
        self.service.kill()  # SIGKILL: no clean-up, as a crash
        self.service.wait(timeout=30)

    def stop(self) -> None:
        from e2e.processes import stop_tree

        for proc in (self.service, self.hub):
            if proc is not None:
                stop_tree(proc)

    def api(self, method: str, path: str, user: str, body: bytes | None = None, **kw):
        status, headers, data = http(method, self.base + path, token=self.tokens[user], body=body, **kw)
        ctype = headers.get("Content-Type", "")
        return status, (json.loads(data) if ctype.startswith("application/json") else data.decode())

    def wait_graded(self, user: str, attempt_id: int, timeout: float = 120) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, data = self.api("GET", f"api/submissions/{attempt_id}", user)
            assert status == 200, data
            if data["status"] in (GRADED, ERROR):
                return data
            time.sleep(0.3)
        raise AssertionError(
            f"attempt {attempt_id} not graded in {timeout}s:\n{(self.work / 'service.log').read_text()[-3000:]}"
        )


def proxy_command() -> str:
    import shutil

    local = REPO / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
    found = str(local) if os.access(local, os.X_OK) else shutil.which("configurable-http-proxy")
    if not found:
        if os.environ.get("CI"):
            pytest.fail("configurable-http-proxy not found (CI is set: make e2e-deps)", pytrace=False)
        pytest.skip("configurable-http-proxy not found: make e2e-deps")
    return found
