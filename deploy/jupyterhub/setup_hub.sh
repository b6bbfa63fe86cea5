#!/usr/bin/env bash
# Set up an agtool-lab classroom hub on one Debian 12 / Ubuntu 22.04+ machine, as root, in one command:
#   deploy/jupyterhub/setup_hub.sh [--ip ADDR] [--port N] [--passwords FILE] [--no-start] [INSTRUCTOR]
# INSTRUCTOR (default: $SUDO_USER) becomes a hub admin and may grade as the grading account.
# Learners: rows of /opt/agtool/roster.csv (learner,lms_id,name), then run this script again.
# Idempotent: a second run changes only what changed, keeps local edits, and says what it kept.
# What it does and why: deploy/jupyterhub/README.md.
set -euo pipefail
umask 022   # the venv and the template must be readable by every learner's server

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"   # this agtool-lab checkout
HERE="$SRC/deploy/jupyterhub"
ROOT="${AGTOOL_ROOT:-}"             # tests only: a folder standing in for / (no package, account or process is touched)
PREFIX="${AGTOOL_PREFIX:-/opt/agtool}"
ETC_HUB=/etc/jupyterhub
CONFIG=$ETC_HUB/jupyterhub_config.py
ENV_FILE=$ETC_HUB/agtool-hub.env
UNIT=/etc/systemd/system/agtool-hub.service
HUB_DIR=/srv/jupyterhub
LOG_FILE=/var/log/agtool-hub.log
PID_FILE=/run/agtool-hub.pid
SYSTEM_PYTHON="${AGTOOL_SYSTEM_PYTHON:-/usr/bin/python3}"   # never a Python under /root or pyenv
STAFF_GROUP=agtool-staff            # may read learners' homes and the grades
SANDBOX_USER=agtool-sandbox         # what learner code runs as when grading runs as root ($AGTOOL_GRADING_USER)
HUB_TIMEOUT="${AGTOOL_HUB_TIMEOUT:-180}"   # seconds to wait for /hub/api to answer

say() { printf 'setup_hub: %s\n' "$*"; }
die() { printf 'setup_hub: error: %s\n' "$*" >&2; exit 1; }

