"""The HTML of instructor actions: what a learner is shown ("Changes by your instructor"), the log, the forms.

Every text that came from a person (reasons, answers, a learner's regrade
request, names) goes through :func:`grader.service.pages.esc`. Every form
posts to the service with the page's ``_xsrf`` field (``xsrf`` here: the
hidden input the handler made), every input has a label. The sections are
put into the service's pages (:func:`insert_section`) without changing how
those pages are built.

Example::

    >>> act = {"id": 1, "kind": "appeal", "at": "2030-01-01T00:00:00Z", "actor": "ana", "learner": "ana",
    ...        "attempt": 3, "refers_to": None, "reason": "<script>x</script>", "data": {}}
    >>> html = changes_section([act], [], viewer="ana", learner="ana", prefix="/s/", xsrf="", attempts=[])
    >>> "<script>" in html, "&lt;script&gt;" in html
    (False, True)
"""
from __future__ import annotations

from urllib.parse import quote

from grader.service.actions import MAX_APPEAL, MAX_REASON
from grader.service.actions_db import ANSWER, APPEAL, ATTEMPTS, EXTENSION, OVERRIDE, REGRADE, open_appeals
from grader.service.layout import time_html
from grader.service.options import APPEAL_PREVIEW_CHARS
from grader.service.pages import esc, page


def describe(action: dict) -> str:
    """What an action did, in one plain sentence (not escaped: :func:`esc` it for HTML).

    >>> describe({"kind": "attempts", "data": {"extra": 2}, "learner": "ana"})
    '2 extra attempts for ana'
    >>> describe({"kind": "override", "learner": "ana", "attempt": 4,
    ...           "data": {"score": 7.0, "max_score": 10.0, "was": 3.0}})
    'grade of ana set to 7/10 (it was 3/10; attempt 4)'
    """
    kind, data, who = action["kind"], action.get("data") or {}, action.get("learner")
    if kind == EXTENSION:
        late = f", late until {data['late_due']}" if data.get("late_due") else ""
        return f"due date of {who} extended to {data['due']}{late}"
    if kind == ATTEMPTS:
        return f"{data['extra']} extra attempt{'s' if data['extra'] != 1 else ''} for {who}"
    if kind == OVERRIDE:
        return (f"grade of {who} set to {data['score']:g}/{data['max_score']:g} "
                f"(it was {data['was']:g}/{data['max_score']:g}; attempt {action.get('attempt')})")
    if kind == REGRADE:
        scope = {"attempt": f"attempt {action.get('attempt')}", "counting": "every learner's counting attempt",
                 "all": "every attempt of the class"}.get(data.get("scope"), "attempts")
        return f"regrade of {scope}"
    if kind == APPEAL:
        return f"regrade request by {who} about attempt {action.get('attempt')}"
    if kind == ANSWER:
        verdict = "accepted" if data.get("accepted") else "declined"
        return f"regrade request {action.get('refers_to')} {verdict}"
    return kind


def _item(action: dict, answers: dict, past: "list[dict]") -> str:
    """One action as a list item: what, when (local time, UTC on hover), by whom, why; an appeal with its answer."""
    why = (f"<br><span class=why>{'Request' if action['kind'] == APPEAL else 'Why'}: "
           f"{esc(action['reason'])}</span>" if action["reason"] else "")
    text = f"<li>{time_html(action['at'])}: {esc(describe(action))} (by {esc(action['actor'])}){why}"
    if action["kind"] == REGRADE:
        before = [p for p in past if p["regrade"] == action["id"]]
        if before:
            olds = ", ".join(f"attempt {esc(p['attempt'])}: {esc(p['score'])}/{esc(p['max_score'])}"
                             if p["score"] is not None else f"attempt {esc(p['attempt'])}: {esc(p['status'])}"
                             for p in before)
            text += f"<br>Before the regrade (kept): {olds}"
    if action["kind"] == APPEAL:
        answer = answers.get(action["id"])
        text += (f"<br>Answer ({'accepted' if answer['data'].get('accepted') else 'declined'}, "
                 f"{time_html(answer['at'])}, by {esc(answer['actor'])}): {esc(answer['reason'])}"
                 if answer else "<br>Not answered yet.")
    return text + "</li>"


