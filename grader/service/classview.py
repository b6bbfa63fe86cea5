"""What instructors see of a class, built from stored attempts: rows per learner and the class tables.

The gradebook counts each learner's *best* graded attempt (the highest
score; the latest of equal scores), so a learner who tries again never loses
points. ``grades.csv`` has exactly ``agtool-grade batch``'s columns because
both are :func:`grader.outputs.gradebook.gradebook_csv` of the learners' records.

Example::

    >>> class_rows([{"id": 1, "learner": "ana", "submitted_at": "2025-01-01T10:00:00Z", "status": "graded",
    ...              "score": 3, "max_score": 5}], {})[0]["best_score"]
    3
"""

from __future__ import annotations

import json

from grader.outputs.record import LearnerRecord, attempt_record
from grader.report import STEPS


def best_records(attempts) -> list[LearnerRecord]:
    """One record per learner from finished attempts (``db.Attempt``): the best one, sorted by learner."""
    best: dict[str, object] = {}
    for a in attempts:
        if a.report is None or a.score is None:
            continue
        kept = best.get(a.learner)
        if kept is None or (a.score, a.id) >= (kept.score, kept.id):
            best[a.learner] = a
    return [attempt_record(a) for _, a in sorted(best.items())]


def class_rows(summaries: list[dict], records_by_learner: dict[str, LearnerRecord]) -> list[dict]:
    """``GET api/class``: per learner attempts, graded count, best and last score, per-step points, last time."""
    rows: dict[str, dict] = {}
    for s in summaries:  # oldest first
        row = rows.setdefault(
            s["learner"],
            {
                "learner": s["learner"],
                "attempts": 0,
                "graded": 0,
                "pending": 0,
                "best_score": None,
                "last_score": None,
                "max_score": None,
                "last_submitted_at": None,
                "steps": {},
                "best_attempt": None,
            },
        )
        row["attempts"] += 1
        row["last_submitted_at"] = s["submitted_at"]
        if s["status"] in ("queued", "grading"):
            row["pending"] += 1
        if s["score"] is not None:
            row["graded"] += 1
            row["last_score"], row["max_score"] = s["score"], s["max_score"]
            if row["best_score"] is None or s["score"] >= row["best_score"]:
                row["best_score"] = s["score"]
    for learner, row in rows.items():
        record = records_by_learner.get(learner)
        if record:
            steps = record.report.get("steps", {})
            row["steps"] = {str(step): steps[str(step)]["score"] for step in STEPS if str(step) in steps}
            row["best_attempt"] = record.attempt
            if record.credit is not None:  # a course policy: the counting attempt, its credited score and why
                row["credited_score"], row["why"] = record.credit["credited"], record.credit["why"]
            if record.assignments:  # several assignments: each one's credited score, by id
                row["assignments"] = {
                    key: (entry.get("credit") or {}).get("credited") for key, entry in record.assignments.items()
                }
    return [rows[k] for k in sorted(rows)]


def class_outputs(records: list[LearnerRecord]) -> dict:
    """Per-check pass rates and the most common wrong answers (the class tables ``batch`` also uses), as JSON rows."""
    if not records:
        return {"checks": [], "wrong_answers": []}
    from grader.outputs.gradebook import check_stats, counted_records, wrong_answers  # pandas: only with a class

    # Counted as summary.md and the plots count them: no ungradable file, no starter placeholder as an answer.
    checks = check_stats(counted_records(records))
    wrong = wrong_answers(records)
    return {
        "checks": json.loads(checks.to_json(orient="records")),
        "wrong_answers": json.loads(wrong.to_json(orient="records")),
    }
