"""The service's HTML pages, rendered on the server; every text that came from a learner or a report is escaped.

A learner's page lists their attempts, newest first, each with its score and
the feedback of every failed check. The instructor's class page reloads
itself every ``refresh`` seconds (a plain ``<meta http-equiv=refresh>``: it
needs no script) and shows per-learner progress by step, per-check pass
rates and the most common wrong answers.

Example::

    >>> "&lt;script&gt;" in page("t", "<p>" + esc("<script>") + "</p>")
    True
"""
from __future__ import annotations

import html
import json
from urllib.parse import quote

from grader.report import STEPS

STYLE = """
figure{display:inline-block;margin:.5em}figure img{max-width:40em}
body{font-family:system-ui,sans-serif;margin:2em;max-width:72em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left}
.ok{color:#1a7f37}.bad{color:#cf222e}.pending{color:#9a6700}pre{background:#f6f8fa;padding:.5em;white-space:pre-wrap}
"""


def esc(value: object) -> str:
    """HTML-escape anything (quotes too: values also go into attributes).

    >>> esc('<a href="x">')
    '&lt;a href=&quot;x&quot;&gt;'
    """
    return html.escape("" if value is None else str(value), quote=True)


def page(title: str, body: str, *, refresh: "int | None" = None) -> str:
    """A whole HTML document around ``body`` (which must already be escaped)."""
    meta = f'<meta http-equiv="refresh" content="{int(refresh)}">' if refresh else ""
    return (f"<!doctype html><html><head><meta charset=utf-8>{meta}<title>{esc(title)}</title>"
            f"<style>{STYLE}</style></head><body>{body}</body></html>")


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
    cls = "ok" if summary["score"] == summary["max_score"] else "bad"
    return f'<span class={cls}>{esc(summary["score"])} / {esc(summary["max_score"])}</span>'


def feedback_html(report: "dict | None") -> str:
    """The failed checks of one report, each with its message, what was expected and what came back."""
    if not report:
        return "<p>Not graded yet.</p>"
    parts, items = [], []
    if report.get("error"):
        parts.append(f"<p class=bad>Could not be graded fully:</p><pre>{esc(report['error'])}</pre>")
    failed = [c for c in report.get("checks", []) if not c.get("passed")]
    if not failed:
        parts.append("<p class=ok>Every check passed.</p>")
    for c in failed:
        item = [f"<li><b>step {esc(c.get('step'))}</b> <code>{esc(c.get('id'))}</code>: {esc(c.get('title'))}"
                f" ({esc(c.get('points'))}/{esc(c.get('max_points'))})"]
        for label in ("message", "expected", "got", "hint"):
            if c.get(label):
                item.append(f"<br>{esc(label)}: <pre>{esc(c[label])}</pre>")
        items.append("".join(item) + "</li>")
    return "".join(parts) + (f"<ul>{''.join(items)}</ul>" if items else "")


HIDDEN = ("Your grade is computed on hidden cases that stay the same for every attempt; these checks failed "
          "there but passed on the cases shown. Your code is right for some values and not others: try "
          "<code>agtool-grade check tools.py --seed N</code> with other seeds.")


def hidden_html(hidden: "list[dict] | None") -> str:
    """The checks failed on the hidden cases only: ids and titles, never their calls or values.

    >>> hidden_html([{"id": "step1/<b>", "title": "t"}]).count("&lt;b&gt;"), hidden_html([])
    (1, '')
    """
    if not hidden:
        return ""
    items = "".join(f"<li><code>{esc(c.get('id'))}</code>: {esc(c.get('title'))}</li>" for c in hidden)
    return f"<p class=bad>{HIDDEN}</p><ul>{items}</ul>"


def course_html(course: "dict | None") -> str:
    """The course policy as a learner sees it: due date, late date and credit, which attempt counts, attempts left.

    >>> print(course_html({"due": "2026-03-01T12:00:00Z", "late_due": None, "counts": "best",
    ...                    "attempts_left": 2, "limit": 5, "window_minutes": 60, "next_allowed": None}))
    <p class=course>Due 2026-03-01T12:00:00Z (UTC). Your best attempt counts. Attempts left: 2 of 5 per 60 minutes.</p>
    """
    if not course:
        return ""
    parts = [f"Due {esc(course['due'])} (UTC)."]
    if course.get("late_due"):
        parts.append(f"Late until {esc(course['late_due'])}, for {esc(round(100 * course['late_credit']))}% "
                     "of the points; no credit after that.")
    parts.append("Your best attempt counts." if course["counts"] == "best"
                 else "Your last attempt on time counts (a late one only if it raises your grade).")
    if course.get("limit"):
        minutes = format(course["window_minutes"], "g")
        parts.append(f"Attempts left: {esc(course['attempts_left'])} of {esc(course['limit'])} per "
                     f"{esc(minutes)} minutes.")
        if course.get("next_allowed"):
            parts.append(f"Next attempt allowed at {esc(course['next_allowed'])}.")
    if course.get("credit_now") is not None and course.get("period_now") not in (None, "on time"):
        parts.append(f"An attempt now is {esc(course['period_now'])}: it keeps "
                     f"{esc(round(100 * course['credit_now']))}% of its points.")
    counted = course.get("counted")
    if counted:
        parts.append(f"Counting now: attempt {esc(counted['attempt'])}, {esc(format(counted['credited'], 'g'))} of "
                     f"{esc(format(counted['max_score'], 'g'))} ({esc(counted['why'])}).")
    return f"<p class=course>{' '.join(parts)}</p>"


