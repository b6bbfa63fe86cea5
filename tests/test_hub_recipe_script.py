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
    return subprocess.run(
        [BASH, "-c", f"source {SCRIPT}\nINSTRUCTOR=''\n{snippet}"],
        env=full,
        capture_output=True,
        text=True,
        check=False,
    )


def test_script_parses():
    assert subprocess.run([BASH, "-n", str(SCRIPT)], capture_output=True, text=True).returncode == 0


def test_shellcheck_finds_nothing(tmp_path):
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    done = subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    sh("write_grade_class", tmp_path, AGTOOL_PREFIX="/opt/agtool")  # the script it writes, too
    done = subprocess.run(
        ["shellcheck", str(tmp_path / "opt" / "agtool" / "bin" / "grade-class")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout


def test_sourcing_runs_nothing(tmp_path):
    done = sh("echo sourced", tmp_path)
    assert done.stdout == "sourced\n" and done.returncode == 0, done.stderr
    assert not any(tmp_path.iterdir())


def test_existing_config_is_kept_and_the_recipe_version_written_beside_it(tmp_path):
    dest = tmp_path / "etc" / "jupyterhub" / "jupyterhub_config.py"
    dest.parent.mkdir(parents=True)
    dest.write_text("# the instructor's own config\n")
    done = sh(
        f"install_file {HERE / 'jupyterhub_config.py'} /etc/jupyterhub/jupyterhub_config.py || echo rc=$?", tmp_path
    )
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
    done = sh('parse_args --ip 0.0.0.0 --port 8443 teacher; echo "$INSTRUCTOR"; write_env_file /usr/bin:/bin', tmp_path)
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


@pytest.mark.parametrize(
    ("present", "node_packages"),
    [
        ((), {"node-configurable-http-proxy"}),  # nothing: Debian's proxy (it brings a nodejs)
        (("node",), {"node-configurable-http-proxy"}),  # a Node already (e.g. NodeSource's): its nodejs will do
        (("node", "npm"), set()),  # an npm: the proxy from npm, no Debian Node package
        (("configurable-http-proxy",), set()),
    ],
)
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


ACCOUNTS = """
id() { case "$1" in ana|ben) return 0 ;; *) return 1 ;; esac; }
getent() { case "$2" in ana) echo 'ana:!:19000::::::' ;; ben) echo 'ben:$6$salt$hash:19000::::::' ;; esac; }
usermod() { printf '%s\\n' "$*" >> "$AGTOOL_ROOT/usermod.log"; }
"""


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
    assert (
        "/opt/agtool/venv/bin/jupyterhub -f /etc/jupyterhub/jupyterhub_config.py >> /var/log/agtool-hub.log"
        in done.stdout
    )


# ---------------------------------------------------------------- jupyterhub_config.py


def load_config(prefix: Path, **env: str):
    from traitlets.config import Config

    config = Config()
    old = dict(os.environ)
    os.environ.update({"AGTOOL_PREFIX": str(prefix), **env})
    try:
        exec(
            compile((HERE / "jupyterhub_config.py").read_text(), "jupyterhub_config.py", "exec"),
            {"get_config": lambda: config, "__name__": "jupyterhub_config"},
        )
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
    done = sh(
        f"write_env_file /usr/bin:/bin; report_hub 0 {log}",
        root,
        AGTOOL_PREFIX=str(fake_prefix(tmp_path)),
        AGTOOL_HUB_PORT=str(free_port()),
        AGTOOL_HUB_TIMEOUT="2",
    )
    assert done.returncode == 1
    assert "the hub is NOT up" in done.stdout and f"Its log: {log}" in done.stdout
    assert "the last words of the hub" in done.stderr


def test_a_hub_that_exited_is_reported_at_once(tmp_path):
    from e2e.processes import free_port

    dead = subprocess.Popen(["true"])
    dead.wait()
    done = sh(
        f"write_env_file /usr/bin:/bin; SECONDS=0; (report_hub {dead.pid} /nowhere) || echo took=$SECONDS",
        tmp_path / "root",
        AGTOOL_PREFIX=str(fake_prefix(tmp_path)),
        AGTOOL_HUB_PORT=str(free_port()),
        AGTOOL_HUB_TIMEOUT="60",
    )
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
        done = sh(
            "write_env_file /usr/bin:/bin; report_hub 0 /nowhere",
            tmp_path / "root",
            AGTOOL_PREFIX=str(fake_prefix(tmp_path)),
            AGTOOL_HUB_PORT=str(server.server_port),
            AGTOOL_HUB_TIMEOUT="20",
        )
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"the hub is up: http://127.0.0.1:{server.server_port}/ answers (JupyterHub 6.1.1)" in done.stdout


def as_root(command: list) -> list:
    """``command`` run as root, or as root of a user namespace of its own (grade-class makes a mount namespace)."""
    if os.geteuid() == 0:
        return command
    if subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True).returncode:
        pytest.skip("needs root or unprivileged user namespaces (grade-class makes a mount namespace)")
    return ["unshare", "--user", "--map-root-user", *command]


def grade_class_setup(tmp_path: Path, agtool_grade: str) -> tuple[Path, Path, Path]:
    """A prefix whose agtool-grade is ``agtool_grade`` (a sh script body), with a roster; the written grade-class."""
    prefix = fake_prefix(tmp_path)
    fake = prefix / "venv" / "bin" / "agtool-grade"
    fake.write_text("#!/bin/sh\n" + agtool_grade)
    fake.chmod(0o755)
    (prefix / "course.toml").write_text("")
    (prefix / "roster.csv").write_text("learner,lms_id,name\nana,101,Ana\nben,102,Ben\nzoe,103,Zoe\n")
    root = tmp_path / "root"
    sh("write_grade_class", root, AGTOOL_PREFIX=str(prefix))
    script = root / str(prefix).lstrip("/") / "bin" / "grade-class"
    (root / "srv" / "agtool" / "grades" / "week3").mkdir(parents=True)
    (root / "home").mkdir()
    # chgrp agtool-staff: a stand-in (no such group here); unshare and mount are the real ones.
    fake_bin(tmp_path, "chgrp")
    return prefix, root, script


def test_grade_class_takes_one_word_and_grades_as_root_into_the_grades_folder(tmp_path):
    # The instructor's sudo rule names this one command, run as root so that learner code runs as agtool-sandbox
    # (which owns nothing) rather than as an account that owns the gradebooks; it must hand out no other use of root.
    prefix, root, script = grade_class_setup(tmp_path, 'printf "%s\\n" "$@"\n')
    assert script.stat().st_mode & 0o777 == 0o755
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin"}
    done = subprocess.run(as_root([str(script), "week3"]), capture_output=True, text=True, env=env)
    args = done.stdout.splitlines()
    assert done.returncode == 0 and args[:2] == ["batch", f"{root}/home/*/agtool/tools.py"], (done.stdout, done.stderr)
    assert args[args.index("--out") + 1] == str(root / "srv" / "agtool" / "grades" / "week3")
    assert "--sandbox" in args and args[args.index("--sandbox") + 1] == "bwrap"
    assert args[args.index("--course") + 1] == str(prefix / "course.toml")
    assert args[args.index("--roster") + 1] == str(prefix / "roster.csv")
    for bad in ("--out=/etc", "../etc", "a b", "", "week3;id", "-h"):
        refused = subprocess.run([str(script), bad], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
        assert refused.returncode == 2 and not refused.stdout and "usage" in refused.stderr, bad
    extra = subprocess.run(as_root([str(script), "week3", "--out", "/etc"]), capture_output=True, text=True, env=env)
    assert "/etc" not in extra.stdout.splitlines()  # a second word is never passed on


def test_grade_class_grades_the_roster_s_learners_and_no_other_home(tmp_path):
    # Before: the batch globbed /home/*/agtool/tools.py, so the instructor's own home (the hub copies the lab
    # there too on the first login) and any other account's were graded into the class's gradebook.
    seen = 'for f in $2; do [ -e "$f" ] && echo "seen $f"; done; ls -A "${2%%/\\**}" | sed "s/^/home /"\n'
    prefix, root, script = grade_class_setup(tmp_path, seen)
    for name in ("ana", "ben", "teacher", "guest"):  # zoe, on the roster, has no home yet
        (root / "home" / name / "agtool").mkdir(parents=True)
        (root / "home" / name / "agtool" / "tools.py").write_text(f"# {name}\n")
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin"}
    done = subprocess.run(as_root([str(script), "week3"]), capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    home = root / "home"
    assert [line for line in done.stdout.splitlines() if line.startswith("seen ")] == [
        f"seen {home}/ana/agtool/tools.py",
        f"seen {home}/ben/agtool/tools.py",
    ]
    assert sorted(line for line in done.stdout.splitlines() if line.startswith("home ")) == ["home ana", "home ben"]
    # The homes are the learners' own (the same paths, bound, not copies), and the host's /home is untouched.
    assert sorted(p.name for p in home.iterdir()) == ["ana", "ben", "guest", "teacher"]
    assert not [m for m in Path("/proc/mounts").read_text().splitlines() if str(home) in m]


def test_grade_class_refuses_a_roster_name_that_is_no_account_name_and_a_missing_roster(tmp_path):
    prefix, root, script = grade_class_setup(tmp_path, "echo graded\n")
    (prefix / "roster.csv").write_text("learner,lms_id\nana,1\n../etc,2\n")
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin"}
    done = subprocess.run([str(script), "week3"], capture_output=True, text=True, env=env)
    assert done.returncode != 0 and "'../etc'" in done.stderr and "graded" not in done.stdout
    (prefix / "roster.csv").unlink()
    done = subprocess.run([str(script), "week3"], capture_output=True, text=True, env=env)
    assert done.returncode == 2 and "roster.csv is missing" in done.stderr and "graded" not in done.stdout


# ---------------------------------------------------------------- the hub holds no answers


def fake_checkout(tmp_path: Path) -> Path:
    """A checkout as `git clone` leaves it with umask 022: everything readable by everyone, history included."""
    src = tmp_path / "agtool-src"
    for name, text in {
        "solutions/tools.py": "ANSWER = 42\n",
        "tests/alt_styles/a.py": "STYLE = 1\n",
        "tests/test_x.py": "def test(): pass\n",
        "labs/01.ipynb": "{}\n",
        "agtool/tools.py": "# starter\n",
    }.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "all"], check=True)
    for path in [src, *src.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return src


def test_the_checkout_becomes_root_only_history_solution_and_tests_included(tmp_path):
    # Before: only solutions/ was closed: `git show HEAD:solutions/tools.py` (the history) gave the solution,
    # and tests/ with its alternative styles was readable by every learner.
    src = fake_checkout(tmp_path)
    done = sh(f"AGTOOL_PREFIX=/opt/agtool; PREFIX=/opt/agtool; protect_checkout {src}", tmp_path / "root")
    assert done.returncode == 0 and f"made the checkout {src} readable by" in done.stdout, done.stderr
    assert src.stat().st_mode & 0o077 == 0
    for part in (".git", "solutions", "tests"):
        assert [p for p in [src / part, *(src / part).rglob("*")] if p.stat().st_mode & 0o077] == [], part
    assert (src / "labs" / "01.ipynb").stat().st_mode & 0o777 == 0o644  # closed by the folder above it
    again = sh(f"PREFIX=/opt/agtool; protect_checkout {src}", tmp_path / "root")
    assert f"kept the checkout {src} readable by" in again.stdout, again.stdout + again.stderr


@pytest.fixture
def open_folder():
    """A folder every account may reach (pytest's own tmp_path is its owner's alone)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="agtool-recipe-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_learner_account_reads_nothing_of_the_protected_checkout(open_folder):
    # As a learner would try it from a terminal: git show, git log, reading the files. Needs root to be another
    # account (here nobody, 65534, standing in for a learner).
    if os.geteuid() != 0:
        pytest.skip("needs root to run as another account")
    tmp_path = open_folder
    src = fake_checkout(tmp_path)
    learner = dict(
        user=65534,
        group=65534,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
        capture_output=True,
        text=True,
    )
    tries = [
        ["git", "-c", "safe.directory=*", "-C", str(src), "show", "HEAD:solutions/tools.py"],
        ["git", "-c", "safe.directory=*", "-C", str(src), "log", "-p"],
        ["cat", str(src / "solutions" / "tools.py"), str(src / "tests" / "alt_styles" / "a.py")],
        ["ls", str(src)],
    ]
    before = [subprocess.run(command, **learner) for command in tries]
    assert "ANSWER = 42" in before[0].stdout and "STYLE = 1" in before[1].stdout  # what the fix closes
    sh(f"PREFIX=/opt/agtool; protect_checkout {src}", tmp_path / "root")
    for command in tries:
        after = subprocess.run(command, **learner)
        assert after.returncode != 0 and "ANSWER" not in after.stdout and "STYLE" not in after.stdout, command


def test_the_prefix_may_not_lie_inside_the_checkout(tmp_path):
    src = fake_checkout(tmp_path)
    done = sh(f"PREFIX={src}/opt; protect_checkout {src}", tmp_path / "root")
    assert done.returncode == 1 and "clone the checkout elsewhere" in done.stderr
    assert src.stat().st_mode & 0o777 == 0o755  # nothing changed


def wheel_of(path: Path, files: dict) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize(
    "extra",
    [
        {"solutions/tools.py": b"x"},  # the folder, by name
        {"tests/alt_styles/a.py": b"y"},
        {"grader/answer.py": (REPO / "solutions" / "tools.py").read_bytes()},  # the solution under another name
        {"agtool_lab/style.py": next((REPO / "tests" / "alt_styles").glob("*.py")).read_bytes()},
    ],
)
def test_a_wheel_with_the_solution_or_the_tests_is_refused(tmp_path, extra):
    shipped = {"grader/__init__.py": b"", "grader/starter/tools.py": (REPO / "starter" / "tools.py").read_bytes()}
    clean = sh(f"check_wheel {wheel_of(tmp_path / 'clean.whl', shipped)} {REPO}", tmp_path)
    assert clean.returncode == 0 and "none of solutions/, tests/ or .git" in clean.stdout, clean.stderr
    bad = sh(f"check_wheel {wheel_of(tmp_path / 'bad.whl', {**shipped, **extra})} {REPO}", tmp_path)
    assert bad.returncode == 1 and next(iter(extra)) in bad.stderr and "learners must not read" in bad.stderr


FAKE_PIP = """#!/bin/sh
echo "pip $*" >> "$PIP_LOG"
if [ "$1" = wheel ]; then
    while [ "$1" != --wheel-dir ]; do shift; done
    cp "$FAKE_WHEEL" "$2/agtool_lab-0.1.0-py3-none-any.whl"
fi
"""


@pytest.mark.parametrize("bad", [False, True])
def test_the_venv_gets_the_checked_wheel_never_the_checkout(tmp_path, bad):
    # Before: pip installed the checkout folder itself, with no look at what the install holds.
    prefix = fake_prefix(tmp_path)
    pip = prefix / "venv" / "bin" / "pip"
    pip.write_text(FAKE_PIP)
    pip.chmod(0o755)
    files = {"grader/__init__.py": b""}
    if bad:
        files["solutions/tools.py"] = b"ANSWER = 42\n"
    log = tmp_path / "pip.log"
    done = sh(
        "make_venv",
        tmp_path / "root",
        AGTOOL_PREFIX=str(prefix),
        PIP_LOG=str(log),
        FAKE_WHEEL=str(wheel_of(tmp_path / "w.whl", files)),
    )
    calls = log.read_text().splitlines()
    assert calls[1].startswith("pip wheel --quiet --no-deps --wheel-dir ") and calls[1].endswith(f" {REPO}")
    if bad:
        assert done.returncode == 1 and "solutions/tools.py" in done.stderr
        assert len(calls) == 2 and not (prefix / ".installed").exists()  # nothing installed
        return
    assert done.returncode == 0, done.stderr
    installs = [c for c in calls[2:] if c.startswith("pip install")]
    assert len(installs) == 2 and all(".whl" in c for c in installs) and not any(f" {REPO}" in c for c in calls[2:])
    assert installs[0].endswith("agtool_lab-0.1.0-py3-none-any.whl[lab,batch,service]")
    assert "--force-reinstall" in installs[1] and "--no-deps" in installs[1]
    assert "a wheel with neither solutions/ nor tests/" in done.stdout


@pytest.mark.slow
def test_the_wheel_built_from_this_checkout_passes_the_recipe_s_check(tmp_path):
    # pyproject.toml lists the packages; the recipe's check says none of solutions/ or tests/ is among them.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    wheel = next(tmp_path.glob("agtool_lab-*.whl"))
    done = sh(f"check_wheel {wheel} {REPO}", tmp_path / "root")
    assert done.returncode == 0 and "none of solutions/, tests/ or .git" in done.stdout, done.stderr


def test_terminals_get_the_lab_s_tools_on_their_path(tmp_path):
    # JupyterLab's terminals are login shells: /etc/profile resets PATH, and the replay commands need agtool-grade.
    sh("write_profile", tmp_path, AGTOOL_PREFIX="/opt/agtool")
    profile = tmp_path / "etc" / "profile.d" / "agtool-lab.sh"
    done = subprocess.run(
        [BASH, "-c", f"PATH=/usr/bin:/bin; . {profile}; . {profile}; echo $PATH"], capture_output=True, text=True
    )
    assert done.stdout.strip() == "/opt/agtool/venv/bin:/usr/bin:/bin", done.stderr


def test_on_a_systemd_host_the_hub_and_grade_class_get_delegated_cgroups(tmp_path):
    # Without a delegated subtree a systemd service has no cgroups of its own to give each step, and
    # the process limit falls back to RLIMIT_NPROC. The unit says Delegate=yes; grade-class runs in a scope that does.
    root = tmp_path / "unit-root"
    sh("write_unit", root, AGTOOL_PREFIX=str(tmp_path / "opt"))
    unit = next(root.rglob("agtool-hub.service")).read_text()
    assert "\nDelegate=yes\n" in unit
    prefix, root, script = grade_class_setup(tmp_path, 'printf "%s\\n" "$@"\n')
    run = tmp_path / "bin" / "systemd-run"
    run.write_text('#!/bin/sh\necho "systemd-run $*"\n')
    run.chmod(0o755)
    (tmp_path / "systemd").mkdir()
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin", "AGTOOL_SYSTEMD_DIR": str(tmp_path / "systemd")}
    done = subprocess.run(as_root([str(script), "week3"]), capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("systemd-run --scope --quiet --collect -p Delegate=yes "), done.stdout
    assert " batch " in done.stdout


def test_the_template_hands_out_the_committed_starter_never_the_checkout_s_own_agtool_tools_py(tmp_path):
    """An instructor who tried the lab in the checkout: learners still get the starter as given."""
    from grader.outputs.starter import starter_bytes

    checkout = tmp_path / "src"
    (checkout / "labs").mkdir(parents=True)
    (checkout / "agtool").mkdir()
    (checkout / "labs" / "01_contract_table.ipynb").write_text("{}")
    (checkout / "agtool" / "tools.py").write_bytes((REPO / "solutions" / "tools.py").read_bytes())  # their work
    prefix = fake_prefix(tmp_path)
    done = sh(f"SRC={checkout}; PREFIX={prefix}; make_template", tmp_path / "root")
    assert done.returncode == 0, done.stderr
    handed_out = (prefix / "template" / "agtool" / "tools.py").read_bytes()
    assert handed_out == starter_bytes() == (REPO / "starter" / "tools.py").read_bytes()
    assert "is not the starter" in done.stdout
    # A venv whose starter is missing or edited: no template at all, rather than a wrong one.
    broken = tmp_path / "broken"
    (broken / "venv" / "bin").mkdir(parents=True)
    (broken / "venv" / "bin" / "python").write_text("#!/bin/sh\nexit 1\n")
    (broken / "venv" / "bin" / "python").chmod(0o755)
    refused = sh(f"SRC={checkout}; PREFIX={broken}; make_template", tmp_path / "root")
    assert refused.returncode == 1 and "no starter as given" in refused.stderr
    assert not (broken / "template").exists() and not (broken / "template.new").exists()


def test_a_checkout_whose_lab_is_done_does_not_let_a_copy_of_the_solution_into_the_wheel(tmp_path):
    """The lab's agtool/tools.py is never shipped: when it holds the solution, a copy in the wheel is still refused."""
    solution = (REPO / "solutions" / "tools.py").read_bytes()
    src = tmp_path / "src"
    for rel, data in {
        "solutions/tools.py": solution,
        "agtool/tools.py": solution,  # an instructor who did the lab in the checkout
        "starter/tools.py": (REPO / "starter" / "tools.py").read_bytes(),
        "grader/__init__.py": b"",
    }.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    shipped = {"grader/__init__.py": b"", "grader/starter/tools.py": (src / "starter" / "tools.py").read_bytes()}
    clean = sh(f"check_wheel {wheel_of(tmp_path / 'clean.whl', shipped)} {src}", tmp_path)
    assert clean.returncode == 0, clean.stderr
    bad = sh(f"check_wheel {wheel_of(tmp_path / 'bad.whl', {**shipped, 'grader/answer.py': solution})} {src}", tmp_path)
    assert bad.returncode == 1 and "grader/answer.py (a copy of solutions/tools.py)" in bad.stderr
