"""The service's HTML pages, rendered on the server; every text that came from a learner or a report is escaped.

A learner's page lists their attempts, newest first, each with its score and
the feedback of every failed check (the call, expected, got and replay line,
as the Check widget shows them). The instructor's class page reloads itself
every ``refresh`` seconds (the base template's script, with a button that
pauses it) and shows per-learner progress by step, per-check pass rates and
the most common wrong answers. Both are drawn in :mod:`grader.service.layout`'s
base template.

Example::

    >>> "&lt;script&gt;" in page("t", "<p>" + esc("<script>") + "</p>")
    True
"""
from __future__ import annotations

import json
from dataclasses import fields
from urllib.parse import quote

from grader.escape import terminal_text
from grader.messages import replay_for
from grader.render import crash_notes, shown_details
from grader.report import STEPS, CheckResult
from grader.service.layout import Chrome, esc, page, text_with_times, time_html

__all__ = ["Chrome", "esc", "page", "time_html", "learner_page", "class_page", "feedback_html", "course_html",
           "hidden_html", "json_text"]
_CHECK_FIELDS = tuple(f.name for f in fields(CheckResult))


def _score(summary: dict) -> str:
    """The score cell; an ``error`` (the grader failed) reads "being graded again", never a zero.

    >>> _score({"status": "error", "score": None, "max_score": None})
    '<span class=pending>being graded again (the grader failed, not your code)</span>'
    """
    if summary["status"] in ("queued", "grading"):
        return f'<span class=pending>{esc(summary["status"])}</span>'
    if summary["status"] == "error":
        return '<span class=pending>being graded again (the grader failed, not your code)</span>'
    if summary["score"] is None:
        return f'<span class=bad>{esc(summary["status"])}</span>'
    # Coloured by meaning, with words too (issue 36.6): full marks green, some points plain, no point red.
    if summary["score"] == summary["max_score"]:
        cls, word = "ok", "full marks"
    elif summary["score"]:
        cls, word = "partial", "partly"
    else:
        cls, word = "bad", "no points"
    return (f'<span class={cls}>{esc(summary["score"])} / {esc(summary["max_score"])}'
            f'<span class=visually-hidden> ({word})</span></span>')


def _check_of(c: dict) -> CheckResult:
    """A check of a stored report (fields this version does not know are left out)."""
    return CheckResult(**{name: c[name] for name in _CHECK_FIELDS if name in c})


def _details_html(check: CheckResult, notes: "dict[str, str]") -> str:
    """The labelled lines of a failed check, as the Check widget orders and names them (:func:`shown_details`)."""
    rows = []
    for label, value in shown_details(check, notes):
        value = replay_for(value, "service") if label == "replay" else value  # the learner's path, not the service's
        text = esc(terminal_text(value))  # controls as escapes first: a bidi override reorders HTML text too
        if "\n" in value:
            shown = f"<pre>{text}</pre>"
        else:  # as the widget: values in code, sentences as text
            shown = f"<code>{text}</code>" if label in ("call", "expected", "got", "replay") else text
        rows.append(f"<dt>{esc(label)}</dt><dd{' class=replay' if label == 'replay' else ''}>{shown}</dd>")
    return f"<dl class=failure>{''.join(rows)}</dl>" if rows else ""