usage() {
    sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# ------------------------------------------------------------------ files: never overwrite local edits

# install_file NEW DEST [MODE]: DEST missing -> write it; the same -> keep; different -> keep DEST, write DEST.new.
# Prints what it did; returns 0 when DEST now holds NEW's content (written or already the same), 1 when kept as is.
install_file() {
    local new="$1" dest="$ROOT$2" mode="${3:-0644}"
    if [[ ! -e "$dest" ]]; then
        install -D -m "$mode" "$new" "$dest"
        say "wrote $2"
    elif cmp -s "$new" "$dest"; then
        rm -f "$dest.new"
        say "kept $2 (unchanged)"
    else
        install -m "$mode" "$new" "$dest.new"
        say "kept your $2: it differs from this recipe's, whose version is $2.new (compare: diff -u $2 $2.new)"
        return 1
    fi
}

# seed_file EXAMPLE DEST: copy EXAMPLE to DEST only when DEST is missing (DEST is the instructor's to edit).
seed_file() {
    if [[ -e "$ROOT$2" ]]; then
        say "kept $2"
    else
        install -D -m 0644 "$1" "$ROOT$2"
        say "wrote $2 from $(basename "$1"): edit it"
    fi
}

# env_value NAME DEFAULT: the hub's setting NAME: the environment's, else the existing env file's, else DEFAULT.
env_value() {
    local name="$1" default="$2" line
    if [[ -n "${!name:-}" ]]; then
        printf '%s' "${!name}"
    elif [[ -f "$ROOT$ENV_FILE" ]] && line="$(grep -m1 "^$name=" "$ROOT$ENV_FILE")"; then
        printf '%s' "${line#*=}"
    else
        printf '%s' "$default"
    fi
}

# write_env_file PATH_DIRS: the hub's environment (systemd's EnvironmentFile, and the background start).
# Loopback by default: the hub answers on 127.0.0.1 until told otherwise (--ip / AGTOOL_HUB_IP).
write_env_file() {
    local tmp
    tmp="$(mktemp)"
    {
        echo "# The agtool hub's environment, written by setup_hub.sh (its flags and AGTOOL_* variables win over this file)."
        echo "AGTOOL_PREFIX=$PREFIX"
        echo "AGTOOL_HUB_IP=$(env_value AGTOOL_HUB_IP 127.0.0.1)"
        echo "AGTOOL_HUB_PORT=$(env_value AGTOOL_HUB_PORT 8000)"
        echo "AGTOOL_HUB_INTERNAL_PORT=$(env_value AGTOOL_HUB_INTERNAL_PORT 8081)"
        echo "AGTOOL_PROXY_API_PORT=$(env_value AGTOOL_PROXY_API_PORT 8001)"
        echo "AGTOOL_SERVICE_PORT=$(env_value AGTOOL_SERVICE_PORT 10101)"
        echo "AGTOOL_SANDBOX=$(env_value AGTOOL_SANDBOX bwrap)"
        echo "PATH=$1"
    } > "$tmp"
    # The flags asked for these values: the file takes them (it is the script's, not hand-written).
    install -D -m 0644 "$tmp" "$ROOT$ENV_FILE.tmp" && rm -f "$tmp"
    if cmp -s "$ROOT$ENV_FILE.tmp" "$ROOT$ENV_FILE" 2>/dev/null; then
        rm -f "$ROOT$ENV_FILE.tmp"; say "kept $ENV_FILE (unchanged)"
    else
        mv "$ROOT$ENV_FILE.tmp" "$ROOT$ENV_FILE"; say "wrote $ENV_FILE"
    fi
}

# hub_setting NAME: a value of the env file.
hub_setting() { grep -m1 "^$1=" "$ROOT$ENV_FILE" | cut -d= -f2-; }

# ------------------------------------------------------------------ system packages

# missing_packages: the Debian packages this recipe uses that are not here (one a line).
# The hub's proxy: a configurable-http-proxy already on PATH is used; else npm's when an npm is here
# (e.g. NodeSource's Node, whose nodejs conflicts with Debian's npm); else Debian's package, which
# needs only a nodejs (any: an existing newer one does) and not npm's hundreds of packages.
missing_packages() {
    [[ -x "$SYSTEM_PYTHON" ]] || echo python3
    "$SYSTEM_PYTHON" -c 'import ensurepip, venv' 2>/dev/null || echo python3-venv
    command -v bwrap >/dev/null || echo bubblewrap
    command -v useradd >/dev/null || echo passwd
    [[ -z "$INSTRUCTOR" ]] || command -v sudo >/dev/null || echo sudo
    command -v configurable-http-proxy >/dev/null || command -v npm >/dev/null || echo node-configurable-http-proxy
}

install_packages() {
    local missing
    missing="$(missing_packages | tr '\n' ' ')"
    if [[ -n "${missing// /}" ]]; then
        say "installing: $missing"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        # shellcheck disable=SC2086  # one word per package
        apt-get install -y -q --no-install-recommends $missing
    else
        say "kept the system packages (all there)"
    fi
    if command -v configurable-http-proxy >/dev/null; then
        say "using configurable-http-proxy $(command -v configurable-http-proxy)"
    else
        say "installing configurable-http-proxy with npm ($(command -v npm))"
        npm install --global --no-fund --no-audit configurable-http-proxy
    fi
}

# ------------------------------------------------------------------ the virtualenv

# venv_home VENV: the folder of the Python a venv was made from ("" if there is no venv).
venv_home() { sed -n 's/^home *= *//p' "$1/pyvenv.cfg" 2>/dev/null; }

# source_stamp: what the install is made from (this checkout's package files and the Python).
source_stamp() {
    (cd "$SRC" && find pyproject.toml grader agtool agtool_lab -type f ! -name '*.pyc' -print0 | sort -z \
        | xargs -0 sha256sum; "$SYSTEM_PYTHON" --version) | sha256sum | cut -d' ' -f1
}

# foreign_venv VENV: true when VENV exists and was made from another Python than the system's
# (e.g. root's pyenv under /root, which learners' servers and the service's account cannot run).
foreign_venv() {
    local home
    home="$(venv_home "$1")"
    [[ -n "$home" && "$(readlink -f "$home")" != "$(dirname "$(readlink -f "$SYSTEM_PYTHON")")" ]]
}

make_venv() {
    local venv="$PREFIX/venv" stamp wheels wheel
    if foreign_venv "$venv"; then
        say "removing $venv: it was made from the Python in $(venv_home "$venv"), not the system's ($SYSTEM_PYTHON)"
        rm -rf "$venv"
    fi
    stamp="$(source_stamp)"
    if [[ -x "$venv/bin/jupyterhub" && "$(cat "$PREFIX/.installed" 2>/dev/null)" == "$stamp" ]]; then
        say "kept $venv (installed from this same checkout)"
        return
    fi
    [[ -x "$venv/bin/python" ]] || "$SYSTEM_PYTHON" -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    # A wheel, checked, then installed: what learners can read of the lab is the wheel's files and nothing else
    # of the checkout (which protect_checkout made root-only). The build folder is root's and goes afterwards.
    wheels="$(mktemp -d)"
    "$venv/bin/pip" wheel --quiet --no-deps --wheel-dir "$wheels" "$SRC"
    wheel="$(find "$wheels" -maxdepth 1 -name 'agtool_lab-*.whl' -print -quit)"
    [[ -n "$wheel" ]] || { rm -rf "$wheels"; die "pip built no agtool_lab wheel from $SRC"; }
    check_wheel "$wheel" "$SRC" || { rm -rf "$wheels"; exit 1; }
    "$venv/bin/pip" install --quiet "${wheel}[lab,batch,service]"
    # The same version installed before is "already satisfied": this checkout's code replaces it.
    "$venv/bin/pip" install --quiet --no-deps --force-reinstall "$wheel"
    rm -rf "$wheels"
    echo "$stamp" > "$PREFIX/.installed"
    say "installed agtool-lab (a wheel with neither solutions/ nor tests/) and JupyterHub into $venv"
}

# check_wheel WHEEL CHECKOUT: refuse (exit 1, saying which files) a wheel holding anything of CHECKOUT's
# solutions/ or tests/ (the reference solution, the tests and their alternative styles) or its .git:
# by name (a folder of those names) and by content (a copy of such a file under another name; files that
# are also among the shipped packages' own, such as empty __init__.py files, do not count).
check_wheel() {
    "$SYSTEM_PYTHON" - "$1" "$2" <<'PY'
import hashlib, sys, zipfile
from pathlib import Path

wheel, src = sys.argv[1], Path(sys.argv[2])
digest = lambda data: hashlib.sha256(data).hexdigest()

def files(*folders):
    for folder in folders:
        if (src / folder).is_dir():
            yield from (p for p in sorted((src / folder).rglob("*"))
                        if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts)

# What the wheel may hold of the checkout: its packages (starter/ ships as grader.starter). Never agtool/: that
# is the lab's own file, maybe an instructor's finished lab, the solution itself.
shipped = {digest(p.read_bytes()) for p in files("grader", "starter", "agtool_lab")}
secret = {}
for p in files("solutions", "tests"):
    data = p.read_bytes()
    if data.strip() and digest(data) not in shipped:
        secret.setdefault(digest(data), str(p.relative_to(src)))
with zipfile.ZipFile(wheel) as zf:
    names = zf.namelist()
    bad = [name for name in names if name.split("/")[0] in ("solutions", "tests", ".git")]
    bad += [f"{name} (a copy of {secret[d]})" for name in names
            if name not in bad and (d := digest(zf.read(name))) in secret]
if bad:
    sys.exit(f"setup_hub: error: the wheel {wheel} holds files learners must not read: {', '.join(bad[:5])}"
             f"{f' and {len(bad) - 5} more' if len(bad) > 5 else ''}; pyproject.toml's package list must leave "
             "solutions/ and tests/ out")
print(f"setup_hub: checked the wheel: {len(names)} files, none of solutions/, tests/ or .git")
PY
}

# ------------------------------------------------------------------ the checkout: root's alone

# protect_checkout DIR: the checkout this recipe runs from holds what no learner may read: the reference
# solution (solutions/), the tests and their alternative styles (tests/), and the git history (.git, where
# `git show HEAD:solutions/tools.py` finds the solution even with solutions/ closed). DIR becomes 0700 (its
# owner's alone: root's when cloned as the README says), and .git, solutions/ and tests/ go-rwx as well, so
# they stay closed if DIR is opened again. Nothing a learner runs needs DIR: the lab is installed from a wheel
# (make_venv) and the learners' files are copies (make_template).
protect_checkout() {
    local dir="$1" part owner closed=()
    case "$PREFIX/" in
        "$dir/"*) die "$PREFIX is inside the checkout $dir, which becomes root-only: clone the checkout elsewhere (e.g. /opt/agtool-src)" ;;
    esac
    if [[ -n "$(find "$dir" -maxdepth 0 -perm /go=rwx)" ]]; then
        chmod go-rwx "$dir"; closed+=(".")
    fi
    for part in .git solutions tests; do
        if [[ -e "$dir/$part" && -n "$(find "$dir/$part" -perm /go=rwx -print -quit)" ]]; then
            chmod -R go-rwx "$dir/$part"; closed+=("$part")
        fi
    done
    owner="$(stat -c %U "$dir")"
    if ((${#closed[@]})); then
        say "made the checkout $dir readable by $owner alone (closed: ${closed[*]}): no learner can read solutions/, tests/ or the git history"
    else
        say "kept the checkout $dir readable by $owner alone (mode 0700)"
    fi
    [[ "$owner" == root ]] || say "note: $dir belongs to $owner, who can read the solution there (root's own clone, e.g. /opt/agtool-src, belongs to nobody else)"
}

# ------------------------------------------------------------------ what a learner gets on first login

make_template() {
    local new="$PREFIX/template.new"
    rm -rf "$new"
    mkdir -p "$new/labs" "$new/agtool"
    cp "$SRC"/labs/*.ipynb "$new/labs/"
    rm -f "$new/labs/instructor_dashboard.ipynb"   # for the instructor, not the class
    if [[ -f "$SRC/labs/README.md" ]]; then cp "$SRC/labs/README.md" "$new/labs/"; fi
    # The starter as given, from the installed lab and checked by its hash (grader.outputs.starter), never the
    # checkout's agtool/tools.py: that file holds whatever was tried in the checkout, an instructor's own work.
    "$PREFIX/venv/bin/python" -c 'import sys; from grader.outputs.starter import starter_bytes
sys.stdout.buffer.write(starter_bytes())' >"$new/agtool/tools.py" \
        || { rm -rf "$new"; die "the installed lab has no starter as given: reinstall from a fresh clone"; }
    if ! cmp -s "$new/agtool/tools.py" "$SRC/agtool/tools.py"; then
        say "note: $SRC/agtool/tools.py is not the starter (the lab was tried in this checkout): learners get the committed starter, not it"
    fi
    chmod -R u=rwX,go=rX "$new"
    if diff -rq "$new" "$PREFIX/template" >/dev/null 2>&1; then
        rm -rf "$new"; say "kept $PREFIX/template (unchanged)"
    else
        rm -rf "$PREFIX/template" && mv "$new" "$PREFIX/template"; say "wrote $PREFIX/template"
    fi
}

# ------------------------------------------------------------------ accounts

# roster_learners: the learner column of roster.csv (one name a line).
roster_learners() {
    "$PREFIX/venv/bin/python" - "$ROOT$PREFIX/roster.csv" <<'PY'
import sys
from grader.outputs.lms import RosterError, read_roster
try:
    print("\n".join(read_roster(sys.argv[1])))
except RosterError as exc:
    sys.exit(f"setup_hub: error: {exc}")
PY
}

# ensure_user NAME [useradd options...]: create the account with useradd when it is missing.
ensure_user() {
    local name="$1"; shift
    if id "$name" >/dev/null 2>&1; then
        say "kept account $name"
    else
        useradd "$@" "$name"; say "created account $name"
    fi
}

# password_hash: a SHA-512 crypt hash of the password on stdin (no PAM, no chpasswd: usermod -p takes it).
password_hash() {
    "$SYSTEM_PYTHON" -W ignore -c '
import crypt, sys
print(crypt.crypt(sys.stdin.readline().rstrip("\n"), crypt.mksalt(crypt.METHOD_SHA512)))' 2>/dev/null \
        || openssl passwd -6 -stdin
}

# set_first_passwords FILE: name:password lines; a password is set only on an account that has none yet.
set_first_passwords() {
    local name password field
    while IFS=: read -r name password; do
        [[ -z "$name" || "$name" == \#* ]] && continue
        id "$name" >/dev/null 2>&1 || { say "no account $name: its password line is skipped (add it to roster.csv)"; continue; }
        field="$(getent shadow "$name" | cut -d: -f2)"
        if [[ -n "$field" && "$field" != \!* && "$field" != \** ]]; then
            say "kept the password of $name (it has one)"
            continue
        fi
        usermod -p "$(printf '%s\n' "$password" | password_hash)" "$name"
        say "set the first password of $name"
    done < "$1"
}

make_accounts() {
    getent group "$STAFF_GROUP" >/dev/null || groupadd --system "$STAFF_GROUP"
    ensure_user "$SANDBOX_USER" --system --no-create-home --shell /usr/sbin/nologin --user-group
    local learner
    for learner in $(roster_learners); do
        ensure_user "$learner" --create-home --shell /bin/bash
    done
    if [[ -n "$INSTRUCTOR" ]]; then
        ensure_user "$INSTRUCTOR" --create-home --shell /bin/bash
        usermod -aG "$STAFF_GROUP" "$INSTRUCTOR"
        grep -qx "$INSTRUCTOR" "$PREFIX/instructors.txt" 2>/dev/null || echo "$INSTRUCTOR" >> "$PREFIX/instructors.txt"
        write_sudoers
    fi
    if [[ -n "$PASSWORDS" ]]; then set_first_passwords "$PASSWORDS"; fi
    # Where a class's batch writes gradebooks (as root, through grade-class below); the staff group may read them.
    install -d -o root -g "$STAFF_GROUP" -m 2750 /srv/agtool/grades
    # The grading service's data (a database with every learner's attempts): root's only. The service runs as
    # root, like the hub, so that its step children switch to $SANDBOX_USER, which owns nothing; a service run
    # as the data's owner would have learner code run as that owner, and refuses to start (SECURITY.md).
    install -d -o root -g root -m 0700 /srv/agtool/service
}

# The instructor may grade the class, and nothing else: a fixed command, run as root so that learner code
# runs as $SANDBOX_USER inside bubblewrap; it takes one word (the folder under /srv/agtool/grades), never
# options, so sudo hands the instructor no other use of root. It grades the roster's learners only: the
# batch runs in a mount namespace of its own whose /home holds their homes and nothing else (not the
# instructor's own home, nor any other account's), at the same paths, so the batch's refusal of links out
# of a learner's folder holds as before.
write_grade_class() {
    local tmp
    tmp="$(mktemp)"
    {
        printf '#!/bin/sh\n# grade-class WEEK: the roster'"'"'s learners'"'"' agtool/tools.py graded into the grades folder (setup_hub.sh).\n'
        printf 'PREFIX=%q\nGRADES=%q\nSTAFF=%q\nHOMES=%q\n' "$PREFIX" "$ROOT/srv/agtool/grades" "$STAFF_GROUP" "$ROOT/home"
        cat <<'SCRIPT'
set -eu
case "${1:-}" in
    ''|-*|*[!A-Za-z0-9_-]*) echo "usage: sudo $PREFIX/bin/grade-class WEEK   (letters, digits, - and _ only)" >&2; exit 2 ;;
esac
week="$1"
roster="$PREFIX/roster.csv"
if [ ! -f "$roster" ]; then
    echo "grade-class: $roster is missing: it names the learners to grade (learner,lms_id,name)" >&2; exit 2
fi
# The roster's learners, one a line; a name that cannot be an account's is refused, never made a path.
learners="$("$PREFIX/venv/bin/python" - "$roster" <<'PY'
import re, sys
from grader.outputs.lms import RosterError, read_roster
try:
    names = list(read_roster(sys.argv[1]))
except RosterError as exc:
    sys.exit(f"grade-class: {exc}")
bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", n)]
if bad:
    sys.exit(f"grade-class: {sys.argv[1]} names {', '.join(map(repr, bad))}: not account names; fix the roster")
print("\n".join(names))
PY
)"
set -- "$PREFIX/venv/bin/agtool-grade" batch "$HOMES/*/agtool/tools.py" --out "$GRADES/$week" --sandbox bwrap \
    --roster "$roster"
if [ -f "$PREFIX/course.toml" ]; then set -- "$@" --course "$PREFIX/course.toml"; fi
if ! unshare --mount --propagation private true; then
    echo "grade-class: cannot make a mount namespace (unshare --mount): run it as root, with sudo" >&2; exit 2
fi
# In a mount namespace of this run: $HOMES holds the roster's learners' homes and nothing else.
all="$(mktemp -d)"
status=0
# On a systemd host, a transient scope with a delegated cgroup subtree: the batch can then put each
# step in a cgroup of its own (memory, pids) instead of falling back to resource limits.
if [ -d "${AGTOOL_SYSTEMD_DIR:-/run/systemd/system}" ] && command -v systemd-run >/dev/null 2>&1; then
    set -- systemd-run --scope --quiet --collect -p Delegate=yes "$@"
fi
# shellcheck disable=SC2016  # the inner script's variables are its own
unshare --mount --propagation private /bin/sh -eu -c '
homes=$1 all=$2 learners=$3
shift 3
mount --rbind "$homes" "$all"
mount -t tmpfs -o mode=0755 agtool-roster "$homes"
for learner in $learners; do
    if [ -d "$all/$learner" ] && [ ! -L "$all/$learner" ]; then
        mkdir "$homes/$learner"
        mount --rbind "$all/$learner" "$homes/$learner"
    fi
done
umount -l "$all"
exec "$@"' grade-class "$HOMES" "$all" "$learners" "$@" || status=$?
rmdir "$all"
[ "$status" -eq 0 ] || exit "$status"
chgrp -R "$STAFF" "$GRADES/$week"
chmod -R g+rX,o-rwx "$GRADES/$week"
SCRIPT
    } > "$tmp"
    install_file "$tmp" "$PREFIX/bin/grade-class" 0755 || true
    rm -f "$tmp"
}

# The instructor may run grade-class as root, and nothing else.
write_sudoers() {
    local tmp
    write_grade_class
    tmp="$(mktemp)"
    printf '%s ALL=(root) NOPASSWD: %s\n' "$INSTRUCTOR" "$PREFIX/bin/grade-class" > "$tmp"
    visudo -cf "$tmp" >/dev/null || die "the sudoers rule for $INSTRUCTOR does not parse (visudo -cf)"
    install_file "$tmp" /etc/sudoers.d/agtool-grade 0440 || true
    rm -f "$tmp"
}

# ------------------------------------------------------------------ the hub

# check_course: the course file and roster are valid (the service refuses to start otherwise).
check_course() {
    "$PREFIX/venv/bin/python" - "$PREFIX/course.toml" <<'PY' || die "fix $PREFIX/course.toml, then run this again"
import sys
from grader.course.policy import CourseError, load_policy
try:
    load_policy(sys.argv[1])
except CourseError as exc:
    sys.exit(f"setup_hub: error: {exc}")
PY
}

write_unit() {
    local tmp
    tmp="$(mktemp)"
    cat > "$tmp" <<UNIT
[Unit]
Description=JupyterHub for agtool-lab (setup_hub.sh)
After=network.target

[Service]
User=root
WorkingDirectory=$HUB_DIR
EnvironmentFile=$ENV_FILE
ExecStart=$PREFIX/venv/bin/jupyterhub -f $CONFIG
Restart=on-failure
# The grading service (a hub service, in this unit's cgroup) puts each step in a cgroup of its own
# (memory, pids): it may only where systemd delegates the unit's subtree to it.
Delegate=yes

[Install]
WantedBy=multi-user.target
UNIT
    install_file "$tmp" "$UNIT" || true
    rm -f "$tmp"
}

# start_stamp: what a running hub was started with; a hub started with the same is kept running.
start_stamp() {
    cat "$PREFIX/.installed" "$CONFIG" "$ENV_FILE" "$PREFIX/course.toml" "$PREFIX/roster.csv" \
        "$PREFIX/instructors.txt" 2>/dev/null | sha256sum | cut -d' ' -f1
}

# hub_url: where the hub answers (a wildcard address is asked on loopback).
hub_url() {
    local ip
    ip="$(hub_setting AGTOOL_HUB_IP)"
    case "$ip" in ""|0.0.0.0|"*") ip=127.0.0.1 ;; ::|"[::]") ip="[::1]" ;; *:*) ip="[$ip]" ;; esac
    printf 'http://%s:%s' "$ip" "$(hub_setting AGTOOL_HUB_PORT)"
}

