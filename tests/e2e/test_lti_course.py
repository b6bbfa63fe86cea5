"""A course of three assignments through LTI, end to end: the stand-in LMS, a real hub, its proxy and the service.

The stand-in LMS (tests/lti_platform.py) holds several courses, their line
items and the Deep Linking flow; the hub is configured by the recipe's own
``configure_lti`` from an LTI file naming course ``c1``, and starts the
grading service with ``--course`` (three assignments, due at different dates:
Lab A past its due date and in its late period at half credit, Labs B and C
open) and ``--lti``, on SQLite and on PostgreSQL. The story of one class:

* the instructor deep-links each assignment from the LMS (the LMS's Deep
  Linking request -> the hub's login -> the service's page of the course's
  assignments -> the signed answer posted back: the LMS makes one column per
  assignment, ``resourceId`` its id, out of its points);
* learners launch from the links and submit (as the Submit widget does);
  each LMS column gets that assignment's credited score out of its points,
  whatever link the learner opened;
* a launch from another course of the deployment is refused (one log line,
  nothing stored); a learner who teaches another course is a learner here;
* the LMS stopped mid-class: a grade made meanwhile reaches it when it is
  back, and no column is made twice; the hub (and the service) restarted
  mid-class: the same.

``test_the_launch_works_through_nginx_with_tls`` puts Debian's nginx with a
self-signed certificate (openssl) in front of the hub, with the
configuration docs/lti.md shows (read from the page), and launches through
it: the hub sees https (``X-Forwarded-Proto``), its login cookies are
``Secure``, and the launch lands in the learner's spawn.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import secrets
import time
from pathlib import Path

import pytest

from e2e.hub import GradingService, HubServer, give_home, write_hub_config
from e2e.processes import child_env, free_ports, start_logged, stop_tree, venv_bin, wait_for_http

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVICE = "agtool-grader"
START_TIMEOUT = 90.0
GRADE_TIMEOUT = 150.0
SCORE_TIMEOUT = 60.0
COURSE = """
[[assignments]]
id = "lab-a"
name = "Lab A"
steps = [1, 2, 3, 4]
due = 2020-01-10T23:59:00+00:00
late_due = 2099-01-10T23:59:00+00:00
late_credit = 0.5

[[assignments]]
id = "lab-b"
name = "Lab B"
steps = [5, 6, 7, 8]
due = 2098-01-24T23:59:00+00:00

[[assignments]]
id = "lab-c"
name = "Lab C"
steps = [9, 10, 11]
due = 2099-02-07T23:59:00+00:00
"""
LTI_BLOCK = """
c.JupyterHub.services.append({{"name": "test-admin", "api_token": {admin_token!r}}})
c.JupyterHub.load_roles.append({{"name": "test-admin", "services": ["test-admin"],
    "scopes": ["admin:users", "admin:auth_state", "list:users", "read:users", "read:servers", "read:groups"]}})
