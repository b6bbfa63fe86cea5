"""Gradescope's autograder entry point: grade the upload, write ``results.json``.

Gradescope runs ``/autograder/run_autograder`` with the learner's upload in
``/autograder/submission`` and reads ``/autograder/results/results.json``
(written by :mod:`grader.outputs.gradescope_results`).

Example::

    >>> grade_for_gradescope("upload/", "results.json", seed=1).seed   # doctest: +SKIP
    1
"""

from __future__ import annotations

import os
from pathlib import Path

from grader.batch.task import GRADER_FAILED, failed_report
from grader.grading import grade
from grader.locate import MODULE_NAME, SubmissionNotFound, resolve_submission
from grader.outputs.gradescope_results import write_results
from grader.report import FailureKind, Report, new_seed

SUBMISSION_DIR = Path("/autograder/submission")
RESULTS_FILE = Path("/autograder/results/results.json")


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


def grade_for_gradescope(
    submission: str | os.PathLike[str] = SUBMISSION_DIR,
    results: str | os.PathLike[str] = RESULTS_FILE,
    *,
    seed: int | None = None,
    timeout: float | None = None,
    grade_fn=None,
) -> Report:
    """Grade the upload in ``submission`` and write Gradescope's ``results.json`` to ``results``.

    A missing module, or a grader failure, still produces a valid
    ``results.json`` (score 0 and an explanation), so the learner sees what
    went wrong instead of Gradescope's generic autograder error.
    """
    seed = new_seed() if seed is None else seed
    try:
        module = find_module(Path(submission))
    except SubmissionNotFound as exc:
        report = failed_report(
            seed, str(submission), f"no tools.py found in your upload. {exc}", kind=FailureKind.REFUSED
        )
    else:
        grade_fn = grade_fn or grade
        try:
            report = grade_fn(module, seed=seed, timeout=timeout)
        except Exception as exc:  # Gradescope must get a results.json whatever happens
            report = failed_report(
                seed, str(module), f"{GRADER_FAILED}{type(exc).__name__}: {exc}", kind=FailureKind.GRADER
            )
    write_results(report, results)
    return report