def history_list(actions: "list[dict]", past: "list[dict]") -> str:
    """The actions, newest first, as a list (answers are shown with their request)."""
    answers = {a["refers_to"]: a for a in actions if a["kind"] == ANSWER}
    items = "".join(_item(a, answers, past) for a in reversed(actions) if a["kind"] != ANSWER)
    return f"<ul class=actions>{items}</ul>" if items else "<p>None yet.</p>"


def changes_section(actions: "list[dict]", past: "list[dict]", *, viewer: str, learner: str, prefix: str,
                    xsrf: str, attempts: "list[dict]", instructor: bool = False, request_limit: str = "") -> str:
    """A learner page's section: the changes made for this learner, a regrade request form, instructor forms.

    ``request_limit``: how many requests a learner may file, said above their form (e.g. "5 per 60 minutes").
    """
    title = "Changes by your instructor" if viewer == learner else f"Changes made for {learner}"
    body = f'<section aria-labelledby="changes"><h2 id="changes">{esc(title)}</h2>{history_list(actions, past)}'
    graded = [a for a in attempts if a.get("status") == "graded"]
    if viewer == learner and graded:
        body += appeal_form(prefix, xsrf, graded, request_limit)
    if instructor:
        body += learner_forms(prefix, xsrf, learner, graded)
    return body + "</section>"


def _form(prefix: str, path: str, xsrf: str, fields: str, button: str, back: str) -> str:
    return (f'<form method="post" action="{esc(prefix)}{path}" class=action-form>{xsrf}'
            f'<input type="hidden" name="next" value="{esc(back)}">{fields}'
            f'<button type="submit">{esc(button)}</button></form>')


def _input(name: str, label: str, form: str, *, kind: str = "text", extra: str = "") -> str:
    ident = f"{form}-{name}"
    return (f'<p><label for="{esc(ident)}">{esc(label)}</label> '
            f'<input id="{esc(ident)}" name="{esc(name)}" type="{kind}" {extra}></p>')


def _textarea(name: str, label: str, form: str, limit: int, *, required: bool) -> str:
    ident = f"{form}-{name}"
    return (f'<p><label for="{esc(ident)}">{esc(label)}</label><br><textarea id="{esc(ident)}" name="{esc(name)}" '
            f'rows="3" cols="60" maxlength="{limit}"{" required" if required else ""}></textarea></p>')


def _attempt_select(form: str, label: str, attempts: "list[dict]") -> str:
    options = "".join(f'<option value="{esc(a["id"])}">attempt {esc(a["id"])} ({esc(a["score"])}/'
                      f'{esc(a["max_score"])})</option>' for a in attempts)
    return (f'<p><label for="{form}-attempt">{esc(label)}</label> '
            f'<select id="{form}-attempt" name="attempt">{options}</select></p>')


def appeal_form(prefix: str, xsrf: str, graded: "list[dict]", request_limit: str = "") -> str:
    """The learner's regrade request: which attempt, and what they think was graded wrongly."""
    fields = (_attempt_select("appeal", "Attempt to regrade", graded)
              + _textarea("text", "Your regrade request: what was graded wrongly?", "appeal", MAX_APPEAL,
                          required=True))
    limit = f"<p>Regrade requests: at most {esc(request_limit)}.</p>" if request_limit else ""
    return "<h3>Ask for a regrade</h3>" + limit + _form(prefix, "appeals", xsrf, fields, "Send the request", prefix)


