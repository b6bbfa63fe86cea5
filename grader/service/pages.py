"""What the service's pages show, as plain data, and the pages rendered from their templates.

A learner's page lists their attempts, newest first, each with its score and
the feedback of every failed check (the call, expected, got and replay line,
as the Check widget shows them). The instructor's class page reloads itself
every ``refresh`` seconds (the base template's script, with a button that
pauses it) and shows per-learner progress by step, per-check pass rates and
the most common wrong answers. The ``*_view`` functions here prepare what a
page shows (dicts, lists and strings, never markup); the templates
(``learner.html``, ``class.html``, ``macros.html``) draw it, escaping every
value (:mod:`grader.service.layout`).

Example::

    >>> score_view({"status": "graded", "score": 1, "max_score": 3})
    {'cls': 'partial', 'text': '1 / 3', 'word': 'partly'}
"""

from __future__ import annotations

import json
from dataclasses import fields
from urllib.parse import quote

from grader.escape import terminal_text
from grader.messages import replay_for
from grader.render import crash_notes, shown_details
from grader.report import STEPS, CheckResult
from grader.service.layout import Chrome, macro, render, time_html

__all__ = [
    "Chrome",
    "time_html",
    "learner_page",
    "class_page",
    "feedback_html",
    "course_html",
    "hidden_html",
    "json_text",
    "score_view",
    "feedback_view",
    "course_view",
    "learner_numbers",
]
_CHECK_FIELDS = tuple(f.name for f in fields(CheckResult))


def score_view(summary: dict) -> dict:
    """The score cell: its class (colour), text and the words a screen reader hears.

    An ``error`` (the grader failed) reads "being graded again", never a zero.

    >>> score_view({"status": "error", "score": None, "max_score": None})["text"]
    'being graded again (the grader failed, not your code)'
    """
    if summary["status"] in ("queued", "grading"):
        return {"cls": "pending", "text": summary["status"], "word": ""}
    if summary["status"] == "error":
        return {"cls": "pending", "text": "being graded again (the grader failed, not your code)", "word": ""}
    if summary["score"] is None:
        return {"cls": "bad", "text": summary["status"], "word": ""}
    # Coloured by meaning, with words too: full marks green, some points plain, no point red.
    if summary["score"] == summary["max_score"]:
        cls, word = "ok", "full marks"
    elif summary["score"]:
        cls, word = "partial", "partly"
    else:
        cls, word = "bad", "no points"
    return {"cls": cls, "text": f"{summary['score']} / {summary['max_score']}", "word": word}


def _check_of(c: dict) -> CheckResult:
    """A check of a stored report (fields this version does not know are left out)."""
    return CheckResult(**{name: c[name] for name in _CHECK_FIELDS if name in c})


def _details(check: CheckResult, notes: dict[str, str]) -> list[dict]:
    """The labelled lines of a failed check, as the Check widget orders and names them (:func:`shown_details`).

    ``shape``: ``pre`` for a block, ``code`` for a value (as the widget: values in code), ``text`` for a sentence.
    """
    rows = []
    for label, value in shown_details(check, notes):
        value = replay_for(value, "service") if label == "replay" else value  # the learner's path, not the service's
        shape = "pre" if "\n" in value else "code" if label in ("call", "expected", "got", "replay") else "text"
        # Controls as escapes first: a bidi override reorders HTML text too.
        rows.append({"label": label, "text": terminal_text(value), "shape": shape})
    return rows


def feedback_view(report: dict | None) -> dict | None:
    """The failed checks of one report, each with its labelled details (``None``: not graded yet).

    >>> view = feedback_view({"checks": [{"id": "step1/a", "step": 1, "passed": False, "points": 0,
    ...                                    "max_points": 1, "title": "t", "call": "f(1)"}]})
    >>> view["failures"][0]["details"][0]
    {'label': 'call', 'text': 'f(1)', 'shape': 'code'}
    """
    if not report:
        return None
    checks = [_check_of(c) for c in report.get("checks", []) if not c.get("passed")]
    notes = crash_notes(checks)
    return {
        "error": report.get("error") or "",
        "failures": [
            {
                "step": c.step,
                "id": c.id,
                "title": c.title,
                "points": c.points,
                "max_points": c.max_points,
                "details": _details(c, notes),
            }
            for c in checks
        ],
    }


