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

import dataclasses
import http.client
import json
import time
import urllib.error
import urllib.request
from pathlib import Path

from agtool_lab.load import learner_path
from agtool_lab.view import assignment_lines, course_html, course_line, notice_html, render_html
from grader.escape import html_text
from grader.limits import COURSE_WAIT, SUBMIT_WAIT
from grader.locate import SubmissionNotFound
from grader.report import Report
from grader.settings import Settings, env_name

SERVICE_URL_ENV = env_name("service_url")
TOKEN_ENV = env_name("hub_api_token")
WAIT = SUBMIT_WAIT  # seconds to wait for the grade (grader.limits says why)
POLL = 0.5


class NotConfigured(RuntimeError):
    """There is no service to submit to from here; the message says what to do instead."""


class SubmitFailed(RuntimeError):
    """The service refused or could not take the submission; the message is the service's own."""


def service_config(env: dict | None = None) -> tuple[str, str]:
    """``(service URL ending in /, hub token)`` from the environment, or :class:`NotConfigured`.

    >>> service_config(env={"AGTOOL_SERVICE_URL": "http://h/services/agtool-grader", "JUPYTERHUB_API_TOKEN": "t"})
    ('http://h/services/agtool-grader/', 't')
    """
    settings = Settings.from_environ(env)  # env None: this kernel's environment, read now
    url, token = settings.service_url, settings.hub_api_token
    if not token:
        raise NotConfigured(
            "No grading service here: this notebook is not running on a JupyterHub ($JUPYTERHUB_API_TOKEN "
            "is not set). Use the Check cells to grade your module in this notebook, or "
            "`agtool-grade check agtool/tools.py` in a terminal; hand your tools.py in the way your course says."
        )
    if not url:
        raise NotConfigured(
            "No grading service here: this hub does not set $AGTOOL_SERVICE_URL. The Check cells still grade "
            "your module in this notebook; ask your instructor whether the class uses the grading service "
            "(deploy/jupyterhub/README.md, 'Classroom grading service')."
        )
    return url.rstrip("/") + "/", token


def configured(env: dict | None = None) -> bool:
    """Whether this server can submit to a grading service (the Check panel then offers Submit).

    >>> configured(env={}), configured(env={"AGTOOL_SERVICE_URL": "http://h/s/", "JUPYTERHUB_API_TOKEN": "t"})
    (False, True)
    """
    try:
        service_config(env)
    except NotConfigured:
        return False
    return True


def _one_line(text: object) -> str:
    # A message from the network (a proxy's error page, an OS error) is shown on one line, never as a block.
    return " ".join(str(text).split())


def _request(method: str, url: str, token: str, body: bytes | None = None, *, timeout: float = 30) -> object:
    headers = {"Authorization": f"token {token}", "Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "text/x-python"
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            data = resp.read()
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read()).get("error") or exc.reason
        except (ValueError, AttributeError, OSError, http.client.HTTPException):
            message = exc.reason
        raise SubmitFailed(_one_line(f"the grading service answered {exc.code}: {message}")) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise SubmitFailed(_one_line(f"could not reach the grading service at {url}: {reason}")) from None
    try:
        return json.loads(data)
    except ValueError:
        # A 200 page that is not JSON: $AGTOOL_SERVICE_URL names something else (a hub's login page, a proxy).
        raise SubmitFailed(
            f"{url} did not answer like the grading service (not JSON): is "
            f"${SERVICE_URL_ENV} the service's URL with its prefix?"
        ) from None


def _attempt(answer: object, url: str) -> dict:
    if not isinstance(answer, dict) or "id" not in answer or "status" not in answer:
        raise SubmitFailed(f"{url} did not answer like the grading service (no attempt id and status)")
    return answer


def send(source: bytes, *, env: dict | None = None) -> dict:
    """POST ``source`` to the service; return its answer (``{"id", "status", "url"}``)."""
    url, token = service_config(env)
    return _attempt(_request("POST", url + "api/submissions", token, source), url)


def wait_for(attempt_id: int, *, env: dict | None = None, timeout: float = WAIT) -> dict:
    """Poll one attempt until it is graded, or ``timeout`` seconds passed; return it with its report.

    An ``error`` (the grader failed, not the learner's code) is graded again
    by the service: it is waited for like a queued attempt, its ``note`` shown if time runs out.
    """
    url, token = service_config(env)
    deadline = time.monotonic() + timeout
    while True:
        attempt = _attempt(_request("GET", f"{url}api/submissions/{attempt_id}", token), url)
        if attempt["status"] == "graded" or time.monotonic() > deadline:
            return attempt
        time.sleep(POLL)