def feedback_html(report: "dict | None", *, open_first: bool = True) -> str:
    """The failed checks of one report: title, points, then the call, expected, got, why, hint and replay line.

    >>> html = feedback_html({"checks": [{"id": "step1/a", "step": 1, "passed": False, "points": 0,
    ...     "max_points": 1, "title": "<t>", "call": "f(1)", "reproduce": "agtool-grade check t.py --only step1/a"}]})
    >>> "<dt>call</dt><dd><code>f(1)</code></dd>" in html, "<dt>replay</dt>" in html, "&lt;t&gt;" in html
    (True, True, True)
    """
    if not report:
        return "<p>Not graded yet.</p>"
    parts, items = [], []
    if report.get("error"):
        parts.append(f"<p class=bad>Could not be graded fully:</p><pre>{esc(report['error'])}</pre>")
    failed = [c for c in report.get("checks", []) if not c.get("passed")]
    if not failed:
        parts.append("<p class=ok>Every check passed.</p>")
    checks = [_check_of(c) for c in failed]
    notes = crash_notes(checks)
    for i, check in enumerate(checks):
        details = _details_html(check, notes)
        if details:  # only the first failure is unfolded, as in the Check panel: one thing to fix at a time
            details = f"<details{' open' if open_first and i == 0 else ''}><summary>details</summary>{details}</details>"
        items.append(f"<li><b>step {esc(check.step)}</b> <code>{esc(check.id)}</code>: {esc(check.title)}"
                     f" ({esc(check.points)}/{esc(check.max_points)}){details}</li>")
    return "".join(parts) + (f"<ul>{''.join(items)}</ul>" if items else "")


HIDDEN = ("Your grade is computed on hidden cases that stay the same for every attempt; these checks failed "
          "there but passed on the cases shown. Your code is right for some values and not others: try "
          "<code>agtool-grade check agtool/tools.py --seed N</code> in a terminal of your lab, with other seeds.")


def hidden_html(hidden: "list[dict] | None") -> str:
    """The checks failed on the hidden cases only: ids and titles, never their calls or values.

    >>> hidden_html([{"id": "step1/<b>", "title": "t"}]).count("&lt;b&gt;"), hidden_html([])
    (1, '')
    """
    if not hidden:
        return ""
    items = "".join(f"<li><code>{esc(c.get('id'))}</code>: {esc(c.get('title'))}</li>" for c in hidden)
    return f"<p class=bad>{HIDDEN}</p><ul>{items}</ul>"


def course_html(course: "dict | None", owner: str = "Your") -> str:
    """The course policy as a learner sees it: due date, late date and credit, which attempt counts, attempts left.

    ``owner`` says whose attempts: "Your" to the learner, "ben's" to an instructor reading ben's page.

    >>> print(course_html({"due": "2026-03-01T12:00:00Z", "late_due": None, "counts": "best",
    ...                    "attempts_left": 2, "limit": 5, "window_minutes": 60, "next_allowed": None}))
    <p class=course>Due <time datetime="2026-03-01T12:00:00Z" title="2026-03-01 12:00 UTC">2026-03-01 12:00 UTC</time>. Your best attempt counts. Attempts left: 2 of 5 per 60 minutes.</p>
    """
    if not course:
        return ""
    parts = [f"Due {time_html(course['due'])}."]
    if course.get("late_due"):
        parts.append(f"Late until {time_html(course['late_due'])}, for {esc(round(100 * course['late_credit']))}% "
                     "of the points; no credit after that.")
    grade = "your grade" if owner == "Your" else "the grade"
    parts.append(f"{esc(owner)} best attempt counts." if course["counts"] == "best"
                 else f"{esc(owner)} last attempt on time counts (a late one only if it raises {grade}).")
    if course.get("limit"):
        minutes = format(course["window_minutes"], "g")
        parts.append(f"Attempts left: {esc(course['attempts_left'])} of {esc(course['limit'])} per "
                     f"{esc(minutes)} minutes.")
        if course.get("next_allowed"):
            parts.append(f"Next attempt allowed at {time_html(course['next_allowed'])}.")
    if course.get("credit_now") is not None and course.get("period_now") not in (None, "on time"):
        parts.append(f"An attempt now is {esc(course['period_now'])}: it keeps "
                     f"{esc(round(100 * course['credit_now']))}% of its points.")
    counted = course.get("counted")
    if counted:
        parts.append(f"Counting now: attempt {esc(counted['attempt'])}, {esc(format(counted['credited'], 'g'))} of "
                     f"{esc(format(counted['max_score'], 'g'))} ({text_with_times(counted['why'])}).")
    return f"<p class=course>{' '.join(parts)}</p>"


