"""Instructor actions through a real JupyterHub, in Chromium: every form, its XSRF field, and what each side sees.

A real hub (DummyAuthenticator), its proxy and the grading service
(tests/e2e/classroom.py) with a course file: at most one attempt per day.
alice and bob submit the starter. In the browser, logged in through the
hub's OAuth, the teacher grants alice an extension and two extra attempts,
overrides her grade with a reason and regrades the class; alice then sees
each change with its reason, files a regrade request (hostile text, shown
escaped), the teacher accepts it on the instructor actions page, and alice
reads the answer. Selectors are roles and labels; axe-core finds no serious or critical
WCAG 2.1 AA violation in the forms and the actions page. Screenshots go to ``artifacts/e2e/``.
"""

from __future__ import annotations

import contextlib
import json
import re
import time

import pytest

from e2e.axe import check_page
from e2e.classroom import Classroom, proxy_command
from e2e.conftest import VIEWPORT

pytestmark = pytest.mark.e2e

COURSE = '[assignment]\nname = "agtool lab"\ndue = 2099-03-01T12:00:00Z\n[attempts]\nlimit = 1\nwindow_minutes = 1440\n'
HOSTILE = "<script>alert(1)</script> step 1 is right"


@pytest.fixture
def room(tmp_path):
    pytest.importorskip("jupyterhub")
    course = tmp_path / "course.toml"
    course.write_text(COURSE, encoding="utf-8")
    classroom = Classroom(tmp_path / "hub", proxy_command(), f"sqlite:///{tmp_path / 'service.sqlite'}")
    try:
        classroom.start_hub()
        classroom.start_service("--course", str(course))
        yield classroom
    finally:
        classroom.stop()


def _submit(page, button: str) -> None:
    with page.expect_navigation():
        page.get_by_role("button", name=button).click()