def feedback_html(report: dict | None, *, open_first: bool = True) -> str:
    """The failed checks of one report: title, points, then the call, expected, got, why, hint and replay line.

    >>> html = feedback_html({"checks": [{"id": "step1/a", "step": 1, "passed": False, "points": 0,
    ...     "max_points": 1, "title": "<t>", "call": "f(1)", "reproduce": "agtool-grade check t.py --only step1/a"}]})
    >>> "<dt>call</dt><dd><code>f(1)</code></dd>" in html, "<dt>replay</dt>" in html, "&lt;t&gt;" in html
    (True, True, True)
    """
    return str(macro("macros.html", "feedback")(feedback_view(report), open_first))


def hidden_html(hidden: list[dict] | None) -> str:
    """The checks failed on the hidden cases only: ids and titles, never their calls or values.

    >>> hidden_html([{"id": "step1/<b>", "title": "t"}]).count("&lt;b&gt;"), hidden_html([])
    (1, '')
    """
    return str(macro("macros.html", "hidden")(_hidden_view(hidden)))


def _hidden_view(hidden: list[dict] | None) -> list[dict]:
    return [{"id": c.get("id"), "title": c.get("title")} for c in hidden or []]


def course_view(course: dict | None, owner: str = "Your") -> dict | None:
    """The course policy as a learner sees it: due date, late date and credit, which attempt counts, attempts left.

    ``owner`` says whose attempts: "Your" to the learner, "ben's" to an instructor reading ben's page.
    With several assignments (``assignments`` in the status) ``assignments`` has a row per
    assignment; ``lms_shown`` when the service sends grades to an LMS (then ``lms``: when, or ``None``).

    >>> course_view({"due": "2026-03-01T12:00:00Z", "counts": "best", "limit": 5, "attempts_left": 2,
    ...              "window_minutes": 60.0})["minutes"]
    '60'
    """
    if not course:
        return None
    view = _policy_view(course, owner)
    counted = course.get("counted")
    if counted:
        view["counted"] = {
            "attempt": counted["attempt"],
            "credited": format(counted["credited"], "g"),
            "max_score": format(counted["max_score"], "g"),
            "why": counted["why"],
        }
    view["lms_shown"], view["lms"], view["assignments"] = "lms" in course, course.get("lms"), None
    if course.get("assignments"):  # several assignments: a row each (their own "lms": the LMS column is shown)
        view["assignments"] = [_assignment_view(line, owner) for line in course["assignments"]]
        view["lms_shown"] = any("lms" in line for line in course["assignments"])
    return view


def _assignment_view(line: dict, owner: str) -> dict:
    """One assignment's row: its :func:`_policy_view`, name, id, steps, points, credit and LMS state."""
    view = _policy_view(line, owner)
    got = line.get("counted")
    view.update(
        name=line.get("name") or line["id"],
        id=line["id"],
        steps=", ".join(str(s) for s in line.get("steps", [])),
        points=format(line.get("points") or 0, "g"),
        lms=line.get("lms"),
        counted={
            "attempt": got["attempt"],
            "credited": format(got["credited"], "g"),
            "max_score": format(got["max_score"], "g"),
            "why": got["why"],
        }
        if got
        else None,
    )
    return view


def _policy_view(course: dict, owner: str) -> dict:
    """The dates, rule and limit of a status (or of one assignment's line), as the templates show them."""
    view = {
        "due": course["due"],
        "late_due": course.get("late_due"),
        "late_percent": None,
        "owner": owner,
        "best": course["counts"] == "best",
        "grade": "your grade" if owner == "Your" else "the grade",
        "limit": course.get("limit"),
        "attempts_left": course.get("attempts_left"),
        "minutes": None,
        "next_allowed": course.get("next_allowed"),
        "period_now": None,
        "credit_percent": None,
        "counted": None,
    }
    if view["late_due"]:
        view["late_percent"] = round(100 * course["late_credit"])
    if view["limit"]:
        view["minutes"] = format(course["window_minutes"], "g")
    if course.get("credit_now") is not None and course.get("period_now") not in (None, "on time"):
        view["period_now"], view["credit_percent"] = course["period_now"], round(100 * course["credit_now"])
    return view


