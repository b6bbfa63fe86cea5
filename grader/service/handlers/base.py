"""The pages' base handler: the hub's login for an unknown visitor, the page's chrome, errors as pages."""

from __future__ import annotations

from tornado.escape import to_unicode

from grader.service import layout
from grader.service.base import BaseHandler
from grader.settings import current


class PageHandler(BaseHandler):
    """Pages: an unknown visitor is sent to the hub's login (OAuth), then back."""

    def write_error(self, status_code: int, **kwargs) -> None:
        exc = kwargs.get("exc_info", (None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        if getattr(self, "retry_after", None):  # a form over a limit (send_error cleared the headers)
            self.set_header("Retry-After", str(self.retry_after))
        chrome = self.chrome() if self.current_user else None
        self.finish(
            layout.render("error.html", title=f"{status_code}", chrome=chrome, status=status_code, message=message)
        )

    def chrome(self) -> layout.Chrome:
        """Who reads the page and where the hub is (its stylesheet, logo, home and the reader's lab)."""
        under_hub = (self.conf.settings or current()).hub_api_url  # $JUPYTERHUB_API_URL, read by grader.settings
        hub_prefix = getattr(self.hub_auth, "hub_prefix", "") if under_hub else ""
        return layout.Chrome(
            prefix=self.conf.prefix, hub_prefix=hub_prefix or "", user=self.learner, instructor=self.instructor
        )

    def xsrf(self) -> str:
        """The page's XSRF token, for its forms' ``_xsrf`` field (the templates write the field)."""
        return to_unicode(self.xsrf_token)