# wait_for_hub PID: 0 once GET /hub/api answers with JupyterHub's version; 1 after HUB_TIMEOUT or if PID died.
wait_for_hub() {
    "$PREFIX/venv/bin/python" - "$(hub_url)/hub/api" "$HUB_TIMEOUT" "${1:-0}" <<'PY'
import json, os, sys, time, urllib.request
url, timeout, pid = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
deadline = time.monotonic() + timeout
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            print(json.load(resp)["version"]); sys.exit(0)
    except Exception:
        pass
    if pid:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            sys.exit(1)
    time.sleep(1)
sys.exit(1)
PY
}

# hub_command: the exact command that runs the hub without systemd.
hub_command() {
    # shellcheck disable=SC2016  # the $(...) is for the reader's shell, printed as it is
    printf 'cd %s && env -i $(grep -v "^#" %s | xargs) setsid %s -f %s >> %s 2>&1 < /dev/null &' \
        "$HUB_DIR" "$ENV_FILE" "$PREFIX/venv/bin/jupyterhub" "$CONFIG" "$LOG_FILE"
}

running_pid() {
    local pid
    pid="$(cat "$PID_FILE" 2>/dev/null)" || return 1
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && printf '%s' "$pid"
}

stop_hub() {
    local pid="$1"
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
}

