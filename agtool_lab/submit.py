"""Submit the learner's ``tools.py`` to the classroom grading service and show the grade like a Check cell.

In a notebook on the class hub::

    from agtool_lab.submit import submit
    submit()

sends the file the Check cells use (``$AGTOOL_MODULE``, see
``agtool_lab.load``) to the service at ``$AGTOOL_SERVICE_URL`` (the hub
recipe sets it for every learner's server, for example
``http://127.0.0.1:10101/services/agtool-grader/``) with the server's own hub
token (``$JUPYTERHUB_API_TOKEN``), waits for the grade and shows it with
``agtool_lab.view.render_html`` (the Check cell's table). The attempt is kept by the service: the
learner's history is at the service's page, the instructor sees the class.

Outside a hub, or on a hub without the service, ``submit()`` says so and what
to do instead (the Check cells grade in the notebook and need no service).

Example::

    >>> service_config(env={})
    Traceback (most recent call last):
    ...
    agtool_lab.submit.NotConfigured: No grading service here: ...
"""
from __future__ import annotations

import html
import json
import os
import time
import urllib.error
import urllib.request
from pathlib import Path

from agtool_lab.load import learner_path
from agtool_lab.view import render_html
from grader.locate import SubmissionNotFound
from grader.report import Report

SERVICE_URL_ENV = "AGTOOL_SERVICE_URL"
TOKEN_ENV = "JUPYTERHUB_API_TOKEN"
WAIT = 180.0  # seconds to wait for the grade; a class-wide burst on two cores takes well under a minute
POLL = 0.5


class NotConfigured(RuntimeError):
    """There is no service to submit to from here; the message says what to do instead."""


class SubmitFailed(RuntimeError):
    """The service refused or could not take the submission; the message is the service's own."""


def service_config(env: "dict | None" = None) -> tuple[str, str]:
    """``(service URL ending in /, hub token)`` from the environment, or :class:`NotConfigured`.

    >>> service_config(env={"AGTOOL_SERVICE_URL": "http://h/services/agtool-grader", "JUPYTERHUB_API_TOKEN": "t"})
    ('http://h/services/agtool-grader/', 't')
    """
    env = os.environ if env is None else env
    url, token = env.get(SERVICE_URL_ENV, "").strip(), env.get(TOKEN_ENV, "").strip()
    if not token:
        raise NotConfigured(
            "No grading service here: this notebook is not running on a JupyterHub ($JUPYTERHUB_API_TOKEN "
            "is not set). Use the Check cells to grade your module in this notebook, or "
            "`agtool-grade check agtool/tools.py` in a terminal; hand your tools.py in the way your course says.")
    if not url:
        raise NotConfigured(
            "No grading service here: this hub does not set $AGTOOL_SERVICE_URL. The Check cells still grade "
            "your module in this notebook; ask your instructor whether the class uses the grading service "
            "(deploy/jupyterhub/README.md, 'Classroom grading service').")
    return url.rstrip("/") + "/", token


def configured(env: "dict | None" = None) -> bool:
    """Whether this server can submit to a grading service (the Check panel then offers Submit).

    >>> configured(env={}), configured(env={"AGTOOL_SERVICE_URL": "http://h/s/", "JUPYTERHUB_API_TOKEN": "t"})
    (False, True)
    """
    try:
        service_config(env)
    except NotConfigured:
        return False
    return True


def _request(method: str, url: str, token: str, body: "bytes | None" = None) -> dict:
    headers = {"Authorization": f"token {token}", "Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "text/x-python"
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read()).get("error") or exc.reason
        except (ValueError, AttributeError):
            message = exc.reason
        raise SubmitFailed(f"the grading service answered {exc.code}: {message}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise SubmitFailed(f"could not reach the grading service at {url}: {exc}") from None


def send(source: bytes, *, env: "dict | None" = None) -> dict:
    """POST ``source`` to the service; return its answer (``{"id", "status", "url"}``)."""
    url, token = service_config(env)
    return _request("POST", url + "api/submissions", token, source)


def wait_for(attempt_id: int, *, env: "dict | None" = None, timeout: float = WAIT) -> dict:
    """Poll one attempt until it is graded (or ``error``); return it with its report."""
    url, token = service_config(env)
    deadline = time.monotonic() + timeout
    while True:
        attempt = _request("GET", f"{url}api/submissions/{attempt_id}", token)
        if attempt["status"] in ("graded", "error") or time.monotonic() > deadline:
            return attempt
        time.sleep(POLL)


def attempt_html(attempt: dict) -> str:
    """The grade of one attempt: a line of its own, then the Check cell's table of every check.

    >>> "waiting" in attempt_html({"id": 3, "status": "queued", "report": None})
    True
    """
    head = f"<p><b>Attempt {html.escape(str(attempt['id']))} submitted to the class grading service</b>"
    if not attempt.get("report"):
        return head + f": {html.escape(str(attempt['status']))}, still waiting for its grade. " \
                      "Run <code>submit(wait_only=ID)</code> again later, or look at the service's page.</p>"
    report = Report.from_dict(attempt["report"])
    first_failed = next((c.step for c in report.checks if not c.passed), max((c.step for c in report.checks), default=1))
    return head + f": {report.score}/{report.max_score} points.</p>" + render_html(report, first_failed)


class Submitted:
    """What :func:`submit` returns: the attempt as JSON, shown as HTML in a notebook."""

    def __init__(self, attempt: dict):
        self.attempt = attempt

    @property
    def report(self) -> "Report | None":
        return Report.from_dict(self.attempt["report"]) if self.attempt.get("report") else None

    def _repr_html_(self) -> str:
        return attempt_html(self.attempt)

    def __repr__(self) -> str:
        a = self.attempt
        return f"<attempt {a['id']}: {a['status']}, {a.get('score')}/{a.get('max_score')}>"


class Message:
    """A sentence for the learner, shown as text in and out of a notebook."""

    def __init__(self, text: str):
        self.text = text

    def _repr_html_(self) -> str:
        return f'<p style="color:#9a6700"><b>{html.escape(self.text)}</b></p>'

    def __repr__(self) -> str:
        return self.text


def submit(path=None, *, wait: bool = True, timeout: float = WAIT, wait_only: "int | None" = None,
           env: "dict | None" = None):
    """Send the learner's module, wait for the grade, and return something that shows it.

    Never raises into the notebook: a missing service, a refused submission
    (too large, too many in a minute) or a network problem comes back as a
    :class:`Message` that says what happened and what to do.

    >>> submit(env={})                                                   # doctest: +ELLIPSIS
    No grading service here: this notebook is not running on a JupyterHub ...
    """
    try:
        if wait_only is None:
            file = Path(learner_path(path))
            accepted = send(file.read_bytes(), env=env)
            attempt_id = accepted["id"]
        else:
            attempt_id = wait_only
        if not wait and wait_only is None:
            return Message(f"Attempt {attempt_id} submitted; submit(wait_only={attempt_id}) shows its grade.")
        return Submitted(wait_for(attempt_id, env=env, timeout=timeout))
    except (NotConfigured, SubmitFailed) as exc:
        return Message(str(exc))
    except (SubmissionNotFound, OSError) as exc:
        return Message(f"Could not read your module: {exc}")
