"""LTI 1.3 grade passback against a real stand-in LMS (tests/lti_platform.py) on 127.0.0.1, SQLite and PostgreSQL.

The service's side is the real one (``grader.service.lti_service.LtiService``:
the grade that counts from ``class_data``, the outbox, the sender thread, the
AGS client on ``pylti1p3``); only the hub's copy of each launch is a stub (the
hub e2e test, tests/e2e/test_lti_launch.py, has the real one).
"""

from __future__ import annotations

import logging
import os
import stat
import time

import jwt
import pytest
import requests
from lti_platform import CLIENT_ID, INSTRUCTOR, SCORE, Platform
from service_stand_ins import database_url

from grader.service.actions_db import LTI, ActionLog
from grader.service.db import Store
from grader.service.lti import keys
from grader.service.lti.config import LtiConfigError, load_config, parse_config
from grader.service.lti_service import HubLaunches, LtiService


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    return database_url(request.param, tmp_path)


class StubHub(HubLaunches):
    """The hub's ``auth_state`` per learner: the claims of their last verified launch."""

    def __init__(self):
        super().__init__(api_url="", token="")
        self.states: dict[str, dict] = {}

    def names(self):
        return sorted(self.states)

    def claims(self, name):
        return self.states.get(name)


@pytest.fixture
def tool_key(tmp_path):
    return keys.load_or_create(tmp_path / "tool-key.pem")


@pytest.fixture
def lms(tool_key):
    platform = Platform(tool_key.jwks())
    yield platform
    try:
        platform.stop()
    except Exception:
        pass


def graded(store: Store, learner: str, score: int, most: int = 10) -> float:
    """Store a graded attempt; the seconds ``finish`` took (what grading pays)."""
    attempt = store.add_attempt(learner, f"# {learner} {score}\n".encode(), seed=1)
    store.take(attempt)
    start = time.perf_counter()
    store.finish(attempt, "graded", {"score": score, "max_score": most, "checks": []})
    return time.perf_counter() - start


def service(store, lms, tmp_path, hub, **kw) -> LtiService:
    config = parse_config(lms.lti_config(tool_key_file=str(tmp_path / "tool-key.pem")))
    return LtiService(store, config, tmp_path, hub=hub, **kw)


def launched(lms, hub, learner, sub, context="c1"):
    lms.enrol(context, sub, learner.title())
    hub.states[learner] = lms.claims_for(sub, context)


# ------------------------------------------------------------------------------ config and keys


def test_the_lti_file_names_every_missing_or_wrong_field(tmp_path):
    with pytest.raises(LtiConfigError) as err:
        parse_config(
            {
                "issuer": "http://lms.example.edu",
                "client_id": "",
                "deployment_ids": [],
                "key_set_url": "https://lms/jwks",
                "login_url": "ftp://x",
                "colour": "red",
            }
        )
    text = str(err.value)
    for line in (
        "issuer: 'http://lms.example.edu' is not an https URL",
        "client_id: '' should be non-empty",
        "deployment_ids: [] should be non-empty",
        "login_url: 'ftp://x' is not an https URL",
        "token_url: missing",
        "colour: unknown field",
    ):
        assert line in text, text
    assert 'Moodle: "Access token URL"' in text  # where the LMS shows it
    path = tmp_path / "lti.toml"
    path.write_text('issuer = "https://lms.example.edu"\n')
    with pytest.raises(LtiConfigError, match=r"lti\.toml: the LTI file has 6 problems"):
        load_config(path)


@pytest.mark.parametrize("claim", ["name", "given_name", "family_name", "preferred_username"])
def test_a_display_name_as_the_user_name_is_refused_saying_why(lms, claim):
    with pytest.raises(LtiConfigError) as err:
        parse_config(lms.lti_config(username_key=claim))
    [line] = [line for line in str(err.value).splitlines() if line.strip().startswith("username_key:")]
    assert f"'{claim}' is a display name the learner can change in the LMS" in line, line
    assert "would become that classmate" in line and "use sub, or a custom parameter" in line, line
    for fine in ("sub", "email", "custom_login"):
        assert parse_config(lms.lti_config(username_key=fine)).username_key == fine
    with pytest.raises(LtiConfigError, match="username_key: 'login' is not sub, email or custom_NAME"):
        parse_config(lms.lti_config(username_key="login"))


