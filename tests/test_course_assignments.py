"""A course of several assignments: the ``[[assignments]]`` course file, each assignment's credit, its columns.

Scores are worked out by hand from the course file and the reports in each
test; batch runs use ``helpers.fake_grade`` so they test the course, not the checks.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from grader.course.policy import (
    AFTER_LATE,
    LATE,
    ON_TIME,
    SINGLE_ID,
    Attempt,
    CourseError,
    credit,
    credit_assignment,
    credit_course,
    parse_course,
    parse_policy,
)
from grader.report import STEPS

UTC = dt.timezone.utc
HOUR = dt.timedelta(hours=1)
A_DUE = dt.datetime(2030, 1, 10, 23, 59, tzinfo=UTC)
B_DUE = dt.datetime(2030, 1, 24, 23, 59, tzinfo=UTC)
C_DUE = dt.datetime(2030, 2, 7, 23, 59, tzinfo=UTC)

COURSE = """
[[assignments]]
id = "lab-a"
name = "Lab A"
steps = [1, 2, 3, 4]
due = 2030-01-10T23:59:00+00:00

[[assignments]]
id = "lab-b"
name = "Lab B"
steps = [5, 6, 7, 8]
due = 2030-01-24T23:59:00+00:00
late_due = 2030-01-31T23:59:00+00:00
late_credit = 0.5
counts = "last"
[assignments.attempts]
limit = 3
window_minutes = 60
[assignments.weights]
step5 = 2.0

