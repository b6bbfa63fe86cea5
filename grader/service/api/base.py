"""The REST API's base handler: JSON in and out, 401 JSON for an unknown caller, errors as ``{"error": ...}``."""

from __future__ import annotations

from tornado import web

from grader.service.base import BaseHandler
from grader.service.pages import json_text


class ApiHandler(BaseHandler):
    """JSON in and out; an unknown caller gets 401 JSON, never a redirect to a login page."""

    async def prepare(self) -> None:
        await super().prepare()
        if self.current_user is None:
            self.send_json(401, {"error": "authenticate with a hub token: Authorization: token <JUPYTERHUB_API_TOKEN>"})

    def send_json(self, status: int, data) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json_text(data))

    def write_error(self, status_code: int, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        self.set_header("Content-Type", "application/json; charset=utf-8")
        if getattr(self, "retry_after", None):  # send_error cleared the headers set before the raise
            self.set_header("Retry-After", str(self.retry_after))
        self.finish(json_text({"error": message}))

    def require_instructor(self) -> None:
        if not self.instructor:
            raise web.HTTPError(
                403, f"instructors only (hub admins and members of the group {self.conf.instructor_group!r})"
            )
