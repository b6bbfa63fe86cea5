"""The course policy (grader/course): due dates, late credit, which attempt counts, attempt limits, weights.

Scores are checked against numbers worked out by hand from the course file
in each test; the attempt limit is checked through the service's store (no
hub); batch runs use ``helpers.fake_grade`` so they test the policy, not
the checks.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import types
from pathlib import Path

import pandas as pd
import pytest
from helpers import ALL_PASS, fake_grade, make_class  # the batch tests' fake grader
from helpers import disguised as _disguised
from helpers import renamed as _renamed
from helpers import reordered as _reordered

from grader.course.policy import AFTER_LATE, LATE, ON_TIME, Attempt, CourseError, credit, load_policy, parse_policy

TESTS_DIR = Path(__file__).resolve().parent

UTC = dt.timezone.utc
DUE = dt.datetime(2026, 3, 1, 23, 59, tzinfo=dt.timezone(dt.timedelta(hours=1)))  # 22:59 UTC
LATE_DUE = DUE + dt.timedelta(days=7)
HOUR = dt.timedelta(hours=1)

COURSE = """
[assignment]
name = "agtool lab"
due = 2026-03-01T23:59:00+01:00
late_due = 2026-03-08T23:59:00+01:00
late_credit = 0.8
counts = "{counts}"
"""


def policy(counts="best", extra=""):
    return parse_policy(COURSE.format(counts=counts) + extra, check_ids={"step1/names", "step2/type_limit"})


def report(score, max_score=10):
    return {"score": score, "max_score": max_score, "checks": []}


# ---------------------------------------------------------------- credit around the due and late dates


@pytest.mark.parametrize(
    "when, factor, period",
    [
        (DUE - HOUR, 1.0, ON_TIME),
        (DUE, 1.0, ON_TIME),  # at the due minute itself: on time
        (DUE + dt.timedelta(seconds=1), 0.8, LATE),
        (LATE_DUE, 0.8, LATE),
        (LATE_DUE + dt.timedelta(seconds=1), 0.0, AFTER_LATE),
    ],
)
def test_one_attempt_gets_the_credit_of_its_period(when, factor, period):
    got = credit([Attempt(1, when, report(10))], policy())
    assert (got.factor, got.period, got.credited, got.raw_score) == (factor, period, 10 * factor, 10.0)


def test_a_late_attempt_counts_only_when_it_raises_the_credited_score():
    for counts in ("best", "last"):
        p = policy(counts)
        # 5 on time, then 10 late (8 credited): the late one raises the grade, so it counts.
        raised = credit([Attempt(1, DUE - HOUR, report(5)), Attempt(2, DUE + HOUR, report(10))], p)
        assert (raised.attempt, raised.credited, raised.period) == (2, 8.0, LATE), counts
        # 9 on time, then 10 late (8 credited): counting it would lower the grade, so the on-time one stays.
        kept = credit([Attempt(1, DUE - HOUR, report(9)), Attempt(2, DUE + HOUR, report(10))], p)
        assert (kept.attempt, kept.credited, kept.period) == (1, 9.0, ON_TIME), counts
        # After the late date nothing is earned: the late attempt's 8 stands.
        after = credit(
            [
                Attempt(1, DUE - HOUR, report(5)),
                Attempt(2, DUE + HOUR, report(10)),
                Attempt(3, LATE_DUE + HOUR, report(10)),
            ],
            p,
        )
        assert (after.attempt, after.credited) == (2, 8.0), counts
        assert "late" in after.why and "80%" in after.why


def test_best_and_last_differ_on_time_and_the_why_says_which_rule():
    attempts = [Attempt(1, DUE - 3 * HOUR, report(9)), Attempt(2, DUE - HOUR, report(6))]
    best, last = credit(attempts, policy("best")), credit(attempts, policy("last"))
    assert (best.attempt, best.credited) == (1, 9.0) and "highest credited score of 2" in best.why
    assert (last.attempt, last.credited) == (2, 6.0) and "last attempt on time" in last.why
    # Order of the list does not matter: attempts are taken in time order.
    assert credit(list(reversed(attempts)), policy("last")).attempt == 2


def test_ungraded_attempts_are_not_counted_and_none_graded_gives_none():
    assert credit([Attempt(1, DUE, None)], policy()) is None
    assert credit([Attempt(1, DUE, None), Attempt(2, DUE + HOUR, report(10))], policy()).attempt == 2


def test_weights_per_step_and_per_check_change_the_weighted_and_credited_score():
    p = policy(extra='[weights]\nstep1 = 2.0\n"step2/type_limit" = 0\n')
    checks = [
        {"id": "step1/names", "step": 1, "points": 2, "max_points": 2},
        {"id": "step1/table", "step": 1, "points": 0, "max_points": 1},
        {"id": "step2/type_limit", "step": 2, "points": 3, "max_points": 3},
        {"id": "step2/other", "step": 2, "points": 1, "max_points": 1},
    ]
    got = credit([Attempt(1, DUE + HOUR, {"score": 6, "max_score": 7, "checks": checks})], p)
    # step1: (2 + 0) x 2 of (2 + 1) x 2; step2/type_limit weighs 0; step2/other keeps 1.
    assert (got.raw_score, got.raw_max, got.score, got.max_score) == (6.0, 7.0, 5.0, 7.0)
    assert got.credited == 4.0  # 5 x 0.8


def test_weight_zero_leaves_part_two_out_of_the_credited_score():
    # A course that teaches steps 1-8 only: part two's checks weigh nothing, part one keeps its points.
    p = policy(extra="[weights]\nstep9 = 0\nstep10 = 0\nstep11 = 0\n")
    checks = [
        {"id": "step1/names", "step": 1, "points": 2, "max_points": 2},
        {"id": "step8/json_values", "step": 8, "points": 3, "max_points": 3},
        {"id": "step9/x", "step": 9, "points": 0, "max_points": 2},
        {"id": "step10/x", "step": 10, "points": 1, "max_points": 3},
        {"id": "step11/x", "step": 11, "points": 0, "max_points": 2},
    ]
    got = credit([Attempt(1, DUE, {"score": 6, "max_score": 12, "checks": checks})], p)
    assert (got.raw_score, got.raw_max, got.score, got.max_score) == (6.0, 12.0, 5.0, 5.0)


# ---------------------------------------------------------------- a malformed course file


@pytest.mark.parametrize(
    "text, field, fix",
    [
        ("[assignment]\nname = 'x'\n", "[assignment] due is missing", "add the due date"),
        ("[assignment]\ndue = 2026-03-01\n", "due = 2026-03-01", "full time with its zone"),
        ("[assignment]\ndue = 2026-03-01T23:59:00\n", "has no time zone", "2026-03-01T23:59:00+01:00"),
        ("[assignment]\ndue = '2026-03-01T23:59:00Z'\n", "is not a time", "without quotes"),
        (
            "[assignment]\ndue = 2026-03-01T23:59:00Z\nlate_due = 2026-02-01T00:00:00Z\nlate_credit = 0.5\n",
            "late_due",
            "after the due date",
        ),
        (
            "[assignment]\ndue = 2026-03-01T23:59:00Z\nlate_due = 2026-03-08T00:00:00Z\n",
            "late_credit is missing",
            "late_credit = 0.8",
        ),
        (
            "[assignment]\ndue = 2026-03-01T23:59:00Z\nlate_due = 2026-03-08T00:00:00Z\nlate_credit = 80\n",
            "late_credit = 80",
            "80% of the points",
        ),
        (
            "[assignment]\ndue = 2026-03-01T23:59:00Z\nlate_credit = 0.8\n",
            "late_credit is given without late_due",
            "add late_due",
        ),
        ("[assignment]\ndue = 2026-03-01T23:59:00Z\ncounts = 'first'\n", "counts = 'first'", 'counts = "best"'),
        (
            "[assignment]\ndue = 2026-03-01T23:59:00Z\ndue_date = 1\n",
            "[assignment] due_date",
            "the fields are counts, due, late_credit, late_due, name",
        ),
        (
            "[assignment]\ndue = 2026-03-01T23:59:00Z\n[attempts]\nlimit = 5\n",
            "[attempts] window_minutes is missing",
            "window_minutes = 60",
        ),
        (
            "[assignment]\ndue = 2026-03-01T23:59:00Z\n[attempts]\nlimit = 0\nwindow_minutes = 60\n",
            "limit = 0",
            "limit = 5",
        ),
        ("[assignment]\ndue = 2026-03-01T23:59:00Z\n[weights]\nstep12 = 2\n", "'step12'", "step1 ... step11"),
        ("[assignment]\ndue = 2026-03-01T23:59:00Z\n[weights]\nstep3 = -1\n", "step3 = -1", "step3 = 2.0"),
        ("[assignment]\ndue = 2026-03-01T23:59:00Z\n[deadline]\nx = 1\n", "[deadline]", "use only [assignment]"),
        ("[assignment\ndue = 1\n", "is not valid TOML", "fix the syntax"),
    ],
)
def test_a_malformed_course_file_names_the_field_and_the_fix(text, field, fix):
    with pytest.raises(CourseError) as caught:
        parse_policy(text, source="course.toml", check_ids=set())
    message = str(caught.value)
    assert message.startswith("course.toml") and field in message and fix in message, message


def test_weights_accept_the_registry_s_check_ids_by_default():
    p = parse_policy('[assignment]\ndue = 2026-03-01T23:59:00Z\n[weights]\n"step3/blocked_before_call" = 2\n')
    assert p.weight("step3/blocked_before_call", 3) == 2.0 and p.weight("step3/other", 3) == 1.0


def test_the_batch_command_refuses_a_bad_course_file_before_grading(tmp_path, capsys):
    from grader.cli import main

    course = tmp_path / "course.toml"
    course.write_text("[assignment]\ndue = 2026-03-01\n")
    make_class(tmp_path / "class", {"ana": ALL_PASS})
    code = main(
        ["batch", str(tmp_path / "class"), "--out", str(tmp_path / "out"), "--course", str(course), "--no-progress"]
    )
    assert code == 2
    assert "[assignment] due = 2026-03-01" in capsys.readouterr().err
    assert not (tmp_path / "out" / "results").exists()


# ---------------------------------------------------------------- batch: late credit and the gradebook


def test_a_batch_under_a_course_writes_raw_and_credited_scores_and_why(tmp_path):
    from grader.batch import run_batch

    course = tmp_path / "course.toml"
    course.write_text(COURSE.format(counts="best") + "[weights]\nstep1 = 2\n")
    root = make_class(tmp_path / "class", {"ana": ALL_PASS, "bob": "pass:step1/names"})
    out = tmp_path / "out"
    run_batch(root, out, jobs=1, seed=3, grade_fn=fake_grade, progress=False, course=course, submitted_at=DUE + HOUR)
    book = pd.read_csv(out / "grades.csv", dtype=str).set_index("learner")
    # fake_grade: step1/names 2, step1/table 1, step2/type_limit 3; step1 weighs 2, late keeps 80%.
    assert book.loc["ana", ["score", "weighted_score", "weighted_max", "credited_score", "period"]].tolist() == [
        "6",
        "9.0",
        "9.0",
        "7.2",
        "late",
    ]
    assert book.loc["bob", "credited_score"] == "3.2"
    assert book.loc["ana", "submitted_at"] == "2026-03-01T23:59:00Z" and "80% credit" in book.loc["ana", "why"]
    graded = {r["learner"]: r for r in json.loads((out / "grades.json").read_text())["learners"]}
    assert graded["ana"]["credit"]["credited"] == 7.2 and graded["ana"]["score"] == 6
    feedback = (out / "feedback" / "ana.md").read_text()
    assert (
        "**The grade that counts: 7.2/9, from this submission: 6/6 points (weighted 9/9), late (80% credit).**"
        in feedback
        and "Credited" not in feedback
    )
    gradescope = json.loads((out / "gradescope" / "ana" / "results.json").read_text())
    assert gradescope["score"] == 7.2 and gradescope["output"].startswith("Credited: 7.2/9")
    assert "## Course policy" in (out / "summary.md").read_text()

    # --resume keeps the time of the run that graded unchanged bytes: a later run does not make them later.
    run_batch(
        root,
        out,
        jobs=1,
        seed=3,
        resume=True,
        grade_fn=fake_grade,
        progress=False,
        course=course,
        submitted_at=LATE_DUE + HOUR,
    )
    again = pd.read_csv(out / "grades.csv", dtype=str).set_index("learner")
    assert again.loc["ana", "credited_score"] == "7.2"


def test_a_batch_without_a_course_has_no_credit_columns(tmp_path):
    from grader.batch import run_batch

    root = make_class(tmp_path / "class", {"ana": ALL_PASS})
    run_batch(root, tmp_path / "out", jobs=1, seed=3, grade_fn=fake_grade, progress=False)
    assert "credited_score" not in pd.read_csv(tmp_path / "out" / "grades.csv").columns


# ---------------------------------------------------------------- the service: attempt limit and credited gradebook


def _store_with_times(times, learner="ana"):
    """A store whose attempts were submitted at ``times`` (the store stamps now; the test moves them)."""
    from sqlalchemy import update

    from grader.service.db import Attempt as Row
    from grader.service.db import Store

    store = Store("sqlite://")
    ids = [store.add_attempt(learner, b"x = 1\n", seed=1) for _ in times]
    with store.session() as s, s.begin():
        for attempt_id, when in zip(ids, times):
            s.execute(
                update(Row).where(Row.id == attempt_id).values(submitted_at=when.astimezone(UTC).replace(tzinfo=None))
            )
    return store, ids


def test_the_service_refuses_the_extra_attempt_and_says_when_the_next_one_is_allowed():
    from grader.service.attempt_policy import refuse, status

    p = policy(extra="[attempts]\nlimit = 2\nwindow_minutes = 60\n")
    t0 = dt.datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    store, _ = _store_with_times([t0, t0 + dt.timedelta(minutes=20)])
    message, wait = refuse(store, "ana", p, now=t0 + dt.timedelta(minutes=30))
    assert "at most 2 attempts per 60 minutes" in message
    assert "allowed at 2026-03-01T11:00:00Z (in 30 min 0 s)" in message and wait == 1800
    assert refuse(store, "bob", p, now=t0 + dt.timedelta(minutes=30)) is None  # per learner
    assert refuse(store, "ana", p, now=t0 + dt.timedelta(minutes=60, seconds=1)) is None  # the first left the window
    shown = status(store, "ana", p, now=t0 + dt.timedelta(minutes=30))
    assert (shown["attempts_left"], shown["next_allowed"], shown["due"]) == (
        0,
        "2026-03-01T11:00:00Z",
        "2026-03-01T22:59:00Z",
    )
    assert status(store, "ana", p, now=t0 + dt.timedelta(minutes=70))["attempts_left"] == 1


def test_the_submission_handler_answers_429_with_the_course_message(monkeypatch):
    """Through the tornado handler (the hub's login replaced by a fixed user): 202, 202, then 429."""
    pytest.importorskip("jupyterhub")
    from tornado.testing import AsyncHTTPTestCase

    from grader.service import app as service_app
    from grader.service.db import Store
    from grader.service.options import ServiceOptions as Settings

    class NoQueue:
        def put(self, attempt_id, learner=None):
            pass

        def not_stored(self):
            return set()

    async def ana(self):  # the service learns who calls in prepare(), awaiting the hub
        return {"name": "ana", "admin": False}

    monkeypatch.setattr(service_app._Base, "_caller", ana)
    store = Store("sqlite://")
    settings = Settings(course=policy(extra="[attempts]\nlimit = 2\nwindow_minutes = 60\n"))

    class Case(AsyncHTTPTestCase):
        def get_app(self):
            return service_app.make_app(
                store,
                NoQueue(),
                settings,  # base_url: where the pages' XSRF cookie goes
                hub_auth=types.SimpleNamespace(base_url=settings.prefix),
            )

        def runTest(self):
            answers = [
                self.fetch(
                    "/api/submissions",
                    method="POST",
                    body=b"x = 1\n",
                    headers={"Authorization": "token t", "Content-Type": "text/x-python"},
                )
                for _ in range(3)
            ]
            assert [a.code for a in answers] == [202, 202, 429]
            error = json.loads(answers[2].body)["error"]
            assert error.startswith("at most 2 attempts per 60 minutes; your next attempt is allowed at ")
            assert 3500 <= int(answers[2].headers["Retry-After"]) <= 3600
            page = self.fetch("/").body.decode()
            assert 'Due <time datetime="2026-03-01T22:59:00Z"' in page and "Attempts left: 0 of 2" in page
            assert json.loads(self.fetch("/api/course").body)["attempts_left"] == 0

    # In a thread of its own: tornado's test case runs its own event loop, and the test
    # session may already have one running in this thread (a notebook or browser test's).
    outcome: list = []
    runner = threading.Thread(target=lambda: outcome.append(Case().run()))
    runner.start()
    runner.join(timeout=120)
    assert outcome, "the tornado test case did not finish within 120 s"
    result = outcome[0]
    assert result is not None and result.testsRun == 1, result
    assert not result.errors and not result.failures, (result.errors, result.failures)


def test_the_service_gradebook_counts_the_attempt_the_policy_picks():
    from grader.outputs.gradebook import gradebook_frame
    from grader.service.attempt_policy import credited_records

    store, ids = _store_with_times([DUE - HOUR, DUE + HOUR, LATE_DUE + HOUR])
    for attempt_id, score in zip(ids, (5, 10, 10)):
        store.claim(attempt_id)
        store.finish(attempt_id, "graded", {**report(score), "steps": {}, "seed": 1, "path": "t.py"})
    [record] = credited_records(store.finished(), policy())
    assert (record["attempt"], record["credit"]["credited"], record["credit"]["period"]) == (ids[1], 8.0, LATE)
    row = gradebook_frame([record]).iloc[0]
    assert (row["score"], row["credited_score"], row["counted"]) == (10, 8.0, ids[1])


def test_load_policy_reads_a_file_and_names_an_unreadable_one(tmp_path):
    path = tmp_path / "course.toml"
    path.write_text(COURSE.format(counts="last"))
    assert load_policy(path).counts == "last"
    with pytest.raises(CourseError, match="cannot be read"):
        load_policy(tmp_path / "missing.toml")


# ---------------------------------------------------------------- LMS import files

ROSTER = (
    "learner,lms_id,name,sis_user_id,sis_login_id,section,email\n"
    'ana,101,"Lima, Ana",S-1,ana01,A,ana@example.org\n'
    "김민준,102,김민준,S-2,kim02,B,kim@example.org\n"
    "ghost,103,Nobody Here,S-3,gh03,A,gh@example.org\n"
    '=evil,104,=HYPERLINK("http://x"),S-4,ev04,A,@ev\n'
)


def test_canvas_and_moodle_files_have_the_documented_columns_and_list_the_unmatched(tmp_path, capsys):
    import csv

    from grader.cli import main

    (tmp_path / "roster.csv").write_text(ROSTER, encoding="utf-8")
    make_class(
        tmp_path / "class",
        {"ana": ALL_PASS, "김민준": "pass:step1/names", "stranger": ALL_PASS, "=evil": "pass:step1/table"},
    )
    course = tmp_path / "course.toml"
    course.write_text(COURSE.format(counts="best"))
    out = tmp_path / "out"
    code = main(
        [
            "batch",
            str(tmp_path / "class"),
            "--out",
            str(out),
            "--roster",
            str(tmp_path / "roster.csv"),
            "--course",
            str(course),
            "--no-progress",
            "--jobs",
            "1",
            "--seed",
            "1",
        ]
    )
    assert code in (0, 1)
    err = capsys.readouterr().err
    assert "roster: stranger: graded, but not in the roster" in err
    assert "roster: ghost: in the roster, but no graded submission" in err

    canvas = list(csv.reader((out / "lms" / "canvas.csv").open(encoding="utf-8")))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "agtool lab"]
    assert canvas[1][0] == "Points Possible" and canvas[1][1:5] == ["", "", "", ""]
    by_id = {row[1]: row for row in canvas[2:]}
    assert set(by_id) == {"101", "102", "104"}  # the learner folder "=evil" is "_evil", matched through the roster
    assert by_id["102"][0] == "김민준"  # Unicode names kept
    assert by_id["104"][0] == '\'=HYPERLINK("http://x")'  # a formula from the roster is escaped too
    moodle = list(csv.reader((out / "lms" / "moodle.csv").open(encoding="utf-8")))
    assert moodle[0] == ["ID number", "Email address", "agtool lab", "Feedback"]
    assert {row[0]: row[1] for row in moodle[1:]}["104"] == "'@ev"
    unmatched = list(csv.reader((out / "lms" / "unmatched.csv").open(encoding="utf-8")))
    assert unmatched == [
        ["learner", "problem"],
        ["stranger", "graded, but not in the roster"],
        ["ghost", "in the roster, but no graded submission"],
    ]