[[assignments]]
id = "lab-c"
steps = [9, 10, 11]
due = 2030-02-07T23:59:00+00:00
"""

# A report whose step n scored n of 10 points (steps 1-11: 66 of 110).
STEP_REPORT = {
    "score": sum(STEPS),
    "max_score": 10 * len(STEPS),
    "steps": {str(s): {"score": s, "max_score": 10, "passed": False} for s in STEPS},
    "checks": [],
}


def course(text=COURSE):
    return parse_course(text, source="course.toml", check_ids=set())


def full_marks():
    return {**STEP_REPORT, "score": 110, "steps": {str(s): {"score": 10, "max_score": 10} for s in STEPS}}


# ---------------------------------------------------------------- parsing


def test_a_course_of_three_assignments_keeps_each_one_s_fields():
    got = course()
    assert got.ids == ("lab-a", "lab-b", "lab-c") and not got.single
    a, b, c = got.assignments
    assert (a.name, a.steps, a.policy.due, a.policy.counts, a.policy.limit) == (
        "Lab A",
        (1, 2, 3, 4),
        A_DUE,
        "best",
        None,
    )
    assert (b.policy.late_due, b.policy.late_credit, b.policy.counts) == (B_DUE + 7 * 24 * HOUR, 0.5, "last")
    assert (b.policy.limit, b.policy.window, b.policy.weights) == (3, 3600.0, {"step5": 2.0})
    assert (c.name, c.steps, c.policy.name) == ("lab-c", (9, 10, 11), "lab-c")  # no name: the id is shown
    assert got.get("lab-b") is b


def test_an_unknown_assignment_id_names_the_ones_there_are():
    with pytest.raises(KeyError, match="lab-a, lab-b, lab-c"):
        course().get("lab-z")


def test_the_one_table_file_is_one_assignment_lab_over_every_step():
    text = '[assignment]\nname = "agtool lab"\ndue = 2026-03-01T23:59:00Z\n[attempts]\nlimit = 2\nwindow_minutes = 5\n'
    got = parse_course(text, check_ids=set())
    (only,) = got.assignments
    assert got.single and (only.id, only.name, only.steps) == (SINGLE_ID, "agtool lab", tuple(STEPS))
    assert only.policy == parse_policy(text, check_ids=set()) == got.policy


def test_an_assignment_s_points_are_its_steps_weighted_registry_points():
    from grader.checks.registry import checks_for

    b = parse_course(COURSE).get("lab-b")
    expected = sum(c.points * (2 if c.step == 5 else 1) for c in checks_for([5, 6, 7, 8]))
    assert b.points == expected > 0
    whole = parse_course("[assignment]\ndue = 2026-03-01T23:59:00Z\n").get("lab")
    assert whole.points == sum(c.points for c in checks_for())


ONE = '[[assignments]]\nid = "lab-a"\nsteps = [1, 2]\ndue = 2030-01-10T23:59:00Z\n'


@pytest.mark.parametrize(
    "text, field, fix",
    [
        # the id: missing, not an id, used twice
        (
            "[[assignments]]\nsteps = [1]\ndue = 2030-01-10T23:59:00Z\n",
            "[[assignments]] number 1 id is missing",
            'id = "lab-a"',
        ),
        (
            ONE + '[[assignments]]\nid = "lab a"\nsteps = [3]\ndue = 2030-01-10T23:59:00Z\n',
            "number 2 id = 'lab a'",
            'id = "lab-a"',
        ),
        (ONE + "[[assignments]]\nid = 7\nsteps = [3]\ndue = 2030-01-10T23:59:00Z\n", "number 2 id = 7", 'id = "lab-a"'),
        (ONE + ONE.replace("[1, 2]", "[3]"), "number 2 id = 'lab-a' is the id of an earlier", "its own id"),
        # the steps: missing, not steps, twice, overlapping
        (
            '[[assignments]]\nid = "lab-b"\ndue = 2030-01-10T23:59:00Z\n',
            '"lab-b" steps is missing',
            "steps = [1, 2, 3, 4]",
        ),
        (ONE.replace("[1, 2]", "[]"), '"lab-a" steps = []', "steps = [1, 2, 3, 4]"),
        (ONE.replace("[1, 2]", "[1, 12]"), '"lab-a" steps has 12', "steps 1 to 11"),
        (ONE.replace("[1, 2]", '["1"]'), "\"lab-a\" steps has '1'", "steps = [1, 2, 3, 4]"),
        (ONE.replace("[1, 2]", "[2, 2]"), '"lab-a" steps lists step 2 twice', "each step once"),
        (
            ONE + ONE.replace("lab-a", "lab-b").replace("[1, 2]", "[2, 3]"),
            '"lab-b" steps has step 2, which assignment "lab-a"',
            "one assignment only",
        ),
        # the dates: missing, no zone, a date only, late date before the due date
        (
            '[[assignments]]\nid = "lab-c"\nsteps = [9]\n',
            '[[assignments]] "lab-c" due is missing',
            "due = 2026-03-01T23:59:00+01:00",
        ),
        (
            ONE.replace("2030-01-10T23:59:00Z", "2030-01-10T23:59:00"),
            '"lab-a" due = 2030-01-10T23:59:00 has no time zone',
            "add one",
        ),
        (
            ONE.replace("2030-01-10T23:59:00Z", "2030-01-10"),
            '"lab-a" due = 2030-01-10 is a date without a time',
            "full time",
        ),
        (
            ONE + "late_due = 2030-01-01T00:00:00Z\nlate_credit = 0.5\n",
            '"lab-a" late_due',
            "late date after the due date",
        ),
        (ONE + "late_credit = 0.5\n", '"lab-a" late_credit is given without late_due', "add late_due"),
        (ONE + "late_due = 2030-02-01T00:00:00Z\nlate_credit = 2\n", '"lab-a" late_credit = 2', "late_credit = 0.8"),
        (ONE + 'counts = "first"\n', "\"lab-a\" counts = 'first'", 'counts = "best"'),
        # fields and tables of an assignment
        (
            ONE + "points = 10\n",
            '"lab-a" points is not a field of an assignment',
            "the fields are attempts, counts, due",
        ),
        (ONE + "name = 3\n", '"lab-a" name is not a string', 'name = "agtool lab"'),
        (ONE + "attempts = 3\n", '"lab-a" attempts is a value, not a table', "[assignments.attempts]"),
        (
            ONE + "[assignments.attempts]\nlimit = 5\n",
            '[assignments.attempts] of "lab-a" window_minutes is missing',
            "window_minutes = 60",
        ),
        (
            ONE + "[assignments.attempts]\nlimit = 0\nwindow_minutes = 5\n",
            '[assignments.attempts] of "lab-a" limit = 0',
            "limit = 5",
        ),
        (
            ONE + "[assignments.attempts]\nlimit = 1\nwindow_minutes = -5\n",
            'of "lab-a" window_minutes = -5',
            "window_minutes = 60",
        ),
        (ONE + "[assignments.weights]\nstep2 = -1\n", '[assignments.weights] of "lab-a" step2 = -1', "step2 = 2.0"),
        (
            ONE + "[assignments.weights]\nstep5 = 2\n",
            "of \"lab-a\" 'step5' weighs step 5, which is not in this assignment (steps 1, 2)",
            "add 5",
        ),
        (
            ONE + "[assignments.weights]\nstep13 = 2\n",
            "of \"lab-a\" 'step13' is neither a step nor a check id",
            "step1 ... step11",
        ),
        # the file around the assignments
        (
            ONE + "[attempts]\nlimit = 1\nwindow_minutes = 5\n",
            "[attempts] cannot stand beside [[assignments]]",
            "[assignments.attempts]",
        ),
        (
            "[assignment]\ndue = 2030-01-10T23:59:00Z\n" + ONE,
            "[assignment] cannot stand beside [[assignments]]",
            "either one [assignment]",
        ),
        ('assignments = ["lab-a"]\n', "assignments is not a list of tables", "[[assignments]] on its own line"),
        ("assignments = []\n", "assignments is not a list of tables", "[[assignments]] on its own line"),
        ("[[assignments]\nid = 1\n", "is not valid TOML", "fix the syntax"),
    ],
)
def test_a_bad_course_of_assignments_names_the_field_the_assignment_and_the_fix(text, field, fix):
    with pytest.raises(CourseError) as caught:
        parse_course(text, source="course.toml", check_ids=set())
    message = str(caught.value)
    assert message.startswith("course.toml: ") or "is not valid TOML" in message, message
    assert field in message and fix in message, message


def test_a_step_in_no_assignment_is_allowed_and_credited_nowhere():
    got = course(ONE)
    c = credit_course([Attempt(1, A_DUE - HOUR, STEP_REPORT)], got)["lab-a"]
    assert (c.raw_score, c.raw_max, c.credited) == (3.0, 20.0, 3.0)  # steps 1 and 2 only


def test_parse_policy_sends_a_course_of_assignments_to_parse_course():
    with pytest.raises(CourseError, match="load_course or parse_course"):
        parse_policy(COURSE, check_ids=set())


# ---------------------------------------------------------------- credit per assignment


def test_each_assignment_credits_its_own_steps_under_its_own_due_date():
    got = course()
    # Submitted after Lab A's due date, before Lab B's and Lab C's: Lab A earns nothing (no late date).
    between = Attempt(1, A_DUE + HOUR, STEP_REPORT)
    credits = credit_course([between], got)
    assert credits["lab-a"].credited == 0.0 and credits["lab-a"].period == AFTER_LATE
    # Lab C: steps 9-11 = 9+10+11 points, on time.
    assert (credits["lab-c"].credited, credits["lab-c"].max_score, credits["lab-c"].period) == (30.0, 30.0, ON_TIME)
    # Before every due date each assignment gets its own steps' points.
    early = credit_course([Attempt(1, A_DUE - HOUR, STEP_REPORT)], got)
    assert {k: v.credited for k, v in early.items() if k != "lab-b"} == {"lab-a": 10.0, "lab-c": 30.0}


def test_a_late_attempt_gets_the_late_credit_of_its_own_assignment_only():
    text = COURSE.replace("[assignments.weights]\nstep5 = 2.0\n", "")
    got = course(text)
    late_for_b = Attempt(2, B_DUE + HOUR, full_marks())
    on_time = Attempt(1, A_DUE - HOUR, STEP_REPORT)
    credits = credit_course([on_time, late_for_b], got)
    # Lab A: the late-for-B attempt is after A's only date: the on-time one (1+2+3+4) counts.
    assert (credits["lab-a"].attempt, credits["lab-a"].credited) == (1, 10.0)
    # Lab B ("last"): the late attempt (40 points at 50%: 20) beats the on-time 26 only if higher: 26 stays.
    assert (credits["lab-b"].attempt, credits["lab-b"].credited, credits["lab-b"].period) == (1, 26.0, ON_TIME)
    # Lab C: both on time with steps 9-11 at 9+10+11 = 30 of 30 and 30 of 30: the earliest of equal ones.
    assert (credits["lab-c"].attempt, credits["lab-c"].credited) == (1, 30.0)
    # Alone, the late attempt gets Lab B's 50%.
    alone = credit_assignment([late_for_b], got.get("lab-b"))
    assert (alone.credited, alone.factor, alone.period) == (20.0, 0.5, LATE)


def test_an_assignment_s_weights_apply_to_its_own_checks():
    report = {
        "score": 6,
        "max_score": 8,
        "steps": {"1": {"score": 2, "max_score": 4}, "5": {"score": 4, "max_score": 4}},
        "checks": [
            {"id": "step1/a", "step": 1, "points": 2, "max_points": 4},
            {"id": "step5/b", "step": 5, "points": 4, "max_points": 4},
        ],
    }
    b = course().get("lab-b")
    got = credit_assignment([Attempt(1, B_DUE - HOUR, report)], b)
    assert (got.raw_score, got.raw_max, got.score, got.max_score, got.credited) == (4.0, 4.0, 8.0, 8.0, 8.0)


def test_an_assignment_over_every_step_credits_exactly_as_the_one_table_file():
    text = "[assignment]\ndue = 2030-01-10T23:59:00Z\nlate_due = 2030-01-20T00:00:00Z\nlate_credit = 0.7\n"
    attempts = [Attempt(1, A_DUE - HOUR, STEP_REPORT), Attempt(2, A_DUE + HOUR, full_marks())]
    whole = parse_course(text, check_ids=set()).get("lab")
    assert credit_assignment(attempts, whole) == credit(attempts, parse_policy(text, check_ids=set()))


def test_an_ungraded_attempt_credits_no_assignment():
    credits = credit_course([Attempt(1, A_DUE, None)], course())
    assert credits == {"lab-a": None, "lab-b": None, "lab-c": None}


# ---------------------------------------------------------------- a batch: a column per assignment in every export

BATCH_COURSE = """
[[assignments]]
id = "lab-a"
name = "Lab A"
steps = [1]
due = 2030-01-10T23:59:00Z
late_due = 2030-01-20T23:59:00Z
late_credit = 0.5

