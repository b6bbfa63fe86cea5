"""The hub recipe on a fresh Debian 12: one command as root, two learners submit, the instructor gets grades.csv.

``debootstrap --variant=minbase bookworm`` makes a minimal Debian root file
system under ``/var/tmp``; the checkout as it is on disk (tracked and new
files, not the ignored ones) is copied in, and ``deploy/jupyterhub/setup_hub.sh``
runs inside it as root with no systemd, so it starts the hub itself in the
background. From the host, ``alice`` (the reference solution, read here on the
host) and ``bob`` (the starter) get a token by logging in with their Unix
passwords through the hub's API and submit through the hub's proxy to the
grading service; ``teacher`` downloads ``grades.csv`` and finds both rows.
A second run of the script must keep the running hub and a changed local
configuration.

The hub holds no answers: the checkout is copied in as a git clone would
leave it (world-readable, with its history), and after the script ``alice``
tries what a learner's terminal can: ``git show HEAD:solutions/tools.py``
(from the host, as her uid), then a walk of the whole tree as her account
reading every file whose size is that of the solution or of a test file
(``tests/alt_styles`` included). ``sudo grade-class`` run by ``teacher``
grades the roster's homes and not the instructor's own.

The root file system is entered the way a machine boots into one, not with a
bare ``chroot``: a private mount namespace whose root *is* the Debian tree
(``pivot_root``). The kernel refuses unprivileged user namespaces to a
chrooted process (clone(2): ``EPERM`` "the caller is in a chroot
environment"), and bubblewrap needs one wherever it is not started by root. Every mount made for the run
lives in that namespace and goes away with its last process; the ``finally``
kills the processes whose root is the Debian tree (hub, proxy, service).

Pip inside uses the host's package sources read-only (its find-links,
extra indexes and constraints, bind-mounted at the same paths), so the
install does not download what the host already holds.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from e2e.processes import free_ports

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
MIRROR = os.environ.get("AGTOOL_DEBIAN_MIRROR", "http://deb.debian.org/debian")
WORK_ROOT = Path("/var/tmp")
SERVICE = "agtool-grader"
PASSWORDS = {"alice": "alice pass: 1", "bob": "bob-pass-2", "teacher": "teacher pass 3"}
GRADE_TIMEOUT = 300.0
SCRIPT_TIMEOUT = 900.0

CA_INSIDE = "/run/agtool-test-host-ca.crt"
# Run as root on the host: a private mount namespace, the Debian tree made its root with pivot_root.
ENTER = r"""
set -eu
R="$1"; shift
readlink /proc/self/ns/mnt > "$AGTOOL_TEST_NS_FILE"   # the host finds the run's processes by it
mount --make-rprivate /
mount --rbind "$R" "$R"
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
mount --rbind /sys "$R/sys"
mount --bind /etc/resolv.conf "$R/etc/resolv.conf"
if [ -n "${AGTOOL_TEST_CA:-}" ]; then
    touch "$R$PIP_CERT"; mount --bind "$AGTOOL_TEST_CA" "$R$PIP_CERT"
fi
for p in $AGTOOL_TEST_RO_PATHS; do
    mkdir -p "$R$p"; mount --bind "$p" "$R$p"; mount -o remount,bind,ro "$R$p"
done
mkdir -p "$R/.host"
cd "$R"
pivot_root . .host
exec /usr/sbin/chroot . /bin/sh -c 'umount -l /.host && rmdir /.host && cd / && exec "$@"' sh "$@"
"""


def need(what: str) -> None:
    """A prerequisite is missing: under $CI the test fails (a skipped recipe test proves nothing)."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} (CI is set: this test must run)", pytrace=False)
    pytest.skip(what)