from grader.service.lti.hub_auth import configure_lti
configure_lti(c, {lti_file!r}, service={service!r}, instructor_group="agtool-instructors", crypt_key_file={crypt!r})
"""
FORM_ACTION = re.compile(r'<form id=f method=post action="([^"]+)">')
FORM_FIELD = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


class CourseClass:
    """The LMS, the hub (restartable) and what the test reads inside them."""

    def __init__(self, work: Path, proxy: str, db: str):
        from lti_platform import Platform

        self.work, self.db = work, db
        self.ports = free_ports(4)
        self.origin = f"http://127.0.0.1:{self.ports[0]}"
        self.https_origin = ""  # set by the nginx test
        service_url = f"{self.origin}/services/{SERVICE}/"
        self.lms = Platform(
            tool_key_set_url=f"{service_url}lti/jwks.json",
            tool_login_url=f"{self.origin}/hub/lti13/oauth_login",
            target_link_uri=f"{self.origin}/hub/spawn",
            redirect_uris=(f"{self.origin}/hub/lti13/oauth_callback",),
            host="localhost",
            deep_link_uri=f"{service_url}lti/deep-link",
        )
        lti_file = work / "lti.toml"
        lti_file.write_text(
            "".join(f"{k} = {json.dumps(v)}\n" for k, v in self.lms.lti_config(context_ids=["c1"]).items())
        )
        course = work / "course.toml"
        course.write_text(COURSE)
        from grader.course.policy import parse_course

        self.course = parse_course(COURSE)
        self.admin_token = secrets.token_hex(16)
        self.home_root = work / "home"
        self.service = GradingService(name=SERVICE, args=["--course", str(course), "--db", db])
        self.config = write_hub_config(
            work,
            ports=self.ports,
            home_root=self.home_root,
            users=[],
            password=secrets.token_hex(8),
            proxy=proxy,
            service=self.service,
        )
        with self.config.open("a") as f:
            f.write(
                LTI_BLOCK.format(
                    admin_token=self.admin_token, lti_file=str(lti_file), service=SERVICE, crypt=str(work / "crypt")
                )
            )
        self.hub_api = f"http://127.0.0.1:{self.ports[1]}/hub/api"
        self.hub = HubServer(port=self.ports[0], log=work / "jupyterhub.log", home_root=self.home_root)
        self.proc = None

    def start(self) -> None:
        self.proc = start_logged(
            [venv_bin("jupyterhub"), "-f", str(self.config)],
            log=self.hub.log,
            cwd=self.work,
            env=child_env(CONFIGPROXY_AUTH_TOKEN=secrets.token_hex(16)),
        )
        wait_for_http(f"{self.origin}/hub/health", proc=self.proc, log=self.hub.log, timeout=START_TIMEOUT)
        wait_for_http(
            f"{self.origin}/services/{SERVICE}/lti/jwks.json", proc=self.proc, log=self.hub.log, timeout=START_TIMEOUT
        )

    def stop(self) -> None:
        if self.proc is not None:
            stop_tree(self.proc)
            self.proc = None

    @property
    def log(self) -> str:
        return self.hub.log.read_text(errors="replace")

    def user(self, name: str) -> dict | None:
        import requests

        answer = requests.get(
            f"{self.hub_api}/users/{name}", timeout=10, headers={"Authorization": f"token {self.admin_token}"}
        )
        return None if answer.status_code == 404 else answer.json()

    def rows(self) -> dict[str, list[dict]]:
        """The service's LTI tables: launches, outbox, line items."""
        from sqlalchemy import create_engine

        from grader.service.lti.store import Launches, LineItems, Outbox

        engine = create_engine(self.db)
        try:
            return {
                "launches": Launches(engine).all(),
                "outbox": Outbox(engine).all(),
                "lineitems": LineItems(engine).all(),
            }
        finally:
            engine.dispose()

    def columns(self, context: str = "c1") -> dict[str, int]:
        """How many columns the course has per resourceId (a duplicate shows as 2)."""
        out: dict[str, int] = {}
        for item in self.lms.lineitems.get(context, {}).values():
            out[item.get("resourceId")] = out.get(item.get("resourceId"), 0) + 1
        return out


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def course_class(request, tmp_path_factory, configurable_http_proxy):
    try:
        import lti1p3platform  # noqa: F401
        import ltiauthenticator  # noqa: F401
        import pylti1p3  # noqa: F401
    except ImportError as exc:
        from e2e.conftest import missing

        missing(f"the LTI extras are not installed ({exc}): make setup")
    from service_stand_ins import database_url

    work = tmp_path_factory.mktemp(f"lti-course-{request.param}")
    (work / "data").mkdir()
    room = CourseClass(work, configurable_http_proxy, database_url(request.param, work / "data"))
    try:
        room.start()
        yield room
    finally:
        room.stop()
        with contextlib.suppress(Exception):
            room.lms.stop()


# ------------------------------------------------------------------------------ the browser's side, over HTTP


def lms_form(session, url: str, lms) -> tuple[str, dict]:
    """Follow an LMS link to the LMS's signed form for the tool: its action and fields."""
    answer = session.get(url, timeout=30)
    assert answer.status_code == 200, (answer.status_code, answer.text[:300], lms.refusals)
    action = FORM_ACTION.search(answer.text)
    assert action, answer.text[:300]
    return html.unescape(action.group(1)), {k: html.unescape(v) for k, v in FORM_FIELD.findall(answer.text)}