def fetch_course(*, env: dict | None = None, timeout: float = COURSE_WAIT) -> dict | None:
    """The service's ``GET api/course`` for this learner: due dates and attempts left, ``None`` without a course file.

    Raises :class:`NotConfigured` (no service here) or :class:`SubmitFailed`
    (unreachable, refused, or an answer that is neither an object nor null);
    :func:`course_status` is the version that never raises.
    """
    url, token = service_config(env)
    answer = _request("GET", url + "api/course", token, timeout=timeout)
    if answer is not None and not isinstance(answer, dict):
        raise SubmitFailed(f"{url}api/course did not answer like the grading service (not an object)")
    return answer


class CourseStatus:
    """The learner's course status as shown beside Check/Submit: the service's answer, or why there is none.

    ``status`` is ``api/course``'s object (``None``: the course has no policy),
    ``problem`` a one-line reason it could not be fetched (``""``: none).

    >>> CourseStatus({"due": "2030-01-01T00:00:00Z", "limit": 2, "attempts_left": 1}).text  # doctest: +ELLIPSIS
    'Due 2030-01-01 00:00 UTC (in ...) · Attempts left: 1 of 2'
    >>> CourseStatus(None, problem="could not reach the grading service at http://h/: refused").text
    'Course status unavailable: could not reach the grading service at http://h/: refused'
    """

    def __init__(self, status: dict | None, problem: str = ""):
        self.status, self.problem = status, problem

    @property
    def text(self) -> str:
        if self.problem:
            return "Course status unavailable: " + self.problem
        return "\n".join([course_line(self.status), *assignment_lines(self.status)])

    def _repr_html_(self) -> str:
        if self.problem:
            return notice_html(self.text)
        return course_html(self.status)

    def __repr__(self) -> str:
        return self.text


def course_status(*, env: dict | None = None, timeout: float = COURSE_WAIT) -> CourseStatus:
    """The learner's due date and attempts left from the service; never raises.

    In a notebook cell on the hub, ``course_status()`` shows the line the
    Check panel shows beside Submit. Outside a hub it says why there is none.

    >>> course_status(env={}).problem.startswith("No grading service here")
    True
    """
    try:
        return CourseStatus(fetch_course(env=env, timeout=timeout))
    except (NotConfigured, SubmitFailed) as exc:
        return CourseStatus(None, problem=str(exc))


def attempt_html(attempt: dict, step: int | None = None) -> str:
    """The grade of one attempt: a line of its own, then the Check cell's table of its checks.

    The score is the attempt's (with a seed key: the run that counts, on
    hidden cases); the table is the run shown, then the checks that failed on
    the hidden cases only (``hidden_failed``: ids and titles). ``step``: the
    notebook's step (Submit beside its Check cell): the table holds that
    step's checks alone, and one line says how the other steps did (the
    service's page has every row); without it, every check.

    >>> "waiting" in attempt_html({"id": 3, "status": "queued", "report": None})
    True
    >>> "Attempt 1 submitted" in attempt_html({"id": 7, "number": 1, "status": "queued", "report": None})
    True
    >>> "being graded again" in attempt_html({"id": 3, "status": "error", "note": "being graded again: ..."})
    True
    """
    attempt_id = html_text(attempt.get("id"))
    # The learner's own number (1, 2, 3, as the service's page shows it); the id is the service's, for wait_only.
    number = html_text(attempt.get("number") or attempt.get("id"))
    head = f"<p><b>Attempt {number} submitted to the class grading service</b>"
    later = f"Run <code>submit(wait_only={attempt_id})</code> again later, or look at the service's page.</p>"
    if attempt.get("status") == "error":  # the grader failed, not the code: the service grades it again
        return head + f": {html_text(attempt.get('note') or 'being graded again')}. " + later
    if not attempt.get("report"):
        return head + f": {html_text(attempt.get('status'))}, still waiting for its grade. " + later
    try:
        report = Report.from_dict(attempt["report"])
    except Exception:  # a report this version cannot read: say so, not a traceback
        return (
            head + f": {html_text(attempt.get('score'))}/{html_text(attempt.get('max_score'))} points "
            "(the service's page shows the details).</p>"
        )
    score = attempt.get("score") if attempt.get("score") is not None else report.score
    max_score = attempt.get("max_score") if attempt.get("max_score") is not None else report.max_score
    head += f": {html_text(score)}/{html_text(max_score)} points.</p>"
    hidden = attempt.get("hidden_failed")
    if step is not None and any(c.step == step for c in report.checks):
        return (
            head
            + step_html(report, step)
            + hidden_html(
                [c for c in hidden or () if isinstance(c, dict) and str(c.get("id", "")).startswith(f"step{step}/")]
            )
        )
    steps = sorted({c.step for c in report.checks})
    first_failed = next((c.step for c in report.checks if not c.passed), steps[-1] if steps else 1)
    heading = f"Steps {steps[0]}-{steps[-1]}" if len(steps) > 1 else None  # the whole module, not one step
    return head + render_html(report, first_failed, heading=heading) + hidden_html(hidden)


