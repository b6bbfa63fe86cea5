"""The LMS's services as the tool calls them: one AGS score, the NRPS roster (``pylti1p3``, from ``pylti1p3next``).

The token request is ``pylti1p3``'s: a client-credentials grant with an
assertion signed by the tool's key (numeric ``iat``/``exp``, a fresh ``jti``,
the audience the LTI file names). Access tokens are kept until a minute
before they expire. Every request has a timeout: a silent LMS costs the
background sender a few seconds, never a grading.

:func:`post_score` never raises for the LMS's answer: it returns an
:class:`Answer` (``status`` None when the LMS could not be reached), which
the sender turns into "sent", "refused" or "try again later".

Example::

    >>> Answer(503, "down").retry, Answer(None, "refused").retry, Answer(422, "no").retry, Answer(200, "").ok
    (True, True, False, True)
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import dataclass

from grader.limits import LMS_CONNECT_TIMEOUT, LMS_READ_TIMEOUT

TIMEOUT = (LMS_CONNECT_TIMEOUT, LMS_READ_TIMEOUT)  # seconds: connect, read (grader.limits says why)
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
TAG = "agtool"  # the tag of every line item the tool makes or declares


@dataclass(frozen=True)
class Answer:
    """What the LMS answered one request: its HTTP status (None: not reached) and body (or why)."""

    status: int | None
    text: str

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def retry(self) -> bool:
        """Not reached, a server error, a rate limit or an expired token: worth trying again later."""
        return self.status is None or self.status >= 500 or self.status in (401, 408, 429)


def _with_query(url: str, **params: str) -> str:
    """``url`` with ``params`` added to its query (a container URL may have a query of its own).

    >>> _with_query("https://lms/c/1/lineitems?x=1", resource_id="lab a")
    'https://lms/c/1/lineitems?x=1&resource_id=lab+a'
    """
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = urlencode([*parse_qsl(parts.query, keep_blank_values=True), *params.items()])
    return urlunsplit(parts._replace(query=query))


def _session():
    import requests

    class TimedSession(requests.Session):
        # requests has no default timeout: without one a silent LMS would hold the sender forever.
        def request(self, *args, **kwargs):
            kwargs.setdefault("timeout", TIMEOUT)
            return super().request(*args, **kwargs)

    session = TimedSession()
    session.headers["User-Agent"] = "agtool-lab-grader (pylti1p3)"
    return session


class Client:
    """AGS and NRPS for one LMS registration (``config``) with the tool's key (``key``)."""

    def __init__(self, config, key):
        from pylti1p3.registration import Registration
        from pylti1p3.service_connector import ServiceConnector

        self.config, self.key = config, key
        registration = (
            Registration()
            .set_issuer(config.issuer)
            .set_client_id(config.client_id)
            .set_auth_token_url(config.token_url)
            .set_auth_audience(config.token_audience)
            .set_key_set_url(config.key_set_url)
            .set_tool_private_key(key.private_pem)
        )
        registration.get_kid = lambda: key.kid  # the kid of our published key set, not pylti1p3's own digest
        self.registration = registration
        tokens: dict = {}
        lock = threading.Lock()

        class Connector(ServiceConnector):
            def _get_cached_access_token(self, scope_key):
                with lock:
                    token, until = tokens.get(scope_key, (None, 0.0))
                return token if until > time.monotonic() else None

            def _cache_access_token(self, scope_key, access_token, expires_in):
                with lock:  # a minute early: a token that expires mid-request is not used
                    tokens[scope_key] = (access_token, time.monotonic() + float(expires_in or 0) - 60)

        self.connector = Connector(registration, requests_session=_session())
        self._tokens = tokens

    def forget_tokens(self) -> None:
        """Drop the kept access tokens (the LMS refused one: the next request asks for a new token)."""
        self._tokens.clear()

    def post_score(
        self, lineitem: str, scopes: list[str], sub: str, given: float, maximum: float, when: dt.datetime | None = None
    ) -> Answer:
        """Post one score for ``sub`` to ``lineitem``: completed, fully graded, at ``when`` (UTC, default now)."""
        import requests
        from pylti1p3.assignments_grades import AssignmentsGradesService
        from pylti1p3.exception import LtiException, LtiServiceException
        from pylti1p3.grade import Grade

        moment = (when or dt.datetime.now(dt.timezone.utc)).replace(tzinfo=dt.timezone.utc, microsecond=0)
        grade = (
            Grade()
            .set_score_given(given)
            .set_score_maximum(maximum)
            .set_user_id(sub)
            .set_activity_progress("Completed")
            .set_grading_progress("FullyGraded")
            .set_timestamp(moment.isoformat().replace("+00:00", "Z"))
        )
        service = AssignmentsGradesService(self.connector, {"scope": list(scopes), "lineitem": lineitem})
        try:
            response = service.put_grade(grade)
        except LtiServiceException as exc:  # the token endpoint or the line item answered with an error
            return self._refused(exc)
        except LtiException as exc:  # e.g. the launch gave no score scope: the LMS would refuse it too
            return Answer(403, f"not sent: {exc}")
        except requests.RequestException as exc:
            return Answer(None, f"the LMS did not answer: {type(exc).__name__}: {exc}")
        return Answer(200, str(response.get("body") or "")[:2000])

    def find_lineitems(self, container: str, resource_id: str) -> tuple[Answer, list[dict]]:
        """The line items of the context's ``container`` whose ``resourceId`` is ``resource_id`` (every page).

        The query's ``resource_id`` filter is the AGS one; the answer is
        filtered again here, as an LMS may ignore the filter.
        """
        import requests
        from pylti1p3.exception import LtiServiceException

        url = _with_query(container, resource_id=resource_id)
        try:
            pages = self.connector.get_paginated_data(
                [LINEITEM_SCOPE], url, accept="application/vnd.ims.lis.v2.lineitemcontainer+json"
            )
            found = [item for page in pages for item in (page["body"] if isinstance(page["body"], list) else [])]
        except LtiServiceException as exc:
            return self._refused(exc), []
        except requests.RequestException as exc:
            return Answer(None, f"the LMS did not answer: {type(exc).__name__}: {exc}"), []
        return Answer(200, ""), [i for i in found if isinstance(i, dict) and i.get("resourceId") == resource_id]

    def create_lineitem(self, container: str, item: dict) -> tuple[Answer, dict | None]:
        """POST the line item ``item`` (label, scoreMaximum, resourceId, tag) to ``container``: the LMS's copy."""
        import json

        import requests
        from pylti1p3.exception import LtiServiceException

        try:
            response = self.connector.make_service_request(
                [LINEITEM_SCOPE],
                container,
                is_post=True,
                data=json.dumps(item),
                content_type="application/vnd.ims.lis.v2.lineitem+json",
                accept="application/vnd.ims.lis.v2.lineitem+json",
            )
        except LtiServiceException as exc:
            return self._refused(exc), None
        except requests.RequestException as exc:
            return Answer(None, f"the LMS did not answer: {type(exc).__name__}: {exc}"), None
        body = response.get("body")
        if isinstance(body, list):  # Canvas has answered a creation with a list of one
            body = body[0] if body else None
        if not isinstance(body, dict) or not body.get("id"):
            return Answer(502, f"the LMS's answer has no line item id: {str(body)[:300]}"), None
        return Answer(200, ""), body

    def _refused(self, exc) -> Answer:
        response = getattr(exc, "response", None)
        if response is None:
            return Answer(None, str(exc))
        if response.status_code == 401:
            self.forget_tokens()
        return Answer(response.status_code, f"{exc}: {response.text[:1500]}")

    def members(self, url: str) -> tuple[Answer, list[dict]]:
        """The roster at the NRPS ``url`` (every page): the answer, and the members (``user_id``, ``roles``, ...)."""
        import requests
        from pylti1p3.exception import LtiServiceException
        from pylti1p3.names_roles import NamesRolesProvisioningService

        service = NamesRolesProvisioningService(
            self.connector, {"context_memberships_url": url, "service_versions": ["2.0"]}
        )
        try:
            return Answer(200, ""), list(service.get_members())
        except LtiServiceException as exc:
            return self._refused(exc), []
        except requests.RequestException as exc:
            return Answer(None, f"the LMS did not answer: {exc}"), []