def test_the_lms_score_is_the_credited_one_and_the_feedback_says_why():
    from grader.outputs.lms import canvas_csv, grade_rows, moodle_csv, read_roster_text

    records = [
        {
            "learner": "ana",
            "report": {"score": 10, "max_score": 10},
            "credit": {"credited": 8.0, "max_score": 10.0, "attempt": 4, "why": "late (80% credit ...)"},
        }
    ]
    roster = read_roster_text("learner,lms_id\nana,101\n")
    canvas, unmatched = canvas_csv(grade_rows(records), roster, assignment="Lab 3", assignment_id="5512")
    assert (
        canvas.splitlines()
        == ["Student,ID,SIS User ID,SIS Login ID,Section,Lab 3 (5512)", "Points Possible,,,,,10", "ana,101,,,,8"]
        and unmatched == []
    )
    assert (
        moodle_csv(grade_rows(records), roster, assignment="Lab 3")[0].splitlines()[1]
        == "101,,8,attempt 4: late (80% credit ...)"
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ("name,id\nana,1\n", "no learner column"),
        ("learner,lms_id\nana,\n", "line 2: lms_id is empty"),
        ("learner,lms_id\nana,1\nana,2\n", "line 3: learner 'ana' is listed twice"),
    ],
)
def test_a_bad_roster_is_refused_with_the_line_and_the_fix(text, message):
    from grader.outputs.lms import RosterError, read_roster_text

    with pytest.raises(RosterError, match=message):
        read_roster_text(text)


