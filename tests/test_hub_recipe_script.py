"""The hub recipe's decisions, without root: deploy/jupyterhub/setup_hub.sh's functions on a fake root, and the config.

``setup_hub.sh`` runs ``main`` only when executed; sourced, it defines its
functions, and ``AGTOOL_ROOT`` puts every file it writes under a temporary
folder. Accounts are stand-in shell functions (``id``, ``getent``,
``usermod``) that record what they were asked. ``jupyterhub_config.py`` is
loaded as JupyterHub loads it (``get_config()``) with a prefix holding the
seeded course file and roster. The whole recipe on a fresh Debian is
``tests/e2e/test_hub_recipe.py``.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HERE = REPO / "deploy" / "jupyterhub"
SCRIPT = HERE / "setup_hub.sh"
BASH = shutil.which("bash") or "/bin/bash"  # absolute: some tests run with a PATH of stand-ins only


def sh(snippet: str, root: Path, **env: str) -> subprocess.CompletedProcess:
    """Run ``snippet`` in bash after sourcing the script, with ``AGTOOL_ROOT=root``."""
    full = {"PATH": os.environ["PATH"], "AGTOOL_ROOT": str(root), "AGTOOL_SYSTEM_PYTHON": sys.executable, **env}
    return subprocess.run([BASH, "-c", f"source {SCRIPT}\nINSTRUCTOR=''\n{snippet}"], env=full,
                          capture_output=True, text=True, check=False)


def test_script_parses():
    assert subprocess.run([BASH, "-n", str(SCRIPT)], capture_output=True, text=True).returncode == 0


def test_shellcheck_finds_nothing():
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    done = subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_sourcing_runs_nothing(tmp_path):
    done = sh("echo sourced", tmp_path)
    assert done.stdout == "sourced\n" and done.returncode == 0, done.stderr
    assert not any(tmp_path.iterdir())


def test_existing_config_is_kept_and_the_recipe_version_written_beside_it(tmp_path):
    dest = tmp_path / "etc" / "jupyterhub" / "jupyterhub_config.py"
    dest.parent.mkdir(parents=True)
    dest.write_text("# the instructor's own config\n")
    done = sh(f"install_file {HERE / 'jupyterhub_config.py'} /etc/jupyterhub/jupyterhub_config.py || echo rc=$?",
              tmp_path)
    assert dest.read_text() == "# the instructor's own config\n"
    assert (dest.parent / "jupyterhub_config.py.new").read_bytes() == (HERE / "jupyterhub_config.py").read_bytes()
    assert "kept your /etc/jupyterhub/jupyterhub_config.py" in done.stdout
    assert "jupyterhub_config.py.new" in done.stdout and "rc=1" in done.stdout


def test_missing_config_is_written_and_an_equal_one_kept(tmp_path):
    install = f"install_file {HERE / 'jupyterhub_config.py'} /etc/jupyterhub/jupyterhub_config.py"
    first, second = sh(install, tmp_path), sh(install, tmp_path)
    dest = tmp_path / "etc" / "jupyterhub" / "jupyterhub_config.py"
    assert dest.read_bytes() == (HERE / "jupyterhub_config.py").read_bytes()
    assert "wrote /etc/jupyterhub/jupyterhub_config.py" in first.stdout
    assert "kept /etc/jupyterhub/jupyterhub_config.py (unchanged)" in second.stdout
    assert not (dest.parent / "jupyterhub_config.py.new").exists()


def test_course_and_roster_are_seeded_once(tmp_path):
    seed = f"seed_file {HERE / 'course.example.toml'} /opt/agtool/course.toml"
    sh(seed, tmp_path)
    course = tmp_path / "opt" / "agtool" / "course.toml"
    assert course.read_bytes() == (HERE / "course.example.toml").read_bytes()
    course.write_text("# edited\n")
    assert "kept /opt/agtool/course.toml" in sh(seed, tmp_path).stdout
    assert course.read_text() == "# edited\n"


def env_file(root: Path) -> dict:
    lines = (root / "etc" / "jupyterhub" / "agtool-hub.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if not line.startswith("#"))


def test_the_hub_binds_loopback_by_default(tmp_path):
    sh("write_env_file /usr/bin:/bin", tmp_path)
    assert env_file(tmp_path)["AGTOOL_HUB_IP"] == "127.0.0.1"
    assert sh("hub_url", tmp_path).stdout == "http://127.0.0.1:8000"


def test_an_address_asked_for_is_kept_by_the_next_run(tmp_path):
    done = sh('parse_args --ip 0.0.0.0 --port 8443 teacher; echo "$INSTRUCTOR"; write_env_file /usr/bin:/bin',
              tmp_path)
    assert done.stdout.startswith("teacher\n"), done.stderr
    assert (env_file(tmp_path)["AGTOOL_HUB_IP"], env_file(tmp_path)["AGTOOL_HUB_PORT"]) == ("0.0.0.0", "8443")
    again = sh("parse_args; write_env_file /usr/bin:/bin", tmp_path)
    assert "kept /etc/jupyterhub/agtool-hub.env (unchanged)" in again.stdout
    assert env_file(tmp_path)["AGTOOL_HUB_IP"] == "0.0.0.0"
    assert sh("hub_url", tmp_path).stdout == "http://127.0.0.1:8443"  # a wildcard is asked on loopback


def fake_bin(tmp_path: Path, *names: str) -> str:
    """A PATH holding only stand-ins named ``names``."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)
    return str(folder)