def course_html(course: dict | None, owner: str = "Your") -> str:
    """The course policy's paragraph (``""`` without a course).

    >>> print(course_html({"due": "2026-03-01T12:00:00Z", "late_due": None, "counts": "best",
    ...                    "attempts_left": 2, "limit": 5, "window_minutes": 60, "next_allowed": None}))
    <p class=course>Due <time datetime="2026-03-01T12:00:00Z" title="2026-03-01 12:00 UTC">2026-03-01 12:00 UTC</time>. Your best attempt counts. Attempts left: 2 of 5 per 60 minutes.</p>
    """
    return str(macro("macros.html", "course")(course_view(course, owner)))


def attempts_heading(learner: str, viewer: str) -> str:
    """The learner page's heading in the reader's words: "Your attempts" to the learner, "ben's attempts" to others.

    >>> attempts_heading("ben", "ben"), attempts_heading("ben", "teacher")
    ('Your attempts', "ben's attempts")
    """
    return "Your attempts" if learner == viewer else f"{learner}'s attempts"


def code_url(prefix: str, learner: str, attempt_id: object) -> str:
    """The code view of one attempt.

    >>> code_url("/p/", "a b", 3)
    '/p/learners/a%20b/attempts/3/code'
    """
    return f"{prefix}learners/{quote(learner, safe='')}/attempts/{attempt_id}/code"


def learner_numbers(attempts: list[dict]) -> dict[int, int]:
    """Each attempt's number in its learner's own order, 1, 2, 3... (the service's ids count every learner's).

    ``attempts``: one learner's, as ``api/submissions`` lists them (``id``, ``submitted_at``), in any order.

    >>> learner_numbers([{"id": 9, "submitted_at": "2026-03-01T10:00:00Z"}, {"id": 4, "submitted_at": "2026-03-01T09:00:00Z"}])
    {4: 1, 9: 2}
    """
    order = sorted(attempts, key=lambda a: (a.get("submitted_at") or "", a["id"]))
    return {a["id"]: i for i, a in enumerate(order, start=1)}


def attempt_view(a: dict, learner: str, prefix: str, number: int, latest: bool) -> dict:
    """One attempt: the learner's own number, time, score, its code's address, its feedback (folded unless latest)."""
    return {
        "id": a["id"],
        "number": number,
        "submitted_at": a["submitted_at"],
        "score": score_view(a),
        "sha256": a["sha256"],
        "seed": a.get("seed"),
        "code_url": code_url(prefix, learner, a["id"]),
        "feedback": feedback_view(a.get("report")),
        "open_first": latest,
        "hidden": _hidden_view(a.get("hidden_failed")),
        "folded": bool(not latest and a.get("report")),
    }


def learner_page(
    learner: str,
    attempts: list[dict],
    *,
    prefix: str,
    is_instructor: bool,
    course: dict | None = None,
    chrome: Chrome | None = None,
    changes: dict | None = None,
) -> str:
    """A learner's history: every attempt, newest first, with its feedback; ``course``: the due date and attempts left.

    ``chrome``: who reads it (the heading's words) and where the hub is; without it, the learner reads it.
    ``changes``: the section of their instructor's changes and the forms (:func:`grader.service.action_pages.changes_view`).
    """
    chrome = chrome or Chrome(prefix=prefix, user=learner, instructor=is_instructor)
    heading = attempts_heading(learner, chrome.user)
    own = learner == chrome.user
    numbers = learner_numbers(attempts)  # newest first, numbered in the learner's own order
    refresh = 5 if any(a["status"] in ("queued", "grading", "error") for a in attempts) else None
    return render(
        "learner.html",
        title=f"agtool: {heading}",
        chrome=chrome,
        refresh=refresh,
        heading=heading,
        class_url=f"{prefix}class" if is_instructor else "",
        lab_url=chrome.lab_url if own else "",
        own=own,
        course=course_view(course, "Your" if own else f"{learner}'s"),
        attempts=[attempt_view(a, learner, prefix, numbers[a["id"]], i == 0) for i, a in enumerate(attempts)],
        changes=changes,
    )


def _blank(value: object) -> object:
    """A cell's value, ``""`` for nothing (a class page cell is empty, not "None").

    >>> _blank(None), _blank(0.0)
    ('', 0.0)
    """
    return "" if value is None else value


