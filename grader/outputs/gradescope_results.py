"""Gradescope's ``results.json``: one per learner, from the grade report (the autograder entry is
:mod:`grader.batch.gradescope`).

Gradescope runs ``/autograder/run_autograder`` with the learner's upload in
``/autograder/submission`` and reads ``/autograder/results/results.json``:
a top-level ``score`` and a list of ``tests``, each with ``name``,
``score``, ``max_score``, ``status`` (``passed``/``failed``), ``output``
and ``visibility``. One check of our registry is one Gradescope test.

Example::

    >>> from grader.report import CheckResult, Report
    >>> r = Report(seed=1, path="tools.py", checks=[CheckResult(
    ...     id="step1/names", step=1, passed=True, points=2, max_points=2, title="Data names")])
    >>> results_json(r)["tests"][0]["status"]
    'passed'
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

from grader.escape import terminal_text
from grader.messages import replay_for
from grader.outputs.learner_ids import unique_ids
from grader.outputs.record import LearnerRecord
from grader.render import crash_notes
from grader.report import Report

VISIBILITY = "visible"  # learners see every check: the feedback is the point of the lab
# Plain text: Gradescope shows it as is, never as Markdown, HTML or ANSI colours,
# and learner text has its control characters shown as visible escapes.
OUTPUT_FORMAT = "text"


def check_output_text(check, note: str = "") -> str:
    r"""The text shown under one Gradescope test: why it failed and how to replay it.

    >>> from grader.report import CheckResult
    >>> print(check_output_text(CheckResult(id="a", step=1, passed=False, points=0, max_points=1,
    ...                                     title="t", got="\x1b[32mPASS")))
    Failed.
    Got: \x1b[32mPASS
    """
    if check.passed:
        return "Passed."
    if note:  # the same crash as an earlier check of the step: said once, there (grader.render.crash_notes)
        return terminal_text(note)
    lines = [terminal_text(check.message or "Failed.")]
    for label, value in (
        ("Call", check.call),
        ("Expected", check.expected),
        ("Got", check.got),
        ("Hint", check.hint),
        ("Replay", replay_for(check.reproduce, "gradescope")),
    ):
        if value:
            lines.append(f"{label}: {terminal_text(value)}")
    return "\n".join(lines)


def results_json(report: Report, *, visibility: str = VISIBILITY, score: float | None = None) -> dict:
    """Gradescope's ``results.json`` content for one graded submission."""
    notes = crash_notes(report.checks)
    output = [f"{report.summary()} (seed {report.seed})."]
    if report.error:
        output.append(f"The module could not be graded: {terminal_text(report.error)}")
    step_lines = [f"Step {step}: {t['score']}/{t['max_score']}" for step, t in report.steps.items()]
    output.extend(step_lines)
    return {
        "score": float(report.score if score is None else score),
        "output": "\n".join(output),
        "output_format": OUTPUT_FORMAT,
        "test_output_format": OUTPUT_FORMAT,
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "extra_data": {"seed": report.seed, "max_score": report.max_score},
        "tests": [
            {
                "name": f"{c.id}: {c.title}",
                "number": f"{c.step}.{i}",
                "score": float(c.points),
                "max_score": float(c.max_points),
                "status": "passed" if c.passed else "failed",
                "output": check_output_text(c, notes.get(c.id, "")),
                "tags": [f"step{c.step}"],
                "visibility": visibility,
            }
            for i, c in _numbered(report.checks)
        ],
    }


def _numbered(checks):
    # Gradescope sorts by "number"; number checks within their step from 1.
    counts: dict[int, int] = {}
    for c in checks:
        counts[c.step] = counts.get(c.step, 0) + 1
        yield counts[c.step], c


def write_results(report: Report, path: str | os.PathLike[str], *, score: float | None = None) -> Path:
    """Write ``results_json(report)`` to ``path`` (parents created); ``score`` is the grade that counts, if not the report's."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results_json(report, score=score), ensure_ascii=False) + "\n", encoding="utf-8")
    return path


# A zip member's time: fixed, so the same class gives the same zip.
_ZIP_TIME = (2000, 1, 1, 0, 0, 0)


def gradescope_json(record: LearnerRecord | dict) -> dict:
    """``gradescope/<learner>/results.json`` of one learner: the report shown, the score that counts
    (the credited one under a course policy; with several assignments their sum, and a line per assignment).

    >>> rec = {"learner": "ana", "report": {"seed": 1, "path": "t.py", "checks": [], "score": 0, "max_score": 0}}
    >>> gradescope_json(rec)["score"], gradescope_json({**rec, "credit": {"credited": 0.0, "max_score": 0.0,
    ...                                                   "why": "late"}})["output"].splitlines()[0]
    (0.0, 'Credited: 0/0 (late).')
    """
    record = record if isinstance(record, LearnerRecord) else LearnerRecord.from_dict(record)
    data = results_json(record.shown_report(), score=record.grade_report().score)
    got = record.credit
    if got:
        data["score"] = float(got["credited"])
        said = "Set by your instructor" if got.get("override") else "Credited"  # an override says so first
        data["output"] = (
            f"{said}: {got['credited']:g}/{got['max_score']:g} ({terminal_text(got['why'])}).\n" + data["output"]
        )
        data.setdefault("extra_data", {})["credit"] = got
    if record.assignments:  # several assignments: a line each, and each one's credit for a script to read
        data["output"] = (
            "".join(_assignment_line(key, entry) for key, entry in record.assignments.items()) + data["output"]
        )
        data.setdefault("extra_data", {})["assignments"] = record.assignments
    return data


def _assignment_line(key: str, entry: dict) -> str:
    """One assignment's credited score as a line of the results' output (its name is the instructor's text).

    >>> _assignment_line("lab-a", {"name": "Lab A", "points": 4, "credit": None})
    'Lab A (lab-a): not graded/4.\\n'
    """
    got = entry.get("credit")
    score = (
        f"{got['credited']:g}/{got['max_score']:g} ({terminal_text(got['why'])})"
        if got
        else f"not graded/{entry['points']:g}"
    )
    return f"{terminal_text(entry.get('name') or key)} ({key}): {score}.\n"


def gradescope_text(record: LearnerRecord | dict) -> str:
    """The text of one ``results.json`` file (UTF-8 JSON and a newline).

    >>> gradescope_text({"report": {"seed": 1, "path": "t.py", "checks": []}})[-2:] == "}" + chr(10)
    True
    """
    return json.dumps(gradescope_json(record), ensure_ascii=False) + "\n"


def member_names(records) -> dict[str, str]:
    """Learner -> a folder name safe in a zip on every system, unique (the batch's learner ids).

    >>> member_names([{"learner": "../x"}, {"learner": "a b"}, {"learner": "a_b"}])
    {'../x': '_x', 'a b': 'a_b-c8687a08', 'a_b': 'a_b'}
    """
    learners = [r.learner if isinstance(r, LearnerRecord) else r["learner"] for r in records]
    return dict(zip(learners, unique_ids(learners)))


def gradescope_zip(records) -> bytes:
    """``gradescope/<learner>/results.json`` of every learner in one zip, with the same bytes for the same records.

    >>> gradescope_zip([])[:2]
    b'PK'
    """
    typed = [r if isinstance(r, LearnerRecord) else LearnerRecord.from_dict(r) for r in records]
    names = member_names(typed)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for record in sorted(typed, key=lambda r: names[r.learner]):
            info = zipfile.ZipInfo(f"gradescope/{names[record.learner]}/results.json", date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, gradescope_text(record).encode("utf-8"))
    return buf.getvalue()