def test_the_lti_file_names_the_courses_and_only_course_roles_make_instructors(lms):
    from grader.service.lti.hub_auth import is_instructor

    config = lms.lti_config()
    del config["context_ids"]
    with pytest.raises(LtiConfigError, match=r"context_ids: missing \(the LMS courses this hub serves"):
        parse_config(config)
    with pytest.raises(LtiConfigError, match=r"context_ids: \[\] should be non-empty"):
        parse_config(lms.lti_config(context_ids=[]))
    assert parse_config(lms.lti_config(context_ids=["c1", "c2"])).context_ids == ("c1", "c2")
    institution = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator"
    system = "http://purl.imsglobal.org/vocab/lis/v2/system/person#SysAdmin"
    for role in (institution, system, "Instructor"):
        with pytest.raises(LtiConfigError, match=r"instructor_roles: .* is not a membership role of the course"):
            parse_config(lms.lti_config(instructor_roles=[INSTRUCTOR, role]))
    roles = parse_config(lms.lti_config()).instructor_roles
    assert is_instructor([INSTRUCTOR], roles) and not is_instructor([institution, system], roles)
    assert not is_instructor([institution], [institution])  # even a hand-made list: membership roles only


def test_the_authenticator_refuses_another_course_and_a_launch_without_its_user_name(lms, caplog):
    """The hub's checks alone (tests/e2e/test_lti_launch.py runs them on a real hub, with nothing stored)."""
    import asyncio
    import types

    from ltiauthenticator.lti13.error import LoginError

    from grader.service.lti.hub_auth import authenticator_class

    auth = authenticator_class()(
        deployment_ids=["deployment-1"], context_ids=["c1"], username_key="custom_login", instructor_group="t"
    )
    handler = types.SimpleNamespace(request=types.SimpleNamespace(remote_ip="203.0.113.7"))
    lms.enrol("c9", "lms-eve", "Eve", roles=(INSTRUCTOR,))
    lms.enrol("c1", "lms-eve", "Eve")
    claims = lms.claims_for("lms-eve", "c9")
    caplog.set_level(logging.INFO)
    with pytest.raises(LoginError, match="does not serve the LMS course 'c9'"):
        asyncio.run(auth.authenticate(handler, claims))
    [line] = [r.getMessage() for r in caplog.records if "LTI launch refused:" in r.getMessage()]
    assert line.startswith("LTI launch refused: course 'c9' ('Course c9') is not in the LTI file's context_ids")
    caplog.clear()
    claims = lms.claims_for("lms-eve", "c1")  # no custom login claim: never the sub instead
    with pytest.raises(LoginError, match="no 'custom_login' claim"):
        asyncio.run(auth.authenticate(handler, claims))
    [line] = [r.getMessage() for r in caplog.records if "LTI launch refused:" in r.getMessage()]
    assert "the launch has no 'custom_login' claim to name the hub user (sub 'lms-eve', course 'c1'" in line
    custom = "https://purl.imsglobal.org/spec/lti/claim/custom"
    result = asyncio.run(auth.authenticate(handler, {**claims, custom: {"login": "eve"}}))
    assert result["name"] == "eve" and result["groups"] == []  # an Instructor of c9 is a learner in c1


def test_the_example_lti_file_passes_the_checker():
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "deploy" / "jupyterhub" / "lti.example.toml"
    config = load_config(example)
    assert config.context_ids and config.username_key == "sub"


def test_the_service_keeps_no_launch_of_a_course_the_lti_file_does_not_name(lms, tmp_path):
    store, hub = Store(f"sqlite:///{tmp_path / 's.sqlite'}"), StubHub()
    launched(lms, hub, "eve", "lms-eve", context="c9")
    launched(lms, hub, "ana", "lms-ana")
    graded(store, "eve", 9)
    lti = service(store, lms, tmp_path, hub)
    try:
        assert lti.sync(None) == 1 and [r["learner"] for r in lti.launches.all()] == ["ana"]
        lti.sender.step()
        assert lms.posts == [] and lti.outbox.all() == []
    finally:
        store.close()