[[assignments]]
id = "lab-b"
name = "Lab B"
steps = [2]
due = 2030-01-24T23:59:00Z

[[assignments]]
id = "lab-c"
name = "Lab C"
steps = [3]
due = 2030-02-07T23:59:00Z
"""


def _three_assignment_batch(tmp_path):
    from helpers import ALL_PASS, fake_grade, make_class

    from grader.batch import run_batch

    course = tmp_path / "course.toml"
    course.write_text(BATCH_COURSE)
    roster = tmp_path / "roster.csv"
    roster.write_text("learner,lms_id,email\nana,101,ana@example.org\nbob,102,bob@example.org\n")
    root = make_class(tmp_path / "class", {"ana": ALL_PASS, "bob": "pass:step1/names"})
    out = tmp_path / "out"
    # Submitted after Lab A's due date (late: 50%), before Lab B's and Lab C's.
    when = A_DUE + HOUR
    result = run_batch(
        root, out, jobs=1, seed=3, grade_fn=fake_grade, progress=False, course=course, submitted_at=when, roster=roster
    )
    return out, result


def test_a_batch_of_three_assignments_has_a_column_per_assignment_in_every_export(tmp_path, capsys):
    import io
    import json
    import zipfile

    import pandas as pd

    from grader.checks.registry import checks_for
    from grader.cli import _print_assignments

    out, result = _three_assignment_batch(tmp_path)
    c_points = sum(c.points for c in checks_for([3]))
    # fake_grade: step1/names 2 + step1/table 1 (step 1), step2/type_limit 3 (step 2); nothing of step 3.
    book = pd.read_csv(out / "grades.csv", dtype=str).set_index("learner")
    assert book.columns[-3:].tolist() == ["lab-a", "lab-b", "lab-c"]
    assert book.loc["ana", ["lab-a", "lab-b", "lab-c", "credited_score"]].tolist() == ["1.5", "3.0", "0.0", "4.5"]
    assert book.loc["bob", ["lab-a", "lab-b", "lab-c"]].tolist() == ["1.0", "0.0", "0.0"]
    learners = {r["learner"]: r for r in json.loads((out / "grades.json").read_text())["learners"]}
    ana = learners["ana"]["assignments"]
    assert list(ana) == ["lab-a", "lab-b", "lab-c"] and ana["lab-c"]["points"] == c_points
    assert (ana["lab-a"]["credit"]["period"], ana["lab-b"]["credit"]["period"]) == ("late", "on time")
    assert ana["lab-a"]["due"] == "2030-01-10T23:59:00Z" and ana["lab-b"]["name"] == "Lab B"
    canvas = (out / "lms" / "canvas.csv").read_text().splitlines()
    assert canvas[0].endswith(",Lab A,Lab B,Lab C") and canvas[1] == "Points Possible,,,,,3,3,0"
    assert canvas[2] == "ana,101,,,,1.5,3,0" and canvas[3] == "bob,102,,,,1,0,0"
    moodle = (out / "lms" / "moodle.csv").read_text().splitlines()
    assert moodle[0] == "ID number,Email address,Lab A,Lab B,Lab C,Feedback"
    assert moodle[1].startswith("101,ana@example.org,1.5,3,0,") and "lab-a 1.5/3" in moodle[1]
    gradescope = json.loads((out / "gradescope" / "ana" / "results.json").read_text())
    lines = gradescope["output"].splitlines()
    assert lines[0].startswith("Lab A (lab-a): 1.5/3 (") and lines[1].startswith("Lab B (lab-b): 3/3 (")
    assert lines[2].startswith("Lab C (lab-c): 0/0 (") and gradescope["score"] == 4.5
    assert list(gradescope["extra_data"]["assignments"]) == ["lab-a", "lab-b", "lab-c"]
    from grader.outputs.gradescope_results import gradescope_zip
    from grader.outputs.record import LearnerRecord

    records = [LearnerRecord.from_dict(r) for r in learners.values()]
    with zipfile.ZipFile(io.BytesIO(gradescope_zip(records))) as zf:  # the service's download
        assert "Lab B (lab-b)" in zf.read("gradescope/bob/results.json").decode()
    feedback = (out / "feedback" / "ana.md").read_text()
    assert "The grade that counts: 4.5/6, the sum of your assignments' credited grades." in feedback
    assert "Each assignment: Lab A (lab-a) 1.5/3, late (50% credit); Lab B (lab-b) 3/3; Lab C (lab-c) 0/0." in feedback
    summary = (out / "summary.md").read_text()
    assert "### Assignments" in summary and "Lab C (`lab-c`): mean credited score 0.00 / 0" in summary
    assert "Lab A (`lab-a`): mean credited score 1.25 / 3" in summary
    assert result.assignments[0] == ("lab-a", "Lab A", 1.25, 3.0, 2)
    _print_assignments(result.assignments)
    assert "assignment lab-a (Lab A): mean credited 1.25/3 over 2 learner(s)" in capsys.readouterr().out


def test_a_record_of_several_assignments_fits_the_schema_and_round_trips(tmp_path):
    import json

    import jsonschema

    from grader.outputs.record import LearnerRecord

    out, _ = _three_assignment_batch(tmp_path)
    schema = json.loads((Path(__file__).parent / "schemas" / "learner_record.schema.json").read_text())
    data = json.loads((out / "results" / "ana.json").read_text())
    jsonschema.validate(data, schema)
    assert "assignments" not in data  # the saved record is the grading's; the course's credit is made per run
    record = LearnerRecord.from_dict(
        {**data, "assignments": {"lab-a": {"name": "A", "due": "x", "points": 1, "credit": None}}}
    )
    jsonschema.validate(record.to_dict(), schema)
    assert LearnerRecord.from_dict(record.to_dict()) == record


def test_an_assignment_id_may_not_take_a_grades_csv_column_s_name():
    from grader.course.policy import RESERVED_IDS
    from grader.outputs.gradebook import CREDIT_COLUMNS, OVERRIDE_COLUMNS, gradebook_frame

    own = set(gradebook_frame([]).columns) | set(CREDIT_COLUMNS) | set(OVERRIDE_COLUMNS) | {"extended_due"}
    assert own <= RESERVED_IDS
    for taken in ("score", "step3", "why"):
        with pytest.raises(CourseError, match=f"id = '{taken}' is the name of a column grades.csv has already"):
            parse_course(ONE.replace('"lab-a"', f'"{taken}"'), check_ids=set())


# ---------------------------------------------------------------- the service: a line per assignment

SERVICE_COURSE = COURSE.replace("limit = 3", "limit = 2")


def _graded_store(times_reports, learner="ana"):
    """A store with ``learner``'s attempts graded with these reports, submitted at these times."""
    from sqlalchemy import update

    from grader.service.db import Attempt as Row
    from grader.service.db import Store

    store = Store("sqlite://")
    ids = []
    for when, rep in times_reports:
        attempt_id = store.add_attempt(learner, b"x = 1\n", seed=1)
        store.claim(attempt_id)
        store.finish(attempt_id, "graded", {**rep, "seed": 1, "path": "t.py"})
        with store.session() as s, s.begin():
            s.execute(update(Row).where(Row.id == attempt_id).values(submitted_at=when.replace(tzinfo=None)))
        ids.append(attempt_id)
    return store, ids