def _learner_rows(rows: list[dict], assignments: list[str]) -> list[dict]:
    """The class page's rows: one per learner, the credited score per assignment in ``assignments``' order."""
    return [
        {
            "name": r["learner"],
            "link": quote(r["learner"], safe=""),
            "attempts": r["attempts"],
            "pending": r["pending"],
            "best_score": r["best_score"],
            "last_score": r["last_score"],
            "max_score": r["max_score"],
            "steps": [r["steps"].get(str(s), "") for s in STEPS],
            "credited_score": r.get("credited_score", ""),
            "why": r.get("why", ""),
            "assignments": [_blank((r.get("assignments") or {}).get(key)) for key in assignments],
            "last_submitted_at": r["last_submitted_at"],
            "files": bool(r.get("best_attempt")),
        }
        for r in rows
    ]


PLOT_TITLES = {"score_histogram": "Scores", "check_pass_rate": "Pass rate per check", "step_scores": "Score per step"}


def class_page(
    rows: list[dict],
    outputs: dict,
    *,
    prefix: str,
    refresh: int,
    unmatched: list | None = None,
    reference: bool = False,
    insecure: str = "",
    chrome: Chrome | None = None,
    actions: dict | None = None,
) -> str:
    """The instructor's class page: downloads, plots, progress by step, pass rates, common wrong answers.

    ``unmatched`` (with ``--roster``): ``(learner, problem)`` the roster did
    not match; ``reference``: similarity also compares with the reference solution;
    ``insecure``: why learner code runs without a sandbox (``--insecure-no-sandbox``), shown first;
    ``chrome``: who reads it and where the hub is; ``actions``: the open regrade requests and the
    log (:func:`grader.service.action_pages.class_summary_view`). A course of several assignments
    has a column per assignment (named by its id): its credited score.

    >>> html = class_page([{"learner": "<b>x</b>", "attempts": 1, "pending": 0, "best_score": 1, "last_score": 1,
    ...                     "max_score": 2, "steps": {}, "last_submitted_at": None}], {"checks": [], "wrong_answers": []},
    ...                   prefix="/s/", refresh=10, unmatched=[("=bob", "graded, but not in the roster")])
    >>> "<b>x</b>" in html, "&lt;b&gt;x&lt;/b&gt;" in html, "=bob" in html, "/s/plots/step_scores.png" in html
    (False, True, True, True)
    """
    credited = any("credited_score" in r for r in rows)
    assignments = list(dict.fromkeys(key for r in rows for key in r.get("assignments") or {}))
    downloads = ["grades.csv", "gradescope.zip", "similarity.html", "similarity.csv"]
    if unmatched is not None:
        downloads[2:2] = ["lms/canvas.csv", "lms/moodle.csv", "lms/unmatched.csv"]
    similarity = "Similarity compares each learner's counting attempt with the others" + (
        " and with the reference solution (never shown)." if reference else "."
    )
    learners = _learner_rows(rows, assignments)
    checks = [
        {
            "check": c["check"],
            "step": c["step"],
            "title": c["title"],
            "passed": c["passed"],
            "graded": c["graded"],
            "percent": round(100 * (c["pass_rate"] or 0)),
        }
        for c in sorted(outputs["checks"], key=lambda c: (c["pass_rate"], c["check"]))
    ]
    return render(
        "class.html",
        title="agtool: class",
        chrome=chrome or Chrome(prefix=prefix, instructor=True),
        refresh=refresh,
        prefix=prefix,
        insecure=insecure,
        downloads=downloads,
        similarity=similarity,
        steps=list(STEPS),
        credited=credited,
        assignments=assignments,
        learners=learners,
        unmatched=None if unmatched is None else [list(u) for u in unmatched],
        plots=list(PLOT_TITLES.items()) if rows else [],
        checks=checks,
        wrong_answers=outputs["wrong_answers"],
        actions=actions,
    )


def json_text(data) -> str:
    """JSON for the API: UTF-8, no NaN (a pandas gap becomes null before it gets here).

    >>> json_text({"a": 1})
    '{"a": 1}'
    """
    return json.dumps(data, ensure_ascii=False, allow_nan=False)