def test_the_key_set_is_cached_refetched_on_an_unknown_kid_at_a_bounded_rate_and_off_the_event_loop():
    import asyncio
    import threading

    from cryptography.hazmat.primitives.asymmetric import rsa

    from grader.service.lti.keyset import KeySet

    def jwk(private, kid):
        import json

        return {**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key())), "kid": kid}

    old, new = (rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2))
    now, served, threads = [0.0], {"keys": [jwk(old, "old")]}, []

    def fetch(url):
        threads.append(threading.current_thread())
        return served

    keys = KeySet("https://lms.test/jwks", refetch_seconds=30, max_age=3600, fetch=fetch, clock=lambda: now[0])

    def key(private, kid):
        token = jwt.encode({"sub": "1"}, private, algorithm="RS256", headers={"kid": kid})
        return asyncio.run(keys.key_for(token))

    async def many(private, kid, count):
        token = jwt.encode({"sub": "1"}, private, algorithm="RS256", headers={"kid": kid})
        return await asyncio.gather(*(keys.key_for(token) for _ in range(count)))

    assert key(old, "old") is not None and keys.fetches == 1
    assert threads and threads[0] is not threading.main_thread()  # fetched in a worker thread
    assert key(old, "old") is not None and keys.fetches == 1  # cached
    served = {"keys": [jwk(old, "old"), jwk(new, "new")]}  # the LMS rotates: a new kid
    now[0] = 5.0
    assert key(new, "new") is None and keys.fetches == 1  # within 30 s of the last fetch: no fetch
    now[0] = 31.0
    found = asyncio.run(many(new, "new", 20))  # twenty launches at once: one fetch, shared
    assert all(found) and keys.fetches == 2
    assert all(k is None for k in asyncio.run(many(new, "forged", 20))) and keys.fetches == 2
    served = {"keys": [jwk(new, "new")]}  # the old key withdrawn: it stops working once the keys are an hour old
    now[0] = 3700.0
    assert key(old, "old") is None and keys.fetches == 3

    def down(url):
        raise OSError("connection refused")

    keys._fetch, now[0] = down, 3800.0  # the LMS down: the keys already known still verify launches
    assert key(new, "new") is not None and key(new, "other") is None and keys.fetches == 4
    with pytest.raises(jwt.DecodeError):
        key_for = keys.key_for("not a token")
        asyncio.run(key_for)
    assert keys.fetches == 4


def test_the_tool_key_is_made_once_root_only_and_refused_when_readable(tmp_path):
    key = keys.load_or_create(tmp_path / "k.pem")
    assert stat.S_IMODE(os.stat(key.path).st_mode) == 0o600
    assert keys.load_or_create(tmp_path / "k.pem").private_pem == key.private_pem
    assert "d" not in key.jwks()["keys"][0] and key.jwks()["keys"][0]["kid"] == key.kid
    os.chmod(key.path, 0o644)
    with pytest.raises(keys.KeyFileError, match="chmod 600"):
        keys.load_or_create(key.path)


# ------------------------------------------------------------------------------ passback


def test_the_class_s_counted_grades_reach_the_lms_once_and_the_unlaunched_are_listed(db_url, lms, tmp_path):
    store, hub = Store(db_url), StubHub()
    launched(lms, hub, "ana", "lms-ana")
    launched(lms, hub, "bob", "lms-bob")
    for learner, score in (("ana", 6), ("ana", 8), ("bob", 3), ("cem", 9)):  # cem never launched
        graded(store, learner, score)
    lti = service(store, lms, tmp_path, hub)
    results = {r["learner"]: r for r in lti.send_class("teacher")}
    assert (results["ana"]["result"], results["ana"]["status"]) == ("sent", 200)
    assert results["cem"]["result"] == "not sent" and "never launched" in results["cem"]["text"]
    assert {k[2]: v["scoreGiven"] for k, v in lms.scores.items()} == {"lms-ana": 8.0, "lms-bob": 3.0}
    assert lms.scores[("c1", "lab", "lms-ana")]["scoreMaximum"] == 10.0
    # The same grades again: nothing posted, each said to be at the LMS already.
    again = lti.send_class("teacher")
    assert len(lms.posts) == 2 and {r["result"] for r in again if r["learner"] != "cem"} == {"already sent"}
    # Every send is in the instructor actions' log with the LMS's answer.
    sent = [a for a in ActionLog(store).all() if a["kind"] == LTI]
    assert [(a["learner"], a["data"]["status"], a["actor"]) for a in sent] == [
        ("ana", 200, "teacher"),
        ("bob", 200, "teacher"),
    ]
    # An override is the grade that counts: the sender sends it without being asked, once.
    ActionLog(store).record(
        "teacher",
        "override",
        learner="bob",
        attempt=3,
        reason="typo in the spec",
        data={"score": 5.0, "max_score": 10.0, "was": 3.0},
    )
    lti.sender.step()
    lti.sender.step()
    assert lms.scores[("c1", "lab", "lms-bob")]["scoreGiven"] == 5.0 and len(lms.posts) == 3
    store.close()


