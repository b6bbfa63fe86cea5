"""The class's LTI page (only with ``--lti FILE``): the learners and the LMS, and "send grades to the LMS" as a form.

Routes (relative to the prefix)::

    GET  class/lti              page (instructors): per learner the launch (read from the hub first), the grade
                                and the LMS's last answer; ?roster=1 compares the LMS's roster (NRPS) with the
                                hub's learners
    POST lti/send               the same as api/lti/send, as a form, answered with the results page
    GET  lti/deep-link          Deep Linking (an LMS instructor adding the tool): the course file's assignments
    POST lti/deep-link          the picked assignments: the signed LtiDeepLinkingResponse, posted back to the LMS
"""

from __future__ import annotations

from tornado import web

from grader.service.base import FieldsMixin
from grader.service.handlers.base import PageHandler
from grader.service.lti_pages import deep_link_page, lti_page


class LtiPagesHandler(FieldsMixin, PageHandler):
    """``GET class/lti`` and ``POST lti/send``."""

    @web.authenticated
    async def get(self) -> None:
        if not self.instructor:
            raise web.HTTPError(403, "the LTI page is for instructors")
        lti = self.conf.lti
        # Every hub user's launch first: a learner who launched but has no grade yet is listed with their sub.
        await self.in_thread(lti.sync)
        status = await self.in_thread(lti.status)
        roster = (await self.in_thread(lti.roster)) if self.get_argument("roster", "") else None
        self.finish(
            lti_page(prefix=self.conf.prefix, xsrf=self.xsrf(), chrome=self.chrome(), status=status, roster=roster)
        )

    @web.authenticated
    async def post(self) -> None:
        self.fields()
        if not self.instructor:
            raise web.HTTPError(403, "instructors only")
        results = await self.in_thread(self.conf.lti.send_class, self.learner)
        self.finish(lti_page(prefix=self.conf.prefix, xsrf=self.xsrf(), chrome=self.chrome(), results=results))


class DeepLinkHandler(FieldsMixin, PageHandler):
    """``GET``/``POST lti/deep-link``: the hub logged the instructor in with the LMS's Deep Linking request."""

    def _request(self):
        claims = self.conf.lti.deep_link_request(self.learner)
        if claims is None:
            raise web.HTTPError(
                403,
                "open this page from the LMS's Deep Linking placement, as an instructor of a course this hub serves",
            )
        return claims

    @web.authenticated
    async def get(self) -> None:
        from grader.service.attempt_policy import iso_utc

        lti = self.conf.lti
        claims = await self.in_thread(self._request)
        context = claims.get("https://purl.imsglobal.org/spec/lti/claim/context") or {}
        columns = await self.in_thread(lti.lineitems.of, claims.get("iss", ""), context.get("id", ""))
        assignments = [
            {
                "id": a.id,
                "name": a.name,
                "steps": ", ".join(str(s) for s in a.steps),
                "due": iso_utc(a.policy.due) or "-",
                "points": f"{a.points:g}",
                "column": "in the gradebook" if a.id in columns else "made when added",
            }
            for a in lti.course.assignments
        ]
        self.finish(
            deep_link_page(
                prefix=self.conf.prefix,
                xsrf=self.xsrf(),
                chrome=self.chrome(),
                course=str(context.get("title") or context.get("id") or ""),
                assignments=assignments,
            )
        )

    @web.authenticated
    async def post(self) -> None:
        from urllib.parse import urlsplit

        from grader.service import layout

        self.fields()
        await self.in_thread(self._request)
        picked = [v.decode("utf-8", "replace") for v in self.request.body_arguments.get("assignment", [])]
        known = set(self.conf.lti.course.ids)
        if not picked or not set(picked) <= known:
            raise web.HTTPError(400, f"pick one or more of the course file's assignments: {', '.join(sorted(known))}")
        url, jwt = await self.in_thread(self.conf.lti.deep_link_response, self.learner, picked)
        parts = urlsplit(url)
        if parts.scheme not in ("https", "http") or not parts.netloc:
            raise web.HTTPError(400, "the LMS's deep_link_return_url is not an http(s) URL")
        # The answer is a form posted to the LMS: the page may post there, and only there.
        origin = f"{parts.scheme}://{parts.netloc}"
        self.set_header("Content-Security-Policy", layout.csp().replace("form-action 'self'", f"form-action {origin}"))
        self.finish(
            deep_link_page(
                prefix=self.conf.prefix,
                xsrf=self.xsrf(),
                chrome=self.chrome(),
                answer={"url": url, "jwt": jwt, "count": len(picked)},
            )
        )
