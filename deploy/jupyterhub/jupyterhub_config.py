# JupyterHub configuration for an agtool-lab classroom on one machine.
#
# Installed by setup_hub.sh as /etc/jupyterhub/jupyterhub_config.py and run by
# the systemd unit agtool-hub.service as root (JupyterHub needs root to start
# each learner's server as that learner's Unix user).
#
# What a learner gets on first login (see pre_spawn_hook below):
#   ~/labs/01_contract_table.ipynb ... 12_capstone.ipynb     the exercises
#   ~/agtool/tools.py                                         the module they write
# and JupyterLab opens on ~/labs. The Check cells grade ~/agtool/tools.py because
# AGTOOL_MODULE points there. The instructor grades every home folder with
#   sudo -H -u agtool-grader /opt/agtool/venv/bin/agtool-grade batch '/home/*/agtool/tools.py' --out /srv/agtool/grades/week3
# (docs/classroom.md, "A classroom JupyterHub").
import grp
import os
import pwd
import shutil
from pathlib import Path

c = get_config()  # noqa: F821  (provided by JupyterHub when it loads this file)

AGTOOL = Path(os.environ.get("AGTOOL_PREFIX", "/opt/agtool"))
TEMPLATE = AGTOOL / "template"  # labs/ and agtool/tools.py, copied by setup_hub.sh
STAFF_GROUP = "agtool-staff"  # may read learners' homes (the grading account is in it)
ROSTER = AGTOOL / "roster.txt"  # one Unix user name per line: who may log in
INSTRUCTORS = AGTOOL / "instructors.txt"  # hub admins


def _names(path: Path) -> set:
    if not path.exists():
        return set()
    return {line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")}


# ---------------------------------------------------------------- who may log in
# System accounts with their Unix passwords (PAM). A learner added in the admin
# panel gets a Unix account created for them.
c.JupyterHub.authenticator_class = "jupyterhub.auth.PAMAuthenticator"
c.LocalAuthenticator.create_system_users = True
c.Authenticator.allowed_users = _names(ROSTER)
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
# exits, and routes /services/agtool-grader/ to it). It runs as the grading account,
# never as root: grading runs learner code (in its worker processes, not its own).
# Learners submit from a notebook with `from agtool_lab.submit import submit; submit()`.
SERVICE = "agtool-grader"
SERVICE_PORT = int(os.environ.get("AGTOOL_SERVICE_PORT", "10101"))
SERVICE_DATA = "/srv/agtool/service"  # the SQLite file with every attempt: the grading account's alone
c.JupyterHub.services = [
    {
        "name": SERVICE,
        "url": f"http://127.0.0.1:{SERVICE_PORT}",
        "command": [str(AGTOOL / "venv" / "bin" / "python"), "-m", "grader.service",
                    "--data-dir", SERVICE_DATA, "--instructor-group", "agtool-instructors"],
        "user": "agtool-grader",
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
    "users:activity!user", "access:servers!server", f"access:services!service={SERVICE}",
]
# submit() talks to the service directly on this machine, not through the proxy.
c.Spawner.environment["AGTOOL_SERVICE_URL"] = f"http://127.0.0.1:{SERVICE_PORT}/services/{SERVICE}/"

# ---------------------------------------------------------------- the hub itself
c.JupyterHub.bind_url = os.environ.get("AGTOOL_HUB_URL", "http://:8000")
c.JupyterHub.cookie_secret_file = "/srv/jupyterhub/jupyterhub_cookie_secret"
c.JupyterHub.db_url = "sqlite:////srv/jupyterhub/jupyterhub.sqlite"