def attempts_heading(learner: str, viewer: str) -> str:
    """The learner page's heading in the reader's words: "Your attempts" to the learner, "ben's attempts" to others.

    >>> attempts_heading("ben", "ben"), attempts_heading("ben", "teacher")
    ('Your attempts', "ben's attempts")
    """
    return "Your attempts" if learner == viewer else f"{learner}'s attempts"


def code_href(prefix: str, learner: str, attempt_id: object) -> str:
    """The code view of one attempt (escaped for an attribute).

    >>> code_href("/p/", "a b", 3)
    '/p/learners/a%20b/attempts/3/code'
    """
    return esc(f"{prefix}learners/{quote(learner, safe='')}/attempts/{attempt_id}/code")


def learner_numbers(attempts: "list[dict]") -> "dict[int, int]":
    """Each attempt's number in its learner's own order, 1, 2, 3... (the service's ids count every learner's).

    ``attempts``: one learner's, as ``api/submissions`` lists them (``id``, ``submitted_at``), in any order.

    >>> learner_numbers([{"id": 9, "submitted_at": "2026-03-01T10:00:00Z"}, {"id": 4, "submitted_at": "2026-03-01T09:00:00Z"}])
    {4: 1, 9: 2}
    """
    order = sorted(attempts, key=lambda a: (a.get("submitted_at") or "", a["id"]))
    return {a["id"]: i for i, a in enumerate(order, start=1)}


def _attempt_html(a: dict, learner: str, prefix: str, number: int, latest: bool) -> str:
    """One attempt: the learner's own number (1, 2, 3...), time, score, a link to its code, then its feedback,
    folded unless it is the latest attempt (a long history stays a page, not 23,000 px)."""
    feedback = f"{feedback_html(a.get('report'), open_first=latest)}{hidden_html(a.get('hidden_failed'))}"
    if not latest and a.get("report"):
        feedback = f"<details><summary>Feedback of attempt {number}</summary>{feedback}</details>"
    return (f"<section class=attempt aria-labelledby=attempt-{esc(a['id'])}>"
            f"<h2 id=attempt-{esc(a['id'])}>Attempt {number} &middot; {time_html(a['submitted_at'])}"
            f" &middot; {_score(a)}</h2>"
            f"<p class=muted><small>sha256 {esc(a['sha256'])} &middot; seed {esc(a.get('seed'))} &middot; "
            f"<a href=\"{code_href(prefix, learner, a['id'])}\">code of attempt {number}</a></small></p>"
            f"{feedback}</section>")


def learner_page(learner: str, attempts: list[dict], *, prefix: str, is_instructor: bool,
                 course: "dict | None" = None, chrome: "Chrome | None" = None) -> str:
    """A learner's history: every attempt, newest first, with its feedback; ``course``: the due date and attempts left.

    ``chrome``: who reads it (the heading's words) and where the hub is; without it, the learner reads it.
    """
    chrome = chrome or Chrome(prefix=prefix, user=learner, instructor=is_instructor)
    heading = attempts_heading(learner, chrome.user)
    numbers = learner_numbers(attempts)  # newest first, numbered in the learner's own order
    rows = "".join(_attempt_html(a, learner, prefix, numbers[a["id"]], i == 0) for i, a in enumerate(attempts))
    link = f'<p><a href="{esc(prefix)}class">Back to the class page</a></p>' if is_instructor else ""
    lab = (f'<p><a href="{esc(chrome.lab_url)}">Back to your lab</a> to work on your module.</p>'
           if chrome.lab_url and learner == chrome.user else "")
    how = ("<p>Submit from a notebook: the Submit button beside a Check cell, or "
           "<code>from agtool_lab.submit import submit; submit()</code>.</p>" if learner == chrome.user else "")
    owner = "Your" if learner == chrome.user else f"{learner}'s"
    body = (f"<h1>{esc(heading)}</h1>{link}{lab}{course_html(course, owner)}{how}"
            + (rows or "<p>No attempts yet.</p>"))
    refresh = 5 if any(a["status"] in ("queued", "grading", "error") for a in attempts) else None
    return page(f"agtool: {heading}", body, refresh=refresh, chrome=chrome)


