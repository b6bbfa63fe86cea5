"""Instructor actions in the grading service: every one recorded and shown, and what it changes.

Each test runs on SQLite and, with ``$AGTOOL_TEST_POSTGRES_URL``, on
PostgreSQL (as tests/test_service.py). The HTTP tests go through the real
``HubOAuth`` client and a stand-in hub (tests/service_stand_ins.py): the
teacher is an instructor, alice and bob are learners. Golden files
(``tests/golden/actions/``; refresh with ``UPDATE_GOLDEN=1``) hold
grades.csv and the LMS files of a class with an override and an extension.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import urllib.parse
import zipfile
from pathlib import Path

import pytest
from service_stand_ins import FakeHub, Service, database_url

from grader.service.actions_db import ActionLog
from grader.service.db import Store

GOLDEN = Path(__file__).resolve().parent / "golden" / "actions"
COURSE = (
    '[assignment]\nname = "lab"\ndue = 2030-03-01T12:00:00Z\nlate_due = 2030-03-08T12:00:00Z\n'
    "late_credit = 0.5\n[attempts]\nlimit = 1\nwindow_minutes = 600\n"
)
ROSTER = "learner,lms_id,email\nalice,101,alice@example.org\nbob,102,bob@example.org\n"
HOSTILE = '<script>alert(1)</script>=HYPERLINK("x")\n"; rm -rf /'


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    url = database_url(request.param, tmp_path)
    s = Store(url)
    yield s
    s.close()


def report(score: int, top: int = 10, seed: int = 1) -> dict:
    """A grade report: one check of ``top`` points with ``score`` of them."""
    from grader.report import CheckResult, Report

    check = CheckResult(
        id="step1/search",
        step=1,
        passed=score == top,
        points=score,
        max_points=top,
        title="search",
        call="search_stocks('x')",
        expected="[1]",
        got="[]" if score < top else "",
        hint="look again",
    )
    return Report(seed=seed, path="tools.py", checks=[check]).to_dict()


def graded(store: Store, learner: str, score: int, *, at: dt.datetime | None = None) -> int:
    """A graded attempt of ``learner`` (submitted at ``at``, naive UTC, when given)."""
    from sqlalchemy import update

    from grader.service.db import Attempt

    attempt = store.add_attempt(learner, f"x = {score}\n".encode(), seed=1)
    store.take(attempt)
    store.finish(attempt, "graded", report(score))
    if at is not None:
        with store.session() as s, s.begin():
            s.execute(update(Attempt).where(Attempt.id == attempt).values(submitted_at=at))
    return attempt


@pytest.fixture
def hub():
    h = FakeHub()
    yield h
    h.stop()


def serve(store, hub, **options):
    from grader.course.policy import parse_policy
    from grader.outputs.lms import read_roster_text

    options.setdefault("course", parse_policy(COURSE))
    options.setdefault("roster", read_roster_text(ROSTER))
    return Service(store, hub, **options)


def post(svc, path: str, token: str, fields: dict):
    status, _headers, body = svc.request("POST", path, token, json.dumps(fields).encode(), ctype="application/json")
    return status, json.loads(body) if body else None


def get(svc, path: str, token: str) -> tuple[int, str]:
    status, _headers, body = svc.request("GET", path, token)
    return status, body.decode("utf-8", "replace")


# ---------------------------------------------------------------------------- recorded: who, when, what, why


def test_every_instructor_action_is_recorded_with_who_when_what_and_why(store, hub):
    first = graded(store, "alice", 4)
    svc = serve(store, hub)
    try:
        before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
        sent = [
            ("extension", {"learner": "alice", "due": "2030-03-04T12:00:00Z", "reason": "ill, note seen"}),
            ("attempts", {"learner": "alice", "extra": 2, "reason": "network outage"}),
            ("override", {"learner": "alice", "score": 9, "reason": "hand-checked step 1"}),
            ("regrade", {"scope": "attempt", "attempt": first, "reason": "grader fix 1.2"}),
        ]
        for kind, fields in sent:
            status, action = post(svc, f"api/actions/{kind}", "tok-teacher", fields)
            assert status == 201, (kind, action)
        status, listed = get(svc, "api/actions", "tok-teacher")
        actions = json.loads(listed)["actions"]
        assert [(a["kind"], a["actor"], a["learner"], a["reason"]) for a in actions] == [
            (kind, "teacher", "alice", fields["reason"]) for kind, fields in sent
        ]
        for a in actions:
            when = dt.datetime.fromisoformat(a["at"].replace("Z", "+00:00"))
            assert before - dt.timedelta(seconds=1) <= when <= dt.datetime.now(dt.timezone.utc)
        assert actions[0]["data"] == {"due": "2030-03-04T12:00:00Z", "late_due": None}
        assert actions[1]["data"] == {"extra": 2}
        assert actions[2]["data"] == {"score": 9.0, "max_score": 10.0, "was": 4.0} and actions[2]["attempt"] == first
        assert actions[3]["data"]["attempts"] == [first] and svc.queue.put_ids == [first]
        # The learner concerned sees each one on their page, with when and why.
        status, page = get(svc, "", "tok-alice")
        assert status == 200 and "Changes by your instructor" in page
        for _kind, fields in sent:
            assert fields["reason"] in page
        assert "2 extra attempts for alice" in page and "grade of alice set to 9/10" in page
        # bob sees none of alice's.
        status, other = get(svc, "api/actions", "tok-bob")
        assert json.loads(other)["actions"] == []
    finally:
        svc.stop()


@pytest.mark.parametrize(
    "kind,fields",
    [
        ("extension", {"learner": "alice", "due": "2031-01-01T00:00:00Z"}),
        ("attempts", {"learner": "alice", "extra": 5}),
        ("override", {"learner": "alice", "score": 10, "reason": "me"}),
        ("regrade", {"scope": "all"}),
        ("answer", {"appeal": 1, "answer": "yes", "accepted": True}),
    ],
)
def test_a_learner_gets_403_on_every_instructor_action_and_nothing_is_recorded(store, hub, kind, fields):
    graded(store, "alice", 4)
    svc = serve(store, hub)
    try:
        status, body = post(svc, f"api/actions/{kind}", "tok-alice", fields)
        assert status == 403 and "instructors only" in body["error"]
        # The form route too (the token stands for the login: no XSRF question), and nobody unknown.
        data = urllib.parse.urlencode({k: str(v) for k, v in fields.items()}).encode()
        status, _h, _b = svc.request(
            "POST", f"actions/{kind}", "tok-alice", data, ctype="application/x-www-form-urlencoded"
        )
        assert status == 403
        status, _h, _b = svc.request("POST", f"actions/{kind}", None, data, ctype="application/x-www-form-urlencoded")
        assert status == 403
        assert ActionLog(store).all() == [] and svc.queue.put_ids == []
        assert get(svc, "class/actions", "tok-alice")[0] == 403
    finally:
        svc.stop()


def test_a_form_posts_the_same_action_and_returns_to_the_page(store, hub):
    graded(store, "alice", 4)
    svc = serve(store, hub)
    try:
        data = urllib.parse.urlencode(
            {"learner": "alice", "extra": "1", "reason": "form", "next": "//evil.example/"}
        ).encode()
        status, _h, body = svc.request(
            "POST", "actions/attempts", "tok-teacher", data, ctype="application/x-www-form-urlencoded"
        )
        assert status == 200 and "Changes made for alice" not in body.decode()  # followed back to the prefix
        [action] = ActionLog(store).all()
        assert (action["kind"], action["actor"], action["reason"], action["data"]) == (
            "attempts",
            "teacher",
            "form",
            {"extra": 1},
        )
    finally:
        svc.stop()


# ---------------------------------------------------------------------------- the policy per learner


def test_extra_attempts_raise_one_learner_s_limit_and_an_extension_moves_their_dates(store):
    from grader.course.policy import parse_policy
    from grader.service import attempt_policy

    policy = parse_policy(COURSE)
    now = dt.datetime(2030, 3, 3, tzinfo=dt.timezone.utc)  # late for the course, on time with alice's extension
    for who in ("alice", "bob"):
        graded(store, who, 8, at=dt.datetime(2030, 3, 3))
    log = ActionLog(store)
    assert attempt_policy.refuse(store, "alice", policy, now, terms=log.terms("alice")) is not None
    log.record("teacher", "attempts", learner="alice", data={"extra": 1})
    log.record("teacher", "extension", learner="alice", data={"due": "2030-03-04T12:00:00Z", "late_due": None})
    assert attempt_policy.refuse(store, "alice", policy, now, terms=log.terms("alice")) is None
    assert attempt_policy.refuse(store, "bob", policy, now, terms=log.terms("bob")) is not None
    mine = attempt_policy.status(store, "alice", policy, now, terms=log.terms("alice"))
    bobs = attempt_policy.status(store, "bob", policy, now, terms=log.terms("bob"))
    assert (mine["due"], mine["limit"], mine["attempts_left"], mine["credit_now"]) == (
        "2030-03-04T12:00:00Z",
        2,
        1,
        1.0,
    )
    assert (bobs["due"], bobs["limit"], bobs["attempts_left"], bobs["credit_now"]) == (
        "2030-03-01T12:00:00Z",
        1,
        0,
        0.5,
    )
    # The late date stays the course's when it is after the new due date.
    assert mine["late_due"] == "2030-03-08T12:00:00Z"
    assert (mine["counted"]["credited"], bobs["counted"]["credited"]) == (8.0, 4.0)


def test_grades_csv_lms_and_gradescope_use_the_extension_and_the_override(store, hub):
    import pandas as pd

    alice = graded(store, "alice", 8, at=dt.datetime(2030, 3, 3))
    graded(store, "bob", 6, at=dt.datetime(2030, 3, 3))
    log = ActionLog(store)
    log.record("teacher", "extension", learner="alice", data={"due": "2030-03-04T12:00:00Z", "late_due": None})
    svc = serve(store, hub)
    try:
        status, body = post(
            svc,
            "api/actions/override",
            "tok-teacher",
            {"learner": "bob", "score": 7, "reason": "step 1 was right by hand"},
        )
        assert status == 201 and body["data"] == {"score": 7.0, "max_score": 10.0, "was": 3.0}
        status, csv_text = get(svc, "grades.csv", "tok-teacher")
        book = pd.read_csv(io.StringIO(csv_text)).set_index("learner")
        assert (
            book.loc["alice", "credited_score"] == 8.0 and book.loc["alice", "extended_due"] == "2030-03-04T12:00:00Z"
        )
        assert book.loc["alice", "period"] == "on time" and pd.isna(book.loc["alice", "override_reason"])
        assert book.loc["bob", "credited_score"] == 7.0 and book.loc["bob", "score"] == 6
        assert (
            book.loc["bob", "override_reason"],
            book.loc["bob", "override_by"],
            book.loc["bob", "overridden_from"],
        ) == ("step 1 was right by hand", "teacher", 3.0)
        canvas = get(svc, "lms/canvas.csv", "tok-teacher")[1].splitlines()
        assert canvas[2:] == ["alice,101,,,,8", "bob,102,,,,7"]
        moodle = get(svc, "lms/moodle.csv", "tok-teacher")[1]
        assert "overridden by teacher" in moodle and "step 1 was right by hand" in moodle
        zipped = svc.request("GET", "gradescope.zip", "tok-teacher")[2]
        with zipfile.ZipFile(io.BytesIO(zipped)) as zf:
            bob = json.loads(zf.read("gradescope/bob/results.json"))
        assert bob["score"] == 7.0 and bob["output"].startswith("Set by your instructor: 7/10")
        course = json.loads(get(svc, "api/course", "tok-bob")[1])
        assert course["counted"]["credited"] == 7.0 and "step 1 was right by hand" in course["counted"]["why"]
        assert json.loads(get(svc, "api/course", "tok-alice")[1])["due"] == "2030-03-04T12:00:00Z"
        assert alice
    finally:
        svc.stop()


def test_an_override_needs_a_reason_a_score_in_range_and_a_graded_attempt(store, hub):
    graded(store, "alice", 4)
    svc = serve(store, hub)
    try:
        cases = [
            ({"learner": "alice", "score": 9}, 400, "needs a reason"),
            ({"learner": "alice", "score": 9, "reason": "   "}, 400, "needs a reason"),
            ({"learner": "alice", "score": 11, "reason": "r"}, 400, "from 0 to 10"),
            ({"learner": "alice", "score": "NaN", "reason": "r"}, 400, "from 0 to 10"),
            ({"learner": "bob", "score": 1, "reason": "r"}, 409, "no graded attempt"),
        ]
        for fields, code, words in cases:
            status, body = post(svc, "api/actions/override", "tok-teacher", fields)
            assert (status, words in body["error"]) == (code, True), (fields, body)
        assert ActionLog(store).all() == []
    finally:
        svc.stop()


# ---------------------------------------------------------------------------- regrades


def test_a_class_regrade_requeues_the_counting_attempts_and_keeps_the_old_grades(store, hub):
    from grader.service.db import GRADED, QUEUED

    old = graded(store, "alice", 4)
    best = graded(store, "alice", 9)
    bob = graded(store, "bob", 2)
    svc = serve(store, hub, course=None)
    try:
        status, action = post(svc, "api/actions/regrade", "tok-teacher", {"scope": "counting", "reason": "fix #12"})
        assert status == 201 and sorted(action["data"]["attempts"]) == [best, bob]
        assert sorted(svc.queue.put_ids) == [best, bob] and store.get(old).status == GRADED
        assert (store.get(best).status, store.get(best).score) == (QUEUED, None)
        # The queue grades them again (here: by hand, as the worker would store it).
        for attempt, score in ((best, 10), (bob, 3)):
            store.take(attempt)
            store.finish(attempt, "graded", report(score))
        past = ActionLog(store).past_results()
        assert [(p["attempt"], p["score"], p["regrade"]) for p in past] == [
            (best, 9, action["id"]),
            (bob, 2, action["id"]),
        ]
        assert store.get(best).score == 10
        page = get(svc, "", "tok-alice")[1]
        assert "fix #12" in page and f"attempt {best}: 9/10" in page and "Before the regrade (kept)" in page
        assert f"attempt {bob}" not in page  # a class regrade shows a learner their own attempts only
        status, mine = get(svc, "api/actions", "tok-alice")
        assert json.loads(mine)["actions"][0]["data"]["attempts"] == [best]
        # Everything: both learners' attempts, old ones too; a second regrade keeps both past results.
        status, action = post(svc, "api/actions/regrade", "tok-teacher", {"scope": "all"})
        assert sorted(action["data"]["attempts"]) == [old, best, bob]
        assert len(ActionLog(store).past_results("alice")) == 3
    finally:
        svc.stop()


# ---------------------------------------------------------------------------- appeals


def test_a_learner_files_a_regrade_request_that_is_escaped_capped_and_answered(store, hub):
    from bs4 import BeautifulSoup

    alice = graded(store, "alice", 4)
    bob = graded(store, "bob", 2)
    svc = serve(store, hub)
    try:
        assert post(svc, "api/appeals", "tok-alice", {"attempt": bob, "text": "mine?"})[0] == 404
        status, body = post(svc, "api/appeals", "tok-alice", {"attempt": alice, "text": "é" * 2001})
        assert status == 400 and "2001 characters long; at most 2000" in body["error"]
        status, body = post(svc, "api/appeals", "tok-alice", {"attempt": alice, "text": "a\x00b"})
        assert status == 400 and "control character (U+0000)" in body["error"]
        status, body = post(svc, "api/appeals", "tok-alice", {"attempt": alice, "text": "  "})
        assert status == 400 and "say what you think" in body["error"]
        status, appeal = post(svc, "api/appeals", "tok-alice", {"attempt": alice, "text": HOSTILE})
        assert status == 201 and appeal["actor"] == "alice" and appeal["reason"] == HOSTILE.strip()
        # The longest allowed request, in four-byte characters, fits the body limit.
        assert post(svc, "api/appeals", "tok-alice", {"attempt": alice, "text": "😀" * 2000})[0] == 201
        for path in ("class", "class/actions"):
            status, page = get(svc, path, "tok-teacher")
            soup = BeautifulSoup(page, "html.parser")
            assert status == 200 and "<script>alert" not in page and "Open regrade requests (2)" in page
            assert (
                HOSTILE.strip() in soup.get_text()
                and [s.string for s in soup.find_all("script") if "alert" in (s.string or "")] == []
            )
        status, answer = post(
            svc,
            "api/actions/answer",
            "tok-teacher",
            {"appeal": appeal["id"], "answer": "Right: step 1 passes by hand.", "accepted": True, "score": 8},
        )
        assert status == 201 and answer["data"]["accepted"] is True and len(answer["data"]["actions"]) == 1
        assert post(svc, "api/actions/answer", "tok-teacher", {"appeal": appeal["id"], "answer": "again"})[0] == 409
        page = get(svc, "", "tok-alice")[1]
        assert "Answer (accepted" in page and "Right: step 1 passes by hand." in page
        assert "grade of alice set to 8/10" in page and "&lt;script&gt;" in page
        assert "Open regrade requests (1)" in get(svc, "class", "tok-teacher")[1]
    finally:
        svc.stop()


# ---------------------------------------------------------------------------- golden files


def test_grades_csv_and_lms_files_with_an_override_and_an_extension_match_their_golden_files():
    from grader.course.policy import Attempt, credit, parse_policy
    from grader.outputs.gradebook import gradebook_csv
    from grader.outputs.lms import lms_files, read_roster_text
    from grader.outputs.record import LearnerRecord
    from grader.service.actions import apply_overrides, with_extensions
    from grader.service.actions_db import terms_by_learner
    from grader.service.attempt_policy import for_learner

    policy = parse_policy(COURSE)
    actions = [
        {
            "id": 1,
            "kind": "extension",
            "learner": "alice",
            "actor": "teacher",
            "at": "2030-03-02T09:00:00Z",
            "reason": "ill",
            "attempt": None,
            "refers_to": None,
            "data": {"due": "2030-03-04T12:00:00Z", "late_due": None},
        },
        {
            "id": 2,
            "kind": "override",
            "learner": "bob",
            "actor": "teacher",
            "at": "2030-03-09T10:00:00Z",
            "reason": '=step 1, "checked" by hand',
            "attempt": 2,
            "refers_to": None,
            "data": {"score": 7.0, "max_score": 10.0, "was": 3.0},
        },
    ]
    terms = terms_by_learner(actions)
    records = []
    for i, (who, score) in enumerate((("alice", 8), ("bob", 6)), start=1):
        when = dt.datetime(2030, 3, 3, tzinfo=dt.timezone.utc)
        got = credit([Attempt(i, when, report(score))], for_learner(policy, terms.get(who)))
        records.append(
            LearnerRecord(
                who, report(score), source=f"{who}/attempt-{i}/tools.py", seed=1, attempt=i, credit=got.to_dict()
            )
        )
    records = apply_overrides(with_extensions(records, terms), actions)
    files = {"grades.csv": gradebook_csv(records)}
    lms = lms_files(records, read_roster_text(ROSTER), assignment="lab")
    files.update({"canvas.csv": lms["canvas"], "moodle.csv": lms["moodle"]})
    for name, text in files.items():
        path = GOLDEN / name
        if os.environ.get("UPDATE_GOLDEN"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"missing {path}; create it with UPDATE_GOLDEN=1 pytest {__file__}"
        assert text == path.read_text(encoding="utf-8"), name
    assert "'=step 1" in files["grades.csv"]  # the reason is a CSV cell a spreadsheet does not evaluate


def test_the_migration_adds_the_action_tables_to_a_database_of_revision_0003(tmp_path):
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import inspect

    from grader.service.db import MIGRATIONS, make_engine

    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = make_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0003")
    assert "instructor_actions" not in inspect(engine).get_table_names()
    engine.dispose()
    store = Store(url)  # migrates to the newest revision
    tables = set(inspect(store.engine).get_table_names())
    assert {"instructor_actions", "past_results", "attempts"} <= tables
    assert ActionLog(store).record("t", "regrade", data={"scope": "all"})["id"] == 1
    store.close()


def test_without_a_course_file_an_override_still_replaces_the_grade_and_extensions_are_refused(store, hub):
    import pandas as pd

    graded(store, "alice", 4)
    svc = serve(store, hub, course=None)
    try:
        status, body = post(
            svc, "api/actions/extension", "tok-teacher", {"learner": "alice", "due": "2031-01-01T00:00Z"}
        )
        assert status == 409 and "no course file" in body["error"]
        status, body = post(svc, "api/actions/attempts", "tok-teacher", {"learner": "alice", "extra": 1})
        assert status == 409 and "no attempt limit" in body["error"]
        assert (
            post(svc, "api/actions/override", "tok-teacher", {"learner": "alice", "score": 6.5, "reason": "oral exam"})[
                0
            ]
            == 201
        )
        book = pd.read_csv(io.StringIO(get(svc, "grades.csv", "tok-teacher")[1])).set_index("learner")
        assert (book.loc["alice", "score"], book.loc["alice", "credited_score"]) == (4, 6.5)
        assert book.loc["alice", "override_reason"] == "oral exam"
        assert get(svc, "lms/canvas.csv", "tok-teacher")[1].splitlines()[2] == "alice,101,,,,6.5"
        rows = json.loads(get(svc, "api/class", "tok-teacher")[1])["learners"]
        assert rows[0]["credited_score"] == 6.5 and "oral exam" in rows[0]["why"]
    finally:
        svc.stop()