@pytest.mark.parametrize(("present", "node_packages"), [
    ((), {"node-configurable-http-proxy"}),             # nothing: Debian's proxy (it brings a nodejs)
    (("node",), {"node-configurable-http-proxy"}),      # a Node already (e.g. NodeSource's): its nodejs will do
    (("node", "npm"), set()),                           # an npm: the proxy from npm, no Debian Node package
    (("configurable-http-proxy",), set()),
])
def test_node_is_installed_only_when_missing(tmp_path, present, node_packages):
    path = fake_bin(tmp_path, "bwrap", "useradd", *present)
    done = sh("missing_packages", tmp_path, PATH=path)
    node_words = {"nodejs", "npm", "node-configurable-http-proxy"}
    assert set(done.stdout.split()) & node_words == node_packages, done.stdout + done.stderr
    assert "python3" not in done.stdout.split()  # the system Python (here: this one) is there


def test_a_venv_from_another_python_is_foreign(tmp_path):
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /root/.pyenv/versions/3.12.1/bin\n")
    assert sh(f"foreign_venv {venv}", tmp_path).returncode == 0
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).resolve().parent}\n")
    assert sh(f"foreign_venv {venv}", tmp_path).returncode == 1


ACCOUNTS = '''
id() { case "$1" in ana|ben) return 0 ;; *) return 1 ;; esac; }
getent() { case "$2" in ana) echo 'ana:!:19000::::::' ;; ben) echo 'ben:$6$salt$hash:19000::::::' ;; esac; }
usermod() { printf '%s\\n' "$*" >> "$AGTOOL_ROOT/usermod.log"; }
'''


def test_first_passwords_without_pam(tmp_path):
    crypt = pytest.importorskip("crypt")
    passwords = tmp_path / "passwords.txt"
    passwords.write_text("ana:first: pass\nben:other\ncid:x\n")
    done = sh(f"{ACCOUNTS}\nset_first_passwords {passwords}", tmp_path)
    assert "set the first password of ana" in done.stdout, done.stderr
    assert "kept the password of ben" in done.stdout
    assert "no account cid" in done.stdout
    (call,) = (tmp_path / "usermod.log").read_text().splitlines()
    flag, hashed, name = call.split(" ")
    assert (flag, name) == ("-p", "ana") and hashed.startswith("$6$")
    assert crypt.crypt("first: pass", hashed) == hashed  # the whole rest of the line is the password


