"""Instructor actions through a real JupyterHub, in Chromium: every form, its XSRF field, and what each side sees.

A real hub (DummyAuthenticator), its proxy and the grading service
(tests/e2e/classroom.py) with a course file: at most one attempt per day.
alice and bob submit the starter. In the browser, logged in through the
hub's OAuth, the teacher grants alice an extension and two extra attempts,
overrides her grade with a reason and regrades the class; alice then sees
each change with its reason, files a regrade request (hostile text, shown
escaped), the teacher accepts it on the instructor actions page, and alice
reads the answer. Selectors are roles and labels. Screenshots go to
``artifacts/e2e/actions-*.png``.
"""
from __future__ import annotations

import json
import re
import time

import pytest

from e2e.classroom import Classroom, proxy_command
from e2e.conftest import VIEWPORT

pytestmark = pytest.mark.e2e

COURSE = ('[assignment]\nname = "agtool lab"\ndue = 2099-03-01T12:00:00Z\n'
          '[attempts]\nlimit = 1\nwindow_minutes = 1440\n')
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


def _log_in(browser, room: Classroom, user: str):
    """A browser context logged into the service through the hub's login page and OAuth."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.goto(room.base)
    page.fill("#username_input", user)
    page.fill("#password_input", "pw")
    page.click("#login_submit")
    page.wait_for_url(re.compile(re.escape(room.base)), timeout=60_000)
    return context, page


def _submit(page, button: str) -> None:
    with page.expect_navigation():
        page.get_by_role("button", name=button).click()
    print("DEBUG", page.url, page.locator("main").inner_text()[:400])


def _wait_all_graded(room: Classroom, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, rows = room.api("GET", "api/class", "teacher")
        assert status == 200, rows
        if rows["learners"] and all(r["pending"] == 0 and r["graded"] == r["attempts"] for r in rows["learners"]):
            return
        time.sleep(0.5)
    raise AssertionError("the class was not graded in time:\n" + (room.work / "service.log").read_text()[-3000:])


def test_an_instructor_acts_in_the_browser_and_the_learner_sees_it_and_appeals(room, browser, artifacts_dir):
    from e2e.classroom import REPO

    starter = (REPO / "agtool" / "tools.py").read_bytes()
    for who in ("alice", "bob"):
        status, sent = room.api("POST", "api/submissions", who, starter)
        assert status == 202, sent
    _wait_all_graded(room)
    assert room.api("POST", "api/submissions", "alice", starter)[0] == 429  # the course's one attempt a day

    teacher, page = _log_in(browser, room, "teacher")
    try:
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
        for words in ("medical note seen", "network outage on Monday", "steps 1-2 checked by hand",
                      "2 extra attempts for alice", "grade of alice set to 50/"):
            assert words in changes.inner_text(), words
        page.screenshot(path=str(artifacts_dir / "actions-teacher-learner-page.png"), full_page=True)

        page.goto(room.base + "class/actions")
        page.get_by_label("Every learner's counting attempt").check()
        page.get_by_label("Reason for the class regrade").fill("grader fix 1.2.3")
        _submit(page, "Regrade the class")
        assert "regrade of every learner's counting attempt" in page.get_by_role("region", name="Instructor actions") \
            .inner_text()
    finally:
        teacher.close()
    _wait_all_graded(room)
    status, listed = room.api("GET", "api/actions", "teacher")
    regrade = [a for a in listed["actions"] if a["kind"] == "regrade"][0]
    assert len(regrade["data"]["attempts"]) == 2 and len(listed["past_results"]) == 2
    assert room.api("POST", "api/submissions", "alice", starter)[0] == 202  # the extra attempts
    status, course = room.api("GET", "api/course", "alice")
    assert course["due"] == "2099-03-08T12:00:00Z" and course["limit"] == 3, course
    status, grades = room.api("GET", "grades.csv", "teacher")
    alice_row = [line for line in grades.splitlines() if line.startswith("alice,")][0]
    assert "steps 1-2 checked by hand" in alice_row and ",50.0," in alice_row, alice_row

    learner, page = _log_in(browser, room, "alice")
    try:
        changes = page.get_by_role("region", name="Changes by your instructor")
        text = changes.inner_text()
        for words in ("medical note seen", "network outage on Monday", "steps 1-2 checked by hand", "grader fix 1.2.3",
                      "Before the regrade (kept)"):
            assert words in text, words
        page.get_by_label("Your regrade request: what was graded wrongly?").fill(HOSTILE)
        _submit(page, "Send the request")
        assert HOSTILE in page.get_by_role("region", name="Changes by your instructor").inner_text()
        assert "Not answered yet." in page.content()
        page.screenshot(path=str(artifacts_dir / "actions-learner-request.png"), full_page=True)
    finally:
        learner.close()

    appeal = [a for a in room.api("GET", "api/actions", "teacher")[1]["actions"] if a["kind"] == "appeal"][0]
    teacher, page = _log_in(browser, room, "teacher")
    try:
        page.goto(room.base + "class/actions")
        waiting = page.get_by_role("region", name=re.compile("Open regrade requests"))
        assert HOSTILE in waiting.inner_text() and page.locator("script", has_text="alert(1)").count() == 0
        page.get_by_label(f"Answer to alice's request {appeal['id']}").fill("Agreed: step 1 passes by hand.")
        page.get_by_label(f"Accept request {appeal['id']}", exact=True).check()
        page.screenshot(path=str(artifacts_dir / "actions-teacher-answers.png"), full_page=True)
        _submit(page, f"Send the answer to request {appeal['id']}")
        assert "Open regrade requests (0)" in page.content()
    finally:
        teacher.close()

    learner, page = _log_in(browser, room, "alice")
    try:
        text = page.get_by_role("region", name="Changes by your instructor").inner_text()
        assert "Answer (accepted" in text and "Agreed: step 1 passes by hand." in text, text
        page.screenshot(path=str(artifacts_dir / "actions-learner-answer.png"), full_page=True)
    finally:
        learner.close()
    status, answered = room.api("GET", "api/actions", "alice")
    assert [a["kind"] for a in answered["actions"]][-2:] == ["appeal", "answer"]
    assert json.dumps(answered).count("bob") == 0  # a learner sees none of a classmate's
