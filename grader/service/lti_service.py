"""The grading service's LTI side, wired: the grade that counts, the hub's launches, the log, the sender.

:class:`LtiService` joins :mod:`grader.service.lti` (which knows nothing of
the service) to the service's own pieces:

* the grade sent is the one the gradebook and the LMS files show:
  :func:`grader.service.class_records.class_data` (course policy, extensions,
  overrides) read through :func:`grader.service.actions._grade_of`, the same
  function an override starts from; nothing is recomputed here;
* launches come from the hub: each learner's ``auth_state`` is the decoded
  launch ``LTI13Authenticator`` verified (the service's role has
  ``admin:auth_state``); they are stored in ``lti_launches``;
* every send is an ``lti`` entry of the instructor actions' log, with the
  LMS's answer.

Example::

    >>> from grader.service.db import Store
    >>> counted_grades(Store("sqlite://"), None)
    {}
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from urllib.parse import quote

from grader.service.actions import _grade_of
from grader.service.actions_db import LTI, ActionLog
from grader.service.class_records import class_data
from grader.service.db import Store
from grader.service.lti import keys
from grader.service.lti import store as lti_store
from grader.service.lti.ags import TAG, Client
from grader.service.lti.columns import CLAIM_SECONDS, DECLARED_WAIT, Columns
from grader.service.lti.sender import Sender, targets
from grader.settings import Settings, current

log = logging.getLogger("agtool.service.lti")
LAUNCH_CLAIM = lti_store.CLAIM + "deployment_id"


def counted_grades(store: Store, policy) -> dict[str, tuple[float, float]]:
    """Each graded learner's grade that counts, ``(score, maximum)``, as the gradebook has it."""
    return {r.learner: _grade_of(r) for r in class_data(store, policy)[1] if r.graded}


def served(config, claims: dict) -> bool:
    """Whether ``claims`` come from a course (context) and deployment the LTI file lists.

    The hub refuses other launches; the service checks again, so that a
    launch kept from before a course left the file sends nothing there.

    >>> from types import SimpleNamespace
    >>> cfg = SimpleNamespace(context_ids=("c1",), deployment_ids=("d",))
    >>> claim = lti_store.CLAIM
    >>> served(cfg, {claim + "context": {"id": "c1"}, claim + "deployment_id": "d"})
    True
    >>> served(cfg, {claim + "context": {"id": "c2"}, claim + "deployment_id": "d"})
    False
    """
    context = claims.get(lti_store.CLAIM + "context") or {}
    return (
        isinstance(context, dict)
        and context.get("id") in config.context_ids
        and claims.get(lti_store.CLAIM + "deployment_id") in config.deployment_ids
    )


def the_course(policy):
    """The course the service grades: its course file's, or, without one, one assignment ``lab`` of every step.

    >>> [(a.id, a.points > 0) for a in the_course(None).assignments]
    [('lab', True)]
    """
    import datetime as dt

    from grader.course.policy import Policy, as_course

    course = as_course(policy)
    if course is None:
        far = dt.datetime(9999, 12, 31, tzinfo=dt.timezone.utc)  # no course file: no due date
        course = as_course(Policy(due=far, name="agtool lab"))
    return course


def assignment_grades(store: Store, policy) -> dict[str, dict[str, tuple[float, float]]]:
    """Each graded learner's credited grade per assignment, ``{learner: {id: (credited, points)}}``.

    An assignment with no credited attempt is left out (nothing is sent to
    its column); a course file of one assignment (or none) gives the grade
    that counts, as the gradebook has it, under the assignment's id.

    >>> assignment_grades(Store("sqlite://"), None)
    {}
    """
    course = the_course(policy)
    grades: dict[str, dict[str, tuple[float, float]]] = {}
    for record in class_data(store, policy)[1]:
        if not record.graded:
            continue
        if course.single or not record.assignments:
            grades[record.learner] = {course.assignments[0].id: _grade_of(record)}
            continue
        grades[record.learner] = {
            aid: (float(entry["credit"]["credited"]), float(entry["points"]))
            for aid, entry in record.assignments.items()
            if entry.get("credit") is not None
        }
    return grades