def learner_page(learner: str, attempts: list[dict], *, prefix: str, is_instructor: bool,
                 course: "dict | None" = None) -> str:
    """A learner's history: every attempt, newest first, with its feedback; ``course``: the due date and attempts left."""
    rows = []
    for a in attempts:
        rows.append(f"<h3>attempt {esc(a['id'])} &middot; {esc(a['submitted_at'])} &middot; {_score(a)}</h3>"
                    f"<p><small>sha256 {esc(a['sha256'])} &middot; seed {esc(a.get('seed'))}</small></p>"
                    f"{feedback_html(a.get('report'))}{hidden_html(a.get('hidden_failed'))}")
    link = f'<p><a href="{esc(prefix)}class">the class page</a></p>' if is_instructor else ""
    body = (f"<h1>Your attempts, {esc(learner)}</h1>{link}{course_html(course)}"
            "<p>Submit from a notebook with <code>from agtool_lab.submit import submit; submit()</code>.</p>"
            + ("".join(rows) or "<p>No attempts yet.</p>"))
    refresh = 5 if any(a["status"] in ("queued", "grading", "error") for a in attempts) else None
    return page(f"agtool: {learner}", body, refresh=refresh)


PLOT_TITLES = {"score_histogram": "Scores", "check_pass_rate": "Pass rate per check",
               "step_scores": "Score per step"}


def class_page(rows: list[dict], outputs: dict, *, prefix: str, refresh: int,
               unmatched: "list | None" = None, reference: bool = False, insecure: str = "") -> str:
    """The instructor's class page: downloads, plots, progress by step, pass rates, common wrong answers.

    ``unmatched`` (with ``--roster``): ``(learner, problem)`` the roster did
    not match; ``reference``: similarity also compares with the reference solution;
    ``insecure``: why learner code runs without a sandbox (``--insecure-no-sandbox``), shown first.

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
        f"<p>Downloads: {' &middot; '.join(downloads)}. This page reloads every {int(refresh)} s.</p>"
        f"<p><small>{esc(similarity)}</small></p>"
        f"<h2>Learners ({len(rows)})</h2><table><tr><th>learner</th><th>attempts</th><th>pending</th>"
        f"<th>best</th><th>last</th><th>max</th>{head}{credit_head}<th>last attempt</th><th>files</th></tr>"
        f"{''.join(_learner_row(r, p, credited) for r in rows)}</table>{roster}"
        f"<h2>Plots</h2>{plots or '<p>No graded attempt yet.</p>'}"
        "<h2>Checks, hardest first</h2><table><tr><th>check</th><th>step</th><th>title</th><th>passed</th>"
        f"<th>pass rate</th></tr>{_check_rows(outputs)}</table>"
        "<h2>Most common wrong answers</h2><table><tr><th>check</th><th>got</th><th>expected</th><th>learners</th>"
        f"<th>who</th></tr>{_wrong_rows(outputs)}</table>")
    return page("agtool: class", body, refresh=refresh)


def _learner_row(r: dict, p: str, credited: bool) -> str:
    """One learner's row of the class page (``p``: the escaped prefix)."""
    name = esc(r["learner"])
    link = esc(quote(r["learner"], safe=""))
    steps = "".join(f"<td>{esc(r['steps'].get(str(s), ''))}</td>" for s in STEPS)
    extra = (f"<td>{esc(r.get('credited_score', ''))}</td><td>{esc(r.get('why', ''))}</td>" if credited else "")
    files = (f'<a href="{p}learners/{link}/feedback.md">feedback.md</a> '
             f'<a href="{p}learners/{link}/results.json">results.json</a>' if r.get("best_attempt") else "")
    return (f"<tr><td><a href=\"{p}learners/{link}\">{name}</a></td>"
            f"<td>{esc(r['attempts'])}</td><td>{esc(r['pending'])}</td><td>{esc(r['best_score'])}</td>"
            f"<td>{esc(r['last_score'])}</td><td>{esc(r['max_score'])}</td>{steps}{extra}"
            f"<td>{esc(r['last_submitted_at'])}</td><td>{files}</td></tr>")


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
