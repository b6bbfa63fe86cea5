"""What instructor actions look like on the pages, as plain data: the changes a learner is shown, the log, the forms.

The ``*_view`` functions here prepare dicts of plain values; the macros of
``templates/actions.html`` draw them, escaping every text that came from a
person (reasons, answers, a learner's regrade request, names). Every form
posts to the service with the page's ``_xsrf`` token (``xsrf`` here: the
token's text), every input has a label.

Example::

    >>> act = {"id": 1, "kind": "appeal", "at": "2030-01-01T00:00:00Z", "actor": "ana", "learner": "ana",
    ...        "attempt": 3, "refers_to": None, "reason": "<script>x</script>", "data": {}}
    >>> view = changes_view([act], [], viewer="ana", learner="ana", prefix="/s/", xsrf="", attempts=[])
    >>> view["history"][0]["reason"], view["history"][0]["answer"]
    ('<script>x</script>', None)
"""

from __future__ import annotations

from urllib.parse import quote

from grader.service.actions import MAX_APPEAL, MAX_REASON
from grader.service.actions_db import ANSWER, APPEAL, ATTEMPTS, EXTENSION, OVERRIDE, REGRADE, open_appeals
from grader.service.layout import Chrome, render
from grader.service.options import APPEAL_PREVIEW_CHARS