class HubLaunches:
    """Reads learners' launches from the hub's API (``auth_state``), with the service's own token."""

    def __init__(self, api_url: str | None = None, token: str | None = None, settings: Settings | None = None):
        settings = settings or current()  # the hub's address and the service's token: $JUPYTERHUB_API_URL, _TOKEN
        self.api_url = (api_url or settings.hub_api_url).rstrip("/")
        self.token = token or settings.hub_api_token

    def _get(self, path: str):
        import requests

        answer = requests.get(
            f"{self.api_url}/{path}", headers={"Authorization": f"token {self.token}"}, timeout=(3.05, 10)
        )
        answer.raise_for_status()
        return answer.json()

    def names(self) -> list[str]:
        return [u["name"] for u in self._get("users")] if self.api_url else []

    def claims(self, name: str) -> dict | None:
        """The launch the hub keeps for ``name`` (None: no LTI launch, or the hub did not say)."""
        if not self.api_url:
            return None
        state = self._get(f"users/{quote(name, safe='')}").get("auth_state") or {}
        return state if LAUNCH_CLAIM in state else None


class LtiService:
    """Everything LTI the running service holds; ``start()``/``stop()`` the sender with the service."""

    def __init__(
        self,
        store: Store,
        config,
        data_dir: str | Path,
        *,
        policy=None,
        hub: HubLaunches | None = None,
        interval: float = 2.0,
        base: float = 2.0,
        cap: float = 300.0,
        claim_seconds: float = CLAIM_SECONDS,
        declared_wait: float = DECLARED_WAIT,
    ):
        self.store, self.config, self.policy = store, config, policy
        self.course = the_course(policy)
        self.key = keys.load_or_create(config.tool_key_file or Path(data_dir) / keys.KEY_FILE)
        self.launches = lti_store.Launches(store.engine)
        self.outbox = lti_store.Outbox(store.engine)
        self.client = Client(config, self.key)
        self.hub = hub if hub is not None else HubLaunches()
        self.log = ActionLog(store)
        self.lineitems = lti_store.LineItems(store.engine)
        self.columns = Columns(
            self.lineitems,
            self.client,
            {a.id: (a.name, a.points) for a in self.course.assignments},
            claim_seconds=claim_seconds,
            declared_wait=declared_wait,
        )
        self.sender = Sender(
            self.outbox,
            self.launches,
            self.client,
            grades=self.assignment_grades,
            columns=self.columns,
            version=self.version,
            record=self.record,
            sync=self.sync,
            interval=interval,
            base=base,
            cap=cap,
        )

    def grades(self) -> dict[str, tuple[float, float]]:
        return counted_grades(self.store, self.policy)

    def assignment_grades(self) -> dict[str, dict[str, tuple[float, float]]]:
        return assignment_grades(self.store, self.policy)

    def sent_for(self, learner: str) -> dict[str, str | None]:
        """When ``learner``'s grade of each assignment reached the LMS (ISO time), or None: not (or not yet) sent.

        Only the grade wanted now counts: a newer grade waiting to be sent is "not sent".
        """
        columns = {r["lineitem"]: r["assignment_id"] for r in self.lineitems.all() if r["lineitem"]}
        sent: dict[str, str | None] = {a.id: None for a in self.course.assignments}
        for row in self.outbox.all():
            aid = columns.get(row["lineitem"])
            if row["learner"] == learner and aid in sent and row["state"] == lti_store.SENT:
                sent[aid] = max(filter(None, (sent[aid], row["updated_at"])))
        return sent

    def deep_link_request(self, name: str) -> dict | None:
        """The Deep Linking request ``name`` launched last (their ``auth_state``), if it is one an instructor of
        a served course made; None otherwise."""
        from grader.service.lti.hub_auth import is_instructor

        claims = self.hub.claims(name)
        if not claims or claims.get(lti_store.CLAIM + "message_type") != "LtiDeepLinkingRequest":
            return None
        if not served(self.config, claims) or not is_instructor(
            claims.get(lti_store.CLAIM + "roles"), self.config.instructor_roles
        ):
            return None
        return claims

    def deep_link_response(self, name: str, assignment_ids: list[str]) -> tuple[str, str]:
        """``(return URL, JWT)``: the Deep Linking answer for ``assignment_ids`` to the request ``name`` made.

        One ``ltiResourceLink`` per assignment: its URL the hub's spawn URL
        (learners land in their lab; the request's target link, this page,
        says where the hub is), the
        assignment's id as the custom parameter ``assignment``, and a
        ``lineItem`` (label, ``scoreMaximum`` = its points, ``resourceId`` =
        its id, ``tag``) unless the course has that column already or one is
        being made (:meth:`Columns.declare`): the LMS never gets two.
        """
        from pylti1p3.deep_link import DeepLink
        from pylti1p3.deep_link_resource import DeepLinkResource
        from pylti1p3.lineitem import LineItem

        claims = self.deep_link_request(name)
        if claims is None:
            raise PermissionError("no Deep Linking request of an instructor of a course this hub serves")
        here = str(claims.get(lti_store.CLAIM + "target_link_uri") or "")
        tool_url = (here.split("/services/", 1)[0] if "/services/" in here else here.rstrip("/")) + "/hub/spawn"
        self.launches.record(name, claims)  # its AGS container: the course's columns are found there
        [target] = targets(self.launches.of(name)[-1:], self.launches.all())
        resources = []
        for aid in assignment_ids:
            assignment = self.course.get(aid)
            resource = (
                DeepLinkResource()
                .set_url(tool_url)
                .set_title(assignment.name)
                .set_custom_params({"assignment": assignment.id})
            )
            if self.columns.declare(target, assignment.id):
                resource.set_lineitem(
                    LineItem()
                    .set_label(assignment.name)
                    .set_score_maximum(assignment.points)
                    .set_resource_id(assignment.id)
                    .set_tag(TAG)
                )
            resources.append(resource)
        settings = claims.get("https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings") or {}
        link = DeepLink(self.client.registration, claims.get(LAUNCH_CLAIM), settings)
        return settings["deep_link_return_url"], link.get_response_jwt(resources)

    def version(self) -> tuple:
        # An lti entry of the log does not change it (ActionLog.version leaves them out): no loop.
        return self.store.version(), self.log.version()

    def record(self, actor: str, learner: str, text: str, data: dict) -> None:
        self.log.record(actor, LTI, learner=learner, reason=text, data=data)

    def sync(self, learners: set[str] | None = None) -> int:
        """Store the hub's launch of each of ``learners`` (None: every hub user); how many were stored."""
        stored = 0
        try:
            names = sorted(learners) if learners is not None else self.hub.names()
            for name in names:
                claims = self.hub.claims(name)
                if claims is not None and served(self.config, claims):
                    self.launches.record(name, claims)
                    stored += 1
        except Exception as exc:  # the hub restarting: launches are read again at the next round
            log.warning("LTI: could not read launches from the hub: %s", exc)
        return stored

    def start(self) -> None:
        self.sender.start()

    def stop(self) -> None:
        self.sender.stop()

    def send_class(self, actor: str) -> list[dict]:
        """The instructor action "send grades to the LMS": a result per learner (see ``Sender.send_class``)."""
        return self.sender.send_class(actor)

    def status(self) -> list[dict]:
        """Per learner with a grade or a launch: the grade, their launches and what the LMS last answered.

        Someone whose every launch came in an instructor's role (``instructor_roles`` of the LTI file) is
        staff, not a learner: no row.
        """
        grades = self.grades()
        launches: dict[str, list] = {}
        for launch in self.launches.all():
            launches.setdefault(launch["learner"], []).append(launch)
        rows: dict[str, list] = {}
        for row in self.outbox.all():
            rows.setdefault(row["learner"], []).append(row)
        # The course's instructors launch from the LMS too: they are no row of the class.
        staff = {
            name
            for name, theirs in launches.items()
            if all(set(launch["roles"]) & set(self.config.instructor_roles) for launch in theirs)
        }
        return [
            {
                "learner": name,
                "grade": grades.get(name),
                "launches": launches.get(name, []),
                "outbox": rows.get(name, []),
            }
            for name in sorted((set(grades) | set(launches)) - staff)
        ]

    def roster(self) -> tuple[str, dict | None]:
        """The NRPS roster against the hub's learners: (what happened, the comparison or None)."""
        from grader.service.lti.roster import compare

        urls = sorted({launch["nrps_url"] for launch in self.launches.all() if launch["nrps_url"]})
        if not urls:
            return "no launch carried a roster URL (NRPS is off for this tool in the LMS)", None
        members: list = []
        for url in urls:
            answer, found = self.client.members(url)
            if not answer.ok:
                return f"the LMS refused the roster at {url}: {answer.status} {answer.text[:200]}", None
            members.extend(found)
        hub_learners = {r.learner for r in class_data(self.store, self.policy)[1]}
        return "ok", compare(members, launches=self.launches.all(), hub_learners=hub_learners)


def jwks_text(service: LtiService) -> str:
    return json.dumps(service.key.jwks())
