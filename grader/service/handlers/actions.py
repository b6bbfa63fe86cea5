"""Instructor actions and regrade requests from the pages: the forms, and the page where instructors answer.

Routes (relative to the prefix; the same actions as JSON: :mod:`grader.service.api.actions`)::

    POST actions/KIND           the same as api/actions/KIND, as a form (instructors), then back to the page (303)
    POST appeals                a learner's regrade request as a form, then back to their page (303)
    GET  class/actions          page (instructors): open requests with answer forms, the class regrade, the log

A form comes with the hub's login cookie and must carry the page's ``_xsrf``
field (JupyterHub's check, :mod:`jupyterhub._xsrf_utils`); the check runs on
the body's fields, before anything is done (:class:`grader.service.base.FieldsMixin`).
"""

from __future__ import annotations

from tornado import web

from grader.service import action_pages
from grader.service.actions_db import ActionLog
from grader.service.base import FieldsMixin, safe_next
from grader.service.handlers.base import PageHandler


class ActionFormsHandler(FieldsMixin, PageHandler):
    """``POST actions/KIND`` and ``POST appeals`` as forms: 303 back to the page."""

    @web.authenticated
    async def post(self, kind: str | None = None) -> None:
        if kind:
            await self.act(kind)
        else:
            await self.appeal()
        self.redirect(
            safe_next(self.request.body_arguments.get("next", [b""])[-1].decode("utf-8", "replace"), self.conf.prefix),
            status=303,
        )


class ActionsPageHandler(PageHandler):
    """``class/actions``: the page without reloads where instructors answer requests and regrade the class."""

    @web.authenticated
    def get(self) -> None:
        if not self.instructor:
            raise web.HTTPError(403, "the instructor actions page is for instructors")
        log = ActionLog(self.store)
        self.finish(
            action_pages.actions_page(
                log.all(), log.past_results(), prefix=self.conf.prefix, xsrf=self.xsrf(), chrome=self.chrome()
            )
        )