def checkout_files() -> list[str]:
    """The checkout's files as they are on disk: tracked and new, not ignored (not .venv or build/)."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    return sorted({name for name in out.decode().split("\0") if name and (REPO / name).is_file()})


def host_pip_sources() -> tuple[dict[str, str], list[str]]:
    """The host pip's sources as PIP_* variables, and the local paths they name (to bind read-only)."""
    out = subprocess.run(
        [str(REPO / ".venv" / "bin" / "pip"), "config", "list"], capture_output=True, text=True, check=False
    ).stdout
    env, paths = {}, []
    for line in out.splitlines():
        key, _, value = line.partition("=")
        name = key.split(".", 1)[-1]
        value = value.strip().strip("'\"")
        if name == "cert":  # the host's CA bundle (the network may re-sign HTTPS), bound at CA_INSIDE
            env.update(AGTOOL_TEST_CA=value, PIP_CERT=CA_INSIDE)
            continue
        if name not in ("find-links", "extra-index-url", "index-url", "constraint"):
            continue
        env["PIP_" + name.upper().replace("-", "_")] = value
        for word in value.split():
            path = word.removeprefix("file://")
            if path.startswith("/") and os.path.exists(path):
                # A file's folder; an index's whole tree (its pages link to ../../files/...).
                whole = os.path.isfile(path) or os.path.basename(path.rstrip("/")) == "simple"
                paths.append(os.path.dirname(path.rstrip("/")) if whole else path)
    return env, sorted(set(paths))


def in_debian(root: Path, command: str, *, env: dict, log: Path, timeout: float) -> subprocess.CompletedProcess:
    """Run ``command`` (sh) as root inside the Debian tree; its output goes to ``log`` and is returned."""
    full_env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        **env,
    }
    with log.open("a") as out:
        proc = subprocess.run(
            [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                ENTER,
                "enter",
                str(root),
                "/bin/sh",
                "-c",
                command,
            ],
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    proc.stdout = log.read_text()
    return proc


def processes_in(namespace: str) -> list[int]:
    """Pids of the processes in the mount namespace ``namespace`` (hub, proxy, service, ...).

    Not by root directory: after pivot_root their ``/proc/PID/root`` reads ``/`` from here.
    """
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "mnt") == namespace:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def with_descendants(pids: list[int]) -> list[int]:
    """``pids`` and their descendants (bubblewrap's sandboxes have mount namespaces of their own)."""
    import psutil

    found = set(pids)
    for pid in pids:
        try:
            found.update(child.pid for child in psutil.Process(pid).children(recursive=True))
        except psutil.NoSuchProcess:
            continue
    return sorted(found)


def kill_all_in(namespace: str) -> None:
    """Stop every process of the run's mount namespace; with the last one the namespace and its mounts go."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in with_descendants(processes_in(namespace)):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 15
        while processes_in(namespace) and time.monotonic() < deadline:
            time.sleep(0.3)


def http(
    method: str, url: str, *, token: str | None = None, body: bytes | None = None, ctype: str = "application/json"
) -> tuple[int, bytes]:
    headers = {"Authorization": f"token {token}"} if token else {}
    if body is not None:
        headers["Content-Type"] = ctype
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, data=body, method=method, headers=headers), timeout=60
        ) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def log_in(origin: str, user: str) -> str:
    """A token of ``user`` for the grading service, got by logging in with the Unix password (PAM)."""
    body = json.dumps(
        {
            "auth": {"username": user, "password": PASSWORDS[user]},
            "note": "recipe test",
            "scopes": [f"access:services!service={SERVICE}"],
        }
    ).encode()
    status, data = http("POST", f"{origin}/hub/api/users/{user}/tokens", body=body)
    assert status == 201, (user, status, data)
    return json.loads(data)["token"]


def wait_graded(base: str, token: str, attempt: int) -> dict:
    deadline = time.monotonic() + GRADE_TIMEOUT
    while time.monotonic() < deadline:
        status, data = http("GET", f"{base}api/submissions/{attempt}", token=token)
        assert status == 200, data
        record = json.loads(data)
        if record["status"] not in ("queued", "grading"):
            return record
        time.sleep(1)
    raise AssertionError(f"attempt {attempt} not graded in {GRADE_TIMEOUT:.0f}s")


@pytest.fixture
def debian(tmp_path):
    """A fresh minimal Debian 12 tree under /var/tmp; the processes left in it are killed after the test."""
    if os.geteuid() != 0:
        need("the hub recipe test needs root (debootstrap, mounts, pivot_root)")
    for tool in ("debootstrap", "unshare", "pivot_root", "git"):
        if not shutil.which(tool):
            need(f"{tool} not found: apt-get install -y debootstrap (.ci/run does it)")
    work = Path(os.environ.get("AGTOOL_RECIPE_WORK") or WORK_ROOT) / f"agtool-recipe-{os.getpid()}"
    root = work / "root"
    root.mkdir(parents=True)
    ns_file = work / "mount-namespace"
    try:
        yield root, work
    finally:
        namespace = ns_file.read_text().strip() if ns_file.exists() else ""
        if namespace:
            kill_all_in(namespace)
            assert not processes_in(namespace), f"still running in the Debian tree: {processes_in(namespace)}"
        # The mounts lived in that namespace only; none may be left here before deleting the tree.
        mounted = [
            line.split()[1]
            for line in Path("/proc/mounts").read_text().splitlines()
            if line.split()[1].startswith(str(root))
        ]
        assert not mounted, f"still mounted: {mounted}"
        if not os.environ.get("AGTOOL_RECIPE_KEEP"):
            shutil.rmtree(work, ignore_errors=True)


class Phases:
    """Wall time of each phase of the run, in seconds (reported, and kept in artifacts/e2e/)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def time(self, name: str):
        start = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(time.monotonic() - start, 1)