def test_the_service_credits_each_assignment_and_shows_a_line_per_assignment():
    from grader.service import pages
    from grader.service.class_records import class_data, course_status

    got = parse_course(SERVICE_COURSE, check_ids=set())
    # One attempt before Lab A's date (steps at n points), one after it (full marks), both before B's and C's.
    store, ids = _graded_store([(A_DUE - HOUR, STEP_REPORT), (A_DUE + HOUR, full_marks())])
    shown = course_status(store, "ana", got)
    lines = {line["id"]: line for line in shown["assignments"]}
    assert list(lines) == ["lab-a", "lab-b", "lab-c"] and "lms" not in lines["lab-a"]
    assert (lines["lab-a"]["counted"]["attempt"], lines["lab-a"]["counted"]["credited"]) == (ids[0], 10.0)
    assert (lines["lab-c"]["counted"]["attempt"], lines["lab-c"]["counted"]["credited"]) == (ids[0], 30.0)
    assert lines["lab-b"]["limit"] == 2 and lines["lab-a"]["limit"] is None
    assert lines["lab-b"]["due"] == "2030-01-24T23:59:00Z" and lines["lab-a"]["steps"] == [1, 2, 3, 4]
    assert shown["counted"]["credited"] == sum(line["counted"]["credited"] for line in lines.values())

    html = pages.learner_page("ana", [], prefix="/p/", is_instructor=False, course=shown)
    table = html.split("<caption>Your assignments</caption>", 1)[1].split("</table>", 1)[0]
    assert table.count("<tr><th scope=row>") == 3 and "Lab A <small class=muted>lab-a</small>" in table
    assert "lab-c</small></th><td>9, 10, 11</td>" in table and "the last attempt on time" in table
    assert "10 of " in table and "attempt 1" in table and "LMS" not in table  # no LMS: no column

    rows, records, _ = class_data(store, got)
    assert set(rows[0]["assignments"]) == {"lab-a", "lab-b", "lab-c"} and rows[0]["assignments"]["lab-a"] == 10.0
    assert records[0].attempt == ids[1]  # the newest graded attempt is the record shown beside the credits
    page = pages.class_page(rows, {"checks": [], "wrong_answers": []}, prefix="/p/", refresh=10)
    assert "<th>lab-a</th><th>lab-b</th><th>lab-c</th>" in page
    # The service's downloads: grades.csv and the LMS files have a column per assignment too.
    from grader.outputs.gradebook import gradebook_csv
    from grader.outputs.lms import read_roster_text
    from grader.service.exports import lms_files
    from grader.service.options import ServiceOptions

    header = gradebook_csv(records).splitlines()[0]
    assert header.endswith(",lab-a,lab-b,lab-c")
    files = lms_files(records, ServiceOptions(roster=read_roster_text("learner,lms_id\nana,7\n"), course=got))
    assert files["canvas"].splitlines()[0].endswith(",Lab A,Lab B,lab-c")


