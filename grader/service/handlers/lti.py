"""The class's LTI page (only with ``--lti FILE``): the learners and the LMS, and "send grades to the LMS" as a form.

Routes (relative to the prefix)::

    GET  class/lti              page (instructors): per learner the launch (read from the hub first), the grade
                                and the LMS's last answer; ?roster=1 compares the LMS's roster (NRPS) with the
                                hub's learners
    POST lti/send               the same as api/lti/send, as a form, answered with the results page
"""

from __future__ import annotations

from tornado import web

from grader.service.base import FieldsMixin
from grader.service.handlers.base import PageHandler
from grader.service.lti_pages import lti_page


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