def make_tree(root: Path, log: Path) -> None:
    """debootstrap a minimal bookworm into ``root`` (in a mount namespace: its own mounts die with it)."""
    with log.open("a") as out:
        subprocess.run(
            [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "debootstrap",
                "--variant=minbase",
                "bookworm",
                str(root),
                MIRROR,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            check=True,
            timeout=900,
        )


def prepare_tree(root: Path, work: Path) -> tuple[dict, int]:
    """Copy the checkout in, write the roster and first passwords; return the run's environment and hub port."""
    src = root / "opt" / "agtool-src"
    for name in checkout_files():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, src / name)
    # With its history, as `git clone` leaves it: `git show HEAD:solutions/tools.py` must find nothing a learner reads.
    git = ["git", "-C", str(src), "-c", "user.name=recipe test", "-c", "user.email=recipe@example.org"]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the checkout"]):
        subprocess.run([*git, *step], check=True, capture_output=True)
    # Only to save time: dpkg without fsync (what debootstrap itself does); the script is not told.
    (root / "etc" / "dpkg" / "dpkg.cfg.d" / "agtool-test-unsafe-io").write_text("force-unsafe-io\n")
    (root / "root" / "first-passwords.txt").write_text("".join(f"{u}:{pw}\n" for u, pw in PASSWORDS.items()))
    (root / "opt" / "agtool").mkdir(parents=True)
    (root / "opt" / "agtool" / "roster.csv").write_text("learner,lms_id,name\nalice,1001,Alice\nbob,1002,Bob\n")
    pip_env, ro_paths = host_pip_sources()
    port, hub_port, proxy_port, service_port = free_ports(4)  # the tree shares the host's network
    return {
        **pip_env,
        "AGTOOL_TEST_RO_PATHS": " ".join(ro_paths),
        "AGTOOL_TEST_NS_FILE": str(work / "mount-namespace"),
        "AGTOOL_HUB_PORT": str(port),
        "AGTOOL_HUB_INTERNAL_PORT": str(hub_port),
        "AGTOOL_PROXY_API_PORT": str(proxy_port),
        "AGTOOL_SERVICE_PORT": str(service_port),
    }, port