def test_no_start_prints_the_command(tmp_path):
    done = sh("NO_START=1; start_hub", tmp_path)
    assert "not started (--no-start)" in done.stdout
    assert "/opt/agtool/venv/bin/jupyterhub -f /etc/jupyterhub/jupyterhub_config.py >> /var/log/agtool-hub.log" \
        in done.stdout


# ---------------------------------------------------------------- jupyterhub_config.py


def load_config(prefix: Path, **env: str):
    from traitlets.config import Config

    config = Config()
    old = dict(os.environ)
    os.environ.update({"AGTOOL_PREFIX": str(prefix), **env})
    try:
        exec(compile((HERE / "jupyterhub_config.py").read_text(), "jupyterhub_config.py", "exec"),
             {"get_config": lambda: config, "__name__": "jupyterhub_config"})
    finally:
        os.environ.clear()
        os.environ.update(old)
    return config


def seeded_prefix(tmp_path: Path) -> Path:
    prefix = tmp_path / "agtool"
    prefix.mkdir()
    shutil.copyfile(HERE / "course.example.toml", prefix / "course.toml")
    (prefix / "roster.csv").write_text("learner,lms_id,name\nana,101,Ana\nben,102,Ben\n")
    (prefix / "instructors.txt").write_text("teacher\n")
    return prefix


def test_config_passes_course_and_roster_to_the_service(tmp_path):
    prefix = seeded_prefix(tmp_path)
    (service,) = load_config(prefix).JupyterHub.services
    command = service["command"]
    assert command[command.index("--course") + 1] == str(prefix / "course.toml")
    assert command[command.index("--roster") + 1] == str(prefix / "roster.csv")
    # As root, like the hub: only root can switch the step children to agtool-sandbox, which owns nothing.
    assert command[0] == str(prefix / "venv" / "bin" / "python") and "user" not in service


def test_config_lets_in_the_roster_and_binds_loopback(tmp_path):
    config = load_config(seeded_prefix(tmp_path))
    assert config.Authenticator.allowed_users == {"ana", "ben"}
    assert config.Authenticator.admin_users == {"teacher"}
    assert config.JupyterHub.bind_url == "http://127.0.0.1:8000"
    assert config.LocalAuthenticator.add_user_cmd[0] == "/usr/sbin/useradd"  # adduser is not on minimal Debian


def test_config_binds_where_told(tmp_path):
    config = load_config(seeded_prefix(tmp_path), AGTOOL_HUB_IP="::", AGTOOL_HUB_PORT="8443")
    assert config.JupyterHub.bind_url == "http://[::]:8443"


def test_config_without_course_file_passes_none(tmp_path):
    prefix = seeded_prefix(tmp_path)
    (prefix / "course.toml").unlink()
    (service,) = load_config(prefix).JupyterHub.services
    assert "--course" not in service["command"] and "--roster" in service["command"]


# ---------------------------------------------------------------- is the hub up? (said truthfully)


def fake_prefix(tmp_path: Path) -> Path:
    """A prefix whose venv's python is this one (the script asks the hub with it)."""
    prefix = tmp_path / "opt"
    (prefix / "venv" / "bin").mkdir(parents=True)
    (prefix / "venv" / "bin" / "python").symlink_to(sys.executable)
    return prefix


def test_a_hub_that_does_not_answer_is_reported_not_up(tmp_path):
    from e2e.processes import free_port

    log = tmp_path / "hub.log"
    log.write_text("[E] the last words of the hub\n")
    root = tmp_path / "root"
    done = sh(f"write_env_file /usr/bin:/bin; report_hub 0 {log}", root, AGTOOL_PREFIX=str(fake_prefix(tmp_path)),
              AGTOOL_HUB_PORT=str(free_port()), AGTOOL_HUB_TIMEOUT="2")
    assert done.returncode == 1
    assert "the hub is NOT up" in done.stdout and f"Its log: {log}" in done.stdout
    assert "the last words of the hub" in done.stderr