def learner_forms(prefix: str, xsrf: str, learner: str, graded: "list[dict]") -> str:
    """An instructor's forms on a learner's page: extension, extra attempts, override, regrade of one attempt."""
    back = f"{prefix}learners/{quote(learner, safe='')}"
    who = f'<input type="hidden" name="learner" value="{esc(learner)}">'
    utc = 'placeholder="2030-03-01T23:59"'
    parts = [
        "<h3>Extend the due date</h3>",
        _form(prefix, "actions/extension", xsrf, who + _input("due", "New due date (UTC)", "ext", extra=utc + " required")
              + _input("late_due", "New late date (UTC, optional)", "ext", extra=utc)
              + _textarea("reason", "Reason for the extension", "ext", MAX_REASON, required=False),
              "Grant the extension", back),
        "<h3>Extra attempts</h3>",
        _form(prefix, "actions/attempts", xsrf, who + _input("extra", "Extra attempts", "att", kind="number",
                                                              extra='min="1" max="100" value="1" required')
              + _textarea("reason", "Reason for the extra attempts", "att", MAX_REASON, required=False),
              "Add the attempts", back),
    ]
    if graded:
        parts += [
            "<h3>Override the grade that counts</h3>",
            _form(prefix, "actions/override", xsrf, who + _input("score", "Grade that counts", "ovr", kind="number",
                                                                  extra='min="0" step="any" required')
                  + _textarea("reason", "Reason for the override (required)", "ovr", MAX_REASON, required=True),
                  "Override the grade", back),
            "<h3>Regrade one attempt</h3>",
            _form(prefix, "actions/regrade", xsrf, '<input type="hidden" name="scope" value="attempt">'
                  + _attempt_select("rgd", "Attempt to grade again", graded)
                  + _textarea("reason", "Reason for the regrade", "rgd", MAX_REASON, required=False),
                  "Regrade this attempt", back)]
    return "".join(parts)


def class_section(actions: "list[dict]", past: "list[dict]", *, prefix: str, xsrf: str, forms: bool) -> str:
    """The class's actions: open regrade requests (with answer forms when ``forms``), the log, the class regrade."""
    p = esc(prefix)
    waiting = open_appeals(actions)
    items = "".join(_open_appeal(a, prefix, xsrf, forms) for a in waiting)
    link = "" if forms else (f'<p><a href="{p}class/actions">Answer requests and regrade the class</a> '
                             "(that page does not reload while you type).</p>")
    body = (f'<section aria-labelledby="appeals"><h2 id="appeals">Open regrade requests ({len(waiting)})</h2>{link}'
            + (f"<ul class=appeals>{items}</ul>" if items else "<p>None.</p>") + "</section>")
    if forms:
        body += class_regrade_form(prefix, xsrf)
    return (body + '<section aria-labelledby="log"><h2 id="log">Log of instructor actions</h2>'
            f"{history_list(actions, past)}</section>")


def class_summary(open_requests: "tuple[int, int, list[dict]]", actions: "list[dict]", past: "list[dict]", *,
                  prefix: str) -> str:
    """The class page's part: the open regrade requests as a count with a link, the oldest few quoted (shortened),
    and the log of instructor actions; every request's text and the answer forms are on ``class/actions``.

    ``open_requests``: :meth:`~grader.service.actions_db.ActionLog.open_requests` (count, learners, the oldest).
    However many requests learners file, the class page grows by a few lines at most.

    >>> ask = {"id": 7, "kind": "appeal", "at": "2030-01-01T00:00:00Z", "actor": "ana", "learner": "ana",
    ...        "attempt": 3, "refers_to": None, "reason": "x" * 500, "data": {}}
    >>> html = class_summary((40, 2, [ask]), [], [], prefix="/s/")
    >>> "Open regrade requests (40)" in html, "x" * 201 in html, "And 39 more" in html, 'href="/s/class/actions"' in html
    (True, False, True, True)
    """
    p = esc(prefix)
    count, learners, oldest = open_requests
    page_link = f'<a href="{p}class/actions">the actions page</a>'
    body = (f'<section aria-labelledby="appeals"><h2 id="appeals">Open regrade requests ({count})</h2>'
            f'<p><a href="{p}class/actions">Answer requests and regrade the class</a> (that page does not reload '
            "while you type, and shows every request in full).</p>")
    if count:
        quoted = "".join(_open_appeal(_shortened(a), prefix, "", False) for a in oldest)
        more = count - len(oldest)
        body += (f"<p>{count} open, from {learners} learner{'s' if learners != 1 else ''}"
                 f"{f'; the oldest {len(oldest)}' if more else ''}:</p><ul class=appeals>{quoted}</ul>"
                 + (f"<p>And {more} more on {page_link}.</p>" if more else ""))
    else:
        body += "<p>None.</p>"
    return (body + '</section><section aria-labelledby="log"><h2 id="log">Log of instructor actions</h2>'
            f"<p>Regrade requests and their answers are on {page_link}.</p>"
            f"{history_list([a for a in actions if a['kind'] != APPEAL], past)}</section>")