def test_a_stopped_lms_delays_passback_loses_nothing_and_never_slows_grading(db_url, lms, tmp_path, caplog):
    store, hub = Store(db_url), StubHub()
    learners = [f"l{i}" for i in range(6)]
    for i, learner in enumerate(learners):
        launched(lms, hub, learner, f"sub-{i}")
    baseline = [graded(store, "warmup", 1) for _ in range(3)]
    lti = service(store, lms, tmp_path, hub, interval=0.05, base=0.2, cap=0.8)
    lti.start()
    try:
        graded(store, learners[0], 4)
        _wait(lambda: len(lms.posts) == 1)
        lms.stop()  # mid-class
        with caplog.at_level(logging.WARNING, logger="agtool.service.lti"):
            during = [graded(store, learner, 5 + i) for i, learner in enumerate(learners)]
            _wait(lambda: len([r for r in lti.outbox.all() if r["state"] == "pending" and r["tries"] >= 2]) == 6)
        assert max(during) < max(0.5, 20 * max(baseline)), (during, baseline)  # grading never waits for the LMS
        assert "not delivered: the LMS did not answer" in caplog.text and len(lms.posts) == 1
        lms.start()
        _wait(lambda: all(r["state"] == "sent" for r in lti.outbox.all()), timeout=20)
    finally:
        lti.stop()
    wanted = {f"sub-{i}": 5.0 + i for i in range(6)}
    assert {k[2]: v["scoreGiven"] for k, v in lms.scores.items()} == wanted
    assert len(lms.posts) == 7  # l0's first grade, then one post per learner: nothing lost, nothing twice
    store.close()


def test_a_score_for_a_learner_of_another_context_is_refused_and_nothing_stored(db_url, lms, tmp_path, caplog):
    store, hub = Store(db_url), StubHub()
    launched(lms, hub, "ana", "lms-ana", context="c1")
    lms.enrol("c2", "lms-zed", "Zed")
    lms.add_lineitem("c2", {"label": "agtool lab", "scoreMaximum": 10, "resourceId": "lab"})
    lti = service(store, lms, tmp_path, hub)
    claims = lms.claims_for("lms-ana", "c1")
    launch = lti.launches.record("ana", claims)
    with caplog.at_level(logging.WARNING):
        answer = lti.client.post_score(lms.lineitem("c2"), launch["ags_scopes"], "lms-ana", 5, 10)
    assert answer.status == 422 and "not in this context" in answer.text
    assert lms.scores == {} and "score for 'lms-ana', who is not a member of context 'c2'" in caplog.text
    # Through the outbox: refused, kept with the answer, logged, not retried.
    lti.outbox.want({**launch, "lineitem": lms.lineitem("c2")}, 5, 10)
    [result] = lti.sender.send_due()
    assert result["result"] == "refused" and lti.sender.send_due() == [] and lms.scores == {}
    assert [a["data"]["status"] for a in ActionLog(store).all() if a["kind"] == LTI] == [422]
    store.close()


def _assertion(key, lms, **changes) -> dict:
    now = int(time.time())
    claims = {
        "iss": CLIENT_ID,
        "sub": CLIENT_ID,
        "aud": f"{lms.url}/token",
        "iat": now,
        "exp": now + 60,
        "jti": f"j-{time.monotonic_ns()}",
        **changes,
    }
    return {
        "grant_type": "client_credentials",
        "scope": SCORE,
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "client_assertion": jwt.encode(claims, key.private_pem, algorithm="RS256", headers={"kid": key.kid}),
    }


