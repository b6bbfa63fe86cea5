"""An LMS column per assignment of the course file, and only those: found or made once, offered by Deep Linking.

Against the stand-in LMS (tests/lti_platform.py: several courses, line item
containers, Deep Linking) on SQLite and PostgreSQL, with the service's real
LTI side (``LtiService``: the per-assignment grades from ``class_data``, the
columns, the outbox, the sender); only the hub's copy of each launch is a
stub (tests/e2e/test_lti_launch.py has the real hub).
"""

from __future__ import annotations

import threading

import pytest
import requests
from lti_platform import INSTRUCTOR, Platform
from service_stand_ins import database_url

from grader.course.policy import parse_course
from grader.report import STEPS
from grader.service.db import Store
from grader.service.lti import keys
from grader.service.lti.config import parse_config
from grader.service.lti_service import HubLaunches, LtiService

COURSE = """
[[assignments]]
id = "lab-a"
name = "Lab A"
steps = [1, 2, 3, 4]
due = 2030-01-10T23:59:00+00:00

[[assignments]]
id = "lab-b"
name = "Lab B"
steps = [5, 6, 7, 8]
due = 2030-01-24T23:59:00+00:00

[[assignments]]
id = "lab-c"
name = "Lab C"
steps = [9, 10, 11]
due = 2030-02-07T23:59:00+00:00
"""
CONTEXTS = ["c1", "c2", "c3"]