def launch(room: CourseClass, sub: str, context: str = "c1", link: str = "lab-link", session=None):
    """A learner clicks a link of the LMS: the hub's answer to the signed launch (redirects not followed)."""
    import requests

    session = session or requests.Session()
    action, fields = lms_form(session, room.lms.start_url(sub, context, link), room.lms)
    return session, session.post(action, data=fields, allow_redirects=False, timeout=60)


def deep_link(room: CourseClass, sub: str, assignment: str) -> dict:
    """The instructor adds the tool from the LMS and picks ``assignment``: the LMS's new link."""
    import requests

    session = requests.Session()
    action, fields = lms_form(session, room.lms.deep_link_url(sub, "c1"), room.lms)
    page = session.post(action, data=fields, timeout=60)  # the hub logs them in, then the service's page
    assert page.status_code == 200 and "Add an assignment to the LMS course" in page.text, (page.status_code, page.url)
    assert all(f'value="{a.id}"' in page.text for a in room.course.assignments), page.text[:2000]
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text).group(1)
    answer = session.post(page.url.split("?")[0], data={"_xsrf": xsrf, "assignment": assignment}, timeout=60)
    assert answer.status_code == 200, (answer.status_code, answer.text[:500])
    back = re.search(r'<form method=post action="([^"]+)"><input type=hidden name=JWT value="([^"]+)">', answer.text)
    assert back, answer.text[:1000]
    done = requests.post(html.unescape(back.group(1)), data={"JWT": html.unescape(back.group(2))}, timeout=30)
    assert done.status_code == 200, (done.status_code, done.text, room.lms.refusals)
    return room.lms.deep_links[-1]


def submit(room: CourseClass, session, name: str) -> dict:
    """The learner submits the reference module with a token of their own session, as the Submit widget does;
    the environment the widget has (the service's URL and that token)."""
    from agtool_lab.submit import send, wait_for

    page = session.get(f"{room.origin}/hub/token", timeout=30)
    assert page.status_code == 200
    xsrf = session.cookies.get("_xsrf", path="/hub/")
    made = session.post(
        f"{room.origin}/hub/api/users/{name}/tokens",
        timeout=30,
        headers={"X-XSRFToken": xsrf, "Referer": f"{room.origin}/hub/token"},
        json={"note": "submit", "scopes": [f"access:services!service={SERVICE}"]},
    )
    assert made.status_code == 201, made.text
    env = {"AGTOOL_SERVICE_URL": f"{room.origin}/services/{SERVICE}/", "JUPYTERHUB_API_TOKEN": made.json()["token"]}
    attempt = wait_for(
        send((REPO_ROOT / "solutions" / "tools.py").read_bytes(), env=env)["id"], env=env, timeout=GRADE_TIMEOUT
    )
    assert attempt["status"] == "graded", attempt
    return env


def wait_until(condition, timeout: float, what: str, room: CourseClass):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{room.log[-4000:]}")
        time.sleep(0.5)


def scores_of(room: CourseClass, sub: str) -> dict[str, tuple[float, float]]:
    return {
        k[1]: (v["scoreGiven"], v["scoreMaximum"]) for k, v in room.lms.scores.items() if k[0] == "c1" and k[2] == sub
    }


def rounded(scores: dict) -> dict:
    return {k: (round(given, 4), round(most, 4)) for k, (given, most) in scores.items()}


def expected(room: CourseClass) -> dict[str, tuple[float, float]]:
    """The reference module's credited score per assignment: Lab A late (half), B and C on time."""
    a, b, c = room.course.assignments
    return {"lab-a": (a.points * 0.5, a.points), "lab-b": (b.points, b.points), "lab-c": (c.points, c.points)}


# ------------------------------------------------------------------------------ the class


