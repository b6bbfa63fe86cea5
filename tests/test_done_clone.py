"""A clone where the whole lab was done still passes the fast tier: the learner's file is never "the starter".

The README leads a newcomer to work in the clone's ``agtool/tools.py``;
nothing but the learner reads that file (the starter as given is the
committed ``starter/tools.py``, checked by hash). This copies the reference
solution over ``agtool/tools.py`` in a fresh clone under ``/var/tmp`` (a
clone under ``/var`` once failed the sandbox's allow-list test) and runs
``make test-fast`` there, as a learner who finished would. Slow (the fast
tier: 2 to 11 minutes on two cores, by the load). In CI it is the browser
path's (``tests/e2e/test_newcomer_path.py`` saves the solution from the lab's
editor in its clone under ``/var/tmp`` and runs ``make test-fast`` there; under
``$CI`` a browser test fails rather than skips), so this one runs only
outside CI: the fast tier runs once either way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# make's own variables from a parent make, pytest's from this run, the grader's settings: not the clone's.
_NOT_PASSED_ON = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")

pytestmark = pytest.mark.slow


def clean_env() -> dict[str, str]:
    """This process's environment without a parent make's, pytest's or the grader's own variables."""
    return {
        k: v
        for k, v in os.environ.items()
        if k not in _NOT_PASSED_ON and not k.startswith("PYTEST_") and k != "COLUMNS" and not _grader_setting(k)
    }


def _grader_setting(name: str) -> bool:
    """A grader setting of this run (``$AGTOOL_SANDBOX``...), not the tests' own (``$AGTOOL_TEST_POSTGRES_URL``)."""
    return name.startswith("AGTOOL_") and not name.startswith(("AGTOOL_TEST_", "AGTOOL_E2E_"))


def done_clone(parent: Path) -> Path:
    """A fresh clone of this checkout's HEAD in ``parent`` whose ``agtool/tools.py`` is the solution.

    Its ``.venv`` is this checkout's (linked): ``make -o .venv/.installed`` installs nothing.
    """
    clone = parent / "agtool-lab"
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(clone)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (clone / ".venv").symlink_to(REPO / ".venv")
    shutil.copyfile(clone / "solutions" / "tools.py", clone / "agtool" / "tools.py")
    return clone


@pytest.mark.skipif(bool(os.environ.get("CI")), reason="in CI the newcomer's browser path runs this clone's fast tier")
def test_make_test_fast_passes_in_a_clone_under_var_tmp_whose_agtool_tools_py_is_the_solution():
    if not (REPO / ".git").exists() or not os.access("/var/tmp", os.W_OK):
        pytest.skip("needs a git checkout and a writable /var/tmp")
    top = Path(tempfile.mkdtemp(prefix="agtool-done-", dir="/var/tmp"))
    try:
        clone = done_clone(top)
        learner = (clone / "agtool" / "tools.py").read_bytes()
        assert (
            learner == (clone / "solutions" / "tools.py").read_bytes() != (clone / "starter" / "tools.py").read_bytes()
        )
        done = subprocess.run(
            ["make", "--no-print-directory", "-o", ".venv/.installed", "test-fast"],
            cwd=clone,
            capture_output=True,
            text=True,
            timeout=1800,
            env=clean_env(),
        )
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-60:])
        assert done.returncode == 0, tail
        assert " passed" in tail and " failed" not in tail and " error" not in tail, tail
        assert (clone / "agtool" / "tools.py").read_bytes() == learner  # the learner's work, untouched
    finally:
        shutil.rmtree(top, ignore_errors=True)