def test_the_learner_line_says_whether_each_assignment_reached_the_lms():
    from grader.service import pages
    from grader.service.class_records import course_status

    got = parse_course(SERVICE_COURSE, check_ids=set())
    store, _ = _graded_store([(A_DUE - HOUR, STEP_REPORT)])
    shown = course_status(store, "ana", got, sent={"lab-a": "2030-01-10T20:00:00Z"})
    assert [line["lms"] for line in shown["assignments"]] == ["2030-01-10T20:00:00Z", None, None]
    html = pages.learner_page("ana", [], prefix="/p/", is_instructor=False, course=shown)
    assert html.count("<td>not sent</td>") == 2 and "<th scope=col>LMS</th>" in html
    assert '<td>sent <time datetime="2030-01-10T20:00:00Z"' in html
    one = course_status(store, "ana", parse_course("[assignment]\ndue = 2030-01-10T23:59:00Z\n"), sent={})
    assert one["lms"] is None and "Not sent to the LMS." in pages.course_html(one)


def test_an_open_assignment_s_limit_refuses_and_a_closed_one_s_does_not():
    from grader.service.attempt_policy import refuse, status

    got = parse_course(SERVICE_COURSE, check_ids=set())
    t0 = A_DUE + HOUR  # Lab A closed; Lab B (2 attempts per 60 min) open
    store, _ = _graded_store([(t0, STEP_REPORT), (t0 + dt.timedelta(minutes=10), STEP_REPORT)])
    message, wait = refuse(store, "ana", got, now=t0 + dt.timedelta(minutes=20))
    assert message.startswith("Lab B: at most 2 attempts per 60 minutes") and wait == 40 * 60
    shown = status(store, "ana", got, now=t0 + dt.timedelta(minutes=20))
    assert (shown["name"], shown["limit"], shown["attempts_left"]) == ("Lab B", 2, 0)  # the next open one's
    # After Lab B's late date only Lab C is open: it sets no limit.
    late = B_DUE + 8 * 24 * HOUR
    store, _ = _graded_store([(late, STEP_REPORT), (late, STEP_REPORT)])
    assert refuse(store, "ana", got, now=late + dt.timedelta(minutes=1)) is None