def submit_both(origin: str) -> tuple[dict, dict]:
    """alice submits the reference solution, bob the starter; return (their graded records, everyone's tokens)."""
    base = f"{origin}/services/{SERVICE}/"
    tokens = {user: log_in(origin, user) for user in PASSWORDS}
    status, data = http(
        "POST",
        f"{origin}/hub/api/users/alice/tokens",
        body=json.dumps({"auth": {"username": "alice", "password": "wrong"}}).encode(),
    )
    assert status == 403, data  # PAM really checks the password
    modules = {
        "alice": (REPO / "solutions" / "tools.py").read_bytes(),
        "bob": (REPO / "starter" / "tools.py").read_bytes(),
    }
    attempts = {}
    for user, module in modules.items():
        status, data = http("POST", f"{base}api/submissions", token=tokens[user], body=module, ctype="text/x-python")
        assert status == 202, (user, status, data)
        attempts[user] = json.loads(data)["id"]
    graded = {user: wait_graded(base, tokens[user], attempt) for user, attempt in attempts.items()}
    for user, record in graded.items():
        assert record["status"] == "graded", (user, record)
    # Learner code ran inside bubblewrap as the grading account, which owns nothing (not as the service's account).
    assert "bwrap" in json.dumps(graded["alice"]) and "user agtool-sandbox" in json.dumps(graded["alice"]), graded[
        "alice"
    ]
    return graded, tokens


def check_instructor_downloads(origin: str, tokens: dict) -> None:
    """teacher's grades.csv has both rows; the LMS file has the roster's ids; the course file's limit holds."""
    base = f"{origin}/services/{SERVICE}/"
    status, data = http("GET", f"{base}grades.csv", token=tokens["teacher"])
    assert status == 200, data
    rows = {row["learner"]: row for row in csv.DictReader(io.StringIO(data.decode()))}
    assert set(rows) == {"alice", "bob"}, rows
    assert float(rows["alice"]["score"]) == float(rows["alice"]["max_score"]) > 0, rows
    assert float(rows["bob"]["score"]) == 0, rows
    assert http("GET", f"{base}grades.csv", token=tokens["bob"])[0] == 403  # a learner is no instructor
    status, data = http("GET", f"{base}lms/canvas.csv", token=tokens["teacher"])
    assert status == 200 and b"1001" in data and b"1002" in data, data  # --roster reached the service
    status, data = http("GET", f"{base}api/course", token=tokens["bob"])
    assert status == 200 and json.loads(data)["attempts_left"] == 4, data  # --course: 5 an hour, one used


def check_second_run(root: Path, output: str, pid: int) -> None:
    """Nothing changed: everything is kept, the hub too (the same process)."""
    for kept in (
        "kept the system packages",
        "kept the checkout /opt/agtool-src readable by root alone",
        "kept /opt/agtool/venv",
        "kept /opt/agtool/template (unchanged)",
        "kept /opt/agtool/course.toml",
        "kept account alice",
        "kept the password of alice",
        "kept /etc/jupyterhub/jupyterhub_config.py (unchanged)",
        f"kept the running hub (pid {pid})",
        "the hub is up",
    ):
        assert kept in output, (kept, output)
    assert int((root / "run" / "agtool-hub.pid").read_text()) == pid


def check_third_run(root: Path, output: str, origin: str, tokens: dict) -> None:
    """After a local edit of the config: the edit is kept, the recipe's version is beside it, the hub restarted."""
    config = root / "etc" / "jupyterhub" / "jupyterhub_config.py"
    assert config.read_text().endswith("# a local edit\n")
    assert (config.parent / "jupyterhub_config.py.new").read_bytes() == (
        REPO / "deploy" / "jupyterhub" / "jupyterhub_config.py"
    ).read_bytes()
    assert "kept your /etc/jupyterhub/jupyterhub_config.py" in output, output
    assert "the hub is up" in output, output
    deadline = time.monotonic() + 90  # the hub answers before it has started its service again
    while (status := http("GET", f"{origin}/services/{SERVICE}/grades.csv", token=tokens["teacher"])[0]) != 200:
        assert time.monotonic() < deadline, f"grades.csv after the restart: {status}"
        time.sleep(1)