# ---------------------------------------------------------------- similarity

REPO = TESTS_DIR.parent
SOLUTION = (REPO / "solutions" / "tools.py").read_text(encoding="utf-8")


def test_similarity_flags_a_disguised_copy_and_the_reference_but_not_independent_modules(tmp_path):
    from grader.batch import run_batch

    styles = {p.stem: p.read_text(encoding="utf-8") for p in sorted((TESTS_DIR / "alt_styles").glob("*.py"))}
    independent = ["command_routing", "decorated_tools", "hashed_keys", "rules_objects"]
    sources = {
        "orig": SOLUTION,
        "copier": _disguised(SOLUTION),
        **{name: styles[name] for name in independent},
        "starter": (REPO / "starter" / "tools.py").read_text(encoding="utf-8"),
    }
    assert sources["copier"] != SOLUTION and "v0_x" in sources["copier"]
    make_class(tmp_path / "class", sources)
    out = tmp_path / "out"
    result = run_batch(
        tmp_path / "class",
        out,
        jobs=1,
        seed=1,
        grade_fn=fake_grade,
        progress=False,
        similarity=True,
        reference=REPO / "solutions" / "tools.py",
    )
    pairs = {(p.a, p.b): p for p in result.similar}
    copy = pairs[("copier", "orig")]
    assert copy.flagged and min(copy.similarity_a, copy.similarity_b) > 0.8
    independent_pairs = [p for p in result.similar if p.a in independent and p.b in independent]
    assert len(independent_pairs) == 6 and not any(p.flagged for p in independent_pairs)
    # The disguised pair ranks above every pair of independent modules.
    rank = [(p.a, p.b) for p in result.similar]
    assert all(rank.index(("copier", "orig")) < rank.index((p.a, p.b)) for p in independent_pairs)
    # The starter is boilerplate: it is like nobody.
    assert not any(p.flagged for p in result.similar if "starter" in (p.a, p.b))
    flagged_refs = {p.a for p in result.similar if p.kind == "reference" and p.flagged}
    assert flagged_refs == {"orig", "copier"}

    table = pd.read_csv(out / "similarity.csv", dtype=str)
    assert list(table.columns) == ["rank", "a", "b", "similarity_a", "similarity_b", "shared_tokens", "flagged", "kind"]
    assert table.iloc[0]["flagged"] == "yes"
    page = (out / "similarity.html").read_text(encoding="utf-8")
    assert "<mark>" in page and "reference:tools.py" in page