def test_a_course_of_three_assignments_from_deep_links_to_the_lms_columns(course_class):
    from lti_platform import INSTRUCTOR, LEARNER

    room, lms = course_class, course_class.lms
    started = time.monotonic()
    lms.enrol("c1", "lms-tea", "Tea", roles=(INSTRUCTOR,))
    for sub, name in (("lms-ana", "Ana"), ("lms-bob", "Bob"), ("lms-dan", "Dan")):
        lms.enrol("c1", sub, name)
        give_home(room.hub.home(sub), tools_source=REPO_ROOT / "solutions" / "tools.py")

    # The instructor deep-links each assignment: one link each, and the LMS makes each one's column.
    links = {a.id: deep_link(room, "lms-tea", a.id) for a in room.course.assignments}
    for a in room.course.assignments:
        assert links[a.id]["lineItem"] == {
            "scoreMaximum": a.points,
            "label": a.name,
            "resourceId": a.id,
            "tag": "agtool",
        }
    assert room.columns() == {"lab-a": 1, "lab-b": 1, "lab-c": 1}

    # Ana opens Lab B's link and submits: every assignment's column gets its credited score, out of its points.
    session, answer = launch(room, "lms-ana", link=links["lab-b"]["link"])
    assert answer.status_code == 302 and answer.headers["Location"] == "/hub/spawn", (
        answer.status_code,
        room.log[-2000:],
    )
    env = submit(room, session, "lms-ana")
    wait_until(lambda: len(scores_of(room, "lms-ana")) == 3, SCORE_TIMEOUT, "Ana's three scores", room)
    assert rounded(scores_of(room, "lms-ana")) == rounded(expected(room)), scores_of(room, "lms-ana")
    # Her panel's course lines (api/course, what the Submit widget shows): each assignment sent to the LMS.
    import requests

    mine = requests.get(
        f"{env['AGTOOL_SERVICE_URL']}api/course",
        headers={"Authorization": f"token {env['JUPYTERHUB_API_TOKEN']}"},
        timeout=30,
    ).json()
    assert [(line["id"], bool(line["lms"])) for line in mine["assignments"]] == [
        ("lab-a", True),
        ("lab-b", True),
        ("lab-c", True),
    ], mine

    # Another course of the same deployment: refused, one line naming it, nothing stored.
    lms.enrol("c-other", "lms-oscar", "Oscar")
    mark = len(room.log)
    _session, refused = launch(room, "lms-oscar", context="c-other")
    assert refused.status_code == 400
    lines = [line for line in room.log[mark:].splitlines() if "LTI launch refused:" in line]
    assert len(lines) == 1 and "course 'c-other' ('Course c-other')" in lines[0], lines
    assert room.user("lms-oscar") is None and "lms-oscar" not in {r["sub"] for r in room.rows()["launches"]}

    # Teaches another course, learns here: a learner.
    lms.enrol("c-other", "lms-tina", "Tina", roles=(INSTRUCTOR,))
    lms.enrol("c1", "lms-tina", "Tina", roles=(LEARNER,))
    _session, answer = launch(room, "lms-tina", link=links["lab-a"]["link"])
    assert answer.status_code == 302 and room.user("lms-tina")["groups"] == []

    # The LMS stops mid-class (Bob launched before): his grade waits and arrives when it is back; no column twice.
    session, answer = launch(room, "lms-bob", link=links["lab-c"]["link"])
    assert answer.status_code == 302
    lms.stop()
    submit(room, session, "lms-bob")
    time.sleep(4)  # a few rounds of the sender against a silent LMS
    assert scores_of(room, "lms-bob") == {}
    lms.start()
    wait_until(lambda: len(scores_of(room, "lms-bob")) == 3, SCORE_TIMEOUT, "Bob's scores after the LMS is back", room)
    assert rounded(scores_of(room, "lms-bob")) == rounded(expected(room))

    # The hub (and with it the service) restarts mid-class: Dan's grade arrives, nothing is sent twice.
    session, answer = launch(room, "lms-dan", link=links["lab-a"]["link"])
    assert answer.status_code == 302
    room.stop()
    room.start()
    session, answer = launch(room, "lms-dan", link=links["lab-a"]["link"], session=session)
    assert answer.status_code == 302
    submit(room, session, "lms-dan")
    wait_until(lambda: len(scores_of(room, "lms-dan")) == 3, SCORE_TIMEOUT, "Dan's scores after the restart", room)
    assert room.columns() == {"lab-a": 1, "lab-b": 1, "lab-c": 1}
    per_user = {}
    for post in lms.posts:
        per_user[post["userId"]] = per_user.get(post["userId"], 0) + 1
    assert per_user == {"lms-ana": 3, "lms-bob": 3, "lms-dan": 3}, per_user
    assert {r["assignment_id"]: r["origin"] for r in room.rows()["lineitems"]} == dict.fromkeys(
        ("lab-a", "lab-b", "lab-c"), "found"
    )
    print(f"the class took {time.monotonic() - started:.0f} s on {room.db.split(':')[0]}")


