"""The class outputs show all eleven steps: a column per step, a summary row per step, a bar per step.

A learner's report has checks of steps 1-11 (LAB_SPEC part two adds 9-11);
the gradebook, ``summary.md``, the step plot and the service's class page must
show steps 9-11 like the others, and a part-one-only run (``--steps 1..8``)
leaves their cells empty rather than zero.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.grading import grade
from grader.outputs.gradebook import gradebook_csv, gradebook_frame, step_frame
from grader.outputs.summary import render_summary
from grader.report import STEPS, CheckResult, Report

PART_TWO = (9, 10, 11)


def _record(learner: str, steps, passed: bool = True) -> dict:
    checks = [
        CheckResult(id=f"step{s}/c", step=s, passed=passed, points=2 * passed, max_points=2, title=f"step {s}")
        for s in steps
    ]
    return {
        "learner": learner,
        "source": f"{learner}/tools.py",
        "sha256": "0" * 64,
        "seed": 5,
        "selection": {"steps": None, "only": None},
        "report": Report(seed=5, path=f"{learner}/tools.py", checks=checks).to_dict(),
    }


def test_the_grader_has_eleven_steps():
    assert STEPS == tuple(range(1, 12))


def test_the_gradebook_has_a_column_per_step_including_part_two():
    book = gradebook_frame([_record("ana", STEPS), _record("bob", range(1, 9))]).set_index("learner")
    assert [c for c in book.columns if c.startswith("step") and "/" not in c] == [f"step{s}" for s in STEPS]
    assert [book.loc["ana", f"step{s}"] for s in PART_TWO] == [2, 2, 2]
    # bob was graded on part one only: part two's cells are empty, not 0.
    assert all(book.isna().loc["bob", f"step{s}"] for s in PART_TWO)
    header = gradebook_csv([_record("ana", STEPS)]).splitlines()[0].split(",")
    assert header[3 : 3 + len(STEPS)] == [f"step{s}" for s in STEPS]


def test_the_summary_and_the_step_plot_have_a_row_per_step_including_part_two():
    records = [_record("ana", STEPS), _record("cy", STEPS, passed=False)]
    summary = render_summary(records)
    rows = summary.split("## Score per step")[1].split("\n## ")[0]
    table = [line for line in rows.splitlines() if line.startswith("|")][2:]  # the rows under the header
    assert [line.split("|")[1].strip() for line in table] == [str(s) for s in STEPS]
    assert "Over the 2 learners counted" in rows
    assert sorted(step_frame(records)["step"].unique()) == list(STEPS)


def test_the_service_class_page_has_a_column_per_step():
    from grader.service.pages import class_page

    html = class_page([], {"checks": [], "wrong_answers": []}, prefix="/", refresh=0)
    assert all(f"<th>step {s}</th>" in html for s in STEPS)


def test_a_part_two_step_can_be_graded_alone_and_a_twelfth_is_refused():
    solution = Path(__file__).resolve().parent.parent / "solutions" / "tools.py"
    report = grade(solution, steps=[11], seed=4)
    assert set(report.steps) == {11} and report.score == report.max_score > 0
    with pytest.raises(ValueError, match="no step 12"):
        grade(solution, steps=[12], seed=4)


def test_the_report_schema_takes_every_step_and_no_other():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parent / "schemas" / "report.schema.json").read_text())
    eleven = _record("ana", STEPS)["report"]
    jsonschema.validate(eleven, schema)
    twelfth = _record("ana", [12])["report"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(twelfth, schema)