def _shortened(appeal: dict, limit: int = APPEAL_PREVIEW_CHARS) -> dict:
    """The request with its text cut to ``limit`` characters (marked), for the class page's quote.

    >>> _shortened({"reason": "abcdef"}, 3)["reason"]
    'abc… (shortened)'
    """
    text = appeal["reason"]
    return appeal if len(text) <= limit else {**appeal, "reason": text[:limit].rstrip() + "… (shortened)"}


def _open_appeal(appeal: dict, prefix: str, xsrf: str, forms: bool) -> str:
    learner = appeal["learner"]
    href = f"{esc(prefix)}learners/{esc(quote(learner, safe=''))}"
    head = (f'<li><a href="{href}">{esc(learner)}</a>, attempt {esc(appeal["attempt"])}, '
            f"{time_html(appeal['at'])}: <q>{esc(appeal['reason'])}</q>")
    if not forms:
        return head + "</li>"
    form = f"ans{appeal['id']}"
    fields = (f'<input type="hidden" name="appeal" value="{esc(appeal["id"])}">'
              + _textarea("answer", f"Answer to {learner}'s request {appeal['id']}", form, MAX_REASON, required=True)
              + _input("accepted", f"Accept request {appeal['id']}", form, kind="checkbox")
              + _input("score", f"New grade for request {appeal['id']} (optional, when accepted)", form,
                       kind="number", extra='min="0" step="any"')
              + _input("regrade", f"Regrade the attempt of request {appeal['id']} (when accepted)", form,
                       kind="checkbox"))
    return head + _form(prefix, "actions/answer", xsrf, fields, f"Send the answer to request {appeal['id']}",
                        f"{prefix}class/actions") + "</li>"


def class_regrade_form(prefix: str, xsrf: str) -> str:
    """Regrade after a grader fix: every learner's counting attempt, or every attempt of the class."""
    fields = (f'<fieldset><legend>Which attempts</legend>'
              f'<p><input type="radio" id="cls-counting" name="scope" value="counting" checked> '
              f'<label for="cls-counting">Every learner\'s counting attempt</label></p>'
              f'<p><input type="radio" id="cls-all" name="scope" value="all"> '
              f'<label for="cls-all">Every attempt of the class</label></p></fieldset>'
              + _textarea("reason", "Reason for the class regrade", "cls", MAX_REASON, required=False))
    return ('<section aria-labelledby="regrade"><h2 id="regrade">Regrade the class</h2>'
            "<p>After a grader fix: the attempts are graded again through the queue; their old results are kept.</p>"
            + _form(prefix, "actions/regrade", xsrf, fields, "Regrade the class", f"{prefix}class/actions")
            + "</section>")


def actions_page(actions: "list[dict]", past: "list[dict]", *, prefix: str, xsrf: str, chrome=None) -> str:
    """``class/actions``: the open requests with answer forms, the class regrade and the log (no reload)."""
    body = (f'<h1>Instructor actions</h1><p><a href="{esc(prefix)}class">Back to the class page</a></p>'
            + class_section(actions, past, prefix=prefix, xsrf=xsrf, forms=True))
    return page("agtool: instructor actions", body, chrome=chrome)


def insert_section(document: str, section: str) -> str:
    """``document`` with ``section`` at the end of its main content (before ``</main>``, else ``</body>``).

    >>> insert_section("<main>a</main>", "<p>b</p>")
    '<main>a<p>b</p></main>'
    """
    for end in ("</main>", "</body>"):
        at = document.rfind(end)
        if at >= 0:
            return document[:at] + section + document[at:]
    return document + section