def describe(action: dict) -> str:
    """What an action did, in one plain sentence (the template escapes it).

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
        return (
            f"grade of {who} set to {data['score']:g}/{data['max_score']:g} "
            f"(it was {data['was']:g}/{data['max_score']:g}; attempt {action.get('attempt')})"
        )
    if kind == REGRADE:
        scope = {
            "attempt": f"attempt {action.get('attempt')}",
            "counting": "every learner's counting attempt",
            "all": "every attempt of the class",
        }.get(data.get("scope"), "attempts")
        return f"regrade of {scope}"
    if kind == APPEAL:
        return f"regrade request by {who} about attempt {action.get('attempt')}"
    if kind == ANSWER:
        verdict = "accepted" if data.get("accepted") else "declined"
        return f"regrade request {action.get('refers_to')} {verdict}"
    return kind


def _entry(action: dict, answers: dict, past: list[dict]) -> dict:
    """One action of the log: what, when, by whom, why; a regrade's replaced results; a request's answer."""
    appeal = action["kind"] == APPEAL
    before = (
        [
            {"attempt": p["attempt"], "score": p["score"], "max_score": p["max_score"], "status": p["status"]}
            for p in past
            if p["regrade"] == action["id"]
        ]
        if action["kind"] == REGRADE
        else []
    )
    answer = answers.get(action["id"]) if appeal else None
    return {
        "at": action["at"],
        "text": describe(action),
        "actor": action["actor"],
        "reason": action["reason"],
        "reason_label": "Request" if appeal else "Why",
        "before": before,
        "appeal": appeal,
        "answer": None
        if answer is None
        else {
            "verdict": "accepted" if answer["data"].get("accepted") else "declined",
            "at": answer["at"],
            "actor": answer["actor"],
            "reason": answer["reason"],
        },
    }


def history_view(actions: list[dict], past: list[dict]) -> list[dict]:
    """The actions, newest first (answers are shown with their request)."""
    answers = {a["refers_to"]: a for a in actions if a["kind"] == ANSWER}
    return [_entry(a, answers, past) for a in reversed(actions) if a["kind"] != ANSWER]


def changes_view(
    actions: list[dict],
    past: list[dict],
    *,
    viewer: str,
    learner: str,
    prefix: str,
    xsrf: str,
    attempts: list[dict],
    instructor: bool = False,
    request_limit: str = "",
) -> dict:
    """A learner page's section: the changes made for this learner, a regrade request form, instructor forms.

    ``request_limit``: how many requests a learner may file, said above their form (e.g. "5 per 60 minutes").
    """
    graded = [
        {"id": a["id"], "score": a["score"], "max_score": a["max_score"]}
        for a in attempts
        if a.get("status") == "graded"
    ]
    return {
        "title": "Changes by your instructor" if viewer == learner else f"Changes made for {learner}",
        "history": history_view(actions, past),
        "prefix": prefix,
        "xsrf": xsrf,
        "learner": learner,
        "back": f"{prefix}learners/{quote(learner, safe='')}",
        "graded": graded,
        "appeal": viewer == learner and bool(graded) and not instructor,
        # An instructor's forms act on a learner: on their own page there is no one to extend or override.
        "instructor": instructor and viewer != learner,
        "request_limit": request_limit,
        "max_appeal": MAX_APPEAL,
        "max_reason": MAX_REASON,
    }


def open_appeal_view(appeal: dict, prefix: str) -> dict:
    """One open regrade request: who (and their page), which attempt, when, what they asked."""
    return {
        "id": appeal["id"],
        "learner": appeal["learner"],
        "attempt": appeal["attempt"],
        "at": appeal["at"],
        "reason": appeal["reason"],
        "href": f"{prefix}learners/{quote(appeal['learner'], safe='')}",
    }


def class_summary_view(
    open_requests: tuple[int, int, list[dict]], actions: list[dict], past: list[dict], *, prefix: str
) -> dict:
    """The class page's part: the open regrade requests as a count with a link, the oldest few quoted (shortened),
    and the log of instructor actions; every request's text and the answer forms are on ``class/actions``.

    ``open_requests``: :meth:`~grader.service.actions_db.ActionLog.open_requests` (count, learners, the oldest).
    However many requests learners file, the class page grows by a few lines at most.

    >>> ask = {"id": 7, "kind": "appeal", "at": "2030-01-01T00:00:00Z", "actor": "ana", "learner": "ana",
    ...        "attempt": 3, "refers_to": None, "reason": "x" * 500, "data": {}}
    >>> view = class_summary_view((40, 2, [ask]), [], [], prefix="/s/")
    >>> view["count"], len(view["quoted"][0]["reason"]) < 250, view["more"]
    (40, True, 39)
    """
    count, learners, oldest = open_requests
    return {
        "prefix": prefix,
        "count": count,
        "learners": learners,
        "quoted": [open_appeal_view(_shortened(a), prefix) for a in oldest],
        "more": count - len(oldest),
        "history": history_view([a for a in actions if a["kind"] != APPEAL], past),
    }


def _shortened(appeal: dict, limit: int = APPEAL_PREVIEW_CHARS) -> dict:
    """The request with its text cut to ``limit`` characters (marked), for the class page's quote.

    >>> _shortened({"reason": "abcdef"}, 3)["reason"]
    'abc… (shortened)'
    """
    text = appeal["reason"]
    return appeal if len(text) <= limit else {**appeal, "reason": text[:limit].rstrip() + "… (shortened)"}


def actions_page(actions: list[dict], past: list[dict], *, prefix: str, xsrf: str, chrome: Chrome | None = None) -> str:
    """``class/actions``: the open requests with answer forms, the class regrade and the log (no reload).

    >>> ask = {"id": 7, "kind": "appeal", "at": "2030-01-01T00:00:00Z", "actor": "ana", "learner": "<b>",
    ...        "attempt": 3, "refers_to": None, "reason": "<script>", "data": {}}
    >>> html = actions_page([ask], [], prefix="/s/", xsrf="t")
    >>> main = html.split("<main")[1].split("</main>")[0]
    >>> "<script>" in main, "&lt;script&gt;" in main, 'name="_xsrf" value="t"' in main
    (False, True, True)
    """
    return render(
        "actions_page.html",
        title="agtool: instructor actions",
        chrome=chrome,
        prefix=prefix,
        xsrf=xsrf,
        waiting=[open_appeal_view(a, prefix) for a in open_appeals(actions)],
        entries=history_view(actions, past),
        max_reason=MAX_REASON,
    )