def _commented(source: str) -> str:
    """A comment before every return and every def (the copier's "my own words")."""
    return source.replace("\n    return", "\n    # here I give the answer back\n    return").replace(
        "\ndef ", "\n# my helper below\ndef "
    )


def test_on_a_generated_class_each_disguised_copy_ranks_above_every_honest_pair(tmp_path):
    """A generated class: solution, starter, planted defects, independent styles, disguised copies."""
    from defects.catalog import materialise_text

    from grader.batch import run_batch

    styles = {p.stem: p.read_text(encoding="utf-8") for p in sorted((TESTS_DIR / "alt_styles").glob("*.py"))}
    independent = ["command_routing", "decorated_tools", "hashed_keys", "rules_objects"]
    disguises = {
        "renamed": ("hashed_keys", _renamed),
        "reordered": ("rules_objects", _reordered),
        "commented": ("decorated_tools", _commented),
        "all_three": ("command_routing", lambda t: _commented(_reordered(_renamed(t)))),
    }
    sources = {
        "solution": SOLUTION,
        "starter": (REPO / "starter" / "tools.py").read_text(encoding="utf-8"),
        **{
            f"defect{i}": materialise_text(check)
            for i, check in enumerate(("step2/type_bool_limit", "step5/second_call_cached", "step7/repair_region"))
        },
        **{name: styles[name] for name in independent},
        **{f"copy_{kind}": make(styles[base]) for kind, (base, make) in disguises.items()},
    }
    for kind, (base, _) in disguises.items():
        assert sources[f"copy_{kind}"] != styles[base], kind
    make_class(tmp_path / "class", sources)
    result = run_batch(
        tmp_path / "class",
        tmp_path / "out",
        jobs=1,
        seed=1,
        grade_fn=fake_grade,
        progress=False,
        similarity=True,
        reference=REPO / "solutions" / "tools.py",
    )
    rank = {frozenset((p.a, p.b)): i for i, p in enumerate(result.similar)}
    by_pair = {frozenset((p.a, p.b)): p for p in result.similar}
    honest = [
        frozenset((a, b))
        for i, a in enumerate(independent + ["solution"])
        for b in (independent + ["solution"])[i + 1 :]
    ]
    assert all(h in rank for h in honest)  # every pair is ranked, not only the suspicious ones
    for kind, (base, _) in disguises.items():
        pair = frozenset((f"copy_{kind}", base))
        assert by_pair[pair].flagged, kind
        assert all(rank[pair] < rank[h] for h in honest), (kind, [sorted(h) for h in honest if rank[h] < rank[pair]])
    assert not any(by_pair[h].flagged for h in honest)
    assert not any(p.flagged for p in result.similar if "starter" in (p.a, p.b) and p.kind != "reference")
    # The planted defects are the reference with one edit: flagged as matching it, as such.
    flagged_refs = {p.a for p in result.similar if p.kind == "reference" and p.flagged}
    assert {"solution", "defect0", "defect1", "defect2"} <= flagged_refs


