"""Gradescope: the ``results.json`` writer and the autograder entry point.

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

import json
import os
from pathlib import Path

from grader.escape import terminal_text
from grader.batch.task import GRADER_FAILED, failed_report
from grader.grading import grade
from grader.locate import MODULE_NAME, SubmissionNotFound, resolve_submission
from grader.report import Report, new_seed

SUBMISSION_DIR = Path("/autograder/submission")
RESULTS_FILE = Path("/autograder/results/results.json")
VISIBILITY = "visible"  # learners see every check: the feedback is the point of the lab
# Plain text: Gradescope shows it as is, never as Markdown, HTML or ANSI colours,
# and learner text has its control characters shown as visible escapes.
OUTPUT_FORMAT = "text"


def check_output_text(check) -> str:
    r"""The text shown under one Gradescope test: why it failed and how to replay it.

    >>> from grader.report import CheckResult
    >>> print(check_output_text(CheckResult(id="a", step=1, passed=False, points=0, max_points=1,
    ...                                     title="t", got="\x1b[32mPASS")))
    Failed.
    Got: \x1b[32mPASS
    """
    if check.passed:
        return "Passed."
    lines = [terminal_text(check.message or "Failed.")]
    for label, value in (("Call", check.call), ("Expected", check.expected), ("Got", check.got),
                         ("Hint", check.hint), ("Replay", check.reproduce)):
        if value:
            lines.append(f"{label}: {terminal_text(value)}")
    return "\n".join(lines)


def results_json(report: Report, *, visibility: str = VISIBILITY, score: "float | None" = None) -> dict:
    """Gradescope's ``results.json`` content for one graded submission."""
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
                "output": check_output_text(c),
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


def write_results(report: Report, path: "str | os.PathLike[str]", *, score: "float | None" = None) -> Path:
    """Write ``results_json(report)`` to ``path`` (parents created); ``score`` is the grade that counts, if not the report's."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results_json(report, score=score), ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def find_module(submission: Path) -> Path:
    """The ``tools.py`` in a Gradescope upload: top level, ``agtool/``, or the shallowest one below.

    Learners upload a file, a folder or a zip that Gradescope unpacks, so the
    module can sit one or two folders deep.
    """
    try:
        return resolve_submission(submission)
    except SubmissionNotFound:
        candidates = sorted(
            (p for p in Path(submission).rglob(MODULE_NAME) if "__MACOSX" not in p.parts),
            key=lambda p: (len(p.parts), str(p)),
        )
        if not candidates:
            raise
        return candidates[0]


def grade_for_gradescope(submission: "str | os.PathLike[str]" = SUBMISSION_DIR,
                         results: "str | os.PathLike[str]" = RESULTS_FILE, *,
                         seed: int | None = None, timeout: float | None = None, grade_fn=None) -> Report:
    """Grade the upload in ``submission`` and write Gradescope's ``results.json`` to ``results``.

    A missing module, or a grader failure, still produces a valid
    ``results.json`` (score 0 and an explanation), so the learner sees what
    went wrong instead of Gradescope's generic autograder error.
    """
    seed = new_seed() if seed is None else seed
    try:
        module = find_module(Path(submission))
    except SubmissionNotFound as exc:
        report = failed_report(seed, str(submission), f"no tools.py found in your upload. {exc}")
    else:
        grade_fn = grade_fn or grade
        try:
            report = grade_fn(module, seed=seed, timeout=timeout)
        except Exception as exc:  # Gradescope must get a results.json whatever happens
            report = failed_report(seed, str(module), f"{GRADER_FAILED}{type(exc).__name__}: {exc}")
    write_results(report, results)
    return report