def test_an_extension_never_makes_an_assignment_due_earlier():
    from grader.service.actions_db import Terms
    from grader.service.attempt_policy import course_for_learner

    got = parse_course(SERVICE_COURSE, check_ids=set())
    mine = course_for_learner(got, Terms(due=A_DUE + 24 * HOUR, late_due=None, extra_attempts=1))
    a, b, c = mine.assignments
    assert a.policy.due == A_DUE + 24 * HOUR and b.policy.due == B_DUE and c.policy.due == C_DUE
    assert b.policy.late_due == got.get("lab-b").policy.late_due and b.policy.limit == 3


def test_the_submit_panel_shows_a_line_per_assignment_from_the_service_s_status():
    import json

    from agtool_lab.submit import CourseStatus
    from agtool_lab.view import assignment_lines, course_html

    got = parse_course(SERVICE_COURSE.replace('name = "Lab A"', 'name = "Lab <b>A</b>\\u202e"'), check_ids=set())
    store, _ = _graded_store([(A_DUE - HOUR, STEP_REPORT)])
    now = A_DUE - 2 * HOUR
    from grader.service.class_records import course_status

    sent = json.loads(json.dumps(course_status(store, "ana", got, sent={"lab-b": "2030-01-10T20:00:00Z"})))
    lines = assignment_lines(sent, now)
    assert len(lines) == 3 and all("\n" not in line for line in lines)
    assert lines[0].startswith("Lab <b>A</b>") and "(steps 1, 2, 3, 4) · due 2030-01-10 23:59 UTC (in 2 h)" in lines[0]
    assert "\u202e" not in lines[0]  # a bidi control in a name is shown, not obeyed
    assert lines[0].endswith("credited 10/40 · not sent to the LMS")
    assert "attempts left: 1 of 2" in lines[1] and "sent to the LMS 2030-01-10 20:00 UTC" in lines[1]
    assert lines[2].startswith("lab-c (steps 9, 10, 11)") and "credited 30/30" in lines[2]
    html = course_html(sent, now)
    assert html.count('<span class="agtool-course"') == 4 and "&lt;b&gt;A&lt;/b&gt;" in html and "<b>A" not in html
    text = CourseStatus(sent).text.splitlines()
    assert len(text) == 4 and text[1].startswith("Lab <b>A</b>")