start_without_systemd() {
    local pid stamp
    stamp="$(start_stamp)"
    if pid="$(running_pid)" && [[ "$(cat "$HUB_DIR/.started-with" 2>/dev/null)" == "$stamp" ]]; then
        say "kept the running hub (pid $pid): started with the same install and configuration"
        return 0
    fi
    if pid="$(running_pid)"; then say "stopping the hub (pid $pid) to start it with the new configuration"; stop_hub "$pid"; fi
    local -a env_args
    mapfile -t env_args < <(grep -v '^#' "$ENV_FILE")
    (cd "$HUB_DIR" && exec env -i "${env_args[@]}" setsid "$PREFIX/venv/bin/jupyterhub" -f "$CONFIG" \
        >> "$LOG_FILE" 2>&1 < /dev/null) &
    echo $! > "$PID_FILE"
    echo "$stamp" > "$HUB_DIR/.started-with"
    say "started the hub in the background: pid $!, log $LOG_FILE, pid file $PID_FILE"
}

start_with_systemd() {
    local stamp
    stamp="$(start_stamp)"
    systemctl daemon-reload
    systemctl enable agtool-hub >/dev/null
    if systemctl is-active --quiet agtool-hub && [[ "$(cat "$HUB_DIR/.started-with" 2>/dev/null)" == "$stamp" ]]; then
        say "kept the running agtool-hub service: started with the same install and configuration"
    else
        systemctl restart agtool-hub
        echo "$stamp" > "$HUB_DIR/.started-with"
        say "started the agtool-hub systemd service"
    fi
}

