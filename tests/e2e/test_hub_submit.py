"""Submit from a notebook on the hub, in Chromium: the grade comes back in the Check panel, the instructor's class page shows it.

A real JupyterHub with configurable-http-proxy runs the agtool grading
service as a hub-managed service, set up as ``deploy/jupyterhub/jupyterhub_config.py``
sets it up (roles, the ``agtool-instructors`` group, the learners' server
token scopes, ``$AGTOOL_SERVICE_URL``), with a course file: a due date a week
away and one attempt an hour. ``alice`` (her ``agtool/tools.py`` is the
reference solution) logs in through the browser and opens a notebook whose
one cell is a Check cell. Its panel offers Submit, with the due date and her
attempts left beside it; she presses Submit, confirms (the question says the
whole module is graded), and the grade the service gave appears under the
panel; with no attempt left, Submit is disabled and says when the next one is
allowed. Her own page on the service ("Your attempts", in the hub's look)
lists the attempt and its code; the class page is not hers (403). Then
``teacher``, a member of ``agtool-instructors``, opens the class page in a
browser of his own: the hub asks him to log in, and the page shows alice's
score; alice's page reads "alice's attempts" to him.

axe-core (WCAG 2.1 AA) runs on the Check and Submit widget (scoped to its
output area), on the confirmation, and on every service page met here: no
serious or critical violation (tests/e2e/axe.py).

So the due date and attempts left in the notebook, Submit disabled at 0
attempts, the confirmation, and the pages' words and look are all met end
to end, in a real browser.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import nbformat
import pytest

from e2e.axe import check_page
from e2e.hub import GradingService, give_home, log_in, running_hub, submit_login
from e2e.notebook_ui import open_notebook, output_errors, run_all_cells, screenshot_check_panel, wait_for_check_panel

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery staple"
NOTEBOOK = "submit.ipynb"
STEP = 1
GRADE_TIMEOUT_MS = 120_000  # the service grades all eight steps of the module on one worker
WIDGET_OUTPUT = ".jp-OutputArea-output:has(.agtool-check)"  # axe's scope: our widget, not JupyterLab's chrome
GRADE_LINE = re.compile(r"Attempt (\d+) submitted to the class grading service: (\d+)/(\d+) points")


def write_course(path: Path) -> dt.datetime:
    """A course file: due a week from now, one attempt per hour; returns the due time."""
    due = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=7)).replace(second=0, microsecond=0)
    path.write_text(
        f'[assignment]\nname = "agtool lab"\ndue = {due:%Y-%m-%dT%H:%M:%SZ}\ncounts = "best"\n'
        "[attempts]\nlimit = 1\nwindow_minutes = 60\n",
        encoding="utf-8",
    )
    return due


def write_check_notebook(path: Path) -> None:
    """A notebook of one Check cell, as a step notebook ends."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("Check your step, then submit it to the class grading service."),
        nbformat.v4.new_code_cell(f"from agtool_lab.widget import check\ncheck({STEP})"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def course_line(page) -> str:
    return page.locator(".jp-OutputArea-output .agtool-course").last.inner_text()


def test_a_learner_submits_from_the_notebook_and_the_instructor_sees_the_grade(
    browser, page, tmp_path, artifacts_dir, configurable_http_proxy
):
    home_root = tmp_path / "home"
    give_home(home_root / "alice", tools_source=REPO_ROOT / "solutions" / "tools.py")
    write_check_notebook(home_root / "alice" / NOTEBOOK)
    due = write_course(tmp_path / "course.toml")
    service = GradingService(args=["--course", str(tmp_path / "course.toml")], instructors=["teacher"])

    with running_hub(
        work=tmp_path / "hub",
        home_root=home_root,
        users=["alice", "teacher"],
        password=PASSWORD,
        proxy=configurable_http_proxy,
        service=service,
    ) as hub:
        log_in(page, hub, "alice", PASSWORD)
        open_notebook(page, hub.lab_url("alice", NOTEBOOK))
        run_all_cells(page)
        checked = wait_for_check_panel(page)
        assert checked.in_widget and checked.passed == checked.total > 0, checked.headline

        # Beside Check: Submit, and the course's due date with the attempts she has left.
        # Not exact=True: Chromium counts the icon font's generated glyph into the button's accessible name.
        submit_button = page.get_by_role("button", name=re.compile(r"^\W*Submit$"))
        submit_button.wait_for()
        page.wait_for_function(
            """() => /Attempts left: 1 of 1/.test(
                 [...document.querySelectorAll('.jp-OutputArea-output .agtool-course')].map(e => e.textContent).join(' '))"""
        )
        before = course_line(page)
        assert f"Due {due:%Y-%m-%d %H:%M} UTC (in 6 days" in before, before
        assert "Your best attempt counts" in before, before
        screenshot_check_panel(page, artifacts_dir, "hub-submit-before")
        check_page(page, artifacts_dir, "hub-check-and-submit-widget", scope=WIDGET_OUTPUT)

        # Submit asks first, saying what it grades; nothing is sent before "Confirm submit".
        submit_button.click()
        question = page.get_by_text("It grades your whole module, steps 1 to 11, not only step 1.")
        question.wait_for()
        assert "It uses 1 of your 1 attempt left." in question.inner_text()
        check_page(page, artifacts_dir, "hub-submit-confirmation", scope=WIDGET_OUTPUT)
        page.get_by_role("button", name=re.compile(r"^\W*Confirm submit$")).click()
        page.wait_for_function(
            """() => [...document.querySelectorAll('.jp-OutputArea-output')]
                     .some(e => /submitted to the class grading service: \\d+\\/\\d+ points/.test(e.textContent))""",
            timeout=GRADE_TIMEOUT_MS,
        )
        page.wait_for_function(
            """() => /Attempts left: 0 of 1/.test(
                 [...document.querySelectorAll('.jp-OutputArea-output .agtool-course')].map(e => e.textContent).join(' '))"""
        )
        output = page.locator(".jp-OutputArea-output:has(.agtool-course)").last.inner_text()
        _attempt_id, score, max_score = GRADE_LINE.search(output).groups()
        assert int(score) == int(max_score) > 0, output  # the whole module, graded by the service
        assert "Course status unavailable" not in output
        # No attempt left: Submit is disabled, and the line says when the next one is allowed (in 59 or 60 min).
        assert submit_button.is_disabled()
        assert re.search(r"No attempt left: your next attempt is allowed \S+ \S+ UTC \(in (59|60) min\)", output), (
            output
        )
        assert output_errors(page) == []
        check_page(page, artifacts_dir, "hub-submit-graded-widget", scope=WIDGET_OUTPUT)
        page.locator(".jp-OutputArea-output:has(.agtool-course)").last.screenshot(
            path=str(artifacts_dir / "hub-submit-graded-panel.png")
        )
        page.screenshot(path=str(artifacts_dir / "hub-submit-graded.png"))

        # Her own page on the service keeps the attempt; the class page is the instructors'.
        page.goto(hub.service_url)
        page.get_by_role("heading", name="Your attempts", exact=True).wait_for()
        assert page.get_by_role("heading", name=re.compile(r"^Attempt \d+ ")).count() >= 1  # her own numbers
        assert f"{score} / {max_score}" in page.inner_text("body")
        # The hub's look: its stylesheet, its logo linking home; a link back to her lab.
        assert page.locator('link[href="/hub/static/css/style.min.css"]').count() == 1
        assert page.get_by_role("link", name="Your lab", exact=True).get_attribute("href") == "/user/alice/lab"
        page.screenshot(path=str(artifacts_dir / "hub-submit-learner-page.png"), full_page=True)
        check_page(page, artifacts_dir, "hub-learner-page")
        page.get_by_role("link", name=re.compile(r"^code of attempt \d+$")).first.click()  # her latest
        page.get_by_role("heading", name="Your attempt 1: code").wait_for()  # her number, not the service's id
        assert "def validate_args" in page.locator("ol.code").inner_text()
        check_page(page, artifacts_dir, "hub-code-view")
        response = page.goto(hub.service_url + "class")
        assert response.status == 403, response.status

        # The instructor, in a browser of his own: the class page sends him to the hub's login, then back.
        teacher = browser.new_context(viewport=page.viewport_size)
        teacher.set_default_timeout(60_000)
        try:
            tpage = teacher.new_page()
            tpage.goto(hub.service_url + "class")
            tpage.wait_for_selector("#username_input")
            submit_login(tpage, hub, "teacher", PASSWORD, url=tpage.url)
            tpage.wait_for_url(re.compile(r"/services/agtool-grader/class"))
            row = tpage.locator("tr", has=tpage.get_by_role("link", name="alice", exact=True))
            row.wait_for()
            # By the header's names, not positions: the service adds columns (credited, why, files).
            header = tpage.locator("table").first.locator("tr").first.locator("th").all_inner_texts()
            cells = dict(zip([h.strip() for h in header], row.locator("td").all_inner_texts()))
            assert (cells["learner"], cells["attempts"], cells["best"], cells["max"]) == (
                "alice",
                "1",
                score,
                max_score,
            ), cells
            if "credited" in cells:  # under the course file: on time, so every point is credited
                assert float(cells["credited"]) == float(score), cells
            assert "teacher" not in tpage.locator("table").first.inner_text()  # he submitted nothing
            tpage.screenshot(path=str(artifacts_dir / "hub-submit-class-page.png"), full_page=True)
            check_page(tpage, artifacts_dir, "hub-class-page")
            tpage.get_by_role("link", name="alice", exact=True).click()
            tpage.get_by_role("heading", name="alice's attempts", exact=True).wait_for()
            assert "Your attempts, alice" not in tpage.inner_text("main")
            check_page(tpage, artifacts_dir, "hub-learner-page-instructor")
        finally:
            teacher.close()