def test_similarity_html_escapes_learner_code():
    from bs4 import BeautifulSoup

    from grader.outputs.similarity import compare, similarity_html

    evil = "def f(a, b):\n    s = '</pre><script>alert(1)</script>'\n    return a + b * 2 - a + b * 3 - a\n"
    sources = {"<img src=x onerror=alert(1)>": evil, "b": evil}
    pairs = compare(sources, boilerplate=[], k=5)
    soup = BeautifulSoup(similarity_html(pairs, sources), "html.parser")
    assert soup.find("script") is None and soup.find("img") is None
    assert "<script>alert(1)</script>" in soup.get_text()


# ---------------------------------------------------------------- golden LMS files (batch and the service)

GOLDEN_LMS = TESTS_DIR / "golden" / "lms"


def _lms_records():
    """Three learners (Unicode, a comma, a formula) with credited scores, as batch and the service both record them."""
    rows = [
        ("ana", 10, 10, 8.0, "late (80% credit until 2026-03-08T22:59:00Z)"),
        ("김민준", 7, 10, 7.0, "the highest credited score of 2; on time"),
        ("_evil", 3, 10, 3.0, "=cmd|' /C calc'!A0"),
    ]
    return [
        {
            "learner": who,
            "report": {"score": raw, "max_score": top},
            "credit": {"credited": credited, "max_score": float(top), "attempt": i + 1, "why": why},
        }
        for i, (who, raw, top, credited, why) in enumerate(rows)
    ]


def test_canvas_and_moodle_files_match_their_golden_files_and_the_service_serves_the_same_bytes(tmp_path):
    import os

    from grader.outputs.lms import read_roster_text, write_lms
    from grader.service.app import lms_files
    from grader.service.options import ServiceOptions as Settings

    roster = read_roster_text(ROSTER)
    paths, _ = write_lms(_lms_records(), roster, tmp_path / "lms", assignment="Lab 3 · tools")
    served = lms_files(_lms_records(), Settings(roster=roster, course=policy()))
    for name in ("canvas", "moodle", "unmatched"):
        got = paths[f"lms:{name}"].read_text(encoding="utf-8")
        golden = GOLDEN_LMS / f"{name}.csv"
        if os.environ.get("UPDATE_GOLDEN"):
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(got, encoding="utf-8")
        assert got == golden.read_text(encoding="utf-8"), name
        if name != "unmatched":  # the service names the assignment after the course file ("agtool lab")
            assert served[name] == got.replace("Lab 3 · tools", "agtool lab"), name
        else:
            assert served[name] == got