# report_hub PID LOG: say truthfully whether the hub answers; exit 1 if it does not.
report_hub() {
    local version
    if version="$(wait_for_hub "$1")"; then
        say "the hub is up: $(hub_url)/ answers (JupyterHub $version); learners: $PREFIX/roster.csv; instructors: $PREFIX/instructors.txt"
    else
        say "the hub is NOT up: $(hub_url)/hub/api did not answer within ${HUB_TIMEOUT}s. Its log: $2"
        [[ ! -f "$2" ]] || tail -n 30 "$2" >&2
        exit 1
    fi
}

start_hub() {
    if [[ "$NO_START" == 1 ]]; then
        say "not started (--no-start). Start it with:"
        echo "  $(hub_command)"
        return
    fi
    if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
        start_with_systemd
        report_hub 0 "journalctl -u agtool-hub"
    else
        say "no systemd here: the hub runs as a background process"
        start_without_systemd
        report_hub "$(cat "$PID_FILE" 2>/dev/null || echo 0)" "$LOG_FILE"   # a hub that exits is reported at once
    fi
}

# ------------------------------------------------------------------ main

parse_args() {
    INSTRUCTOR="${SUDO_USER:-}" PASSWORDS="" NO_START=0
    while (($#)); do
        case "$1" in
            --ip) export AGTOOL_HUB_IP="${2:?--ip needs an address}"; shift 2 ;;
            --port) export AGTOOL_HUB_PORT="${2:?--port needs a number}"; shift 2 ;;
            --passwords) PASSWORDS="$(readlink -f "${2:?--passwords needs a file}")"; shift 2
                         [[ -r "$PASSWORDS" ]] || die "cannot read the passwords file $PASSWORDS" ;;
            --no-start) NO_START=1; shift ;;
            -h|--help) usage; exit 0 ;;
            -*) die "unknown option $1 (see --help)" ;;
            *) INSTRUCTOR="$1"; shift ;;
        esac
    done
    [[ "$INSTRUCTOR" != root ]] || INSTRUCTOR=""   # root is no instructor: it is root already
}

