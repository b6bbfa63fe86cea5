"""The HTTP side of LTI: the tool's key set, "send grades to the LMS", and the class's LTI page with the roster.

Routes (relative to the prefix; only with ``--lti FILE``)::

    GET  lti/jwks.json          public: the tool's public key set (the LMS's registration points here)
    POST api/lti/send           instructors (JSON): send the class's counted grades -> {"results": [...]}
    POST lti/send               the same as a form, answered with the results page
    GET  class/lti              page (instructors): per learner the launch (read from the hub first), the grade
                                and the LMS's last answer;
                                ?roster=1 compares the LMS's roster (NRPS) with the hub's learners

Everything shown is escaped (:func:`grader.service.layout.esc`): names,
claims and the LMS's answers are not ours.

Example::

    >>> "&lt;b&gt;" in results_html([{"learner": "<b>", "result": "sent", "text": "ok"}])
    True
"""
from __future__ import annotations

from tornado import web

from grader.service.layout import esc, page


def results_html(results: "list[dict]") -> str:
    """The per-learner results of one send, as a table."""
    rows = "".join(f"<tr><td>{esc(r['learner'])}</td><td>{esc(r['result'])}</td><td>{esc(r['text'])}</td></tr>"
                   for r in results)
    return ("<table><caption>What the LMS answered, per learner</caption><thead><tr><th scope=col>Learner</th>"
            f"<th scope=col>Result</th><th scope=col>Details</th></tr></thead><tbody>{rows}</tbody></table>")


def _grade(grade) -> str:
    return "no graded attempt" if grade is None else f"{grade[0]:g}/{grade[1]:g}"


def status_html(status: "list[dict]") -> str:
    """One row per learner: the grade that counts, their LMS id and context, the outbox state and last answer."""
    rows = []
    for s in status:
        launched = ", ".join(f"sub {l['sub']} in {l['context_title'] or l['context_id']}" for l in s["launches"])
        sent = "; ".join(f"{o['state']} ({o['score_given']:g}/{o['score_maximum']:g}, last answer "
                         f"{o['last_status'] if o['last_status'] is not None else 'none'})" for o in s["outbox"])
        rows.append(f"<tr><td>{esc(s['learner'])}</td><td>{esc(_grade(s['grade']))}</td>"
                    f"<td>{esc(launched or 'never launched from the LMS')}</td><td>{esc(sent or '-')}</td></tr>")
    return ("<table><caption>Learners and the LMS</caption><thead><tr><th scope=col>Learner</th>"
            "<th scope=col>Grade that counts</th><th scope=col>Launch</th><th scope=col>Gradebook</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def roster_html(said: str, comparison: "dict | None") -> str:
    """The NRPS comparison: matched by ``sub``, on the LMS only, on the hub only."""
    if comparison is None:
        return f"<p>{esc(said)}</p>"
    matched = "".join(f"<li>{esc(name)} (sub {esc(sub)})</li>" for name, sub in comparison["matched"])
    lms = "".join(f"<li>{esc(m['name'] or '?')} (sub {esc(m['user_id'])}): no launch yet</li>"
                  for m in comparison["lms_only"])
    hub = "".join(f"<li>{esc(name)}</li>" for name in comparison["hub_only"])
    return (f"<h2>Roster</h2><h3>In both</h3><ul>{matched or '<li>none</li>'}</ul>"
            f"<h3>In the LMS only</h3><ul>{lms or '<li>none</li>'}</ul>"
            f"<h3>On the hub only (never launched, or not a learner in the LMS)</h3><ul>{hub or '<li>none</li>'}</ul>")


class JwksHandler(web.RequestHandler):
    """``GET lti/jwks.json``: public, no login (the LMS fetches it)."""

    def initialize(self, lti) -> None:
        self.lti = lti

    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "max-age=300")
        self.finish(self.lti.key.jwks())


class LtiSendApi:
    """``POST api/lti/send`` (mixed into ``app.ApiHandler`` with the actions' field reading)."""

    async def post(self) -> None:
        self.fields()  # the body (and, for a form, its XSRF field) is read and checked first
        self.require_instructor()
        results = await self.in_thread(self.conf.lti.send_class, self.learner)
        self.send_json(200, {"results": results})


class LtiPages:
    """``GET class/lti`` and ``POST lti/send`` (mixed into ``app.PageHandler``)."""

    def _body(self, extra: str = "") -> str:
        p = self.conf.prefix
        return (f"<h1>LMS gradebook (LTI 1.3)</h1>{extra}"
                f"<form method=post action=\"{esc(p)}lti/send\">{self.xsrf_form_html()}"
                "<button type=submit>Send grades to the LMS</button></form>"
                f"<p><a href=\"{esc(p)}class/lti?roster=1\">Compare the LMS's roster with the hub</a> · "
                f"<a href=\"{esc(p)}class\">Class page</a></p>")

    @web.authenticated
    async def get(self) -> None:
        if not self.instructor:
            raise web.HTTPError(403, "the LTI page is for instructors")
        lti = self.conf.lti
        # Every hub user's launch first: a learner who launched but has no grade yet is listed with their sub.
        await self.in_thread(lti.sync)
        status = await self.in_thread(lti.status)
        roster = roster_html(*(await self.in_thread(lti.roster))) if self.get_argument("roster", "") else ""
        self.finish(page("LMS gradebook", self._body(status_html(status) + roster), chrome=self.chrome()))

    @web.authenticated
    async def post(self) -> None:
        self.fields()
        if not self.instructor:
            raise web.HTTPError(403, "instructors only")
        results = await self.in_thread(self.conf.lti.send_class, self.learner)
        self.finish(page("Grades sent to the LMS", self._body(results_html(results)), chrome=self.chrome()))


def routes(prefix: str, lti, args: dict, api_handler, page_handler) -> list:
    """The LTI routes, handlers built on the service's own (``api_handler``, ``page_handler``)."""
    from grader.service.action_handlers import FieldsMixin

    send_api = type("LtiSendApiHandler", (LtiSendApi, FieldsMixin, api_handler), {})
    pages = type("LtiPagesHandler", (LtiPages, FieldsMixin, page_handler), {})
    return [
        (rf"{prefix}lti/jwks\.json", JwksHandler, {"lti": lti}),
        (rf"{prefix}api/lti/send", send_api, args),
        (rf"{prefix}(?:class/lti|lti/send)", pages, args),
    ]