@pytest.mark.parametrize(
    "change, why",
    [
        ({"aud": "https://elsewhere/token"}, "audience"),
        ({"iat": "1700000000"}, "iat and exp must be numbers"),
        ({"exp": int(time.time()) - 10}, "expired"),
        ({"iss": "someone-else"}, "iss/sub"),
    ],
)
def test_the_stand_in_lms_refuses_a_token_request_a_strict_lms_refuses(tool_key, lms, change, why):
    answer = requests.post(f"{lms.url}/token", data=_assertion(tool_key, lms, **change), timeout=10)
    assert answer.status_code == 400 and why in answer.json()["error_description"]
    assert lms.refusals and lms.posts == []


def test_the_stand_in_lms_refuses_a_reused_jti_an_unknown_scope_and_a_bad_signature(tool_key, lms, tmp_path):
    request = _assertion(tool_key, lms, jti="once")
    assert requests.post(f"{lms.url}/token", data=request, timeout=10).status_code == 200
    assert "used before" in requests.post(f"{lms.url}/token", data=request, timeout=10).text
    assert (
        requests.post(f"{lms.url}/token", data={**_assertion(tool_key, lms), "scope": "admin"}, timeout=10).status_code
        == 400
    )
    other = keys.load_or_create(tmp_path / "other.pem")
    assert requests.post(f"{lms.url}/token", data=_assertion(other, lms), timeout=10).status_code == 400
    # A score with an expired or forged access token is refused too.
    forged = jwt.encode({"scopes": SCORE, "iat": 1, "exp": 2}, tool_key.private_pem, algorithm="RS256")
    answer = requests.post(
        lms.lineitem("c1") + "/scores",
        data="{}",
        timeout=10,
        headers={"Authorization": f"Bearer {forged}", "Content-Type": "application/vnd.ims.lis.v1.score+json"},
    )
    assert answer.status_code == 401 and lms.scores == {}


def test_the_roster_is_compared_by_sub(db_url, lms, tmp_path):
    store, hub = Store(db_url), StubHub()
    launched(lms, hub, "ana", "lms-ana")
    lms.enrol("c1", "lms-bo", "Bo")
    lms.enrol("c1", "lms-teacher", "T", roles=(INSTRUCTOR,))
    graded(store, "ana", 5)
    graded(store, "hub-only", 5)
    lti = service(store, lms, tmp_path, hub)
    lti.sync()
    said, comparison = lti.roster()
    assert said == "ok" and comparison["matched"] == [("ana", "lms-ana")]
    assert [m["user_id"] for m in comparison["lms_only"]] == ["lms-bo"] and comparison["hub_only"] == ["hub-only"]
    store.close()


