# JupyterHub configuration for an agtool-lab classroom on one machine.
#
# Installed by setup_hub.sh as /etc/jupyterhub/jupyterhub_config.py (never over a
# local edit: the recipe's version then lands beside it as .new) and run as root
# (JupyterHub needs root to start each learner's server as that learner's Unix
# user) by the systemd unit agtool-hub.service, or in the background where there
# is no systemd. Its settings come from /etc/jupyterhub/agtool-hub.env
# (AGTOOL_PREFIX, AGTOOL_HUB_IP, AGTOOL_HUB_PORT, ...), written by setup_hub.sh.
#
# What a learner gets on first login (see pre_spawn_hook below):
#   ~/labs/01_contract_table.ipynb ... 12_capstone.ipynb     the exercises
#   ~/agtool/tools.py                                         the module they write
# and JupyterLab opens on ~/labs. The Check cells grade ~/agtool/tools.py because
# AGTOOL_MODULE points there. The instructor grades every home folder with
#   sudo /opt/agtool/bin/grade-class week3        (outputs in /srv/agtool/grades/week3)
# (docs/classroom.md, "A classroom JupyterHub").
import csv
import grp
import os
import pwd
import shutil
from pathlib import Path

c = get_config()  # noqa: F821  (provided by JupyterHub when it loads this file)

AGTOOL = Path(os.environ.get("AGTOOL_PREFIX", "/opt/agtool"))
TEMPLATE = AGTOOL / "template"  # labs/ and agtool/tools.py, copied by setup_hub.sh
STAFF_GROUP = "agtool-staff"  # may read learners' homes (the grading account is in it)
ROSTER = AGTOOL / "roster.csv"  # learner,lms_id[,name...]: who may log in, and the LMS files' ids
INSTRUCTORS = AGTOOL / "instructors.txt"  # hub admins, one Unix user name a line
COURSE = AGTOOL / "course.toml"  # due date, late credit, attempt limit (grader/course/policy.py)


