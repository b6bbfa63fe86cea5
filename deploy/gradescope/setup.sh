#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image
# (Ubuntu). The autograder zip is unpacked in /autograder/source; it holds
# this file, run_autograder and a copy of the agtool-lab project in
# /autograder/source/agtool-lab (see docs/instructor.md, "Gradescope").
set -euo pipefail

SOURCE=/autograder/source
VENV=/opt/agtool-venv

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends python3 python3-venv python3-pip

python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
# The core only (the grader and LangGraph): no JupyterLab, pandas or matplotlib.
"$VENV/bin/pip" install --quiet "$SOURCE/agtool-lab"

# Warm the image: import LangGraph and register the checks once, so the first
# submission does not pay for compiling every module.
"$VENV/bin/python" -c "import grader.checks, grader.grading, langgraph.graph"