# ------------------------------------------------------------------------------ through nginx with TLS


def nginx_block() -> str:
    """The nginx configuration docs/lti.md shows (the fenced block after its marker)."""
    text = (REPO_ROOT / "docs" / "lti.md").read_text(encoding="utf-8")
    after = text.split("<!-- nginx-hub:", 1)[1]
    return after.split("```nginx\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("course_class", ["sqlite"], indirect=True)
def test_the_launch_works_through_nginx_with_tls(course_class, tmp_path):
    import os
    import shutil
    import subprocess

    import requests

    nginx, openssl = shutil.which("nginx") or "/usr/sbin/nginx", shutil.which("openssl")
    if not os.access(nginx, os.X_OK) or not openssl:
        from e2e.conftest import missing

        missing("nginx and openssl are needed (apt-get install nginx openssl; .ci/run does it)")
    room, lms = course_class, course_class.lms
    cert, key = tmp_path / "hub.pem", tmp_path / "hub.key"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    [port] = free_ports(1)
    block = nginx_block()
    for docs, ours in (
        ("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;"),
        ("/etc/ssl/certs/hub.example.edu.pem", str(cert)),
        ("/etc/ssl/private/hub.example.edu.key", str(key)),
        ("proxy_pass http://127.0.0.1:8000;", f"proxy_pass {room.origin};"),
    ):
        assert docs in block, docs  # the page still shows what this test runs
        block = block.replace(docs, ours)
    temp = tmp_path / "temp"
    temp.mkdir()
    paths = "".join(
        f"{kind}_temp_path {temp / kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"pid {tmp_path / 'nginx.pid'};\nerror_log {tmp_path / 'nginx-error.log'};\nevents {{}}\n"
        + f"http {{\naccess_log {tmp_path / 'access.log'};\n{paths}{block}}}\n"
    )
    proc = start_logged(
        [nginx, "-p", str(tmp_path), "-c", str(conf), "-g", "daemon off;"],
        log=tmp_path / "nginx.log",
        cwd=tmp_path,
        env=child_env(),
    )
    origin = f"https://127.0.0.1:{port}"
    saved = (lms.tool_login_url, lms.target_link_uri, lms.redirect_uris)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(f"{origin}/hub/health", verify=str(cert), timeout=5).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, (tmp_path / "nginx.log").read_text()
            time.sleep(0.3)
        # The LMS knows the tool by its https URLs (as a real registration would).
        lms.tool_login_url, lms.target_link_uri = f"{origin}/hub/lti13/oauth_login", f"{origin}/hub/spawn"
        lms.redirect_uris = (f"{origin}/hub/lti13/oauth_callback",)
        lms.enrol("c1", "lms-nina", "Nina")
        session = requests.Session()
        session.verify = str(cert)
        session.trust_env = False  # else $REQUESTS_CA_BUNDLE (the system's CAs) replaces session.verify
        action, fields = lms_form(session, lms.start_url("lms-nina", "c1"), lms)
        assert action == f"{origin}/hub/lti13/oauth_callback", action  # the hub saw https (X-Forwarded-Proto)
        cookies = [c for c in session.cookies if c.name.startswith("lti13authenticator-")]
        assert cookies and all(c.secure for c in cookies), [(c.name, c.secure) for c in cookies]
        answer = session.post(action, data=fields, allow_redirects=False, timeout=60)
        assert answer.status_code == 302 and answer.headers["Location"] == "/hub/spawn", (
            answer.status_code,
            room.log[-2000:],
        )
        assert room.user("lms-nina")["auth_state"]["sub"] == "lms-nina"
        # (The hub's own login cookie is Secure only with c.JupyterHub.public_url set to the https URL, as
        # docs/lti.md says: configurable-http-proxy appends its own "http" to X-Forwarded-Proto. This hub also
        # serves the http story above, so it has none.)
    finally:
        lms.tool_login_url, lms.target_link_uri, lms.redirect_uris = saved
        stop_tree(proc)
