"""What the class's LTI page shows, as plain data: per learner the grade, the launch, the LMS's last answer.

The template ``lti.html`` draws it, escaping every value: names, claims
and the LMS's answers are not ours. The handlers are
:mod:`grader.service.handlers.lti` (the page) and :mod:`grader.service.api.lti`
(the key set, sending as JSON).

Example::

    >>> status_rows([{"learner": "<b>", "grade": (7.0, 10.0), "launches": [], "outbox": []}])
    [{'learner': '<b>', 'grade': '7/10', 'launch': 'never launched from the LMS', 'sent': '-'}]
"""

from __future__ import annotations

from grader.service.layout import Chrome, render


def _grade(grade) -> str:
    return "no graded attempt" if grade is None else f"{grade[0]:g}/{grade[1]:g}"


def status_rows(status: list[dict]) -> list[dict]:
    """One row per learner: the grade that counts, their LMS id and context, the outbox state and last answer."""
    rows = []
    for s in status:
        launched = ", ".join(f"sub {x['sub']} in {x['context_title'] or x['context_id']}" for x in s["launches"])
        sent = "; ".join(
            f"{o['state']} ({o['score_given']:g}/{o['score_maximum']:g}, last answer "
            f"{o['last_status'] if o['last_status'] is not None else 'none'})"
            for o in s["outbox"]
        )
        rows.append(
            {
                "learner": s["learner"],
                "grade": _grade(s["grade"]),
                "launch": launched or "never launched from the LMS",
                "sent": sent or "-",
            }
        )
    return rows


def roster_view(said: str, comparison: dict | None) -> dict:
    """The NRPS comparison: matched by ``sub``, on the LMS only, on the hub only (``said``: why there is none)."""
    if comparison is None:
        return {"said": said, "matched": None, "lms_only": None, "hub_only": None}
    return {
        "said": said,
        "matched": [{"name": name, "sub": sub} for name, sub in comparison["matched"]],
        "lms_only": [{"name": m["name"] or "?", "sub": m["user_id"]} for m in comparison["lms_only"]],
        "hub_only": list(comparison["hub_only"]),
    }


def lti_page(
    *,
    prefix: str,
    xsrf: str,
    chrome: Chrome,
    status: list[dict] | None = None,
    roster: tuple[str, dict | None] | None = None,
    results: list[dict] | None = None,
) -> str:
    """``class/lti``: the learners and the LMS (``status``, ``roster``), or the answers of one send (``results``).

    >>> html = lti_page(prefix="/s/", xsrf="t", chrome=Chrome(), results=[{"learner": "<b>", "result": "sent",
    ...                 "text": "ok"}])
    >>> "<td>&lt;b&gt;</td><td>sent</td><td>ok</td>" in html, "Grades sent to the LMS" in html
    (True, True)
    """
    return render(
        "lti.html",
        title="LMS gradebook" if results is None else "Grades sent to the LMS",
        chrome=chrome,
        prefix=prefix,
        xsrf=xsrf,
        status=None if status is None else status_rows(status),
        roster=None if roster is None else roster_view(*roster),
        results=results,
    )


def deep_link_page(
    *,
    prefix: str,
    xsrf: str,
    chrome: Chrome,
    said: str = "",
    course: str = "",
    assignments: list[dict] | None = None,
    answer: dict | None = None,
) -> str:
    """``lti/deep-link``: the assignments to pick (``assignments``), the answer to return (``answer``: ``url``,
    ``jwt``, ``count``), or why there is nothing to pick (``said``).

    >>> html = deep_link_page(prefix="/s/", xsrf="t", chrome=Chrome(), course="<i>C</i>", assignments=[
    ...     {"id": "a", "name": "<b>A</b>", "steps": "1-4", "due": "2030-01-10", "points": 20, "column": "none yet"}])
    >>> "&lt;b&gt;A&lt;/b&gt; (a)" in html, "Course &lt;i&gt;C&lt;/i&gt;" in html
    (True, True)
    """
    return render(
        "lti_deep_link.html",
        title="Add an assignment to the LMS course",
        chrome=chrome,
        prefix=prefix,
        xsrf=xsrf,
        said=said,
        course=course,
        assignments=assignments,
        answer=answer,
    )
