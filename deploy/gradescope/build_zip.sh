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
# Only committed files: no virtualenv, no outputs, no learner work; and,
# through .gitattributes (export-ignore), no solutions/ and no tests/ (the
# autograder runs learner code beside what this zip holds).
git -C "$repo" archive --format=tar HEAD | tar -x -C "$stage/agtool-lab"
# The starter the zip ships (starter/, installed as grader.starter) and the lab's agtool/tools.py as
# committed are the starter as given, by the hash grader.outputs.starter knows it by: never someone's work.
want="$(sed -n 's/^STARTER_SHA256 = "\([0-9a-f]*\)".*/\1/p' "$stage/agtool-lab/grader/outputs/starter.py")"
for f in starter/tools.py agtool/tools.py; do
  got="$(sha256sum "$stage/agtool-lab/$f" 2>/dev/null | cut -d' ' -f1)"
  if [ -z "$want" ] || [ "$got" != "$want" ]; then
    echo "build_zip.sh: refusing: the committed $f is not the starter as given (sha256 ${got:-missing}, want ${want:-unknown})" >&2
    exit 1
  fi
done
# Refuse to build a zip a learner could read the reference solution from.
leaked="$(cd "$stage/agtool-lab" && { ls -d solutions tests 2>/dev/null; grep -rl --include='*.py' -e '^def write_report' . 2>/dev/null | grep -v -x -e './agtool/tools.py' -e './starter/tools.py' || true; })"
if [ -n "$leaked" ]; then
  echo "build_zip.sh: refusing to ship these (a solution would be readable by learner code):" >&2
  echo "$leaked" >&2
  exit 1
fi
rm -f "$out"
(cd "$stage" && python3 -m zipfile -c "$out" setup.sh run_autograder agtool-lab)
echo "wrote $out"
