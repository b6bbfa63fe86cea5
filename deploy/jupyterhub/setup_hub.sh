#!/usr/bin/env bash
# Set up an agtool-lab classroom hub on one Ubuntu/Debian machine, as root:
#   sudo deploy/jupyterhub/setup_hub.sh [INSTRUCTOR]            (default INSTRUCTOR: $SUDO_USER)
# Then put learners' user names in /opt/agtool/roster.txt (one a line) and
#   systemctl restart agtool-hub
# Idempotent: run it again after `git pull` to update the lab for new learners.
set -euo pipefail

SRC="$(cd "$(dirname "$0")/../.." && pwd)"   # this agtool-lab checkout
PREFIX="${AGTOOL_PREFIX:-/opt/agtool}"
INSTRUCTOR="${1:-${SUDO_USER:-}}"
STAFF_GROUP=agtool-staff
GRADER_USER=agtool-grader

[[ $EUID -eq 0 ]] || { echo "run as root (sudo)" >&2; exit 1; }

# 1. System packages: Python, Node for the hub's proxy, bubblewrap for the
#    grader's optional sandbox (AGTOOL_SANDBOX=bwrap).
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends python3 python3-venv nodejs npm bubblewrap git
command -v configurable-http-proxy >/dev/null || npm install -g configurable-http-proxy

# 2. One virtualenv for the hub, every learner's JupyterLab and the grader.
#    A copy of the project is installed (not the checkout in place), so a
#    `git pull` in SRC changes nothing until this script runs again.
mkdir -p "$PREFIX" /srv/jupyterhub /etc/jupyterhub
[[ -x "$PREFIX/venv/bin/python" ]] || python3 -m venv "$PREFIX/venv"
"$PREFIX/venv/bin/pip" install --quiet --upgrade pip
"$PREFIX/venv/bin/pip" install --quiet "jupyterhub>=5.0" "$SRC[lab,batch,service]"
# The reference solution is in the checkout, not in the install (setuptools ships
# grader/ and agtool_lab/ only); nobody but root may read it there, and nothing
# that runs (hub, service, grader) needs it.
chmod -R go-rwx "$SRC/solutions"
if [[ -d "$PREFIX/venv" ]] && find "$PREFIX/venv" -path '*solutions/tools.py' | grep -q .; then
    echo "solutions/tools.py found in $PREFIX/venv: learners could read it" >&2; exit 1
fi

# 3. What a learner gets on first login: the notebooks and the starter module.
rm -rf "$PREFIX/template.new"
mkdir -p "$PREFIX/template.new/labs" "$PREFIX/template.new/agtool"
cp "$SRC"/labs/*.ipynb "$PREFIX/template.new/labs/"
rm -f "$PREFIX/template.new/labs/instructor_dashboard.ipynb"   # for the instructor, not the class
[[ -f "$SRC/labs/README.md" ]] && cp "$SRC/labs/README.md" "$PREFIX/template.new/labs/"
cp "$SRC/agtool/tools.py" "$PREFIX/template.new/agtool/tools.py"
chmod -R u=rwX,go=rX "$PREFIX/template.new"
rm -rf "$PREFIX/template" && mv "$PREFIX/template.new" "$PREFIX/template"

# 4. Who may read learners' homes: the staff group. Grading runs learner code,
#    so it runs as a dedicated account without a login, never as root.
getent group "$STAFF_GROUP" >/dev/null || groupadd --system "$STAFF_GROUP"
id "$GRADER_USER" >/dev/null 2>&1 || useradd --system --create-home --home-dir "/var/lib/$GRADER_USER" \
    --shell /usr/sbin/nologin --groups "$STAFF_GROUP" "$GRADER_USER"
if [[ -n "$INSTRUCTOR" ]]; then
    id "$INSTRUCTOR" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$INSTRUCTOR"
    usermod -aG "$STAFF_GROUP" "$INSTRUCTOR"
    grep -qx "$INSTRUCTOR" "$PREFIX/instructors.txt" 2>/dev/null || echo "$INSTRUCTOR" >> "$PREFIX/instructors.txt"
    # The instructor may run the grader as the grading account, and nothing else.
    # AGTOOL_SANDBOX passes through, so `AGTOOL_SANDBOX=bwrap sudo ...` sandboxes the learner code.
    printf 'Defaults:%s env_keep += "AGTOOL_SANDBOX"\n%s ALL=(%s) NOPASSWD: %s\n' \
        "$INSTRUCTOR" "$INSTRUCTOR" "$GRADER_USER" "$PREFIX/venv/bin/agtool-grade" > /etc/sudoers.d/agtool-grade
    visudo -cf /etc/sudoers.d/agtool-grade >/dev/null
    chmod 0440 /etc/sudoers.d/agtool-grade
fi
touch "$PREFIX/roster.txt" "$PREFIX/instructors.txt"
# Where the grading account writes gradebooks; the staff group may read them.
install -d -o "$GRADER_USER" -g "$STAFF_GROUP" -m 2750 /srv/agtool/grades
# The grading service's data (a database with every learner's attempts): its account only.
install -d -o "$GRADER_USER" -g "$GRADER_USER" -m 0700 /srv/agtool/service

# 5. The hub as a service.
install -m 0644 "$SRC/deploy/jupyterhub/jupyterhub_config.py" /etc/jupyterhub/jupyterhub_config.py
cat > /etc/systemd/system/agtool-hub.service <<UNIT
[Unit]
Description=JupyterHub for agtool-lab
After=network.target

[Service]
User=root
WorkingDirectory=/srv/jupyterhub
Environment=PATH=$PREFIX/venv/bin:/usr/local/bin:/usr/bin:/bin
Environment=AGTOOL_PREFIX=$PREFIX
ExecStart=$PREFIX/venv/bin/jupyterhub -f /etc/jupyterhub/jupyterhub_config.py
Restart=on-failure

[Install]
WantedBy=multi-user.target
UNIT
if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
    systemctl daemon-reload
    systemctl enable --now agtool-hub
    systemctl restart agtool-hub
else
    echo "no systemd here: start the hub with"
    echo "  cd /srv/jupyterhub && AGTOOL_PREFIX=$PREFIX $PREFIX/venv/bin/jupyterhub -f /etc/jupyterhub/jupyterhub_config.py"
fi
echo "hub ready on port 8000; learners: $PREFIX/roster.txt; instructors: $PREFIX/instructors.txt"