def test_the_docs_course_of_three_assignments_parses_and_its_errors_are_the_parser_s():
    """The example in docs/classroom.md is a valid course, and the error lines it quotes are what the parser says."""
    import re

    page = (Path(__file__).resolve().parent.parent / "docs" / "classroom.md").read_text()
    section = page.split("### A course of several assignments", 1)[1]
    lines = section.splitlines()
    start = lines.index("    [[assignments]]")
    block = []
    for line in lines[start:]:
        if line and not line.startswith("    "):
            break
        block.append(line[4:])
    example = "\n".join(block)
    got = parse_course(example, source="course.toml")
    assert got.ids == ("lab-a", "lab-b", "lab-c") and got.get("lab-b").policy.limit == 5
    quoted = [line.strip() for line in section.splitlines() if line.startswith("    course.toml: ")]
    assert len(quoted) == 5
    broken = {
        "steps has step 4": example.replace("steps = [5, 6, 7, 8]", "steps = [4, 5, 6, 7, 8]"),
        "number 2 id = 'lab-a'": example.replace('id = "lab-b"', 'id = "lab-a"'),
        '"lab-c" due is missing': re.sub(
            r"(\[\[assignments\]\]\nid = \"lab-c\"\n[^\n]*\n[^\n]*\n)due = [^\n]*\n", r"\1", example
        ),
        "'step5' weighs": example.replace(
            "2030-01-10T23:59:00+00:00", "2030-01-10T23:59:00+00:00\n[assignments.weights]\nstep5 = 1.0", 1
        ),
        "[attempts] cannot": example + "[attempts]\nlimit = 1\nwindow_minutes = 5\n",
    }
    for line, (key, text) in zip(quoted, broken.items()):
        assert key in line, (key, line)
        with pytest.raises(CourseError) as caught:
            parse_course(text, source="course.toml")
        assert str(caught.value).startswith(line.rstrip(".").removesuffix("...").rstrip()), (str(caught.value), line)