PLOT_TITLES = {"score_histogram": "Scores", "check_pass_rate": "Pass rate per check",
               "step_scores": "Score per step"}


def class_page(rows: list[dict], outputs: dict, *, prefix: str, refresh: int,
               unmatched: "list | None" = None, reference: bool = False, insecure: str = "",
               chrome: "Chrome | None" = None) -> str:
    """The instructor's class page: downloads, plots, progress by step, pass rates, common wrong answers.

    ``unmatched`` (with ``--roster``): ``(learner, problem)`` the roster did
    not match; ``reference``: similarity also compares with the reference solution;
    ``insecure``: why learner code runs without a sandbox (``--insecure-no-sandbox``), shown first;
    ``chrome``: who reads it and where the hub is.

    >>> html = class_page([{"learner": "<b>x</b>", "attempts": 1, "pending": 0, "best_score": 1, "last_score": 1,
    ...                     "max_score": 2, "steps": {}, "last_submitted_at": None}], {"checks": [], "wrong_answers": []},
    ...                   prefix="/s/", refresh=10, unmatched=[("=bob", "graded, but not in the roster")])
    >>> "<b>x</b>" in html, "&lt;b&gt;x&lt;/b&gt;" in html, "=bob" in html, "/s/plots/step_scores.png" in html
    (False, True, True, True)
    """
    p = esc(prefix)
    credited = any("credited_score" in r for r in rows)
    head = "".join(f"<th>step {s}</th>" for s in STEPS)
    credit_head = "<th>credited</th><th>why</th>" if credited else ""
    downloads, roster = _downloads(p, unmatched)
    plots = "".join(
        f'<figure><img src="{p}plots/{name}.png" alt="{esc(title)}">'
        f'<figcaption>{esc(title)} (<a href="{p}plots/{name}.svg">SVG</a>, '
        f'<a href="{p}plots/{name}.png">PNG</a>)</figcaption></figure>'
        for name, title in PLOT_TITLES.items()) if rows else ""
    similarity = ("Similarity compares each learner's counting attempt with the others"
                  + (" and with the reference solution (never shown)." if reference else "."))
    warning = (f"<p class=bad><strong>Learner code runs WITHOUT a sandbox</strong> ({esc(insecure)}): a submission "
               "can read and change the service's data, other learners' attempts and the reference solution.</p>"
               if insecure else "")
    body = (
        f"<h1>Class</h1>{warning}"
        f"<p>Downloads: {' &middot; '.join(downloads)}.</p>"
        f"<p><small>{esc(similarity)} <a href=\"{p}similarity\">Similar pairs, their code side by side</a>."
        "</small></p>"
        # Twenty columns do not fit a 1,300 px window: the table scrolls in its own region (reachable by
        # keyboard), never the page; its why column keeps a readable width.
        f"<h2 id=learners-heading>Learners ({len(rows)})</h2><div class=wide-table role=region tabindex=0 "
        f"aria-labelledby=learners-heading><table><tr><th>learner</th><th>attempts</th><th>pending</th>"
        f"<th>best</th><th>last</th><th>max</th>{head}{credit_head}<th>last attempt</th><th>files</th></tr>"
        f"{''.join(_learner_row(r, p, credited) for r in rows)}</table></div>{roster}"
        f"<h2>Plots</h2>{plots or '<p>No graded attempt yet.</p>'}"
        "<h2>Checks, hardest first</h2><table><tr><th>check</th><th>step</th><th>title</th><th>passed</th>"
        f"<th>pass rate</th></tr>{_check_rows(outputs)}</table>"
        "<h2>Most common wrong answers</h2><table><tr><th>check</th><th>got</th><th>expected</th><th>learners</th>"
        f"<th>who</th></tr>{_wrong_rows(outputs)}</table>")
    return page("agtool: class", body, refresh=refresh, chrome=chrome or Chrome(prefix=prefix, instructor=True))