def step_html(report: Report, step: int) -> str:
    """One step's rows of a whole-module report, then a line on the other steps (their rows are on the service's page).

    >>> from grader.report import CheckResult
    >>> r = Report(seed=3, path="t.py", checks=[CheckResult("step1/a", 1, False, 0, 2, "A"),
    ...                                         CheckResult("step2/b", 2, True, 1, 1, "B")])
    >>> html = step_html(r, 2); "step1/a" in html, "Step 2 of this attempt: 1/1 checks passed" in html
    (False, True)
    """
    own = dataclasses.replace(
        report,
        checks=[c for c in report.checks if c.step == step],
        output={k: v for k, v in report.output.items() if k == str(step)},
    )
    others = [c for c in report.checks if c.step != step]
    failed = sorted({c.step for c in others if not c.passed})
    if not others:
        rest = ""
    elif failed:
        which = ", ".join(str(s) for s in failed)
        rest = (
            f"<p>Other steps: {sum(c.passed for c in others)}/{len(others)} checks passed; checks failed in "
            f"step{'s' if len(failed) > 1 else ''} {which} (their rows are on the service's page, and in "
            "each step's own Check cell).</p>"
        )
    else:
        rest = f"<p>Other steps: all {len(others)} checks passed.</p>"
    return render_html(own, step, heading=f"Step {step} of this attempt") + rest


def hidden_html(hidden: list | None) -> str:
    """The checks failed on the hidden cases the grade counts but passed on those shown (``""``: none).

    >>> "step1/a" in hidden_html([{"id": "step1/a", "title": "<b>"}]), "&lt;b&gt;" in hidden_html([{"title": "<b>"}])
    (True, True)
    """
    if not hidden:
        return ""
    items = "".join(
        f"<li><code>{html_text(c.get('id'))}</code>: {html_text(c.get('title'))}</li>"
        for c in hidden
        if isinstance(c, dict)
    )
    return (
        "<p>Your grade is computed on hidden cases that stay the same for every attempt; these checks failed "
        "there but passed on the cases shown. Your code is right for some values and not others: try "
        "<code>agtool-grade check tools.py --seed N</code> with other seeds.</p>" + f"<ul>{items}</ul>"
    )


class Submitted:
    """What :func:`submit` returns: the attempt as JSON, shown as HTML in a notebook, with the course line after it."""

    def __init__(self, attempt: dict, course: CourseStatus | None = None, step: int | None = None):
        self.attempt = attempt
        self.course = course
        self.step = step  # the notebook's step: its checks alone are shown (attempt_html)

    @property
    def report(self) -> Report | None:
        return Report.from_dict(self.attempt["report"]) if self.attempt.get("report") else None

    def _repr_html_(self) -> str:
        shown = attempt_html(self.attempt, self.step)
        course = self.course._repr_html_() if self.course is not None else ""
        return shown + (f"<p>{course}</p>" if course else "")

    def __repr__(self) -> str:
        a = self.attempt
        line = f"<attempt {a.get('id')}: {a.get('status')}, {a.get('score')}/{a.get('max_score')}>"
        course = self.course.text if self.course is not None else ""
        return line + (f"\n{course}" if course else "")


class Message:
    """A sentence for the learner, shown as text in and out of a notebook."""

    def __init__(self, text: str):
        self.text = text

    def _repr_html_(self) -> str:
        return f'<p style="color:#9a6700"><b>{html_text(self.text)}</b></p>'

    def __repr__(self) -> str:
        return self.text


class Refused(Message):
    """Nothing was submitted: the service refused, could not be reached, or the module could not be read.

    >>> isinstance(Refused("x"), Message)
    True
    """


def submit(
    path=None,
    *,
    wait: bool = True,
    timeout: float = WAIT,
    wait_only: int | None = None,
    show_course: bool = True,
    step: int | None = None,
    env: dict | None = None,
):
    """Send the learner's module, wait for the grade, and return something that shows it.

    Never raises into the notebook: a missing service, a refused submission
    (too large, too many in a minute, the course's attempt limit) or a
    network problem comes back as a :class:`Refused` message that says what happened
    and what to do. After the grade, the due date and the attempts left
    (``api/course``) follow it, unless ``show_course=False`` (the Check
    panel shows them beside its buttons itself). ``step``: show that step's
    checks alone (the Check panel of a step's notebook), not all of the module's.

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
        attempt = wait_for(attempt_id, env=env, timeout=timeout)
        return Submitted(attempt, course_status(env=env) if show_course else None, step=step)
    except (NotConfigured, SubmitFailed) as exc:
        return Refused(str(exc))
    except (SubmissionNotFound, OSError) as exc:
        return Refused(f"Could not read your module: {exc}")