# JupyterLab's terminals are login shells, whose /etc/profile resets PATH: put the lab's tools back, so the
# replay commands in the Check widget and in feedback files (agtool-grade check ...) run there.
write_profile() {
    local tmp
    tmp="$(mktemp)"
    # shellcheck disable=SC2016  # $PATH is for the login shell to expand, not this script
    printf '# agtool-lab (setup_hub.sh): the lab'"'"'s tools in terminals\ncase ":$PATH:" in *":%s:"*) ;; *) PATH="%s:$PATH" ;; esac\n' \
        "$PREFIX/venv/bin" "$PREFIX/venv/bin" > "$tmp"
    install_file "$tmp" /etc/profile.d/agtool-lab.sh 0644 || true
    rm -f "$tmp"
}

main() {
    parse_args "$@"
    [[ $EUID -eq 0 ]] || die "run as root (for example: sudo $0 ${INSTRUCTOR:-teacher})"
    install_packages
    mkdir -p "$PREFIX" "$HUB_DIR" "$ETC_HUB" "$(dirname "$LOG_FILE")"
    protect_checkout "$SRC"
    make_venv
    make_template
    seed_file "$HERE/course.example.toml" "$PREFIX/course.toml"
    seed_file "$HERE/roster.example.csv" "$PREFIX/roster.csv"
    touch "$PREFIX/instructors.txt"
    check_course
    make_accounts
    local chp_dir
    chp_dir="$(dirname "$(command -v configurable-http-proxy)")"
    write_env_file "$PREFIX/venv/bin:$chp_dir:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    install_file "$HERE/jupyterhub_config.py" "$CONFIG" || true
    write_profile
    write_unit
    start_hub
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    main "$@"
fi