def _names(path: Path) -> set:
    if not path.exists():
        return set()
    return {line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")}


def _learners(path: Path) -> set:
    """The learner column of the roster CSV (the service reads the same file for the LMS downloads)."""
    if not path.exists():
        return set()
    with path.open(newline="", encoding="utf-8") as f:
        return {row["learner"].strip() for row in csv.DictReader(f) if (row.get("learner") or "").strip()}


# ---------------------------------------------------------------- who may log in
# System accounts with their Unix passwords (PAM: the "login" service, as `login`
# checks them). setup_hub.sh creates the roster's accounts with useradd and sets
# first passwords without PAM (usermod -p). A learner added in the admin panel gets
# an account too, by useradd (on every Debian; adduser is not on a minimal one).
c.JupyterHub.authenticator_class = "jupyterhub.auth.PAMAuthenticator"
c.LocalAuthenticator.create_system_users = True
c.LocalAuthenticator.add_user_cmd = ["/usr/sbin/useradd", "--create-home", "--shell", "/bin/bash"]
c.Authenticator.allowed_users = _learners(ROSTER)
c.Authenticator.admin_users = _names(INSTRUCTORS)

# ---------------------------------------------------------------- the learner's server
c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
c.Spawner.cmd = [str(AGTOOL / "venv" / "bin" / "jupyterhub-singleuser")]
c.Spawner.notebook_dir = "~"
c.Spawner.default_url = "/lab/tree/labs"
# The Check cells, playgrounds and the learner's own imports use this module.
c.Spawner.environment = {"AGTOOL_MODULE": "~/agtool/tools.py"}


def copy_lab_into_home(spawner):
    """Give the learner the labs and the starter module, once; never overwrite their work."""
    user = pwd.getpwnam(spawner.user.name)
    home = Path(user.pw_dir)
    for name in ("labs", "agtool"):
        target = home / name
        if target.exists():
            continue
        shutil.copytree(TEMPLATE / name, target)
        for path in [target, *target.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid)
    # The home folder is readable by the grading staff group, and by nobody else.
    try:
        staff_gid = grp.getgrnam(STAFF_GROUP).gr_gid
    except KeyError:
        return
    os.chown(home, user.pw_uid, staff_gid)
    os.chmod(home, 0o750)


c.Spawner.pre_spawn_hook = copy_lab_into_home

# ---------------------------------------------------------------- the grading service
# `agtool-grade serve` as a hub-managed service (the hub starts it, restarts it if it
# exits, and routes /services/agtool-grader/ to it). It runs as root, like the hub, so that
# the step children that run learner code switch to the grading account (agtool-sandbox),
# which owns nothing, inside bubblewrap; its data (/srv/agtool/service) is root's only.
# Learners submit from a notebook with `from agtool_lab.submit import submit; submit()`.
SERVICE = "agtool-grader"
SERVICE_PORT = int(os.environ.get("AGTOOL_SERVICE_PORT", "10101"))
SERVICE_DATA = "/srv/agtool/service"  # the SQLite file with every attempt: root's alone (mode 0700)
c.JupyterHub.services = [
    {
        "name": SERVICE,
        "url": f"http://127.0.0.1:{SERVICE_PORT}",
        "command": [
            str(AGTOOL / "venv" / "bin" / "python"),
            "-m",
            "grader.service",
            "--data-dir",
            SERVICE_DATA,
            "--instructor-group",
            "agtool-instructors",
            # setup_hub.sh seeds both files; the service refuses a bad one, naming the fix.
            *(["--course", str(COURSE)] if COURSE.exists() else []),
            *(["--roster", str(ROSTER)] if ROSTER.exists() else []),
        ],
        "cwd": SERVICE_DATA,
        "oauth_no_confirm": True,  # a learner is not asked to "authorize" the class's own service
        "environment": {"AGTOOL_SANDBOX": os.environ.get("AGTOOL_SANDBOX", "bwrap")},
    },
]
# Instructors are hub admins (instructors.txt) and members of this group (teaching
# assistants: add them in the admin panel). Learners may reach the service; the
# service may look up users and groups (who is an instructor).
c.JupyterHub.load_groups = {"agtool-instructors": {"users": []}}
c.JupyterHub.load_roles = [
    {"name": "user", "scopes": ["self", f"access:services!service={SERVICE}"]},
    {"name": SERVICE, "scopes": ["list:users", "read:users:name", "read:groups"], "services": [SERVICE]},
]
# The token of each learner's server ($JUPYTERHUB_API_TOKEN, what submit() sends)
# may reach the service too: the default server scopes plus access to it.
c.Spawner.server_token_scopes = [
    "users:activity!user",
    "access:servers!server",
    f"access:services!service={SERVICE}",
]
# submit() talks to the service directly on this machine, not through the proxy.
c.Spawner.environment["AGTOOL_SERVICE_URL"] = f"http://127.0.0.1:{SERVICE_PORT}/services/{SERVICE}/"

# ---------------------------------------------------------------- the hub itself
# Loopback until told otherwise (setup_hub.sh --ip): put TLS in front before learners come from outside.
HUB_IP = os.environ.get("AGTOOL_HUB_IP", "127.0.0.1")
HUB_HOST = f"[{HUB_IP}]" if ":" in HUB_IP else HUB_IP  # an IPv6 address goes in brackets
c.JupyterHub.bind_url = f"http://{HUB_HOST}:{os.environ.get('AGTOOL_HUB_PORT', '8000')}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("AGTOOL_HUB_INTERNAL_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('AGTOOL_PROXY_API_PORT', '8001')}"
# A hub that dies leaves its proxy running; the next start finds it by this file and stops it.
c.ConfigurableHTTPProxy.pid_file = "/srv/jupyterhub/jupyterhub-proxy.pid"
c.JupyterHub.cookie_secret_file = "/srv/jupyterhub/jupyterhub_cookie_secret"
c.JupyterHub.db_url = "sqlite:////srv/jupyterhub/jupyterhub.sqlite"

# ---------------------------------------------------------------- LTI 1.3 (optional: docs/lti.md)
# With /opt/agtool/lti.toml (copy lti.example.toml and fill it in from the LMS's registration page)
# learners launch from the course's LMS instead of logging in with a password, LMS instructors and
# teaching assistants join agtool-instructors, and the grading service sends the grades that count to
# the LMS's gradebook (AGS). The file is checked here, at start: a wrong field stops the hub, named.
LTI = AGTOOL / "lti.toml"
if LTI.exists():
    from grader.service.lti.hub_auth import configure_lti

    # The launch is kept as the user's auth_state, encrypted with /srv/jupyterhub/jupyterhub_crypt_key (made
    # once, root's alone); the service reads each learner's launch (admin:auth_state) and sends their grade
    # with its own key (--lti). The LMS's roles decide agtool-instructors from now on: load_groups is dropped.
    configure_lti(
        c,
        LTI,
        service=SERVICE,
        instructor_group="agtool-instructors",
        crypt_key_file="/srv/jupyterhub/jupyterhub_crypt_key",
    )

    def lti_learner_account(spawner):
        """The hub name is the launch's username_key claim: without a Unix account of that name, say so at spawn."""
        try:
            pwd.getpwnam(spawner.user.name)
        except KeyError:
            raise RuntimeError(
                f"no Unix account {spawner.user.name!r} on this hub for this LTI launch: set username_key in {LTI} "
                "to a launch claim carrying the roster's login names "
                "(docs/lti.md, 'User names on the classroom hub')"
            ) from None
        copy_lab_into_home(spawner)

    c.Spawner.pre_spawn_hook = lti_learner_account
