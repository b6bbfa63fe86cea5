"""Submit and the course line in the notebook (``agtool_lab.submit``, the Check panel) against a small fake service.

The fake speaks the grading service's API (``POST api/submissions``, ``GET
api/submissions/ID``, ``GET api/course``) on localhost, so the notebook side
is tested without a hub: the due date and attempts left beside Submit, their
refresh after a submit, learner-visible server text escaped, and every way
the service can fail (absent, unreachable, slow, an old service without
``api/course``, a page that is not JSON) ending as one line, never a
traceback. The course status itself comes from the service's own
``grader.service.attempt_policy.status`` where the test can build it, so the widget
reads the fields the service really sends.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from agtool_lab import submit as service
from agtool_lab.view import course_html, course_line
from agtool_lab.widget import CheckPanel
from grader.report import CheckResult, Report

REPO = Path(__file__).resolve().parents[1]
SOLUTION = REPO / "solutions" / "tools.py"
NOW = dt.datetime(2026, 3, 1, 10, 0, tzinfo=dt.timezone.utc)
COURSE = {
    "name": "agtool lab",
    "due": "2026-03-01T12:00:00Z",
    "late_due": "2026-03-08T12:00:00Z",
    "late_credit": 0.8,
    "counts": "best",
    "limit": 3,
    "window_minutes": 60.0,
    "attempts_left": 3,
    "next_allowed": None,
    "period_now": "on time",
}


def _report(score: int = 2) -> dict:
    return Report(
        seed=7, path="tools.py", checks=[CheckResult("step1/names", 1, score == 2, score, 2, "Data names <&>")]
    ).to_dict()


class FakeService:
    """The service's API on a free localhost port; ``course`` is what ``api/course`` answers (or an HTTP status)."""

    def __init__(self):
        self.course: object = dict(COURSE)
        self.course_status = 200
        self.course_body: bytes | None = None  # raw bytes instead of JSON (a proxy's HTML page)
        self.course_delay = 0.0
        self.refuse: tuple[int, str] | None = None  # POST answers this status and error
        self.requests: list[tuple[str, str, str]] = []  # method, path, Authorization
        self.attempts: dict[int, bytes] = {}
        self.report: dict | None = None  # the graded attempt's report (None: _report())
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest's output clean
                pass

            def _json(self, status, data):
                body = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                fake.requests.append(("POST", self.path, self.headers.get("Authorization", "")))
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if fake.refuse:
                    return self._json(fake.refuse[0], {"error": fake.refuse[1]})
                attempt_id = len(fake.attempts) + 1
                fake.attempts[attempt_id] = body
                if isinstance(fake.course, dict) and fake.course.get("attempts_left"):
                    fake.course["attempts_left"] -= 1
                self._json(202, {"id": attempt_id, "status": "queued", "url": f"/p/api/submissions/{attempt_id}"})

            def do_GET(self):
                fake.requests.append(("GET", self.path, self.headers.get("Authorization", "")))
                if self.path.endswith("/api/course"):
                    time.sleep(fake.course_delay)
                    if fake.course_body is not None:
                        self.send_response(200)
                        self.send_header("Content-Type", "text/html")
                        self.end_headers()
                        self.wfile.write(fake.course_body)
                        return
                    if fake.course_status != 200:
                        return self._json(fake.course_status, {"error": "no such route"})
                    return self._json(200, fake.course)
                attempt_id = int(self.path.rsplit("/", 1)[1])
                if attempt_id not in fake.attempts:
                    return self._json(404, {"error": f"no attempt {attempt_id} of yours"})
                report = fake.report or _report()
                self._json(
                    200,
                    {
                        "id": attempt_id,
                        "status": "graded",
                        "score": report["score"],
                        "max_score": report["max_score"],
                        "report": report,
                    },
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/services/agtool-grader/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def env(self) -> dict:
        return {service.SERVICE_URL_ENV: self.url, service.TOKEN_ENV: "learner-token"}

    def paths(self, method: str) -> list[str]:
        return [p for m, p, _ in self.requests if m == method]


@pytest.fixture
def fake():
    fake = FakeService()
    fake.thread.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


@pytest.fixture
def on_hub(fake, monkeypatch):
    """The kernel of a learner's server on a hub with the fake service: the two variables the recipe sets."""
    for name, value in fake.env().items():
        monkeypatch.setenv(name, value)
    return fake


def _closed_port_url() -> str:
    import socket

    with socket.socket() as s:  # bound then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/services/agtool-grader/"


def _checked() -> Report:
    return Report(seed=5, path=str(SOLUTION), checks=[CheckResult("step1/names", 1, True, 2, 2, "Data names")])


# ---------------------------------------------------------------------------- the course line


def test_the_course_line_reads_what_the_service_sends():
    # The service's own status(), so a field renamed there breaks this test, not a learner's notebook.
    pytest.importorskip("sqlalchemy")
    from grader.course.policy import parse_policy
    from grader.service.attempt_policy import status
    from grader.service.db import Store

    now = dt.datetime.now(dt.timezone.utc).replace(second=0, microsecond=0)
    due, late = now + dt.timedelta(days=2, minutes=1), now + dt.timedelta(days=9, minutes=1)
    stamp = "%Y-%m-%dT%H:%M:00Z"
    policy = parse_policy(
        f'[assignment]\nname = "agtool lab"\ndue = {due:{stamp}}\n'
        f"late_due = {late:{stamp}}\nlate_credit = 0.8\n"
        "[attempts]\nlimit = 3\nwindow_minutes = 60\n"
    )
    store = Store("sqlite://")
    store.add_attempt("ana", b"x = 1\n", seed=1)
    sent = json.loads(json.dumps(status(store, "ana", policy)))  # as it travels: JSON
    line = course_line(sent, now)
    assert line.startswith(
        f"agtool lab: Due {due:%Y-%m-%d %H:%M} UTC (in 2 days), late until "
        f"{late:%Y-%m-%d %H:%M} UTC (in 9 days) for 80% of the points"
    ), line
    assert "Attempts left: 2 of 3 per 60 minutes" in line and "Your best attempt counts" in line
    assert "Now late" not in line and "Past the deadline" not in line
    assert "\n" not in line
    store.close()


def test_the_course_line_after_the_due_date_and_out_of_attempts_says_when_to_come_back():
    late = {**COURSE, "period_now": "late", "attempts_left": 0, "next_allowed": "2026-03-01T10:06:00Z"}
    line = course_line(late, NOW)
    assert "Now late: 80% credit" in line
    assert "Attempts left: 0 of 3 per 60 minutes" in line
    assert "next attempt allowed 2026-03-01 10:06 UTC (in 6 min)" in line
    gone = course_line({**COURSE, "late_due": None, "period_now": "after the late date"}, NOW)
    assert "Past the deadline: no credit" in gone and "late until" not in gone


def test_the_course_line_uses_the_service_s_clock_credit_now_and_the_counting_attempt_when_sent():
    newer = {
        **COURSE,
        "now": "2026-03-01T11:30:00Z",
        "period_now": "late",
        "credit_now": 0.5,
        "attempts_used": 1,
        "attempts_left": 2,
        "counted": {"attempt": 4, "credited": 106.4, "max_score": 133, "period": "late", "why": "the best"},
    }
    line = course_line(newer)  # no clock given: the service's
    assert "Due 2026-03-01 12:00 UTC (in 30 min)" in line and "Now late: 50% credit" in line
    assert line.endswith("Your best attempt counts \u00b7 counting now: attempt 4: 106.4/133"), line
    assert "counting now" not in course_line({**COURSE, "counted": None}, NOW)


@pytest.mark.parametrize(
    "sent, expected",
    [
        (None, ""),  # no course file: no line at all
        ([1, 2], ""),
        ("due tomorrow", ""),  # not an object: nothing to show
        ({}, ""),
        ({"due": "2026-03-01T12:00:00Z"}, "Due 2026-03-01 12:00 UTC (in 2 h)"),
        ({"due": "not a time"}, "Due not a time"),
        ({"limit": 3, "attempts_used": 1}, "Attempts left: 2 of 3"),  # a newer field, alone
        ({"limit": 3, "attempts_left": True}, "At most 3 attempts"),  # a bool is not a count
        (
            {"limit": None, "attempts_left": None, "counts": "last", "future_field": {"x": 1}},
            "Your last attempt on time counts",
        ),
    ],
)
def test_the_course_line_tolerates_missing_extra_and_odd_fields(sent, expected):
    assert course_line(sent, NOW) == expected


def test_server_text_is_escaped_in_the_html_and_kept_on_one_line():
    hostile = {
        "name": "<img src=x onerror=alert(1)>\u202eevil\nline",
        "due": "<script>alert(1)</script>",
        "counts": "best",
    }
    html = course_html(hostile, NOW)
    assert "<img" not in html and "<script" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "&lt;script&gt;" in html
    assert "\u202e" not in html and "\\u202e" in html and "\n" not in html
    assert "\n" not in course_line(hostile, NOW)


# ---------------------------------------------------------------------------- fetching it


def test_course_status_asks_the_service_with_the_learner_s_token(fake):
    got = service.course_status(env=fake.env())
    assert got.problem == "" and got.status["attempts_left"] == 3
    assert fake.requests == [("GET", "/services/agtool-grader/api/course", "token learner-token")]
    assert "Attempts left: 3 of 3" in got.text and 'class="agtool-course"' in got._repr_html_()


def test_a_course_without_a_policy_shows_no_line(fake):
    fake.course = None
    got = service.course_status(env=fake.env())
    assert (got.status, got.problem, got.text, got._repr_html_()) == (None, "", "", "")


@pytest.mark.parametrize(
    "setup, words",
    [
        (lambda f: setattr(f, "course_status", 404), "answered 404: no such route"),  # an older service
        (lambda f: setattr(f, "course_body", b"<html>Sign in to the hub</html>"), "not JSON"),  # a login page
        (lambda f: setattr(f, "course", [1, 2]), "not an object"),
    ],
)
def test_a_service_that_answers_oddly_gives_one_line(fake, setup, words):
    setup(fake)
    got = service.course_status(env=fake.env())
    assert got.status is None and words in got.problem, got.problem
    assert got.text.startswith("Course status unavailable: ") and "\n" not in got.text
    assert "<html>" not in got._repr_html_()


def test_an_unreachable_or_slow_service_gives_one_line_in_bounded_time(fake):
    got = service.course_status(env={**fake.env(), service.SERVICE_URL_ENV: _closed_port_url()})
    assert "could not reach the grading service" in got.problem and "\n" not in got.text
    fake.course_delay = 3.0
    started = time.monotonic()
    slow = service.course_status(env=fake.env(), timeout=0.5)
    assert time.monotonic() - started < 2.5
    assert "could not reach the grading service" in slow.problem and "timed out" in slow.problem


def test_outside_a_hub_course_status_says_why_without_the_network():
    assert service.course_status(env={}).problem.startswith("No grading service here")


# ---------------------------------------------------------------------------- submit()


def test_submit_shows_the_grade_then_the_course_line(fake):
    shown = service.submit(SOLUTION, env=fake.env())
    assert isinstance(shown, service.Submitted), shown
    assert fake.attempts[1] == SOLUTION.read_bytes()
    html = shown._repr_html_()
    assert "2/2 points" in html and "Data names &lt;&amp;&gt;" in html
    assert html.index("2/2 points") < html.index("Attempts left: 2 of 3")  # the count after this attempt
    assert repr(shown).splitlines()[1].startswith("agtool lab: Due")
    quiet = service.submit(SOLUTION, env=fake.env(), show_course=False)
    assert quiet.course is None and "agtool-course" not in quiet._repr_html_()


def test_a_refused_submit_is_a_message_with_the_service_s_reason_escaped(fake):
    fake.refuse = (429, "at most 3 attempts per 60 minutes; your next attempt is allowed at <2026-03-01T11:00:00Z>")
    shown = service.submit(SOLUTION, env=fake.env())
    assert isinstance(shown, service.Message)
    assert shown.text.startswith("the grading service answered 429: at most 3 attempts per 60 minutes")
    assert "&lt;2026-03-01T11:00:00Z&gt;" in shown._repr_html_() and "<2026" not in shown._repr_html_()


def test_submit_to_something_that_is_not_the_service_is_a_message(fake):
    fake.attempts = None  # POST fails inside the fake: the connection drops with no answer
    shown = service.submit(SOLUTION, env=fake.env())
    assert isinstance(shown, service.Message) and "\n" not in shown.text, shown


# ---------------------------------------------------------------------------- the Check panel


def test_without_a_service_the_panel_is_check_alone_and_asks_nothing(monkeypatch):
    monkeypatch.delenv(service.SERVICE_URL_ENV, raising=False)
    monkeypatch.setenv(service.TOKEN_ENV, "token")  # on a hub that has no grading service
    monkeypatch.setattr(service, "course_status", lambda **kw: pytest.fail("asked the network without a service"))
    panel = CheckPanel(1, _checked(), path=str(SOLUTION))
    assert panel.submit_button is None and panel.course_label is None and panel.submitted is None
    assert len(panel.children) == 2 and len(panel.children[1].children) == 2  # report; Try again + seed label


def test_the_panel_shows_due_date_and_attempts_left_beside_submit_and_refreshes_after_a_submit(on_hub):
    panel = CheckPanel(1, _checked(), path=str(SOLUTION))
    row = panel.children[1].children
    assert panel.submit_button in row and panel.course_label in row
    assert row.index(panel.course_label) > row.index(panel.submit_button)
    assert "Due 2026-03-01 12:00 UTC" in panel.course_label.value
    assert "Attempts left: 3 of 3 per 60 minutes" in panel.course_label.value

    panel.submit_button.click()  # asks first: nothing is sent before the learner confirms
    assert on_hub.paths("POST") == [] and panel.controls.asking.layout.display == "flex"
    panel.controls.confirm.click()
    assert "2/2 points" in panel.submitted.value
    assert "agtool-course" not in panel.submitted.value  # shown once, beside the buttons
    assert "Attempts left: 2 of 3 per 60 minutes" in panel.course_label.value
    assert on_hub.paths("GET").count("/services/agtool-grader/api/course") == 2
    assert not panel.submit_button.disabled and panel.status.value == "seed 5"


def test_the_panel_with_an_unreachable_service_still_checks_and_says_so_in_one_line(monkeypatch):
    monkeypatch.setenv(service.SERVICE_URL_ENV, _closed_port_url())
    monkeypatch.setenv(service.TOKEN_ENV, "token")
    panel = CheckPanel(1, _checked(), path=str(SOLUTION))
    assert "1/1 checks passed" in panel.body.value
    assert "Course status unavailable: could not reach the grading service" in panel.course_label.value
    assert "Traceback" not in panel.course_label.value
    panel.send()
    assert "Not submitted: could not reach the grading service" in panel.controls.notice.value
    assert not panel.submit_button.disabled


def test_a_submit_that_raises_anyway_never_reaches_the_notebook_as_a_traceback(on_hub, monkeypatch):
    panel = CheckPanel(1, _checked(), path=str(SOLUTION))

    def broken(path, **kw):
        raise KeyError("status")

    monkeypatch.setattr(service, "submit", broken)
    shown = panel.send()
    assert isinstance(shown, service.Message) and "Submit failed: KeyError" in panel.controls.notice.value
    assert not panel.submit_button.disabled


def test_a_submitted_report_of_every_step_is_headed_by_its_steps_not_one_step():
    report = Report(
        seed=3,
        path="tools.py",
        checks=[
            CheckResult("step1/names", 1, True, 2, 2, "Data names"),
            CheckResult("step8/writes", 8, False, 0, 3, "Writes both files", message="no tool_report.md"),
        ],
    )
    html = service.attempt_html({"id": 9, "status": "graded", "report": report.to_dict()})
    assert "Attempt 9 submitted to the class grading service</b>: 2/5 points." in html
    assert "<b>Steps 1-8: 1/2 checks passed, 2/5 points</b>" in html and "<b>Step 8:" not in html


def _whole_module() -> Report:
    """A submitted attempt's report: every step graded, a failure in step 3 and one in step 10."""
    checks = [
        CheckResult(
            f"step{step}/c{i}",
            step,
            (step, i) not in {(3, 0), (10, 1)},
            0 if (step, i) in {(3, 0), (10, 1)} else 1,
            1,
            f"Check {i} of step {step}",
            message="wrong",
        )
        for step in range(1, 12)
        for i in range(3)
    ]
    return Report(seed=3, path="tools.py", checks=checks, output={"10": "printed in step 10", "3": "printed in 3"})


def test_after_submit_the_step_10_panel_lists_only_step_10_s_checks(on_hub):
    # The service grades the whole module (here 33 checks; 119 for a real one), but the panel beside
    # notebook 10's Check cell shows step 10's rows only, and one line for the rest.
    on_hub.report = _whole_module().to_dict()
    panel = CheckPanel(10, _checked(), path=str(SOLUTION))
    panel.controls.confirm.click()
    shown = BeautifulSoup(panel.submitted.value, "html.parser")
    rows = shown.select(".agtool-check > table > tbody > tr")
    assert len(rows) == 3, panel.submitted.value
    text = shown.get_text(" ")
    assert "step10/c1" in panel.submitted.value and "step3/" not in panel.submitted.value
    assert "Step 10 of this attempt: 2/3 checks passed" in text
    assert "31/33 points" in text  # the attempt's score is the whole module's
    assert "Other steps: 29/30 checks passed; checks failed in step 3" in text
    assert "printed in step 10" in text and "printed in 3" not in text
    # submit() outside the panel (a cell of its own) still shows the whole module.
    whole = service.submit(SOLUTION, env=on_hub.env(), show_course=False)._repr_html_()
    assert "step3/c0" in whole and "Steps 1-11" in whole


def test_a_step_with_no_checks_in_the_attempt_shows_the_whole_module(on_hub):
    on_hub.report = _report()
    panel = CheckPanel(10, _checked(), path=str(SOLUTION))
    panel.controls.confirm.click()
    assert "Data names" in panel.submitted.value and "2/2 points" in panel.submitted.value


# ---------------------------------------------------------------------------- Submit: confirm, refuse, disable


def test_submit_asks_for_confirmation_saying_the_whole_module_is_graded_and_cancel_sends_nothing(on_hub):
    panel = CheckPanel(2, _checked(), path=str(SOLUTION))
    panel.submit_button.click()
    question = panel.controls.question.value
    assert "steps 1 to 11, not only step 2" in question and "It uses 1 of your 3 attempts left" in question
    panel.controls.cancel.click()
    assert panel.controls.asking.layout.display == "none" and on_hub.paths("POST") == []
    assert panel.submitted.value == ""


def test_a_refusal_is_a_sentence_beside_the_last_grade_which_stays(on_hub):
    panel = CheckPanel(1, _checked(), path=str(SOLUTION))
    panel.controls.confirm.click()
    assert "2/2 points" in panel.submitted.value
    on_hub.refuse = (429, "at most 3 attempts per 60 minutes; your next attempt is allowed at 2026-03-01T11:00:00Z")
    panel.controls.confirm.click()
    assert "2/2 points" in panel.submitted.value  # the last grade stays
    notice = panel.controls.notice.value
    assert "Not submitted: at most 3 attempts per 60 minutes" in notice and "answered 429" not in notice
    assert "2026-03-01 11:00 UTC (" in notice and "2026-03-01T11:00:00Z" not in notice
    assert "Your last grade stays as shown" in notice


def test_submit_is_disabled_with_no_attempt_left_and_says_when_the_next_is_allowed(on_hub):
    soon = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=42)).strftime("%Y-%m-%dT%H:%M:%SZ")
    on_hub.course.update(attempts_left=0, next_allowed=soon)
    panel = CheckPanel(1, _checked(), path=str(SOLUTION))
    assert panel.submit_button.disabled
    assert "No attempt left: your next attempt is allowed" in panel.course_label.value
    assert "(in 41 min)" in panel.course_label.value or "(in 42 min)" in panel.course_label.value
    on_hub.course.update(attempts_left=1, next_allowed=None)
    panel.refresh_course()
    assert not panel.submit_button.disabled and "No attempt left" not in panel.course_label.value
