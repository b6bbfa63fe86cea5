"""The REST API of LTI (only with ``--lti FILE``): the tool's key set, and "send grades to the LMS" as JSON.

Routes (relative to the prefix)::

    GET  lti/jwks.json          public: the tool's public key set (the LMS's registration points here)
    POST api/lti/send           instructors (JSON): send the class's counted grades -> {"results": [...]}
"""

from __future__ import annotations

from tornado import web

from grader.service.api.base import ApiHandler
from grader.service.base import FieldsMixin


class JwksHandler(web.RequestHandler):
    """``GET lti/jwks.json``: public, no login (the LMS fetches it)."""

    def initialize(self, lti) -> None:
        self.lti = lti

    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "max-age=300")
        self.finish(self.lti.key.jwks())


class LtiSendApiHandler(FieldsMixin, ApiHandler):
    """``POST api/lti/send``: the body (and, for a form, its XSRF field) is read and checked first."""

    async def post(self) -> None:
        self.fields()
        self.require_instructor()
        results = await self.in_thread(self.conf.lti.send_class, self.learner)
        self.send_json(200, {"results": results})
