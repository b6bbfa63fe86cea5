"""The gradebook of a class: ``grades.csv`` and ``grades.json``, and the tables the other outputs read.

Everything here is a pure function of the learner records
(:class:`~grader.outputs.record.LearnerRecord`, or their JSON dicts), sorted
by learner, so the same records always give the same bytes. Nothing here
judges: scores come from the reports. A record whose report is a failure of
the grading machinery (it is graded again) has an empty score: it is a row,
not a zero.

Example::

    >>> rec = {"learner": "ana", "seed": 1, "report": {"score": 2, "max_score": 3, "steps": {}, "checks": []}}
    >>> gradebook_frame([rec])[["learner", "score", "max_score"]].values.tolist()
    [['ana', 2, 3]]
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from grader.escape import csv_cell
from grader.outputs.record import LearnerRecord, as_records
from grader.outputs.starter import not_started_step
from grader.report import STEPS

WRONG_ANSWERS_SHOWN = 10

Records = "Iterable[LearnerRecord | dict]"

# grades.csv column -> key of a record's ``credit`` (grader.course.policy.Credit), after the raw columns.
CREDIT_COLUMNS = {
    "weighted_score": "score",
    "weighted_max": "max_score",
    "credit_factor": "factor",
    "credited_score": "credited",
    "submitted_at": "submitted_at",
    "period": "period",
    "counted": "attempt",
    "why": "why",
}
# grades.csv columns of a grade an instructor set (the service's overrides: ``credit["override"]``), after those.
OVERRIDE_COLUMNS = {"overridden_from": "was", "override_reason": "reason", "override_by": "by", "override_at": "at"}


def check_columns(records: Records) -> list[str]:
    """Every check id seen, in step order and then in the order the grader ran them.

    >>> check_columns([{"report": {"checks": [{"id": "b", "step": 2}, {"id": "a", "step": 1}]}}])
    ['a', 'b']
    """
    order: dict[str, tuple[int, int]] = {}
    for record in as_records(records):
        for position, check in enumerate(record.report.get("checks", [])):
            order.setdefault(check["id"], (check["step"], position))
    return sorted(order, key=lambda cid: (order[cid], cid))


def _row(record: LearnerRecord, columns: list[str]) -> dict:
    report = record.report
    row = {"learner": record.learner, "score": record.score, "max_score": report.get("max_score")}
    for step in STEPS:
        row[f"step{step}"] = report.get("steps", {}).get(str(step), {}).get("score") if record.graded else None
    points = {c["id"]: c["points"] for c in report.get("checks", [])} if record.graded else {}
    for cid in columns:
        row[cid] = points.get(cid)
    row["seed"] = record.seed
    # First line only: a gradebook cell stays one line in a spreadsheet (grades.json has it all).
    row["error"] = record.error.split("\n", 1)[0]
    # Which file the row is: two learners whose ids were made unique by a suffix stay told apart.
    row["source"] = record.source
    if record.credit is not None:  # a course policy: which attempt counted, its scores, and why
        row.update({column: record.credit.get(key) for column, key in CREDIT_COLUMNS.items()})
        override = record.credit.get("override") or {}
        row.update({column: override.get(key) for column, key in OVERRIDE_COLUMNS.items()})
        row["extended_due"] = (record.credit.get("extension") or {}).get("due")
    for assignment_id, entry in (record.assignments or {}).items():  # several assignments: each one's credited score
        row[assignment_id] = (entry.get("credit") or {}).get("credited")
    return row


def assignment_ids(records: Records) -> list[str]:
    """The ids of a course's assignments, in the course file's order (none for a course of one ``[assignment]``).

    >>> assignment_ids([{"learner": "a", "report": {}, "assignments": {"lab-b": {}, "lab-a": {}}}])
    ['lab-b', 'lab-a']
    """
    ids: dict[str, None] = {}
    for record in as_records(records):
        ids.update(dict.fromkeys(record.assignments or {}))
    return list(ids)


def _instructor_columns(records: list[LearnerRecord]) -> list[str]:
    """The override columns when a grade was overridden, ``extended_due`` when a learner has their own due date.

    >>> _instructor_columns([LearnerRecord("a", {}, credit={"extension": {"due": "x"}})])
    ['extended_due']
    """
    credits = [r.credit for r in records if r.credit is not None]
    columns = list(OVERRIDE_COLUMNS) if any(c.get("override") for c in credits) else []
    return columns + (["extended_due"] if any(c.get("extension") for c in credits) else [])


def gradebook_frame(records: Records) -> pd.DataFrame:
    """One row per learner: totals, points per step, points per check, seed, error and source (the file graded).

    A step or check that was not graded for a learner is left empty (NA),
    so a partial ``--steps`` run is not mistaken for zero points; so is the
    score of a submission the grading machinery failed on. A grade an
    instructor overrode says so (``override_reason`` and who, when, and the
    grade it replaced); a learner's own due date is ``extended_due``. A course
    of several assignments adds a column per assignment, named by its id:
    that assignment's credited score (empty: nothing graded for it).

    >>> gradebook_frame([])["score"].tolist()
    []
    """
    records = as_records(records)
    columns = check_columns(records)
    rows = [_row(r, columns) for r in records]
    credit_columns = list(CREDIT_COLUMNS) if any(r.credit is not None for r in records) else []
    frame = pd.DataFrame(
        rows,
        columns=[
            "learner",
            "score",
            "max_score",
            *[f"step{s}" for s in STEPS],
            *columns,
            "seed",
            "error",
            "source",
            *credit_columns,
            *_instructor_columns(records),
            *assignment_ids(records),
        ],
    )
    if any(not r.graded for r in records):  # an empty score keeps the column whole numbers (Int64, not float)
        frame["score"] = frame["score"].astype("Int64")
    for name in [f"step{s}" for s in STEPS] + columns:
        frame[name] = frame[name].astype("Int64")
    return frame


def csv_frame(book: pd.DataFrame) -> pd.DataFrame:
    """``book`` as written to ``grades.csv``: no text cell (or column name) a spreadsheet would evaluate.

    >>> csv_frame(pd.DataFrame({"learner": ["-1-1", "ana"], "score": [-1, 2]}))["learner"].tolist()
    ["'-1-1", 'ana']
    """
    frame = book.copy()
    for name in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[name]):  # text columns (object or str dtype)
            frame[name] = frame[name].map(csv_cell)
    return frame.rename(columns=csv_cell)


def gradebook_csv(records: Records) -> str:
    """``grades.csv``'s text: the gradebook, cells escaped (a name a spreadsheet would evaluate gets a ``'``).

    >>> report = {"score": 1, "max_score": 2, "steps": {}, "checks": [], "error": ""}
    >>> gradebook_csv([{"learner": "=HYPERLINK(1)", "seed": 1, "report": report}]).splitlines()[1][:17]
    "'=HYPERLINK(1),1,"
    """
    return csv_frame(gradebook_frame(records)).to_csv(index=False, lineterminator="\n")


def grades_json(records: Records) -> str:
    """``grades.json``'s text: the seeds, and per learner the file, hash, score, error, report and credit
    (and with several assignments, each one's name, due date, points and credit under ``assignments``).

    A failure of the grading machinery has ``"score": null``: it is not a grade.

    >>> json.loads(grades_json([{"learner": "ana", "seed": 1, "report": {"score": 1, "max_score": 2}}]))["seeds"]
    [1]
    """
    records = as_records(records)
    return (
        json.dumps(
            {
                "seeds": sorted({r.seed for r in records if r.seed is not None}),
                "learners": [
                    {
                        "learner": r.learner,
                        "source": r.source,
                        "sha256": r.sha256,
                        "score": r.score,
                        "max_score": r.max_score,
                        "error": r.error,
                        "report": r.report,
                        **({"credit": r.credit} if r.credit is not None else {}),
                        **({"assignments": r.assignments} if r.assignments is not None else {}),
                    }
                    for r in records
                ],
            },
            sort_keys=True,
            ensure_ascii=False,
        )
        + "\n"
    )  # no indent: the C encoder (1,000 reports)


def check_stats(records: Records) -> pd.DataFrame:
    """Per check: step, title, points, how many learners passed it and the pass rate (graded records only).

    >>> check_stats([]).columns.tolist()[-1]
    'pass_rate'
    """
    records = [r for r in as_records(records) if r.graded]
    stats: dict[str, dict] = {}
    for record in records:
        for c in record.report.get("checks", []):
            s = stats.setdefault(
                c["id"],
                {
                    "check": c["id"],
                    "step": c["step"],
                    "title": c["title"],
                    "max_points": c["max_points"],
                    "graded": 0,
                    "passed": 0,
                },
            )
            s["graded"] += 1
            s["passed"] += bool(c["passed"])
    frame = pd.DataFrame(
        [stats[cid] for cid in check_columns(records)],
        columns=["check", "step", "title", "max_points", "graded", "passed"],
    )
    frame["pass_rate"] = (frame["passed"] / frame["graded"]).round(4)
    return frame


def step_frame(records: Records) -> pd.DataFrame:
    """Long table: one row per (learner, step) with the points and the maximum of that step (graded records only).

    >>> step_frame([{"learner": "a", "report": {"steps": {"1": {"score": 1, "max_score": 2}}}}]).values.tolist()
    [['a', 1, 1, 2]]
    """
    rows = [
        {"learner": r.learner, "step": int(step), "score": t["score"], "max_score": t["max_score"]}
        for r in as_records(records)
        if r.graded
        for step, t in sorted(r.report.get("steps", {}).items(), key=lambda kv: int(kv[0]))
    ]
    return pd.DataFrame(rows, columns=["learner", "step", "score", "max_score"])


def counted_records(records: Records, starter: Iterable[str] = ()) -> list[LearnerRecord]:
    """The records every class statistic counts, the one rule for ``summary.md`` (mean, median, full marks,
    score per step, hardest checks, wrong answers), the three plots, the dashboard and the class page:
    graded, imported (an ungradable file answered nothing), and not the starter handed in unchanged
    (``starter``: those learners, :func:`grader.outputs.starter.starter_submissions`). Their grades are
    in the gradebook like everyone's; only the statistics leave them out, and each says so
    (:func:`counted_words`).

    >>> [r.learner for r in counted_records([{"learner": "a", "report": {}}, {"learner": "b", "report": {}},
    ...     {"learner": "c", "report": {"error": "Your module could not be imported: x"}}], starter=["b"])]
    ['a']
    """
    left_out = set(starter)
    return [r for r in as_records(records) if r.graded and not r.error and r.learner not in left_out]


# Said under every class statistic (summary.md, each plot): which learners it counts.
COUNTED_RULE = "graded files that imported; the starter handed in unchanged left out"
# Where the files' texts are not at hand (the service's class page), a starter handed in unchanged cannot be told.
COUNTED_RULE_NO_TEXTS = "graded files that imported (their texts not at hand: a starter handed in unchanged counts)"


def counted_words(counted: int, rule: str = COUNTED_RULE) -> str:
    """How many learners a class statistic counts, and the rule (:func:`counted_records`), in one phrase.

    >>> counted_words(4)
    '4 learners counted: graded files that imported; the starter handed in unchanged left out'
    """
    return f"{counted} learner{'' if counted == 1 else 's'} counted: {rule}"


def wrong_answers(records: Records, starter: Iterable[str] = (), top: int | None = WRONG_ANSWERS_SHOWN) -> pd.DataFrame:
    """The class's most common wrong answers: :func:`common_wrong_answers` of :func:`counted_records`,
    without the starter's ``NotImplementedError`` (a step not started is no wrong answer).

    >>> wrong_answers([{"learner": "a", "report": {"checks": [{"id": "step2/x", "passed": False,
    ...     "got": "raised NotImplementedError: step 2: write validate_args (labs/02_validate_args.ipynb)",
    ...     "expected": "''"}]}}]).empty
    True
    """
    every = common_wrong_answers(counted_records(records, starter), top=None)
    wrong = every[every["got"].map(lambda got: not_started_step(got) is None).astype(bool)]
    return (wrong if top is None else wrong.head(top)).reset_index(drop=True)


def common_wrong_answers(records: Records, top: int = WRONG_ANSWERS_SHOWN) -> pd.DataFrame:
    """Failing answers grouped by (check id, what the learner's code gave), most frequent first.

    Submissions that could not be graded at all (import error, time-out) are
    left out: they did not answer anything.

    >>> common_wrong_answers([]).empty
    True
    """
    groups: dict[tuple[str, str], dict] = {}
    for record in as_records(records):
        if record.error:
            continue
        for c in record.report.get("checks", []):
            if c["passed"] or (not c["got"] and not c["expected"]):
                continue
            g = groups.setdefault((c["id"], c["got"]), {"learners": [], "expected": Counter()})
            if record.learner not in g["learners"]:
                g["learners"].append(record.learner)
            g["expected"][c["expected"]] += 1
    rows = []
    for (cid, got), g in groups.items():
        # Cases are random per check, so "expected" can vary: show the most common one.
        expected = sorted(g["expected"].items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        rows.append(
            {
                "check": cid,
                "got": got,
                "expected": expected,
                "count": len(g["learners"]),
                "learners": ", ".join(g["learners"]),
            }
        )
    rows.sort(key=lambda r: (-r["count"], r["check"], r["got"]))
    return pd.DataFrame(rows[:top], columns=["check", "got", "expected", "count", "learners"])


def write_gradebook(records: Records, out: Path) -> dict[str, Path]:
    """Write ``grades.csv`` and ``grades.json`` under ``out``; their paths by name.

    >>> write_gradebook([], Path("out"))["csv"].name   # doctest: +SKIP
    'grades.csv'
    """
    paths = {"csv": Path(out) / "grades.csv", "json": Path(out) / "grades.json"}
    paths["csv"].write_text(gradebook_csv(records), encoding="utf-8", newline="")
    paths["json"].write_text(grades_json(records), encoding="utf-8")
    return paths