def test_the_service_handlers_refuse_by_the_open_assignment_and_show_a_line_each(monkeypatch):
    """Through the tornado handlers (the hub's login replaced by a fixed user), under a course of three assignments:
    Lab A is closed, Lab B's limit of 2 refuses the third attempt by name; api/course and the page have a line each,
    and what reached the LMS (a stand-in for the LTI service's answer) fills the LMS column."""
    pytest.importorskip("jupyterhub")
    import json
    import threading
    import types

    from tornado.testing import AsyncHTTPTestCase

    from grader.service import app as service_app
    from grader.service.db import Store
    from grader.service.options import ServiceOptions as Settings

    class NoQueue:
        def put(self, attempt_id, learner=None):
            pass

        def not_stored(self):
            return set()

    async def ana(self):
        return {"name": "ana", "admin": False}

    monkeypatch.setattr(service_app._Base, "_caller", ana)
    # Lab A's date is past (now is after 2026); Lab B and Lab C are open until 2099.
    text = (
        SERVICE_COURSE.replace("2030-01-10T23:59:00", "2026-01-10T23:59:00")
        .replace("2030-01-24", "2099-01-24")
        .replace("2030-01-31", "2099-01-31")
        .replace("2030-02-07", "2099-02-07")
    )
    settings = Settings(course=parse_course(text, check_ids=set()))
    # What the LTI service says was sent (ServiceOptions.sent_to_lms asks its sent_for; no LTI service here).
    settings.sent_to_lms = lambda learner: {"lab-b": "2026-12-01T10:00:00Z"} if learner == "ana" else {}
    store = Store("sqlite://")

    class Case(AsyncHTTPTestCase):
        def get_app(self):
            return service_app.make_app(
                store, NoQueue(), settings, hub_auth=types.SimpleNamespace(base_url=settings.prefix)
            )

        def runTest(self):
            headers = {"Authorization": "token t", "Content-Type": "text/x-python"}
            answers = [
                self.fetch("/api/submissions", method="POST", body=b"x = 1\n", headers=headers) for _ in range(3)
            ]
            assert [a.code for a in answers] == [202, 202, 429]
            assert json.loads(answers[2].body)["error"].startswith("Lab B: at most 2 attempts per 60 minutes")
            course = json.loads(self.fetch("/api/course").body)
            assert [line["id"] for line in course["assignments"]] == ["lab-a", "lab-b", "lab-c"]
            assert [line["lms"] for line in course["assignments"]] == [None, "2026-12-01T10:00:00Z", None]
            assert (course["name"], course["attempts_left"]) == ("Lab B", 0)
            page = self.fetch("/").body.decode()
            assert page.count("<tr><th scope=row>") == 3 and "<th scope=col>LMS</th>" in page
            assert "<td>not sent</td>" in page and "Lab B <small class=muted>lab-b</small>" in page

    outcome: list = []
    runner = threading.Thread(target=lambda: outcome.append(Case().run()))
    runner.start()
    runner.join(timeout=120)
    assert outcome, "the tornado test case did not finish within 120 s"
    result = outcome[0]
    assert result is not None and result.testsRun == 1, result
    assert not result.errors and not result.failures, (result.errors, result.failures)


def test_the_service_options_ask_the_lti_service_what_was_sent():
    import types

    from grader.service.options import ServiceOptions

    assert ServiceOptions().sent_to_lms("ana") is None  # no LMS: no LMS column, no "not sent"
    lti = types.SimpleNamespace(sent_for=lambda learner: {"lab-a": None} if learner == "ana" else {})
    assert ServiceOptions(lti=lti).sent_to_lms("ana") == {"lab-a": None}
    assert ServiceOptions(lti=types.SimpleNamespace()).sent_to_lms("ana") is None  # an LTI service without it
