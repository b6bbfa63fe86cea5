#!/usr/bin/env bash
# Build the zip to upload as a Gradescope "Programming Assignment" autograder:
# setup.sh and run_autograder at the root (Gradescope requires that), and the
# committed agtool-lab project in agtool-lab/ for setup.sh to install.
#   deploy/gradescope/build_zip.sh [OUT.zip]     (default: agtool-autograder.zip)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="$(realpath -m "${1:-agtool-autograder.zip}")"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

cp "$here/setup.sh" "$here/run_autograder" "$stage/"
mkdir "$stage/agtool-lab"
# Only committed files: no virtualenv, no outputs, no learner work.
git -C "$repo" archive --format=tar HEAD | tar -x -C "$stage/agtool-lab"
rm -f "$out"
(cd "$stage" && python3 -m zipfile -c "$out" setup.sh run_autograder agtool-lab)
echo "wrote $out"