WALK = r"""
import hashlib, json, os, sys
secrets = json.load(open(sys.argv[1]))          # {sha256: [size, what]}
sizes = {size for size, _what in secrets.values()}
found, files = [], 0
for folder, folders, names in os.walk("/"):
    if folder == "/":
        folders[:] = [f for f in folders if f not in ("proc", "sys", "dev")]
    for name in names:
        path = os.path.join(folder, name)
        try:
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            files += 1
            if os.path.getsize(path) not in sizes:
                continue
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            continue
        if digest in secrets:
            found.append([path, secrets[digest][1]])
listed = {}
for path in ("/opt/agtool-src", "/opt/agtool-src/.git", "/opt/agtool-src/solutions", "/opt/agtool-src/tests"):
    try:
        listed[path] = sorted(os.listdir(path))[:3]
    except OSError as exc:
        listed[path] = exc.strerror
print("AGTOOL-WALK " + json.dumps({"found": found, "listed": listed, "files": files}))
"""


def learner_secrets() -> dict:
    """What no learner may read, by content: the solution and every test file (the alt styles too), except
    files that also ship in the lab (empty files, copies of the starter); and the starter, as a control."""

    def digest(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    def files(folder: str):
        return [p for p in sorted((REPO / folder).rglob("*")) if p.is_file() and "__pycache__" not in p.parts]

    shipped = {digest(p.read_bytes()) for folder in ("grader", "agtool", "agtool_lab") for p in files(folder)}
    secrets = {}
    for p in files("solutions") + files("tests"):
        data = p.read_bytes()
        if data.strip() and digest(data) not in shipped:
            secrets.setdefault(digest(data), [len(data), str(p.relative_to(REPO))])
    starter = (REPO / "starter" / "tools.py").read_bytes()
    secrets[digest(starter)] = [len(starter), "control: the starter"]
    return secrets


def account(root: Path, name: str) -> tuple[int, int]:
    """``name``'s uid and gid in the Debian tree's /etc/passwd."""
    for line in (root / "etc" / "passwd").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == name:
            return int(fields[2]), int(fields[3])
    raise AssertionError(f"no account {name} in the tree")


def check_learner_reads_no_answers(root: Path, work: Path, env: dict, log: Path) -> None:
    """alice, from a terminal: no `git show` of the solution, no file holding it or a test, no look into the checkout."""
    uid, gid = account(root, "alice")
    src = root / "opt" / "agtool-src"
    as_alice = dict(
        user=uid,
        group=gid,
        extra_groups=[],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
    )
    # The control first: alice's uid reaches the tree's world-readable files from here.
    control = subprocess.run(["cat", str(root / "opt" / "agtool" / "template" / "agtool" / "tools.py")], **as_alice)
    assert control.returncode == 0 and control.stdout, control.stderr
    solution = (REPO / "solutions" / "tools.py").read_text()
    for args in (
        ["show", "HEAD:solutions/tools.py"],
        ["log", "-p", "--", "solutions", "tests/alt_styles"],
        ["cat-file", "--batch-all-objects", "--batch"],
    ):
        tried = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(src), *args], **as_alice)
        assert tried.returncode != 0 and solution[:200] not in tried.stdout, (args, tried.stderr)
        assert "Permission denied" in tried.stderr, (args, tried.stderr)
    (root / "tmp" / "agtool-walk.py").write_text(WALK)
    (root / "tmp" / "agtool-secrets.json").write_text(json.dumps(learner_secrets()))
    walk = in_debian(
        root,
        "setpriv --reuid=alice --regid=alice --init-groups env -i HOME=/home/alice "
        "PATH=/usr/bin:/bin /usr/bin/python3 /tmp/agtool-walk.py /tmp/agtool-secrets.json",
        env={**env, "AGTOOL_TEST_NS_FILE": str(work / "walk-namespace")},
        log=log,
        timeout=600,
    )
    line = next(ln for ln in walk.stdout.splitlines() if ln.startswith("AGTOOL-WALK "))
    seen = json.loads(line.removeprefix("AGTOOL-WALK "))
    readable = [(path, what) for path, what in seen["found"] if not what.startswith("control")]
    assert readable == [], readable  # the solution or a test file, readable by a learner
    assert ["/opt/agtool/template/agtool/tools.py", "control: the starter"] in seen["found"], seen["found"]
    assert seen["files"] > 10_000, seen["files"]  # the walk did read the tree
    assert all(isinstance(v, str) for v in seen["listed"].values()), seen["listed"]  # no listing of the checkout


