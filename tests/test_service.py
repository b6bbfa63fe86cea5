"""The classroom grading service (grader/service): storage, the queue, and the API behind a real JupyterHub.

The storage and queue tests run against SQLite and, when
``$AGTOOL_TEST_POSTGRES_URL`` is set (``.ci/run`` starts a PostgreSQL and sets
it), against PostgreSQL too; under ``$CI`` a missing PostgreSQL fails instead
of skipping. The API tests (marked ``e2e``) start JupyterHub with
configurable-http-proxy, two learners and one instructor, and the service as
an external hub service, so that the test can kill and restart it.
"""

from __future__ import annotations

import json
import os
import time
import types
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from e2e.classroom import Classroom, http, proxy_command
from helpers import full_marks
from service_stand_ins import database_url, empty_postgres, postgres_url

from grader.service.db import ERROR, GRADED, GRADING, QUEUED, Store

REPO = Path(__file__).resolve().parents[1]
SOLUTION = (REPO / "solutions" / "tools.py").read_bytes()
FULL = full_marks()  # the solution's score: every registered check's points
STARTER = (REPO / "starter" / "tools.py").read_bytes()
GRADE_LOG_ENV = "AGTOOL_TEST_GRADE_LOG"


def counting_grade(path, **kwargs):
    """``grader.grading.grade``, and one line per call in ``$AGTOOL_TEST_GRADE_LOG`` (runs in the workers)."""
    from grader.grading import grade

    with open(os.environ[GRADE_LOG_ENV], "a") as log:
        log.write(
            Path(str(path)).parts[0] + "\n"
        )  # grade_task grades a Submission named <learner>/attempt-<id>/tools.py
    return grade(path, **kwargs)