def test_a_hub_that_exited_is_reported_at_once(tmp_path):
    from e2e.processes import free_port

    dead = subprocess.Popen(["true"])
    dead.wait()
    done = sh(f"write_env_file /usr/bin:/bin; SECONDS=0; (report_hub {dead.pid} /nowhere) || echo took=$SECONDS",
              tmp_path / "root", AGTOOL_PREFIX=str(fake_prefix(tmp_path)), AGTOOL_HUB_PORT=str(free_port()),
              AGTOOL_HUB_TIMEOUT="60")
    assert "the hub is NOT up" in done.stdout
    assert int(done.stdout.split("took=")[1]) < 10


def test_a_hub_that_answers_is_reported_up(tmp_path):
    import http.server
    import threading

    class Api(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b'{"version": "6.1.1"}' if self.path == "/hub/api" else b"{}"
            self.send_response(200 if self.path == "/hub/api" else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = sh("write_env_file /usr/bin:/bin; report_hub 0 /nowhere", tmp_path / "root",
                  AGTOOL_PREFIX=str(fake_prefix(tmp_path)), AGTOOL_HUB_PORT=str(server.server_port),
                  AGTOOL_HUB_TIMEOUT="20")
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"the hub is up: http://127.0.0.1:{server.server_port}/ answers (JupyterHub 6.1.1)" in done.stdout


def test_grade_class_takes_one_word_and_grades_as_root_into_the_grades_folder(tmp_path):
    # The instructor's sudo rule names this one command, run as root so that learner code runs as agtool-sandbox
    # (which owns nothing) rather than as an account that owns the gradebooks; it must hand out no other use of root.
    prefix = tmp_path / "prefix"
    (prefix / "venv" / "bin").mkdir(parents=True)
    fake = prefix / "venv" / "bin" / "agtool-grade"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    fake.chmod(0o755)
    (prefix / "course.toml").write_text("")
    root = tmp_path / "root"
    sh("write_grade_class", root, AGTOOL_PREFIX=str(prefix))
    script = root / str(prefix).lstrip("/") / "bin" / "grade-class"
    assert script.stat().st_mode & 0o777 == 0o755
    (root / "srv" / "agtool" / "grades" / "week3").mkdir(parents=True)
    done = subprocess.run([str(script), "week3"], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    args = done.stdout.splitlines()
    assert args[:2] == ["batch", "/home/*/agtool/tools.py"], (done.stdout, done.stderr)
    assert args[args.index("--out") + 1] == str(root / "srv" / "agtool" / "grades" / "week3")
    assert "--sandbox" in args and args[args.index("--sandbox") + 1] == "bwrap"
    assert args[args.index("--course") + 1] == str(prefix / "course.toml") and "--roster" not in args
    for bad in ("--out=/etc", "../etc", "a b", "", "week3;id", "-h"):
        refused = subprocess.run([str(script), bad], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
        assert refused.returncode == 2 and not refused.stdout and "usage" in refused.stderr, bad
    extra = subprocess.run([str(script), "week3", "--out", "/etc"], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin"})
    assert "/etc" not in extra.stdout.splitlines()  # a second word is never passed on


def test_terminals_get_the_lab_s_tools_on_their_path(tmp_path):
    # JupyterLab's terminals are login shells: /etc/profile resets PATH, and the replay commands need agtool-grade.
    sh("write_profile", tmp_path, AGTOOL_PREFIX="/opt/agtool")
    profile = tmp_path / "etc" / "profile.d" / "agtool-lab.sh"
    done = subprocess.run([BASH, "-c", f"PATH=/usr/bin:/bin; . {profile}; . {profile}; echo $PATH"],
                          capture_output=True, text=True)
    assert done.stdout.strip() == "/opt/agtool/venv/bin:/usr/bin:/bin", done.stderr
