"""Grades an LMS can import: Canvas's gradebook CSV and Moodle's grade import CSV, through a roster.

The **roster** is a CSV the instructor keeps, with a header row: ``learner``
(the hub name or the learner folder's name, as the batch shows it) and
``lms_id`` are required; ``name``, ``sis_user_id``, ``sis_login_id``,
``section`` and ``email`` are optional. Learners the roster does not match,
and roster rows nobody submitted for, are listed, never guessed.

* **Canvas** (Grades > Import): columns ``Student``, ``ID``, ``SIS User ID``,
  ``SIS Login ID``, ``Section``, then one column per assignment named
  ``<assignment>`` (a new assignment) or ``<assignment> (<canvas id>)``; a
  second row ``Points Possible`` gives the maximum. Canvas matches rows on
  ``ID`` (the Canvas user id, the roster's ``lms_id``) or ``SIS User ID``.
* **Moodle** (Grades > Import > CSV file): a header row, one row per
  learner, an identifier column and one column per grade item. Here
  ``ID number`` is the roster's ``lms_id`` (map it to "useridnumber" in the
  import form), ``Email address`` the roster's ``email`` (or map that to
  "useremail"), then the grade item and ``Feedback`` (which attempt counted
  and why; map it to the item's feedback or ignore it).

The score is the credited one under a course policy, else the raw one.
Every cell goes through :func:`grader.escape.csv_cell`.

Example::

    >>> roster = read_roster_text("learner,lms_id,name\\nana,101,Ana Lima\\n")
    >>> rows = [{"learner": "ana", "score": 7.5, "max_score": 10, "why": ""},
    ...         {"learner": "bob", "score": 3, "max_score": 10, "why": ""}]
    >>> text, unmatched = canvas_csv(rows, roster, assignment="agtool lab")
    >>> print(text, end="")
    Student,ID,SIS User ID,SIS Login ID,Section,agtool lab
    Points Possible,,,,,10
    Ana Lima,101,,,,7.5
    >>> unmatched
    [('bob', 'graded, but not in the roster')]
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from grader.escape import csv_cell
from grader.outputs.feedback import which_attempt  # the feedback's words for the attempt that counts
from grader.outputs.learner_ids import sanitize_learner_id  # the ids the batch gives learner folders
from grader.outputs.record import as_records

CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_HEADER = ["ID number", "Email address"]
ROSTER_REQUIRED = ("learner", "lms_id")
ROSTER_OPTIONAL = ("name", "sis_user_id", "sis_login_id", "section", "email")
NOT_IN_ROSTER = "graded, but not in the roster"
NO_SUBMISSION = "in the roster, but no graded submission"


class RosterError(ValueError):
    """A roster that cannot be used; the message names the problem and the fix."""


@dataclass(frozen=True)
class RosterEntry:
    learner: str
    lms_id: str
    name: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    email: str = ""


def read_roster(path: str | Path) -> dict[str, RosterEntry]:
    """The roster file at ``path`` by learner; :class:`RosterError` names a bad column, row or duplicate."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet's "CSV UTF-8" starts with a BOM
    except (OSError, UnicodeDecodeError) as exc:
        raise RosterError(
            f"roster {path} cannot be read ({type(exc).__name__}); give a UTF-8 CSV file "
            "with the columns learner,lms_id"
        ) from None
    return read_roster_text(text, source=str(path))


def read_roster_text(text: str, *, source: str = "roster") -> dict[str, RosterEntry]:
    """Parse a roster's CSV text (see the module's docstring).

    >>> read_roster_text("learner,id\\nana,1\\n")
    Traceback (most recent call last):
    ...
    grader.outputs.lms.RosterError: roster: the header has no lms_id column; the first row must name the columns learner,lms_id (optional: name, sis_user_id, sis_login_id, section, email)
    """
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or []]
    reader.fieldnames = header
    for column in ROSTER_REQUIRED:
        if column not in header:
            raise RosterError(
                f"{source}: the header has no {column} column; the first row must name the columns "
                f"learner,lms_id (optional: {', '.join(ROSTER_OPTIONAL)})"
            )
    roster: dict[str, RosterEntry] = {}
    for line, row in enumerate(reader, start=2):
        learner, lms_id = (row.get("learner") or "").strip(), (row.get("lms_id") or "").strip()
        if not learner and not lms_id:
            continue  # a blank line a spreadsheet left
        if not learner or not lms_id:
            missing = "learner" if not learner else "lms_id"
            raise RosterError(f"{source} line {line}: {missing} is empty; give both the learner and the LMS id")
        if learner in roster:
            raise RosterError(f"{source} line {line}: learner {learner!r} is listed twice; keep one row per learner")
        roster[learner] = RosterEntry(learner, lms_id, **{k: (row.get(k) or "").strip() for k in ROSTER_OPTIONAL})
    return roster