# ---------------------------------------------------------------------------- databases


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A fresh, empty database URL: an SQLite file, or the test PostgreSQL emptied."""
    return database_url(request.param, tmp_path)


def test_an_attempt_is_stored_with_its_bytes_hash_and_seed(db_url):
    store = Store(db_url)
    attempt_id = store.add_attempt("ana", b"\xff not utf-8\n", seed=123456)
    got = store.get(attempt_id)
    assert (got.learner, got.source, got.seed, got.status) == ("ana", b"\xff not utf-8\n", 123456, QUEUED)
    assert got.sha256 == __import__("hashlib").sha256(b"\xff not utf-8\n").hexdigest()
    store.close()


def test_migrations_run_again_on_an_existing_database_without_losing_attempts(db_url):
    first = Store(db_url)
    attempt_id = first.add_attempt("ana", b"x = 1\n", seed=1)
    first.close()
    again = Store(db_url)  # a restart: upgrade to head is a no-op
    assert again.get(attempt_id).source == b"x = 1\n"
    again.close()


def test_a_report_is_stored_once_and_only_for_an_unfinished_attempt(db_url):
    store = Store(db_url)
    attempt_id = store.add_attempt("ana", b"x = 1\n", seed=1)
    assert store.claim(attempt_id)
    assert store.get(attempt_id).status == GRADING
    assert store.finish(attempt_id, GRADED, {"score": 3, "max_score": 5})
    assert not store.finish(attempt_id, GRADED, {"score": 5, "max_score": 5})  # a second grading loses
    assert not store.claim(attempt_id)
    assert (store.get(attempt_id).score, store.unfinished()) == (3, [])
    with pytest.raises(ValueError):
        store.finish(attempt_id, QUEUED, {})
    store.close()


def test_a_learner_s_attempts_are_listed_newest_first_and_counted_for_the_rate_limit(db_url):
    import datetime as dt

    store = Store(db_url)
    ids = [store.add_attempt("ana", b"%d" % i, seed=i) for i in range(3)]
    store.add_attempt("ben", b"b", seed=9)
    assert [a.id for a in store.attempts_of("ana")] == ids[::-1]
    assert store.count_since("ana", dt.datetime(2000, 1, 1)) == 3
    assert store.count_since("ana", dt.datetime(2999, 1, 1)) == 0
    store.close()


def test_a_restart_grades_every_stored_unfinished_attempt_exactly_once(db_url, tmp_path, monkeypatch):
    from grader.service.queue import GradingQueue

    grade_log = tmp_path / "graded.txt"
    grade_log.touch()
    monkeypatch.setenv(GRADE_LOG_ENV, str(grade_log))
    store = Store(db_url)
    # What a killed service leaves: attempts stored but never graded, one cut off while grading,
    # and one graded before the crash (which must not be graded again).
    queued = [store.add_attempt(f"learner{i}", SOLUTION, seed=i) for i in range(3)]
    cut_off = store.add_attempt("cut", STARTER, seed=5)
    store.claim(cut_off)
    done = store.add_attempt("done", SOLUTION, seed=6)
    store.claim(done)
    store.finish(done, GRADED, {"score": 1, "max_score": 133})

    queue = GradingQueue(store, jobs=2, grade_fn=counting_grade)
    queue.put(queued[0])  # queued twice (a submit racing the start): still graded once
    with queue:
        queue.put(queued[0])
        assert queue.wait_idle(180), "the queue did not finish"
    graded = sorted(grade_log.read_text().split())
    assert graded == sorted(["learner0", "learner1", "learner2", "cut"])
    for attempt_id in queued:
        a = store.get(attempt_id)
        assert (a.status, a.score, a.max_score) == (GRADED, FULL, FULL)
        assert json.loads(a.report)["seed"] == a.seed
    cut = store.get(cut_off)
    assert cut.status == GRADED and cut.score < cut.max_score  # the starter fails checks: graded, not error
    assert store.get(done).score == 1
    assert store.unfinished() == []
    store.close()


def test_a_worker_that_dies_costs_its_attempt_an_error_status_not_the_queue(tmp_path):
    from grader.service.queue import GradingQueue

    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    dies = store.add_attempt("ana", b"x", seed=1)
    fine = store.add_attempt("ben", SOLUTION, seed=2)
    with GradingQueue(store, jobs=1, grade_fn=_die_for_ana) as queue:
        assert queue.wait_idle(120)
    assert store.get(dies).status == ERROR
    assert "died" in json.loads(store.get(dies).report)["error"]
    assert (store.get(fine).status, store.get(fine).score) == (GRADED, FULL)
    store.close()


def _die_for_ana(path, **kwargs):
    if Path(str(path)).parts[0] == "ana":  # a Submission named <learner>/attempt-<id>/tools.py
        os._exit(9)  # the worker process dies, as a grader crash or an OOM kill would
    from grader.grading import grade

    return grade(path, **kwargs)


# ---------------------------------------------------------------------------- a real hub


@pytest.fixture(params=["sqlite", "postgresql"])
def classroom(request, tmp_path):
    pytest.importorskip("jupyterhub")
    if request.param == "sqlite":
        db = f"sqlite:///{tmp_path / 'service.sqlite'}"
    else:
        db = postgres_url()
        if not db:
            pytest.skip("set AGTOOL_TEST_POSTGRES_URL to run the hub tests on PostgreSQL")
        empty_postgres(db)
    room = Classroom(tmp_path / "hub", proxy_command(), db)
    try:
        room.start_hub()
        room.start_service()
        yield room
    finally:
        room.stop()


@pytest.mark.e2e
def test_two_learners_and_an_instructor_through_the_hub(classroom):
    room = classroom
    status, alice = room.api("POST", "api/submissions", "alice", SOLUTION)
    assert status == 202 and isinstance(alice, dict) and alice["status"] == "queued", alice
    status, bob = room.api("POST", "api/submissions", "bob", STARTER)
    assert status == 202, bob

    graded_alice = room.wait_graded("alice", alice["id"])
    graded_bob = room.wait_graded("bob", bob["id"])
    assert (graded_alice["status"], graded_alice["score"], graded_alice["max_score"]) == (GRADED, FULL, FULL)
    assert graded_alice["report"]["score"] == FULL and graded_alice["learner"] == "alice"
    assert graded_bob["status"] == GRADED and graded_bob["score"] < graded_bob["max_score"]
    # Bob's first attempt is his attempt 1 in the API the Submit panel reads, though the service's id is 2
    # (the panel says "Attempt 1", not "Attempt 2").
    assert bob["id"] != 1 and bob["number"] == graded_bob["number"] == 1 == alice["number"]

    # Each learner sees their own attempts only.
    status, mine = room.api("GET", "api/submissions", "alice")
    assert status == 200 and [a["id"] for a in mine] == [alice["id"]]
    assert set(mine[0]) >= {"id", "submitted_at", "status", "score", "max_score", "sha256"}
    assert room.api("GET", f"api/submissions/{bob['id']}", "alice")[0] == 404
    assert room.api("GET", f"api/submissions/{alice['id']}", "bob")[0] == 404
    assert room.api("GET", "api/submissions?learner=alice", "bob")[0] == 403
    assert room.api("GET", "api/class", "bob")[0] == 403
    assert room.api("GET", "grades.csv", "alice")[0] == 403

    # The instructor sees both.
    status, klass = room.api("GET", "api/class", "teacher")
    assert status == 200, klass
    rows = {r["learner"]: r for r in klass["learners"]}
    assert set(rows) == {"alice", "bob"}
    assert (rows["alice"]["best_score"], rows["alice"]["attempts"]) == (FULL, 1)
    assert rows["bob"]["best_score"] == graded_bob["score"]
    assert klass["checks"] and all(0 <= c["pass_rate"] <= 1 for c in klass["checks"])
    assert room.api("GET", f"api/submissions/{bob['id']}", "teacher")[0] == 200
    status, csv_text = room.api("GET", "grades.csv", "teacher")
    assert status == 200
    lines = csv_text.splitlines()
    assert lines[0].startswith("learner,score,max_score,step1")
    assert [line.split(",")[:2] for line in lines[1:]] == [["alice", str(FULL)], ["bob", str(graded_bob["score"])]]

    # The class page's downloads and plots through the hub's proxy: the instructor's, never a learner's.
    for route in ("gradescope.zip", "plots/check_pass_rate.png", "plots/step_scores.svg", "similarity.csv"):
        status, headers, body = http("GET", room.base + route, token=room.tokens["teacher"])
        assert status == 200 and body, route
        assert http("GET", room.base + route, token=room.tokens["bob"])[0] == 403, route
    status, headers, body = http("GET", room.base + "learners/bob/results.json", token=room.tokens["bob"])
    assert status == 200 and json.loads(body)["score"] == graded_bob["score"]
    assert 'filename="bob-results.json"' in headers["Content-Disposition"]
    assert http("GET", room.base + "learners/bob/feedback.md", token=room.tokens["alice"])[0] == 404

    # The notebook's submit() goes through the same API with the learner's token, and shows the grade.
    from agtool_lab.submit import Submitted, submit

    shown = submit(
        REPO / "solutions" / "tools.py",
        env={"AGTOOL_SERVICE_URL": room.base, "JUPYTERHUB_API_TOKEN": room.tokens["bob"]},
    )
    assert isinstance(shown, Submitted), shown
    assert shown.report.score == FULL and f"{FULL}/{FULL} points" in shown._repr_html_()
    status, klass = room.api("GET", "api/class", "teacher")
    rows = {r["learner"]: r for r in klass["learners"]}
    assert (rows["bob"]["attempts"], rows["bob"]["best_score"], rows["bob"]["last_score"]) == (2, FULL, FULL)


@pytest.mark.e2e
def test_bad_requests_get_clear_errors(classroom):
    room = classroom
    assert http("GET", room.base + "api/submissions")[0] == 401
    assert http("GET", room.base + "api/submissions", token="not-a-token")[0] in (401, 403)
    status, err = room.api("POST", "api/submissions", "alice", b"x" * (256 * 1024 + 1))
    assert status == 413 and "limit" in err["error"]
    status, err = room.api("POST", "api/submissions", "alice", SOLUTION, ctype="text/plain")
    assert status == 415 and "text/x-python" in err["error"]
    status, err = room.api("POST", "api/submissions", "alice", b"  \n")
    assert status == 400 and "empty" in err["error"]
    assert room.api("GET", "api/submissions/999999", "alice")[0] == 404


@pytest.mark.e2e
def test_the_rate_limit_answers_429_per_learner(tmp_path):
    pytest.importorskip("jupyterhub")
    room = Classroom(tmp_path / "hub", proxy_command(), f"sqlite:///{tmp_path / 's.sqlite'}")
    try:
        room.start_hub()
        room.start_service("--rate-limit", "2", "--rate-window", "600")
        assert [room.api("POST", "api/submissions", "alice", STARTER)[0] for _ in range(3)] == [202, 202, 429]
        assert room.api("POST", "api/submissions", "bob", STARTER)[0] == 202  # bob has his own budget
    finally:
        room.stop()


@pytest.mark.e2e
def test_a_killed_service_grades_every_accepted_attempt_once_after_a_restart(classroom):
    room = classroom
    ids = [room.api("POST", "api/submissions", user, SOLUTION)[1]["id"] for user in ("alice", "bob") for _ in range(3)]
    room.kill_service()  # kill -9 while (most of) the burst is queued or grading
    room.start_service()
    for attempt_id, user in zip(ids, ["alice"] * 3 + ["bob"] * 3):
        got = room.wait_graded(user, attempt_id)
        assert (got["status"], got["score"]) == (GRADED, FULL)
    status, klass = room.api("GET", "api/class", "teacher")
    assert {r["learner"]: r["attempts"] for r in klass["learners"]} == {"alice": 3, "bob": 3}


def test_submit_outside_a_hub_says_what_to_do_instead():
    from agtool_lab.submit import Message, submit

    assert "Check cells" in repr(submit(env={}))
    no_service = submit(env={"JUPYTERHUB_API_TOKEN": "t"})
    assert isinstance(no_service, Message) and "AGTOOL_SERVICE_URL" in no_service.text
    unreachable = submit(
        REPO / "solutions" / "tools.py",
        env={"JUPYTERHUB_API_TOKEN": "t", "AGTOOL_SERVICE_URL": "http://127.0.0.1:9/x/"},
    )
    assert "could not reach" in unreachable.text


# ---------------------------------------------------------------------------- the routes over HTTP (no hub)
#
# Tornado's own HTTP client against the service's application, with the hub's login replaced by a
# header naming the user (X-Test-User), on SQLite and PostgreSQL. Every route the instructor's page
# links to: who may read it, what it answers, and that hostile learner text comes out escaped.

EVIL = '=HYPERLINK("http://x")<script>alert(1)</script>'  # a learner name a page, a CSV and a header must survive
EVIL_GOT = "</pre><img src=x onerror=alert(1)>`x`](javascript:alert(1))"
REFERENCE_MARK = "REFERENCE_ONLY_MARKER = 1\n"
USERS = {
    "alice": {"name": "alice", "admin": False, "groups": []},
    EVIL: {"name": EVIL, "admin": False, "groups": []},
    "teacher": {"name": "teacher", "admin": False, "groups": ["agtool-instructors"]},
}


def _report(seed: int, *, fail_steps=(3,), got: str = EVIL_GOT) -> dict:
    """A whole report over the registry: the checks of ``fail_steps`` failed with ``got`` as the answer."""
    from grader.checks.registry import checks_for
    from grader.report import CheckResult, Report

    checks = [
        CheckResult(
            id=c.id,
            step=c.step,
            passed=c.step not in fail_steps,
            points=0 if c.step in fail_steps else c.points,
            max_points=c.points,
            title=c.title,
            **(
                {"call": "f()", "expected": "'type:limit'", "got": got, "message": got, "hint": c.hint}
                if c.step in fail_steps
                else {}
            ),
        )
        for c in checks_for(None, None)
    ]
    return Report(seed=seed, path="x/tools.py", checks=checks).to_dict()


def _graded(store, learner: str, source: bytes, report: dict) -> int:
    attempt_id = store.add_attempt(learner, source, seed=report["seed"])
    store.claim(attempt_id)
    store.finish(attempt_id, GRADED, report)
    return attempt_id


def _disguised_solution() -> bytes:
    from helpers import disguised

    return disguised(SOLUTION.decode()).encode()


def layout_script() -> str:
    from grader.service.layout import SCRIPT_FILE, _text

    return _text(SCRIPT_FILE)


def _run_http_case(store, settings, body) -> None:
    """Run ``body(fetch)`` against the app in a thread of its own (tornado's test case runs its own loop)."""
    pytest.importorskip("jupyterhub")
    import threading

    from tornado.testing import AsyncHTTPTestCase

    from grader.service import app as service_app

    class NoQueue:
        def put(self, attempt_id, learner=None):
            pass

        def not_stored(self):
            return set()

    class Case(AsyncHTTPTestCase):
        def get_app(self):
            return service_app.make_app(
                store,
                NoQueue(),
                settings,  # base_url: where the pages' XSRF cookie goes
                hub_auth=types.SimpleNamespace(base_url=settings.prefix),
            )

        def runTest(self):
            def fetch(path, user=None, **kw):
                headers = {"X-Test-User": urllib.parse.quote(user)} if user else {}
                return self.fetch(settings.prefix + path, headers=headers, follow_redirects=False, **kw)

            body(fetch)

    outcome: list = []
    original = service_app._Base._caller

    async def caller(handler):  # the service learns who calls in prepare(), awaiting the hub
        name = handler.request.headers.get("X-Test-User")
        return USERS.get(urllib.parse.unquote(name)) if name else None

    service_app._Base._caller = caller
    try:
        runner = threading.Thread(target=lambda: outcome.append(Case().run()))
        runner.start()
        runner.join(timeout=300)
    finally:
        service_app._Base._caller = original
    assert outcome, "the tornado test case did not finish within 300 s"
    result = outcome[0]
    assert not result.errors and not result.failures, "\n".join(t for _, t in result.errors + result.failures)
    assert result.testsRun == 1


import urllib.parse  # noqa: E402  (used by the HTTP cases above)


@pytest.fixture
def graded_class(db_url):
    """alice (a copy of the solution, step 3 failing), EVIL (a disguised copy), and one queued attempt."""
    store = Store(db_url)
    ids = {
        "alice": _graded(store, "alice", SOLUTION, _report(11)),
        EVIL: _graded(store, EVIL, _disguised_solution(), _report(12, fail_steps=(3, 5))),
    }
    store.add_attempt("alice", STARTER, seed=13)  # still queued: counted as pending
    yield store, ids
    store.close()


INSTRUCTOR_ROUTES = [
    "class",
    "api/class",
    "grades.csv",
    "gradescope.zip",
    "similarity.html",
    "similarity.csv",
    "plots/score_histogram.png",
    "plots/check_pass_rate.svg",
    "plots/step_scores.png",
    "lms/canvas.csv",
    "lms/moodle.csv",
    "lms/unmatched.csv",
]


def test_learners_get_403_on_every_instructor_route_and_404_on_another_s_files(graded_class):
    from grader.outputs.lms import read_roster_text
    from grader.service.options import ServiceOptions as Settings

    store, ids = graded_class
    settings = Settings(prefix="/services/agtool-grader/", roster=read_roster_text("learner,lms_id\nalice,1\n"))
    other = urllib.parse.quote(EVIL, safe="")

    def body(fetch):
        for route in INSTRUCTOR_ROUTES:
            got = fetch(route, "alice")
            assert got.code == 403, (route, got.code)
            assert b"alice" not in got.body or route == "class"
            assert fetch(route, "teacher").code == 200, route
            if route != "class":  # the API answers 401 to nobody; a page sends them to log in
                assert fetch(route).code == 401, route
        for route in (
            f"learners/{other}",
            f"learners/{other}/feedback.md",
            f"learners/{other}/results.json",
            f"api/submissions/{ids[EVIL]}",
        ):
            assert fetch(route, "alice").code == 404, route
            assert fetch(route, "teacher").code == 200, route
        assert fetch(f"api/submissions?learner={other}", "alice").code == 403
        # A learner's own files are theirs.
        for route in ("learners/alice/feedback.md", "learners/alice/results.json", "learners/alice"):
            assert fetch(route, "alice").code == 200, route
        assert fetch("plots/nothing.png", "teacher").code == 404

    _run_http_case(store, settings, body)


def test_the_class_page_downloads_and_plots_escape_hostile_learner_text(graded_class):
    import csv
    import io
    import zipfile

    from bs4 import BeautifulSoup

    from grader.outputs.lms import read_roster_text
    from grader.service.options import ServiceOptions as Settings

    store, ids = graded_class
    roster = read_roster_text(f'learner,lms_id,name\nalice,101,Alice\nghost,102,"{EVIL}"\n')
    settings = Settings(
        prefix="/p/", roster=roster, references={"reference:tools.py": SOLUTION.decode() + REFERENCE_MARK}
    )

    def body(fetch):
        page = fetch("class", "teacher")
        assert page.code == 200 and "img-src 'self'" in page.headers["Content-Security-Policy"]
        text = page.body.decode()
        soup = BeautifulSoup(text, "html.parser")
        # One script, the service's own (local times, allowed by its hash): none from learner text.
        assert [t.string for t in soup.find_all("script")] == [layout_script()] and not soup.find_all(
            "img", onerror=True
        )
        assert EVIL in soup.get_text()  # shown, as text
        for name in ("score_histogram", "check_pass_rate", "step_scores"):
            assert soup.find("img", src=f"/p/plots/{name}.png") is not None
        links = {a["href"] for a in soup.find_all("a")}
        assert {
            "/p/grades.csv",
            "/p/gradescope.zip",
            "/p/similarity.html",
            "/p/similarity.csv",
            "/p/lms/canvas.csv",
            "/p/lms/moodle.csv",
            "/p/lms/unmatched.csv",
            f"/p/learners/{urllib.parse.quote(EVIL, safe='')}/feedback.md",
        } <= links
        # The roster's problems are on the page: EVIL is graded but not in the roster, ghost has nothing.
        assert "graded, but not in the roster" in text and "in the roster, but no graded submission" in text
        assert "pending" in text and "Most common wrong answers" in text

        for route, magic in (
            ("plots/score_histogram.png", b"\x89PNG"),
            ("plots/check_pass_rate.png", b"\x89PNG"),
            ("plots/step_scores.svg", b"<?xml"),
        ):
            got = fetch(route, "teacher")
            assert got.code == 200 and got.body.startswith(magic), route
            assert got.headers["Content-Type"] in ("image/png", "image/svg+xml")
        assert fetch("plots/step_scores.svg", "teacher").body == fetch("plots/step_scores.svg", "teacher").body

        book = fetch("grades.csv", "teacher")
        assert book.headers["Content-Disposition"].startswith('attachment; filename="grades.csv"')
        rows = list(csv.reader(io.StringIO(book.body.decode())))
        assert [r[0] for r in rows[1:]] == ["'" + EVIL, "alice"]  # batch's order and escaping

        archive = zipfile.ZipFile(io.BytesIO(fetch("gradescope.zip", "teacher").body))
        names = sorted(archive.namelist())
        assert len(names) == 2 and all(n.startswith("gradescope/") and n.endswith("/results.json") for n in names)
        assert all(".." not in n and "<" not in n and '"' not in n for n in names)
        results = json.loads(archive.read("gradescope/alice/results.json"))
        assert results["score"] == _report(11)["score"] and len(results["tests"]) == len(_report(11)["checks"])
        assert json.loads(fetch("learners/alice/results.json", "teacher").body) == results

        feedback = fetch(f"learners/{urllib.parse.quote(EVIL, safe='')}/feedback.md", "teacher")
        disposition = feedback.headers["Content-Disposition"]
        assert "\r" not in disposition and "\n" not in disposition and "<" not in disposition.split(";")[1]
        assert 'filename="_HYPERLINK' in disposition and "filename*=UTF-8''%3DHYPERLINK" in disposition
        markdown = feedback.body.decode()
        import mistune  # read the feedback the way a Markdown renderer does: no image, no link from learner text

        rendered = BeautifulSoup(mistune.html(markdown), "html.parser")
        assert rendered.find("img") is None and rendered.find("script") is None
        assert not [a for a in rendered.find_all("a") if "javascript" in a.get("href", "")]
        assert EVIL_GOT in rendered.get_text()

        similar = fetch("similarity.html", "teacher")
        assert similar.code == 200 and "attachment" in similar.headers["Content-Disposition"]
        report_page = BeautifulSoup(similar.body.decode(), "html.parser")
        assert report_page.find("script") is None
        assert "REFERENCE_ONLY_MARKER" not in similar.body.decode()  # compared, never shown
        table = list(csv.reader(io.StringIO(fetch("similarity.csv", "teacher").body.decode())))
        assert table[0][:3] == ["rank", "a", "b"]
        pair = next(r for r in table[1:] if r[7] == "pair")
        assert {pair[1], pair[2]} == {"'" + EVIL, "alice"} and pair[6] == "yes"  # a disguised copy, flagged
        assert {r[1] for r in table[1:] if r[7] == "reference" and r[6] == "yes"} == {"'" + EVIL, "alice"}

        canvas = list(csv.reader(io.StringIO(fetch("lms/canvas.csv", "teacher").body.decode())))
        assert canvas[0][:2] == ["Student", "ID"] and canvas[2][:2] == ["Alice", "101"]
        unmatched = list(csv.reader(io.StringIO(fetch("lms/unmatched.csv", "teacher").body.decode())))
        assert ["'" + EVIL, "graded, but not in the roster"] in unmatched

    _run_http_case(store, settings, body)


def test_api_course_keeps_its_fields_and_adds_what_a_learner_needs(db_url):
    from grader.course.policy import parse_policy
    from grader.service.options import ServiceOptions as Settings

    store = Store(db_url)
    _graded(store, "alice", SOLUTION, _report(21))
    policy = parse_policy(
        "[assignment]\ndue = 2099-03-01T23:59:00Z\nlate_due = 2099-03-08T23:59:00Z\n"
        "late_credit = 0.5\n[attempts]\nlimit = 3\nwindow_minutes = 60\n"
    )

    def body(fetch):
        got = json.loads(fetch("api/course", "alice").body)
        old = {
            "name",
            "due",
            "late_due",
            "late_credit",
            "counts",
            "limit",
            "window_minutes",
            "attempts_left",
            "next_allowed",
            "period_now",
        }
        assert old <= set(got)
        assert (got["due"], got["late_credit"], got["limit"], got["attempts_left"]) == (
            "2099-03-01T23:59:00Z",
            0.5,
            3,
            2,
        )
        assert (got["attempts_used"], got["attempts_total"], got["credit_now"], got["next_allowed"]) == (
            1,
            1,
            1.0,
            None,
        )
        assert got["counted"]["credited"] == _report(21)["score"] and got["now"].endswith("Z")
        page = fetch("", "alice").body.decode()
        assert (
            'Due <time datetime="2099-03-01T23:59:00Z"' in page
            and "Attempts left: 2 of 3" in page
            and "Counting now" in page
        )
        assert json.loads(fetch("api/course", EVIL).body)["counted"] is None

    _run_http_case(store, Settings(course=policy), body)
    _run_http_case(
        store,
        Settings(),
        lambda fetch: (
            json.loads(fetch("api/course", "alice").body) is None
            or pytest.fail("api/course without a course file is null")
        ),
    )
    store.close()


# ---------------------------------------------------------------------------- the pool the queue and batch share


def _pool_work(task):
    if task == "die":
        os._exit(3)
    if task == "hang":
        time.sleep(60)
    return task * 2


def test_the_worker_pool_takes_tasks_while_running_and_replaces_dead_and_stuck_workers():
    import threading

    from grader.batch.pool import WorkerPool

    fed = ["f1", "f2"]
    lost = []
    pool = WorkerPool(
        _pool_work,
        jobs=2,
        hard_limit=2.0,
        feed=lambda: fed.pop(0) if fed else None,
        on_lost=lambda task, timed_out: lost.append((task, timed_out)) or "lost",
    )
    with pool:
        results = []
        while len(results) < 2:
            results += pool.poll(timeout=10)
        assert sorted(results) == [("f1", "f1f1"), ("f2", "f2f2")]  # fed the moment a worker was free
        pool.submit("die")
        pool.submit("hang")
        pool.submit(21)  # queued behind them: the replaced workers run it
        got = {}
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            got.update(pool.poll(timeout=10))
        assert got == {"die": "lost", "hang": "lost", 21: 42}
        assert sorted(lost) == [("die", False), ("hang", True)]
        # Nothing running: poll waits until woken (a new attempt arrived), not a fixed interval.
        threading.Timer(0.3, pool.wake).start()
        start = time.monotonic()
        assert pool.poll(timeout=30) == [] and time.monotonic() - start < 10
        assert pool.busy() == 0 and pool.pending() == 0


def test_the_class_outputs_of_the_service_never_count_a_grading_failure():
    import jsonschema

    from grader.outputs.gradebook import gradebook_frame
    from grader.service.app import class_data

    schema = json.loads((Path(__file__).parent / "schemas" / "learner_record.schema.json").read_text())
    store = Store("sqlite://")
    report = {
        "seed": 1,
        "path": "tools.py",
        "score": 2,
        "max_score": 2,
        "steps": {"1": {"score": 2, "max_score": 2, "passed": True}},
        "checks": [],
        "output": {},
        "error": "",
        "failure": None,
        "limits": "",
    }
    died = {
        **report,
        "score": 0,
        "error": "the grading process died",
        "failure": {"kind": "grader", "message": "the grading process died"},
    }
    for learner, status, got in (("ana", GRADED, report), ("bob", ERROR, died)):
        attempt = store.add_attempt(learner, b"x = 1\n", seed=1)
        store.take(attempt)
        store.finish(attempt, status, got)
    rows, records, _ = class_data(store)
    assert [r.learner for r in records] == ["ana"]  # bob's failure is graded again, never a grade
    assert {r["learner"]: r["best_score"] for r in rows} == {"ana": 2, "bob": None}
    assert gradebook_frame(records)["learner"].tolist() == ["ana"]
    for record in records:
        jsonschema.validate(record.to_dict(), schema)