class StubHub(HubLaunches):
    """The hub's ``auth_state`` per user: the claims of their last verified launch."""

    def __init__(self):
        super().__init__(api_url="", token="")
        self.states: dict[str, dict] = {}

    def names(self):
        return sorted(self.states)

    def claims(self, name):
        return self.states.get(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    return database_url(request.param, tmp_path)


@pytest.fixture
def lms(tmp_path):
    platform = Platform(keys.load_or_create(tmp_path / "tool-key.pem").jwks(), deep_link_uri="http://127.0.0.1:9/dl")
    yield platform
    platform.stop()


@pytest.fixture
def course():
    return parse_course(COURSE, source="course.toml")


def step_points(course) -> dict[int, float]:
    """Each step's points as the registry has them (a report's step maximum is its points)."""
    points: dict[int, float] = {}
    for a in course.assignments:
        from grader.checks.registry import checks_for

        for step in a.steps:
            points[step] = float(sum(c.points for c in checks_for([step])))
    return points


def graded(store, course, learner: str, share: dict[int, float]) -> None:
    """A graded attempt scoring ``share[step]`` of each step's points (default all of them)."""
    points = step_points(course)
    steps = {str(s): {"score": points[s] * share.get(s, 1.0), "max_score": points[s]} for s in STEPS}
    report = {
        "score": sum(v["score"] for v in steps.values()),
        "max_score": sum(points.values()),
        "steps": steps,
        "checks": [],
    }
    attempt = store.add_attempt(learner, f"# {learner} {share}\n".encode(), seed=1)
    store.take(attempt)
    store.finish(attempt, "graded", report)


def service(store, lms, tmp_path, hub, course, **kw) -> LtiService:
    config = parse_config(lms.lti_config(tool_key_file=str(tmp_path / "tool-key.pem"), context_ids=CONTEXTS))
    return LtiService(store, config, tmp_path, hub=hub, policy=course, **kw)


def launched(lms, hub, learner, sub, context="c1", roles=None, link="lab-link"):
    lms.enrol(context, sub, learner.title(), **({"roles": roles} if roles else {}))
    hub.states[learner] = lms.claims_for(sub, context, link=link)


def columns(lms, context) -> dict[str, list[dict]]:
    """The course's line items by resourceId: a list each, so a duplicate shows."""
    out: dict[str, list[dict]] = {}
    for item in lms.lineitems.get(context, {}).values():
        out.setdefault(item.get("resourceId"), []).append(item)
    return out


def test_each_assignment_gets_one_column_made_once_across_restarts_and_scores_go_only_there(
    db_url, lms, tmp_path, course
):
    store, hub = Store(db_url), StubHub()
    launched(lms, hub, "ana", "lms-ana")
    launched(lms, hub, "bob", "lms-bob")
    # A column of the course the tool did not make (a quiz), and a link to the tool from it: ana opens it.
    lms.add_lineitem("c1", {"label": "Final exam", "scoreMaximum": 100})
    quiz = next(iter(lms.lineitems["c1"]))
    lms.links[("c1", "exam-link")] = {"title": "Exam", "custom": {}, "lineitem": quiz}
    hub.states["ana"] = lms.claims_for("lms-ana", "c1", link="exam-link")
    graded(store, course, "ana", {})
    graded(store, course, "bob", {5: 0.5, 9: 0.0, 10: 0.0, 11: 0.0})
    lti = service(store, lms, tmp_path, hub, course)
    lti.sync(None)
    lti.sender.step()
    made = columns(lms, "c1")
    assert sorted(k for k in made if k) == ["lab-a", "lab-b", "lab-c"] and all(len(v) == 1 for v in made.values())
    for a in course.assignments:
        [item] = made[a.id]
        assert (item["label"], item["scoreMaximum"], item["tag"]) == (a.name, a.points, "agtool")
    # Each column holds that assignment's credited score out of its points; nothing went to the exam's column.
    by_item = {(k[1], k[2]): v for k, v in lms.scores.items()}
    a, b, c = course.assignments
    assert by_item[("lab-a", "lms-ana")]["scoreGiven"] == a.points == by_item[("lab-a", "lms-bob")]["scoreGiven"]
    assert by_item[("lab-c", "lms-bob")]["scoreGiven"] == 0 and by_item[("lab-c", "lms-ana")]["scoreGiven"] == c.points
    points5 = step_points(course)[5]
    assert by_item[("lab-b", "lms-bob")]["scoreGiven"] == pytest.approx(b.points - points5 / 2)
    assert {p["item"] for p in lms.posts} == {"lab-a", "lab-b", "lab-c"} and len(lms.posts) == 6
    sent = lti.sent_for("ana")
    assert set(sent) == {"lab-a", "lab-b", "lab-c"} and all(sent.values()), sent
    # A restart (a new service on the same database): no new column, nothing sent twice.
    again = service(store, lms, tmp_path, hub, course)
    again.sync(None)
    again.sender.step()
    assert columns(lms, "c1") == made and len(lms.posts) == 6
    # The database lost its bindings (a crash between the LMS's answer and the commit): found, not made again.
    with store.engine.begin() as db:
        from sqlalchemy import text

        db.execute(text("DELETE FROM lti_lineitems"))
    third = service(store, lms, tmp_path, hub, course)
    graded(store, course, "bob", {})
    third.sync(None)
    third.sender.step()
    assert columns(lms, "c1") == made, columns(lms, "c1")
    assert {r["origin"] for r in third.lineitems.all()} == {"found"}
    assert by_item != {(k[1], k[2]): v for k, v in lms.scores.items()} and lms.refusals == []
    store.close()


def test_concurrent_senders_make_no_duplicate_column(db_url, lms, tmp_path, course):
    """Two services on one database (a restart beside the old one), four threads each, against an LMS slow
    to make a column: the row's claim lets one make it; the others find it made."""
    import time

    store, hub = Store(db_url), StubHub()
    launched(lms, hub, "ana", "lms-ana", context="c2")
    services = [service(store, lms, tmp_path, hub, course) for _ in range(2)]
    services[0].sync(None)
    target = {"issuer": lms.url, "context_id": "c2", "lineitems": f"{lms.url}/contexts/c2/lineitems"}
    original = lms.add_lineitem

    def slow_add(context, item):
        time.sleep(0.3)  # the LMS takes its time: every thread asks while the first is making it
        return original(context, item)

    lms.add_lineitem = slow_add
    start, found = threading.Barrier(8), []

    def ask(lti):
        start.wait()
        found.append(lti.columns.column_for(target, "lab-a"))

    threads = [threading.Thread(target=ask, args=(services[i % 2],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(columns(lms, "c2")["lab-a"]) == 1
    made = columns(lms, "c2")["lab-a"][0]["id"]
    assert set(found) <= {made, None} and made in found
    assert services[1].columns.column_for(target, "lab-a") == made
    store.close()


def test_a_stopped_lms_loses_nothing_and_makes_no_duplicate_column(db_url, lms, tmp_path, course):
    store, hub = Store(db_url), StubHub()
    launched(lms, hub, "ana", "lms-ana")
    lti = service(store, lms, tmp_path, hub, course)
    lti.sync(None)
    lms.stop()
    graded(store, course, "ana", {})
    for _ in range(3):  # rounds while the LMS is down: nothing found, nothing made, nothing lost
        lti.sender.step()
    assert lms.lineitems == {} and all(r["lineitem"] is None for r in lti.lineitems.all())
    assert lti.sent_for("ana") == {"lab-a": None, "lab-b": None, "lab-c": None}
    lms.start()
    lti.sender.step()
    lti.sender.step()
    assert sorted(columns(lms, "c1")) == ["lab-a", "lab-b", "lab-c"]
    assert all(len(v) == 1 for v in columns(lms, "c1").values())
    assert {k[1] for k in lms.scores} == {"lab-a", "lab-b", "lab-c"} and len(lms.posts) == 3
    store.close()


def test_deep_linking_offers_the_course_s_assignments_and_the_lms_makes_their_columns(db_url, lms, tmp_path, course):
    store, hub = Store(db_url), StubHub()
    lms.enrol("c3", "lms-tea", "Tea", roles=(INSTRUCTOR,))
    hub.states["tea"] = lms.claims_for("lms-tea", "c3", deep_link=True)
    lti = service(store, lms, tmp_path, hub, course)
    assert lti.deep_link_request("tea") is not None
    url, token = lti.deep_link_response("tea", ["lab-a", "lab-b"])
    answer = requests.post(url, data={"JWT": token}, timeout=30)
    assert answer.status_code == 200, (answer.text, lms.refusals)
    links = {d["custom"]["assignment"]: d for d in lms.deep_links}
    assert set(links) == {"lab-a", "lab-b"} and links["lab-a"]["url"].endswith("/hub/spawn")
    a = course.get("lab-a")
    assert links["lab-a"]["lineItem"] == {
        "scoreMaximum": a.points,
        "label": "Lab A",
        "resourceId": "lab-a",
        "tag": "agtool",
    }
    assert sorted(columns(lms, "c3")) == ["lab-a", "lab-b"]  # the LMS made them
    # The same answer again is refused by the LMS (its data is used), and a second request for lab-a gets
    # a link without a lineItem: the LMS does not make a second column.
    assert requests.post(url, data={"JWT": token}, timeout=30).status_code == 400
    hub.states["tea"] = lms.claims_for("lms-tea", "c3", deep_link=True)
    url, token = lti.deep_link_response("tea", ["lab-a"])
    assert requests.post(url, data={"JWT": token}, timeout=30).status_code == 200
    assert "lineItem" not in lms.deep_links[-1] and len(columns(lms, "c3")["lab-a"]) == 1
    # A learner launches from the deep link of lab-a and is graded: scores go to the LMS's columns, found by
    # resourceId; lab-c's column is made by the tool; no column twice.
    launched(lms, hub, "ana", "lms-ana", context="c3", link=links["lab-a"]["link"])
    graded(store, course, "ana", {})
    lti.sync(None)
    lti.sender.step()
    assert sorted(columns(lms, "c3")) == ["lab-a", "lab-b", "lab-c"]
    assert all(len(v) == 1 for v in columns(lms, "c3").values())
    assert {k[1] for k in lms.scores if k[0] == "c3"} == {"lab-a", "lab-b", "lab-c"}
    origins = {r["assignment_id"]: r["origin"] for r in lti.lineitems.all()}
    assert origins == {"lab-a": "found", "lab-b": "found", "lab-c": "created"}, origins
    # A learner's Deep Linking request is not an instructor's: no answer for them.
    hub.states["ana"] = lms.claims_for("lms-ana", "c3", deep_link=True)
    assert lti.deep_link_request("ana") is None
    with pytest.raises(PermissionError):
        lti.deep_link_response("ana", ["lab-a"])
    store.close()


def test_the_stand_in_lms_refuses_a_deep_linking_answer_a_strict_lms_refuses(lms, tmp_path, course):
    import jwt

    store, hub = Store(f"sqlite:///{tmp_path / 's.sqlite'}"), StubHub()
    lms.enrol("c3", "lms-tea", "Tea", roles=(INSTRUCTOR,))
    hub.states["tea"] = lms.claims_for("lms-tea", "c3", deep_link=True)
    lti = service(store, lms, tmp_path, hub, course)
    url, token = lti.deep_link_response("tea", ["lab-a"])
    claims = jwt.decode(token, options={"verify_signature": False})
    header = jwt.get_unverified_header(token)
    key = lti.key.private_pem
    forged = {
        "another key": jwt.encode(claims, lms.private_pem, algorithm="RS256", headers=header),
        "wrong aud": jwt.encode({**claims, "aud": "https://other.lms"}, key, algorithm="RS256", headers=header),
        "data not echoed": jwt.encode(
            {**claims, "https://purl.imsglobal.org/spec/lti-dl/claim/data": "x"}, key, algorithm="RS256", headers=header
        ),
    }
    for why, bad in forged.items():
        assert requests.post(url, data={"JWT": bad}, timeout=30).status_code == 400, why
    assert len(lms.refusals) == 3 and lms.deep_links == [] and lms.lineitems.get("c3") is None
    store.close()