def _wait_all_graded(room: Classroom, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, rows = room.api("GET", "api/class", "teacher")
        assert status == 200, rows
        if rows["learners"] and all(r["pending"] == 0 and r["graded"] == r["attempts"] for r in rows["learners"]):
            return
        time.sleep(0.5)
    raise AssertionError("the class was not graded in time:\n" + (room.work / "service.log").read_text()[-3000:])


@contextlib.contextmanager
def _as(browser, room: Classroom, user: str):
    """A page of the service, logged in as ``user`` through the hub's login page and OAuth."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    try:
        page = context.new_page()
        page.goto(room.base)
        page.fill("#username_input", user)
        page.fill("#password_input", "pw")
        page.click("#login_submit")
        page.wait_for_url(re.compile(re.escape(room.base)), timeout=60_000)
        yield page
    finally:
        context.close()


def _teacher_acts_on_alice(page, room: Classroom, artifacts_dir) -> None:
    # The login cookie alone acts on nothing: a form needs the page's _xsrf field (another site has none).
    for form in ({"learner": "alice", "extra": "5"}, {"learner": "alice", "extra": "5", "_xsrf": "forged"}):
        forged = page.request.post(room.base + "actions/attempts", form=form, max_redirects=0)
        assert forged.status == 403 and "xsrf" in forged.text().lower(), (forged.status, forged.text()[-600:])
    assert room.api("GET", "api/actions", "teacher")[1]["actions"] == []
    page.goto(room.base + "learners/alice")
    page.get_by_label("New due date (UTC)").fill("2099-03-08T12:00")
    page.get_by_label("Reason for the extension").fill("medical note seen")
    _submit(page, "Grant the extension")
    page.get_by_label("Extra attempts", exact=True).fill("2")
    page.get_by_label("Reason for the extra attempts").fill("network outage on Monday")
    _submit(page, "Add the attempts")
    page.get_by_label("Grade that counts").fill("50")
    page.get_by_label("Reason for the override (required)").fill("steps 1-2 checked by hand")
    _submit(page, "Override the grade")
    changes = page.get_by_role("region", name="Changes made for alice")
    for words in (
        "medical note seen",
        "network outage on Monday",
        "steps 1-2 checked by hand",
        "2 extra attempts for alice",
        "grade of alice set to 50/",
    ):
        assert words in changes.inner_text(), words
    changes.screenshot(path=str(artifacts_dir / "actions-teacher-learner-page.png"))
    check_page(page, artifacts_dir, "actions-learner-page-forms", scope='section[aria-labelledby="changes"]')
    page.goto(room.base + "class/actions")
    page.get_by_label("Every learner's counting attempt").check()
    page.get_by_label("Reason for the class regrade").fill("grader fix 1.2.3")
    _submit(page, "Regrade the class")
    log = page.get_by_role("region", name="Log of instructor actions").inner_text()
    assert "regrade of every learner's counting attempt" in log, log


def _alice_sees_the_changes_and_appeals(page, artifacts_dir) -> None:
    changes = page.get_by_role("region", name="Changes by your instructor")
    for words in (
        "medical note seen",
        "network outage on Monday",
        "steps 1-2 checked by hand",
        "grader fix 1.2.3",
        "Before the regrade (kept)",
    ):
        assert words in changes.inner_text(), words
    page.get_by_label("Your regrade request: what was graded wrongly?").fill(HOSTILE)
    _submit(page, "Send the request")
    changes = page.get_by_role("region", name="Changes by your instructor")
    assert HOSTILE in changes.inner_text() and "Not answered yet." in changes.inner_text()
    check_page(page, artifacts_dir, "actions-learner-changes", scope='section[aria-labelledby="changes"]')
    changes.screenshot(path=str(artifacts_dir / "actions-learner-request.png"))


def _teacher_answers(page, room: Classroom, appeal: int, artifacts_dir) -> None:
    page.goto(room.base + "class/actions")
    waiting = page.get_by_role("region", name=re.compile("Open regrade requests"))
    assert HOSTILE in waiting.inner_text() and page.locator("script", has_text="alert(1)").count() == 0
    page.get_by_label(f"Answer to alice's request {appeal}").fill("Agreed: step 1 passes by hand.")
    page.get_by_label(f"Accept request {appeal}", exact=True).check()
    page.screenshot(path=str(artifacts_dir / "actions-teacher-answers.png"), full_page=True)
    check_page(page, artifacts_dir, "actions-page")
    _submit(page, f"Send the answer to request {appeal}")
    assert "Open regrade requests (0)" in page.content()


def test_an_instructor_acts_in_the_browser_and_the_learner_sees_it_and_appeals(room, browser, artifacts_dir):
    from e2e.classroom import REPO

    starter = (REPO / "starter" / "tools.py").read_bytes()
    for who in ("alice", "bob"):
        status, sent = room.api("POST", "api/submissions", who, starter)
        assert status == 202, sent
    _wait_all_graded(room)
    assert room.api("POST", "api/submissions", "alice", starter)[0] == 429  # the course's one attempt a day

    with _as(browser, room, "teacher") as page:
        _teacher_acts_on_alice(page, room, artifacts_dir)
    _wait_all_graded(room)
    listed = room.api("GET", "api/actions", "teacher")[1]
    regrade = [a for a in listed["actions"] if a["kind"] == "regrade"][0]
    assert len(regrade["data"]["attempts"]) == 2 and len(listed["past_results"]) == 2
    assert room.api("POST", "api/submissions", "alice", starter)[0] == 202  # the extra attempts
    course = room.api("GET", "api/course", "alice")[1]
    assert course["due"] == "2099-03-08T12:00:00Z" and course["limit"] == 3, course
    grades = room.api("GET", "grades.csv", "teacher")[1]
    alice_row = [line for line in grades.splitlines() if line.startswith("alice,")][0]
    assert "steps 1-2 checked by hand" in alice_row and ",50.0," in alice_row, alice_row

    with _as(browser, room, "alice") as page:
        _alice_sees_the_changes_and_appeals(page, artifacts_dir)
    appeal = [a for a in room.api("GET", "api/actions", "teacher")[1]["actions"] if a["kind"] == "appeal"][0]
    with _as(browser, room, "teacher") as page:
        _teacher_answers(page, room, appeal["id"], artifacts_dir)
    with _as(browser, room, "alice") as page:
        changes = page.get_by_role("region", name="Changes by your instructor")
        assert "Answer (accepted" in changes.inner_text() and "Agreed: step 1 passes by hand." in changes.inner_text()
        changes.screenshot(path=str(artifacts_dir / "actions-learner-answer.png"))
    answered = room.api("GET", "api/actions", "alice")[1]
    assert [a["kind"] for a in answered["actions"]][-2:] == ["appeal", "answer"]
    assert json.dumps(answered).count("bob") == 0  # a learner sees none of a classmate's
