"""``make lti-demo``: the stand-in LMS, a hub with its proxy and the grading service on this machine, to try LTI.

A course ``c1`` in the stand-in LMS (tests/lti_platform.py) with an
instructor and two learners; a hub configured by the recipe's own
``configure_lti`` from an LTI file pointing at it; the grading service with a
course file of three assignments (Lab A, B and C, due at different dates) and
``--lti``. It prints the course's page in the LMS (each member's links, the
instructor's "Add the tool", the gradebook) and runs until Ctrl-C; everything
lives in a temporary folder, removed at the end.

Example (what ``make lti-demo`` runs)::

    .venv/bin/python tests/lti_demo.py
"""

from __future__ import annotations

import json
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent  # on sys.path as the script's folder: lti_platform and e2e import from it

COURSE = """\
[[assignments]]
id = "lab-a"
name = "Lab A: steps 1-4"
steps = [1, 2, 3, 4]
due = 2020-01-10T23:59:00+00:00
late_due = 2099-01-10T23:59:00+00:00
late_credit = 0.5

[[assignments]]
id = "lab-b"
name = "Lab B: steps 5-8"
steps = [5, 6, 7, 8]
due = 2098-01-24T23:59:00+00:00

[[assignments]]
id = "lab-c"
name = "Lab C: steps 9-11"
steps = [9, 10, 11]
due = 2099-02-07T23:59:00+00:00
"""
LTI_BLOCK = """
from grader.service.lti.hub_auth import configure_lti
configure_lti(c, {lti_file!r}, service="agtool-grader", instructor_group="agtool-instructors", crypt_key_file={crypt!r})
"""


def _interrupt(_signum, _frame):
    raise KeyboardInterrupt


def main() -> int:
    import signal

    # Ctrl-C and a plain kill both stop the hub, its proxy and service, and the LMS (a shell's background job
    # starts with SIGINT ignored: set it again).
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    from e2e.hub import GradingService, give_home, write_hub_config
    from e2e.processes import child_env, free_ports, start_logged, stop_tree, venv_bin, wait_for_http
    from lti_platform import INSTRUCTOR, Platform

    proxy = TESTS.parent / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
    if not proxy.exists() and not shutil.which("configurable-http-proxy"):
        print("configurable-http-proxy not found: make e2e-deps", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="agtool-lti-demo-"))
    ports = free_ports(4)
    origin = f"http://127.0.0.1:{ports[0]}"
    service_url = f"{origin}/services/agtool-grader/"
    lms = Platform(
        tool_key_set_url=f"{service_url}lti/jwks.json",
        tool_login_url=f"{origin}/hub/lti13/oauth_login",
        target_link_uri=f"{origin}/hub/spawn",
        redirect_uris=(f"{origin}/hub/lti13/oauth_callback",),
        host="localhost",
        deep_link_uri=f"{service_url}lti/deep-link",
    )
    lms.enrol("c1", "teacher", "Tea Cher", roles=(INSTRUCTOR,))
    for sub, name in (("ana", "Ana Lima"), ("bob", "Bob Reyes")):
        lms.enrol("c1", sub, name)
        give_home(work / "home" / sub, tools_source=TESTS.parent / "agtool" / "tools.py")
    lti_file, course = work / "lti.toml", work / "course.toml"
    lti_file.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in lms.lti_config(context_ids=["c1"]).items()))
    course.write_text(COURSE)
    config = write_hub_config(
        work,
        ports=ports,
        home_root=work / "home",
        users=[],
        password=secrets.token_hex(8),
        proxy=str(proxy if proxy.exists() else shutil.which("configurable-http-proxy")),
        service=GradingService(args=["--course", str(course)]),
    )
    with config.open("a") as f:
        f.write(LTI_BLOCK.format(lti_file=str(lti_file), crypt=str(work / "crypt_key")))
    log = work / "jupyterhub.log"
    hub = start_logged(
        [venv_bin("jupyterhub"), "-f", str(config)],
        log=log,
        cwd=work,
        env=child_env(CONFIGPROXY_AUTH_TOKEN=secrets.token_hex(16)),
    )
    try:
        print(f"starting the hub and the grading service (log: {log}) ...", flush=True)
        wait_for_http(f"{origin}/hub/health", proc=hub, log=log, timeout=120)
        wait_for_http(f"{service_url}lti/jwks.json", proc=hub, log=log, timeout=120)
        print(
            f"""
The stand-in LMS's course c1 (open it in a browser):
    {lms.url}/courses/c1
1. As the instructor (Tea Cher), "Add the tool (Deep Linking)": pick Lab A, B or C. The LMS makes each one's
   column; reload the course page to see the new links.
2. As Ana or Bob, open a link: the lab opens; submit from a notebook (the Submit button).
3. Reload the course page: each assignment's column holds its credited score (Lab A is late: half credit).
The class's LMS page (as the instructor, after a launch): {service_url}class/lti
The hub: {origin}/hub/   Work folder: {work}
Ctrl-C stops everything.""",
            flush=True,
        )
        while hub.poll() is None:
            time.sleep(1)
        print(f"the hub stopped: see {log}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop_tree(hub)
        lms.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
