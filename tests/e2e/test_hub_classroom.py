"""The classroom story end to end: a learner logs into JupyterHub, checks a step, the instructor grades the class.

Two learners have homes on the hub: ``alice`` has finished the lab (her
``agtool/tools.py`` is the reference solution), ``bob`` has the untouched
starter. Alice logs in through the browser with the hub's password, opens a
step notebook in her home and runs it: the Check panel grades *her* file and
every row passes. Then the instructor's batch command grades every home
folder, and the gradebook gives alice full marks -- the same points her panel
showed -- and bob fewer.
"""

from __future__ import annotations

import csv
import re
import subprocess
from pathlib import Path

import pytest

from e2e.hub import give_home, log_in, running_hub, submit_login
from e2e.notebook_ui import (
    open_notebook,
    output_errors,
    run_all_cells,
    screenshot_check_panel,
    wait_for_check_panel,
)
from e2e.processes import child_env, venv_bin

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]

PASSWORD = "correct horse battery staple"
NOTEBOOK = "03_call_boundary.ipynb"
STEP = 3
BATCH_TIMEOUT = 180


def read_gradebook(path):
    with open(path, newline="", encoding="utf-8") as f:
        return {row["learner"]: row for row in csv.DictReader(f)}


def test_learner_checks_in_the_hub_and_the_instructor_batch_grades_the_homes(
    browser, page, tmp_path, artifacts_dir, configurable_http_proxy
):
    home_root = tmp_path / "home"
    give_home(home_root / "alice", tools_source=REPO_ROOT / "solutions" / "tools.py", notebooks=(NOTEBOOK,))
    give_home(home_root / "bob", tools_source=REPO_ROOT / "starter" / "tools.py", notebooks=(NOTEBOOK,))

    with running_hub(
        work=tmp_path / "hub",
        home_root=home_root,
        users=["alice", "bob"],
        password=PASSWORD,
        proxy=configurable_http_proxy,
    ) as hub:
        submit_login(page, hub, "alice", "not the password")
        page.wait_for_selector("#login-main .login_error, .login_error", timeout=30_000)
        assert "/hub/login" in page.url, "a wrong password got past the hub"

        log_in(page, hub, "alice", PASSWORD)
        # Her lab's file browser shows her home: the package and the notebook handed out.
        for name in ("agtool", NOTEBOOK):
            page.locator(".jp-DirListing-item", has_text=name).first.wait_for(timeout=60_000)
        page.screenshot(path=str(artifacts_dir / "hub-alice-lab.png"))

        open_notebook(page, hub.lab_url("alice", NOTEBOOK))
        run_all_cells(page)
        panel = wait_for_check_panel(page)
        screenshot_check_panel(page, artifacts_dir, "hub-alice-check")
        assert output_errors(page) == []

        assert panel.in_widget, "the Check panel in the hub is the HTML fallback, not the widget"
        assert str(home_root / "alice" / "agtool" / "tools.py") in panel.headline, (
            "the Check cell did not grade the learner's own file"
        )
        assert panel.passed == panel.total == len(panel.rows) > 0, panel.headline
        panel_points = re.search(r"(\d+)/(\d+) points", panel.headline).groups()

    out = tmp_path / "grades"
    batch = subprocess.run(
        [venv_bin("agtool-grade"), "batch", f"{home_root}/*/agtool/tools.py", "--out", str(out), "--seed", "11"],
        capture_output=True,
        text=True,
        timeout=BATCH_TIMEOUT,
        env=child_env(),
        cwd=tmp_path,
    )
    assert batch.returncode in (0, 1), f"batch failed ({batch.returncode}):\n{batch.stdout}\n{batch.stderr}"
    grades = read_gradebook(out / "grades.csv")

    assert set(grades) == {"alice", "bob"}, grades.keys()
    alice, bob = grades["alice"], grades["bob"]
    assert float(alice["score"]) == float(alice["max_score"]) > 0, alice
    assert float(alice[f"step{STEP}"]) == float(panel_points[1]) == float(panel_points[0]), (
        "the gradebook and the learner's panel disagree on this step"
    )
    assert float(bob["score"]) < float(alice["score"]), bob
    assert not alice["error"], alice["error"]