def match(rows: list[dict], roster: dict[str, RosterEntry]) -> tuple[list[tuple[RosterEntry, dict]], list]:
    """Pair grade rows with roster entries by learner; ``(pairs, unmatched)`` with why each is unmatched.

    A batch learner id is the folder name made safe (``ana maría`` ->
    ``ana_maría``), so a roster name is also tried in that form.
    """
    by_id = dict(roster)
    for learner, entry in roster.items():
        by_id.setdefault(sanitize_learner_id(learner), entry)
    pairs, unmatched, used = [], [], set()
    for row in sorted(rows, key=lambda r: r["learner"]):
        entry = by_id.get(row["learner"])
        if entry is None or entry.learner in used:
            unmatched.append((row["learner"], NOT_IN_ROSTER))
            continue
        used.add(entry.learner)
        pairs.append((entry, row))
    unmatched += [(learner, NO_SUBMISSION) for learner in sorted(roster) if learner not in used]
    return pairs, unmatched


def _write(table: list[list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in table:
        writer.writerow([csv_cell(cell) for cell in row])
    return out.getvalue()


def _number(value) -> object:
    return "" if value is None else (int(value) if float(value).is_integer() else round(float(value), 4))


def canvas_csv(rows: list[dict], roster, *, assignment: str, assignment_id: str = "") -> tuple[str, list]:
    """Canvas's gradebook import CSV and the unmatched learners; ``rows`` have ``learner``, ``score``, ``max_score``."""
    pairs, unmatched = match(rows, roster)
    column = f"{assignment} ({assignment_id})" if assignment_id else assignment
    possible = max((r["max_score"] for _, r in pairs), default="")
    table = [CANVAS_HEADER + [column], ["Points Possible", "", "", "", "", _number(possible)]]
    for entry, row in pairs:
        table.append(
            [
                entry.name or entry.learner,
                entry.lms_id,
                entry.sis_user_id,
                entry.sis_login_id,
                entry.section,
                _number(row["score"]),
            ]
        )
    return _write(table), unmatched


def moodle_csv(rows: list[dict], roster, *, assignment: str) -> tuple[str, list]:
    """Moodle's grade import CSV and the unmatched learners.

    >>> text, _ = moodle_csv([{"learner": "ana", "score": 8, "max_score": 10, "why": "=late"}],
    ...                      read_roster_text("learner,lms_id,email\\nana,S1,ana@example.org\\n"), assignment="lab")
    >>> print(text, end="")
    ID number,Email address,lab,Feedback
    S1,ana@example.org,8,'=late
    """
    pairs, unmatched = match(rows, roster)
    table = [MOODLE_HEADER + [assignment, "Feedback"]]
    for entry, row in pairs:
        table.append([entry.lms_id, entry.email, _number(row["score"]), row.get("why", "")])
    return _write(table), unmatched


def unmatched_csv(unmatched: list) -> str:
    """The learners the roster did not match, and why, as CSV.

    >>> print(unmatched_csv([("bob", NOT_IN_ROSTER)]), end="")
    learner,problem
    bob,"graded, but not in the roster"
    """
    return _write([["learner", "problem"], *unmatched])


def grade_rows(records) -> list[dict]:
    """One row per graded learner: the credited score under a policy, else the raw one, and why.

    A failure of the grading machinery is not a grade: it gets no row (it is graded again).

    >>> grade_rows([{"learner": "ana", "report": {"score": 5, "max_score": 10},
    ...              "credit": {"credited": 4.0, "max_score": 10.0, "why": "late", "attempt": 2}}])[0]["score"]
    4.0
    """
    rows = []
    for r in as_records(records):
        if not r.graded:
            continue
        got = r.credit
        if got:
            rows.append(
                {
                    "learner": r.learner,
                    "score": got["credited"],
                    "max_score": got["max_score"],
                    "why": f"{which_attempt(got)}: {got['why']}",
                }
            )
        else:
            rows.append(
                {
                    "learner": r.learner,
                    "score": r.score,
                    "max_score": r.max_score,
                    "why": "the points of your graded submission",
                }
            )
    return rows


def course_columns(records) -> list[tuple[str, str]]:
    """``(id, column title)`` per assignment of a course of several: its name, with its id when two share a name.

    >>> course_columns([{"learner": "a", "report": {}, "assignments": {"x": {"name": "Lab"}, "y": {"name": "Lab"}}}])
    [('x', 'Lab (x)'), ('y', 'Lab (y)')]
    """
    names: dict[str, str] = {}
    for r in as_records(records):
        for key, entry in (r.assignments or {}).items():
            names.setdefault(key, entry.get("name") or key)
    shared = {n for n in names.values() if list(names.values()).count(n) > 1}
    return [(key, f"{name} ({key})" if name in shared else name) for key, name in names.items()]


def course_rows(records) -> list[dict]:
    """One row per graded learner of a course of several assignments: ``scores`` and ``maxima`` by id, and why.

    An assignment nothing was graded for is an empty cell; its maximum is its points.

    >>> course_rows([{"learner": "ana", "report": {"score": 5}, "credit": {"why": "sum"}, "assignments":
    ...     {"a": {"points": 4, "credit": {"credited": 3.0, "max_score": 4.0}}, "b": {"points": 6, "credit": None}}}])
    [{'learner': 'ana', 'scores': {'a': 3.0, 'b': None}, 'maxima': {'a': 4.0, 'b': 6}, 'why': 'sum'}]
    """
    rows = []
    for r in as_records(records):
        if not r.graded or not r.assignments:
            continue
        got = {key: entry.get("credit") for key, entry in r.assignments.items()}
        rows.append(
            {
                "learner": r.learner,
                "scores": {key: c["credited"] if c else None for key, c in got.items()},
                "maxima": {key: c["max_score"] if c else r.assignments[key]["points"] for key, c in got.items()},
                "why": (r.credit or {}).get("why", ""),
            }
        )
    return rows


def course_canvas_csv(rows: list[dict], roster, columns: list[tuple[str, str]]) -> tuple[str, list]:
    """Canvas's import CSV with a column per assignment (``columns``: :func:`course_columns`), ``rows``: :func:`course_rows`.

    >>> text, _ = course_canvas_csv([{"learner": "ana", "scores": {"a": 3.0, "b": None}, "maxima": {"a": 4, "b": 6}}],
    ...                             read_roster_text("learner,lms_id\\nana,7\\n"), [("a", "Lab A"), ("b", "Lab B")])
    >>> print(text, end="")
    Student,ID,SIS User ID,SIS Login ID,Section,Lab A,Lab B
    Points Possible,,,,,4,6
    ana,7,,,,3,
    """
    pairs, unmatched = match(rows, roster)
    possible = [_number(max((r["maxima"][key] for _, r in pairs), default=None)) for key, _ in columns]
    table = [CANVAS_HEADER + [title for _, title in columns], ["Points Possible", "", "", "", "", *possible]]
    for entry, row in pairs:
        ids = [entry.name or entry.learner, entry.lms_id, entry.sis_user_id, entry.sis_login_id, entry.section]
        table.append(ids + [_number(row["scores"].get(key)) for key, _ in columns])
    return _write(table), unmatched


def course_moodle_csv(rows: list[dict], roster, columns: list[tuple[str, str]]) -> tuple[str, list]:
    """Moodle's import CSV with a grade item per assignment, then ``Feedback`` (each assignment's credited score).

    >>> text, _ = course_moodle_csv([{"learner": "ana", "scores": {"a": 3.0}, "maxima": {"a": 4}, "why": "a 3/4"}],
    ...                             read_roster_text("learner,lms_id\\nana,S1\\n"), [("a", "Lab A")])
    >>> print(text, end="")
    ID number,Email address,Lab A,Feedback
    S1,,3,a 3/4
    """
    pairs, unmatched = match(rows, roster)
    table = [MOODLE_HEADER + [title for _, title in columns] + ["Feedback"]]
    for entry, row in pairs:
        table.append([entry.lms_id, entry.email, *[_number(row["scores"].get(key)) for key, _ in columns], row["why"]])
    return _write(table), unmatched


def lms_files(records, roster, *, assignment: str) -> dict:
    """``canvas``, ``moodle`` and ``unmatched`` CSV texts, and the ``unmatched`` list as ``list``.

    With several assignments (records with ``assignments``) each file has a
    column per assignment, titled by its name; ``assignment`` is not used.

    >>> roster = read_roster_text("learner,lms_id\\nana,7\\nbob,8\\n")
    >>> files = lms_files([{"learner": "ana", "report": {"score": 5, "max_score": 10}}], roster, assignment="lab")
    >>> files["canvas"].splitlines()[2], files["list"]
    ('ana,7,,,,5', [('bob', 'in the roster, but no graded submission')])
    """
    columns = course_columns(records)
    if columns:  # a course of several assignments: a column per assignment
        rows = course_rows(records)
        canvas, unmatched = course_canvas_csv(rows, roster, columns)
        moodle = course_moodle_csv(rows, roster, columns)[0]
    else:
        rows = grade_rows(records)
        canvas, unmatched = canvas_csv(rows, roster, assignment=assignment)
        moodle = moodle_csv(rows, roster, assignment=assignment)[0]
    return {
        "canvas": canvas,
        "moodle": moodle,
        "unmatched": unmatched_csv(unmatched),
        "list": unmatched,
    }


def write_lms(records, roster, out: str | Path, *, assignment: str) -> tuple[dict[str, Path], list]:
    """Write ``canvas.csv``, ``moodle.csv`` and ``unmatched.csv`` under ``out``; their paths and the unmatched learners.

    >>> write_lms([], {}, "out/lms", assignment="lab")   # doctest: +SKIP
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = lms_files(records, roster, assignment=assignment)
    paths = {}
    for kind in ("canvas", "moodle", "unmatched"):
        paths[f"lms:{kind}"] = out / f"{kind}.csv"
        paths[f"lms:{kind}"].write_text(files[kind], encoding="utf-8")
    return paths, files["list"]