def check_grade_class_grades_the_roster(root: Path, work: Path, env: dict, log: Path) -> None:
    """`sudo grade-class` by the instructor: alice (on the roster) is graded, the instructor's own home is not."""
    for user in ("alice", "teacher"):
        home = root / "home" / user / "agtool"
        home.mkdir(parents=True, exist_ok=True)
        (home / "tools.py").write_bytes((REPO / "starter" / "tools.py").read_bytes())
        uid, gid = account(root, user)
        for path in (home, home / "tools.py"):
            os.chown(path, uid, gid)
    done = in_debian(
        root,
        "setpriv --reuid=teacher --regid=teacher --init-groups env -i HOME=/home/teacher "
        "PATH=/usr/bin:/bin sudo -n /opt/agtool/bin/grade-class week1",
        env={**env, "AGTOOL_TEST_NS_FILE": str(work / "grade-namespace")},
        log=log,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    book = root / "srv" / "agtool" / "grades" / "week1" / "grades.csv"
    learners = {row["learner"] for row in csv.DictReader(io.StringIO(book.read_text()))}
    assert learners == {"alice"}, learners  # bob has no home file yet; teacher is no learner


def test_recipe_on_fresh_debian(debian, artifacts_dir):
    root, work = debian
    log = artifacts_dir / "hub-recipe.log"
    log.write_text("")
    phases = Phases()
    setup = "/opt/agtool-src/deploy/jupyterhub/setup_hub.sh --passwords /root/first-passwords.txt teacher"
    with phases.time("debootstrap"):
        make_tree(root, log)
    with phases.time("copy"):
        env, port = prepare_tree(root, work)
    with phases.time("setup_hub.sh"):
        first = in_debian(root, setup, env=env, log=log, timeout=SCRIPT_TIMEOUT)
    assert first.returncode == 0, first.stdout[-5000:]
    origin = f"http://127.0.0.1:{port}"
    assert f"the hub is up: {origin}/ answers" in first.stdout, first.stdout[-3000:]
    assert "made the checkout /opt/agtool-src readable by root alone" in first.stdout, first.stdout[-3000:]
    assert "checked the wheel" in first.stdout and "none of solutions/, tests/ or .git" in first.stdout
    # The venv is made from Debian's own Python (never one under /root).
    assert "home = /usr/bin\n" in (root / "opt" / "agtool" / "venv" / "pyvenv.cfg").read_text()
    pid = int((root / "run" / "agtool-hub.pid").read_text())
    with phases.time("submit and grade"):
        _graded, tokens = submit_both(origin)
    check_instructor_downloads(origin, tokens)
    with phases.time("a learner looks for the answers"):
        check_learner_reads_no_answers(root, work, env, log)
    with phases.time("grade-class"):
        check_grade_class_grades_the_roster(root, work, env, log)
    with phases.time("second run"):
        second = in_debian(root, setup, env=env, log=log, timeout=SCRIPT_TIMEOUT)
    assert second.returncode == 0, second.stdout[-5000:]
    check_second_run(root, second.stdout[len(first.stdout) :], pid)
    config = root / "etc" / "jupyterhub" / "jupyterhub_config.py"
    config.write_text(config.read_text() + "# a local edit\n")
    with phases.time("third run"):
        third = in_debian(root, setup, env=env, log=log, timeout=SCRIPT_TIMEOUT)
    assert third.returncode == 0, third.stdout[-5000:]
    check_third_run(root, third.stdout[len(second.stdout) :], origin, tokens)
    (artifacts_dir / "hub-recipe-timings.json").write_text(json.dumps(phases.seconds, indent=2))
    print("phases (s):", phases.seconds)