def _wait(condition, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


# ------------------------------------------------------------------------------ HTTP routes


def test_the_key_set_is_public_and_sending_is_for_instructors_with_a_result_per_learner(lms, tmp_path):
    import json

    from service_stand_ins import FakeHub, Service

    store, hub = Store(f"sqlite:///{tmp_path / 's.sqlite'}"), StubHub()
    launched(lms, hub, "alice", "lms-alice")
    hub.states["alice"] = {**hub.states["alice"], "name": "<script>alert(1)</script>"}
    graded(store, "alice", 7)
    graded(store, "bob", 2)  # bob never launched
    lti = service(store, lms, tmp_path, hub)
    fake_hub = FakeHub()
    web = Service(store, fake_hub, lti=lti)
    try:
        status, headers, body = web.request("GET", "lti/jwks.json")
        assert status == 200 and json.loads(body) == lti.key.jwks() and b"PRIVATE" not in body
        assert web.request("POST", "api/lti/send", token="tok-alice", body=b"{}", ctype="application/json")[0] == 403
        assert lms.posts == []
        status, _, body = web.request("POST", "api/lti/send", token="tok-teacher", body=b"{}", ctype="application/json")
        results = {r["learner"]: r for r in json.loads(body)["results"]}
        assert status == 200 and results["alice"]["result"] == "sent" and results["alice"]["status"] == 200
        assert results["bob"]["result"] == "not sent" and "never launched" in results["bob"]["text"]
        assert {k[2]: v["scoreGiven"] for k, v in lms.scores.items()} == {"lms-alice": 7.0}
    finally:
        web.stop()
        fake_hub.stop()
        store.close()


# ------------------------------------------------------------------------------ the hub recipe's LTI block


def test_the_recipe_s_lti_block_makes_a_hub_config_jupyterhub_accepts(tmp_path, monkeypatch):
    """deploy/jupyterhub/jupyterhub_config.py with an lti.toml: the authenticator, no load_groups beside
    manage_groups (JupyterHub refuses to start with both), the service started with --lti and allowed to read
    auth_state, and a launch whose name has no Unix account stopped at spawn with a line saying what to set.
    The real hub runs it in tests/e2e/test_lti_launch.py (through configure_lti) and tests/e2e/test_hub_recipe.py."""
    import types
    from pathlib import Path

    from traitlets.config import Config

    from grader.service.lti.hub_auth import configure_lti

    recipe = Path(__file__).resolve().parents[1] / "deploy" / "jupyterhub" / "jupyterhub_config.py"
    (tmp_path / "lti.toml").write_text(
        'issuer = "https://lms.example.edu"\nclient_id = "1"\ndeployment_ids = ["d"]\n'
        'key_set_url = "https://lms.example.edu/jwks"\n'
        'login_url = "https://lms.example.edu/auth"\n'
        'token_url = "https://lms.example.edu/token"\ncontext_ids = ["c1"]\n'
    )
    monkeypatch.setenv("AGTOOL_PREFIX", str(tmp_path))
    monkeypatch.setenv("JUPYTERHUB_CRYPT_KEY", "ab" * 32)
    c = Config()
    exec(compile(recipe.read_text(), str(recipe), "exec"), {"get_config": lambda: c, "__file__": str(recipe)})
    assert c.JupyterHub.authenticator_class.__name__ == "AgtoolLTI13Authenticator"
    assert c.Authenticator.manage_groups is True and c.JupyterHub.load_groups == {}
    assert c.JupyterHub.services[0]["command"][-2:] == ["--lti", str(tmp_path / "lti.toml")]
    assert "admin:auth_state" in c.JupyterHub.load_roles[1]["scopes"]
    assert c.LTI13Authenticator.client_id == ["1"] and c.AgtoolLTI13Authenticator.deployment_ids == ["d"]
    assert c.AgtoolLTI13Authenticator.context_ids == ["c1"]
    with pytest.raises(RuntimeError, match=r"no Unix account 'lms-no-such-account' .* set username_key"):
        c.Spawner.pre_spawn_hook(types.SimpleNamespace(user=types.SimpleNamespace(name="lms-no-such-account")))
    # Without $JUPYTERHUB_CRYPT_KEY the auth_state key is made once, mode 0600.
    monkeypatch.delenv("JUPYTERHUB_CRYPT_KEY")
    hub = Config()
    hub.JupyterHub.services = [{"name": "agtool-grader", "command": ["serve"]}]
    hub.JupyterHub.load_roles = [{"name": "agtool-grader", "scopes": [], "services": ["agtool-grader"]}]
    configure_lti(hub, tmp_path / "lti.toml", crypt_key_file=str(tmp_path / "crypt_key"))
    assert stat.S_IMODE(os.stat(tmp_path / "crypt_key").st_mode) == 0o600
    assert hub.CryptKeeper["keys"] == [(tmp_path / "crypt_key").read_text().strip()]  # (.keys is a dict method)
    hub.JupyterHub.load_roles = []
    with pytest.raises(ValueError, match="no service 'agtool-grader' with a role"):
        configure_lti(hub, tmp_path / "lti.toml", crypt_key_file=str(tmp_path / "crypt_key"))


def test_the_class_lti_page_lists_learners_and_not_the_instructor_who_launched(db_url, lms, tmp_path):
    """Before: the teacher who launched the tool from the LMS was a row of the class on class/lti."""
    from grader.service.layout import Chrome
    from grader.service.lti_pages import lti_page

    store, hub = Store(db_url), StubHub()
    launched(lms, hub, "ana", "lms-ana")
    lms.enrol("c1", "lms-teacher", "T", roles=(INSTRUCTOR,))
    hub.states["teacher"] = lms.claims_for("lms-teacher", "c1")
    graded(store, "ana", 7)
    graded(store, "teacher", 10)  # the instructor tried the lab once: still no learner
    lti = service(store, lms, tmp_path, hub)
    lti.sync()
    assert [row["learner"] for row in lti.status()] == ["ana"]
    page = lti_page(
        prefix="/p/", xsrf="x", chrome=Chrome(prefix="/p/", user="teacher", instructor=True), status=lti.status()
    )
    assert "lms-ana" in page and "lms-teacher" not in page
    store.close()
