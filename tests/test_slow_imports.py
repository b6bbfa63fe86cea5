"""Honest slow imports keep their marks.

Correct modules that differ from the solution in one honest way: a
``time.sleep`` of 1, 4 or 10 s at import (a data file, a tokenizer), or
imports of pandas, numpy and matplotlib. Each must get every point from
``agtool-grade check``, from the notebook's path (``agtool_lab.widget.grade_step``,
one step per Check cell) and from ``agtool-grade batch``, all with their
default options. A step imports the module once and its fresh probes start
from that import (``grader.engine.child``), and the import has its own time
bound (``Limits.import_timeout``), so none of them pays the import per probe
or counts it against the step's time for its calls.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import full_marks

from grader.report import STEPS

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SOLUTION = (REPO / "solutions" / "tools.py").read_text()
FUTURE = "from __future__ import annotations\n"
FULL = full_marks()  # the solution's score: every registered check's points

SLOW = {
    "sleep1": "import time; time.sleep(1)  # an honest slow import\n",
    "sleep4": "import time; time.sleep(4)\n",
    "sleep10": "import time; time.sleep(10)\n",
    "heavy": "import matplotlib, numpy, pandas  # what learners import\n",
}
FAST_ENOUGH = ("sleep1", "sleep4", "heavy")  # sleep10 runs in the slow tests


@pytest.fixture(autouse=True)
def default_import_bound(monkeypatch):
    """The default bound of the import (another test module may have shortened it for its session)."""
    monkeypatch.delenv("AGTOOL_IMPORT_TIMEOUT", raising=False)


def slow_module(folder: Path, name: str) -> Path:
    """The solution with ``SLOW[name]`` right after its ``from __future__`` line."""
    assert SOLUTION.count(FUTURE) == 1
    path = folder / name / "tools.py"
    path.parent.mkdir(parents=True)
    path.write_text(SOLUTION.replace(FUTURE, FUTURE + SLOW[name]))
    return path


def check_cli(path: Path, *extra: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {k: v for k, v in os.environ.items() if k != "AGTOOL_IMPORT_TIMEOUT"}
    began = time.monotonic()
    done = subprocess.run(
        [str(BIN / "agtool-grade"), "check", str(path), "--seed", "3", *extra],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    return done, time.monotonic() - began


@pytest.mark.parametrize("name", ["sleep1", "heavy"])
def test_check_gives_full_marks(tmp_path, name):
    done, _ = check_cli(slow_module(tmp_path, name))
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"{FULL}/{FULL} points" in done.stdout


def test_a_4_s_import_is_graded_by_check_in_under_20_s(tmp_path):
    done, wall = check_cli(slow_module(tmp_path, "sleep4"))
    assert done.returncode == 0 and f"{FULL}/{FULL} points" in done.stdout, done.stdout[-3000:]
    assert wall < 20, f"{wall:.1f} s"


@pytest.mark.slow
def test_a_10_s_import_gets_full_marks_from_check(tmp_path):
    done, _ = check_cli(slow_module(tmp_path, "sleep10"))
    assert done.returncode == 0 and f"{FULL}/{FULL} points" in done.stdout, done.stdout[-3000:]


def _notebook_score(path: Path) -> tuple[int, int]:
    from agtool_lab.widget import grade_step

    reports = [grade_step(step, path=path, seed=3) for step in STEPS]
    assert not [r.error for r in reports if r.error]
    return sum(r.score for r in reports), sum(r.max_score for r in reports)


@pytest.mark.parametrize("name", ["sleep1", "heavy"])
def test_the_notebook_path_gives_full_marks(tmp_path, name):
    assert _notebook_score(slow_module(tmp_path, name)) == (FULL, FULL)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sleep4", "sleep10"])
def test_the_notebook_path_gives_full_marks_to_slower_imports(tmp_path, name):
    assert _notebook_score(slow_module(tmp_path, name)) == (FULL, FULL)


def _batch_scores(tmp_path: Path, names) -> dict:
    for name in names:
        slow_module(tmp_path / "class", name)
    done = subprocess.run(
        [str(BIN / "agtool-grade"), "batch", str(tmp_path / "class"), "--out", str(tmp_path / "out"), "--seed", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]
    with open(tmp_path / "out" / "grades.csv", newline="") as fh:
        return {row["learner"]: (row["score"], row["max_score"], row["error"]) for row in csv.DictReader(fh)}


def test_batch_with_default_options_gives_full_marks(tmp_path):
    rows = _batch_scores(tmp_path, FAST_ENOUGH)
    assert rows == {name: (str(FULL), str(FULL), "") for name in FAST_ENOUGH}


@pytest.mark.slow
def test_batch_gives_a_10_s_import_full_marks(tmp_path):
    assert _batch_scores(tmp_path, ["sleep10"]) == {"sleep10": (str(FULL), str(FULL), "")}


def test_an_import_past_its_own_bound_says_so(tmp_path):
    path = slow_module(tmp_path, "sleep4")
    env = {**os.environ, "AGTOOL_IMPORT_TIMEOUT": "1.5"}
    done = subprocess.run(
        [str(BIN / "agtool-grade"), "check", str(path), "--seed", "3", "--step", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 1
    assert (
        "Your module could not be imported: while importing it, the process was killed: the import ran 1.5 s, "
        "over its time limit of 1.5 s"
    ) in done.stdout
