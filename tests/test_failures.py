"""One grading failure, one status: batch, ``--resume`` and the service read a report's failure the same way.

A failure has a kind (``grader.report.FailureKind``): the learner's code, the
grader, the time budget, a refused input. The rule everywhere: a failure of
the grading machinery (``Failure.retry``: the grader) is graded again and
never stored or counted as a grade; the others are grades (zero points with
the reason as feedback).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest
from engine_probes import ENGINE_PROBES
from helpers import ALL_PASS, call_check, fake_grade, make_class

from grader.batch import run as batch_run
from grader.batch import run_batch
from grader.batch.task import GradeTask, grade_task
from grader.checks.registry import Check, Probe
from grader.grading import MAX_SOURCE_BYTES, grade
from grader.locate import Submission
from grader.report import Failure, FailureKind, Report, failure_of
from grader.service.db import ERROR, GRADED, Store
from grader.service.queue import GradingQueue, status_of

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO / "tests" / "schemas" / "report.schema.json").read_text())
RETRY_KINDS = ("grader",)


def _boom(submission, **kwargs):
    raise RuntimeError("a bug of the grader")


def kind_of(report: dict) -> str | None:
    failure = failure_of(report)
    return failure.kind.value if failure is not None else None


def _typed_reports(tmp_path: Path) -> dict[str, dict]:
    """One report per kind of failure, each made where the code makes it."""
    task = GradeTask("ana", "ana/agtool/tools.py", b"def broken(:\n    pass\n", "", seed=5, only=("step1/names",))
    queue = GradingQueue(Store(f"sqlite:///{tmp_path / 'q.sqlite'}"), jobs=1)
    return {
        "learner": grade_task(task),  # the real grader: the module does not import
        "refused": grade_task(dataclasses.replace(task, source=b"#" * (MAX_SOURCE_BYTES + 1))),
        "grader": grade_task(task, grade_fn=_boom),
        "grader-died": queue._lost((1, task), timed_out=False),
        "time": queue._lost((1, task), timed_out=True),
    }


def test_every_producer_types_its_failure_and_every_reader_agrees(tmp_path):
    reports = _typed_reports(tmp_path)
    for name, report in reports.items():
        kind = name.split("-")[0]
        jsonschema.validate(report, SCHEMA)
        assert kind_of(report) == kind, name
        retry = kind in RETRY_KINDS
        assert failure_of(report).retry is retry
        assert status_of(report) == (ERROR if retry else GRADED), name  # the service
        assert report["error"] == report["failure"]["message"] and report["score"] == 0
        # The same report read back, and as an older copy without the ``failure`` key, says the same.
        assert Report.from_dict(report).failure == failure_of(report)
        older = {key: value for key, value in report.items() if key != "failure"}
        assert failure_of(older) == failure_of(report), name
    assert reports["learner"]["error"].startswith("Your module could not be imported: SyntaxError")
    assert reports["learner"]["path"] == "ana/agtool/tools.py"  # the learner's name for it, not a scratch file
    assert all(
        c["reproduce"].startswith("agtool-grade check ana/agtool/tools.py ") for c in reports["learner"]["checks"]
    )


def test_a_judge_that_raises_makes_the_report_a_failure_of_the_grader_not_a_grade(temp_checks, engine_client):
    def bad_judge(probes, observations):
        raise RuntimeError("bug in a judge")

    broken = Check(
        id="step1/zz_failures_broken",
        step=1,
        points=2,
        title="t",
        hint="h",
        probes=lambda rng: [Probe("call", {"fn": "f"}, "f()")],
        judge=bad_judge,
    )
    ids = temp_checks(broken, call_check(1, "zz_failures_fine", "f", expect=1))
    report = grade(
        Submission(b"def f():\n    return 1\n", "ana/tools.py"),
        only=ids,
        engine=engine_client,
        probe_function=ENGINE_PROBES,
    )
    assert [c.passed for c in report.checks] == [False, True]
    assert report.failure.kind is FailureKind.GRADER and "bug in a judge" in report.error
    assert status_of(report.to_dict()) == ERROR


def test_batch_resume_and_the_service_give_one_status_to_each_failure(tmp_path, monkeypatch):
    sources = {"fine": ALL_PASS, "wrong": "# nothing yet", "buggy": "RAISE", "dies": "DIE", "hangs": "HANG"}
    expected = {"fine": None, "wrong": None, "buggy": "grader", "dies": "grader", "hangs": "time"}
    monkeypatch.setattr(batch_run, "GRACE", 1.0)  # the hang's batch worker is killed after 2 s
    root = make_class(tmp_path / "class", sources)
    out = tmp_path / "out"
    run_batch(root, out, jobs=2, seed=3, timeout=1.0, grade_fn=fake_grade, progress=False)
    batch_reports = {name: json.loads((out / "results" / f"{name}.json").read_text())["report"] for name in sources}

    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    ids = {name: store.add_attempt(name, source.encode(), seed=3) for name, source in sources.items()}
    queue = GradingQueue(store, jobs=2, grade_fn=fake_grade)
    queue.hard_limit = 3.0  # the hang's service worker is killed after 3 s, not a minute
    with queue:
        assert queue.wait_idle(120)

    again = run_batch(root, out, jobs=2, seed=3, timeout=1.0, grade_fn=fake_grade, progress=False, resume=True)
    for name, kind in expected.items():
        retry = kind in RETRY_KINDS
        attempt = store.get(ids[name])
        assert kind_of(batch_reports[name]) == kind_of(json.loads(attempt.report)) == kind, name
        assert attempt.status == status_of(batch_reports[name]) == (ERROR if retry else GRADED), name
        assert (attempt.score is None) is retry, name  # a retry failure is never stored as a grade
    # --resume grades again exactly the learners whose grading the machinery failed.
    assert again.graded == sum(kind in RETRY_KINDS for kind in expected.values())
    store.close()


def test_the_service_grades_again_at_its_next_start_what_the_machinery_failed(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    attempt = store.add_attempt("ana", ALL_PASS.encode(), seed=1)
    store.take(attempt)
    died = Report(
        seed=1, path="ana/attempt-1/tools.py", failure=Failure(FailureKind.GRADER, "the grading process died")
    )
    assert store.finish(attempt, status_of(died.to_dict()), died.to_dict())
    assert (store.get(attempt).status, store.get(attempt).score) == (ERROR, None)
    with GradingQueue(store, jobs=1, grade_fn=fake_grade) as queue:
        assert queue.wait_idle(60)
    assert (store.get(attempt).status, store.get(attempt).score) == (GRADED, 6)
    store.close()


@pytest.mark.parametrize("steps", [[1, 2]])
def test_the_solutions_report_and_a_failed_one_fit_the_schema(steps):
    source = (REPO / "solutions" / "tools.py").read_bytes()
    solved = grade(Submission(source, "solutions/tools.py"), steps=steps, seed=9)
    assert solved.failure is None and solved.score == solved.max_score
    jsonschema.validate(solved.to_dict(), SCHEMA)
    jsonschema.validate(json.loads((REPO / "tests" / "golden" / "report.json").read_text()), SCHEMA)
    failed = Report(seed=1, path="x/tools.py", failure=Failure("learner", "Your module could not be imported: X"))
    jsonschema.validate(failed.to_dict(), SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**failed.to_dict(), "failure": {"kind": "someone", "message": "x"}}, SCHEMA)