def _learner_row(r: dict, p: str, credited: bool) -> str:
    """One learner's row of the class page (``p``: the escaped prefix)."""
    name = esc(r["learner"])
    link = esc(quote(r["learner"], safe=""))
    steps = "".join(f"<td>{esc(r['steps'].get(str(s), ''))}</td>" for s in STEPS)
    extra = (f"<td>{esc(r.get('credited_score', ''))}</td><td class=why>{text_with_times(r.get('why', ''))}</td>"
             if credited else "")
    files = (f'<a href="{p}learners/{link}/feedback.md">feedback.md</a> '
             f'<a href="{p}learners/{link}/results.json">results.json</a>' if r.get("best_attempt") else "")
    return (f"<tr><td><a href=\"{p}learners/{link}\">{name}</a></td>"
            f"<td>{esc(r['attempts'])}</td><td>{esc(r['pending'])}</td><td>{esc(r['best_score'])}</td>"
            f"<td>{esc(r['last_score'])}</td><td>{esc(r['max_score'])}</td>{steps}{extra}"
            f"<td>{time_html(r['last_submitted_at'])}</td><td>{files}</td></tr>")


def _check_rows(outputs: dict) -> str:
    return "".join(
        f"<tr><td><code>{esc(c['check'])}</code></td><td>{esc(c['step'])}</td><td>{esc(c['title'])}</td>"
        f"<td>{esc(c['passed'])}/{esc(c['graded'])}</td><td>{esc(round(100 * (c['pass_rate'] or 0)))}%</td></tr>"
        for c in sorted(outputs["checks"], key=lambda c: (c["pass_rate"], c["check"])))


def _wrong_rows(outputs: dict) -> str:
    return "".join(
        f"<tr><td><code>{esc(w['check'])}</code></td><td><pre>{esc(w['got'])}</pre></td>"
        f"<td><pre>{esc(w['expected'])}</pre></td><td>{esc(w['count'])}</td><td>{esc(w['learners'])}</td></tr>"
        for w in outputs["wrong_answers"])


def _downloads(p: str, unmatched: "list | None") -> "tuple[list[str], str]":
    """The download links, and the roster's section (``""`` without a roster)."""
    downloads = [f'<a href="{p}grades.csv">grades.csv</a>', f'<a href="{p}gradescope.zip">gradescope.zip</a>',
                 f'<a href="{p}similarity.html">similarity.html</a>', f'<a href="{p}similarity.csv">similarity.csv</a>',
                 f'<a href="{p}api/class">api/class (JSON)</a>']
    if unmatched is None:
        return downloads, ""
    downloads[2:2] = [f'<a href="{p}lms/canvas.csv">lms/canvas.csv</a>',
                      f'<a href="{p}lms/moodle.csv">lms/moodle.csv</a>',
                      f'<a href="{p}lms/unmatched.csv">lms/unmatched.csv</a>']
    items = "".join(f"<tr><td>{esc(who)}</td><td>{esc(problem)}</td></tr>" for who, problem in unmatched)
    roster = (f"<h2>Not matched by the roster ({len(unmatched)})</h2>"
              + (f"<table><tr><th>learner</th><th>problem</th></tr>{items}</table>" if unmatched
                 else "<p>Every graded learner is in the roster, and every roster row has a graded attempt.</p>"))
    return downloads, roster


def json_text(data) -> str:
    """JSON for the API: UTF-8, no NaN (a pandas gap becomes null before it gets here).

    >>> json_text({"a": 1})
    '{"a": 1}'
    """
    return json.dumps(data, ensure_ascii=False, allow_nan=False)
