"""The grading service under hostile load, and its fail-closed start.

Every case runs the real tornado application on loopback with the real
``HubOAuth`` client, which asks a stand-in hub (a tornado app on its own
thread, answering ``GET /hub/api/user`` like JupyterHub) who a token is.
The queue cases use the real :class:`grader.service.queue.GradingQueue`
with its worker processes and a stand-in ``grade_fn`` (no learner code: the
cases are about the service, and the engine has its own corpus).

Each case says what it checks and what the service did before the fix
(the "before" a test fails with when the protection is turned off).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from grader.service.db import ERROR, GRADED, GRADING, Store

pytest.importorskip("jupyterhub")

MODULE = b"def search_stocks(query):\n    return []\n"


from service_stand_ins import HUB_USERS, PREFIX, SCOPE, SERVICE, FakeHub, NoGrading, Service, _free_port  # noqa: E402,F401


def _raw(port: int, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(data)
    return sock


def _answer(sock: socket.socket, wait: float) -> bytes:
    """What the server sent within ``wait`` seconds (b"" when it closed without a word, None when silent)."""
    sock.settimeout(wait)
    try:
        return sock.recv(65536)
    except TimeoutError:
        return None
    except ConnectionResetError:
        return b""


def _closed_within(sock: socket.socket, wait: float) -> bool:
    """Whether the server closed the connection within ``wait`` seconds (after any answer it sent)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def _post_head(token: str | None, length: int, path: str = "api/submissions") -> bytes:
    auth = f"Authorization: token {token}\r\n" if token else ""
    return (
        f"POST {PREFIX}{path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: text/x-python\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


@pytest.fixture
def hub():
    h = FakeHub()
    yield h
    h.stop()


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'service.sqlite'}")
    yield s
    s.close()


@pytest.fixture
def service(store, hub):
    svc = Service(store, hub)
    yield svc
    svc.stop()


# ---------------------------------------------------------------------------- bodies, timeouts, uploads


def test_an_unknown_caller_s_upload_is_refused_from_its_headers_before_any_body_byte(service):
    # Before: the 1.25 MiB body was read into memory first; with no body sent, no answer ever came.
    for token in (None, "not-a-token"):
        sock = _raw(service.port, _post_head(token, 1_250_000))
        got = _answer(sock, 5)
        assert got and got.startswith(b"HTTP/1.1 401"), got
        assert _closed_within(sock, 5), "the connection stays open for a body that will never be read"
        sock.close()


def test_a_learner_s_oversized_upload_is_refused_from_content_length_before_reading_it(service):
    # Before: tornado read up to 1.25 MiB, then the handler said 413.
    sock = _raw(service.port, _post_head("tok-alice", 5_000_000))
    got = _answer(sock, 5)
    assert got and got.startswith(b"HTTP/1.1 413") and b"limit" in got, got
    sock.close()


def test_a_body_on_a_route_that_reads_none_is_capped_small_before_authentication(service):
    # Before: any route took up to max_bytes + 1 MiB of body before the handler ran.
    from grader.service.options import PRE_AUTH_BYTES

    size = PRE_AUTH_BYTES * 8
    head = f"GET {PREFIX}api/class HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n\r\n".encode()
    sock = _raw(service.port, head + b"x" * size)
    got = _answer(sock, 5)
    assert not (got or b"").startswith(b"HTTP/1.1 401"), "the body was read and the handler ran"
    assert _closed_within(sock, 5)
    sock.close()


@pytest.mark.parametrize(
    "partial",
    [
        b"POST /services/agtool-grader/api/submissions HTTP/1.1\r\nHost: x\r\n",  # slowloris: headers never end
        b"GET /services/agtool-grader/api/submissions HTTP/1.1\r\nHost: x\r\nX-a: ",  # the same on a GET
        b"",  # connected, says nothing
    ],
)
def test_a_client_that_sends_headers_slowly_or_not_at_all_is_cut_off(service, partial):
    # Before: header_timeout was tornado's default, an hour.
    sock = _raw(service.port, partial)
    assert _closed_within(sock, 6), "a silent connection was kept"
    sock.close()


def test_an_upload_whose_body_trickles_is_cut_off_at_the_body_timeout(service):
    # Before: no body timeout (150 held uploads: all still open after 30 s).
    sock = _raw(service.port, _post_head("tok-alice", 1000) + b"x = 1\n")
    start = time.monotonic()
    while time.monotonic() - start < 6:
        try:
            sock.sendall(b"#")
        except (BrokenPipeError, ConnectionResetError):
            break
        if _closed_within(sock, 0.3):
            break
    assert time.monotonic() - start < 6, "a trickling body was read for ever"
    sock.close()
    assert service.store.stored_bytes_of("alice") == 0


def test_headers_larger_than_the_cap_are_refused(service):
    from grader.service.options import MAX_HEADER_BYTES

    head = f"GET {PREFIX}api/submissions HTTP/1.1\r\nHost: x\r\nX-Pad: {'a' * (MAX_HEADER_BYTES + 10)}\r\n\r\n"
    sock = _raw(service.port, head.encode())
    got = _answer(sock, 5)
    assert got in (b"",) or (got and got.startswith(b"HTTP/1.1 431")), got
    sock.close()


def test_uploads_in_flight_are_capped_with_503_and_retry_after(store, hub):
    # Before: no cap: every held upload buffered its body.
    svc = Service(store, hub, max_uploads=2, body=10.0)
    try:
        held = [_raw(svc.port, _post_head(t, 1000) + b"x = 1\n") for t in ("tok-alice", "tok-bob")]
        time.sleep(0.5)
        status, headers, body = svc.request("POST", "api/submissions", "tok-teacher", MODULE)
        assert status == 503 and headers.get("Retry-After") and b"uploads" in body, (status, body)
        for sock in held:
            sock.close()
        time.sleep(0.5)  # the held uploads are gone: the counter went back down
        assert svc.request("POST", "api/submissions", "tok-teacher", MODULE)[0] == 202
    finally:
        svc.stop()


def test_a_learner_s_upload_within_the_limits_is_stored_and_queued(service):
    status, _headers, body = service.request("POST", "api/submissions", "tok-alice", MODULE)
    assert status == 202, body
    attempt_id = json.loads(body)["id"]
    assert service.store.get(attempt_id).source == MODULE and service.queue.put_ids == [attempt_id]


# ---------------------------------------------------------------------------- ids and token checks


@pytest.mark.parametrize("bad", ["1" * 23, "-1", "0", "%D9%A3", "1e3", "99999999999", "2147483648", "x" * 300])
def test_a_bad_attempt_id_answers_404_never_500(service, bad):
    # Before: api/submissions/<23 digits> answered 500 (an integer overflow in the database driver).
    status, _headers, body = service.request("GET", f"api/submissions/{bad}", "tok-alice")
    assert status == 404 and json.loads(body)["error"], (bad, status, body)


def test_token_answers_are_cached_briefly_by_hash_and_bounded(store, hub):
    # Before: the hub client kept every token seen for five minutes, unbounded (a flood of random tokens grew it).
    from grader.service.hubauth import TokenCache

    tokens = TokenCache(ttl=45, size=5)
    svc = Service(store, hub, tokens=tokens)
    try:
        for _ in range(3):
            assert svc.request("GET", "api/submissions", "tok-alice")[0] == 200
            assert svc.request("GET", "api/submissions", "unknown-token")[0] == 401
        assert hub.calls.count("tok-alice") == 1 and hub.calls.count("unknown-token") == 1
        for i in range(20):
            assert svc.request("GET", "api/submissions", f"random-{i}")[0] == 401
        assert len(tokens) == 5 and len(svc.auth.cache) == 0, "token answers kept beyond the bound"
    finally:
        svc.stop()

    now = [0.0]
    cache = TokenCache(ttl=30, size=3, clock=lambda: now[0])
    for i in range(10):
        cache.keep(f"t{i}", None)
    assert len(cache) == 3 and cache.cached("t9") == (True, None) and cache.cached("t0") == (False, None)
    assert not any("t9" == key for key in cache._answers)  # keys are hashes, never tokens
    now[0] = 31
    assert cache.cached("t9") == (False, None)


def test_a_slow_hub_answer_does_not_block_other_callers(service, hub):
    # Before: each unknown token cost a blocking hub round trip on the event loop (median 8 -> 116 ms).
    assert service.request("GET", "api/submissions", "tok-alice")[0] == 200  # cached from now on
    slow = threading.Thread(target=lambda: service.request("GET", "api/submissions", "tok-slow"))
    slow.start()
    time.sleep(0.3)  # the slow lookup is waiting for the hub
    start = time.monotonic()
    assert service.request("GET", "api/submissions", "tok-alice")[0] == 200
    took = time.monotonic() - start
    slow.join()
    assert took < 0.8, f"a cached caller waited {took:.2f} s behind a slow hub lookup"


def test_a_flood_of_one_unknown_token_costs_one_hub_round_trip(service, hub):
    threads = [threading.Thread(target=lambda: service.request("GET", "api/class", "same-bad-token")) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert hub.calls.count("same-bad-token") == 1


# ---------------------------------------------------------------------------- storage per learner


def test_a_learner_over_the_storage_bound_gets_a_clear_413_and_a_classmate_is_unaffected(store, hub):
    # Before: every attempt was kept whole, without bound, until the disk was full and everyone got 500.
    svc = Service(store, hub, max_learner_bytes=3 * len(MODULE) + 10, rate_limit=100)
    try:
        codes = [svc.request("POST", "api/submissions", "tok-alice", MODULE)[0] for _ in range(3)]
        status, _headers, body = svc.request("POST", "api/submissions", "tok-alice", MODULE)
        assert codes == [202] * 3 and status == 413, (codes, status)
        message = json.loads(body)["error"]
        assert str(3 * len(MODULE) + 10) in message and "instructor" in message
        assert svc.request("POST", "api/submissions", "tok-bob", MODULE)[0] == 202
    finally:
        svc.stop()


def test_kept_reports_count_in_the_storage_bound_and_a_regrade_frees_the_failed_one(store):
    # Many tiny attempts: the reports, not the sources, are what fills the disk.
    ids = [store.add_attempt("ana", b"x = 1\n", seed=i) for i in range(5)]
    assert store.stored_bytes_of("ana") == 5 * 6
    big = {"score": 1, "max_score": 2, "output": {"out": "y" * 10_000}}
    for attempt_id in ids:
        store.take(attempt_id)
        store.finish(attempt_id, GRADED if attempt_id != ids[-1] else ERROR, big)
    assert store.stored_bytes_of("ana") > 5 * 10_000
    store.requeue_error(ids[-1])
    assert 4 * 10_000 < store.stored_bytes_of("ana") < 5 * 10_000


def test_the_migration_fills_the_size_of_attempts_kept_before_it(tmp_path):
    from sqlalchemy import create_engine, text

    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = create_engine(url)
    from alembic import command
    from alembic.config import Config

    from grader.service.db import MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
        conn.execute(
            text(
                "INSERT INTO attempts (learner, submitted_at, source, sha256, seed, status, report) "
                "VALUES ('ana', '2026-01-01 00:00:00', x'41424344', '', 1, 'graded', '{\"a\": 1}')"
            )
        )
    engine.dispose()
    store = Store(url)
    assert store.stored_bytes_of("ana") == 4 + len('{"a": 1}')
    store.close()


def test_class_views_read_the_reports_of_counting_attempts_only(store):
    # Before: each class view loaded every finished report of everyone (400 attempts: +250 MiB a view).
    from sqlalchemy import event

    from grader.service.app import class_data
    from grader.service.db import Attempt

    for learner in ("ana", "bob"):
        for score in (1, 5, 3):
            attempt_id = store.add_attempt(learner, b"x", seed=score)
            store.take(attempt_id)
            store.finish(
                attempt_id,
                GRADED,
                {
                    "seed": score,
                    "path": "t.py",
                    "score": score,
                    "max_score": 5,
                    "steps": {},
                    "checks": [],
                    "output": {},
                    "error": "",
                },
            )
    loaded = []
    listener = lambda target, _context: loaded.append(target.id)
    event.listen(Attempt, "load", listener)
    try:
        rows, records, _outputs = class_data(store)
    finally:
        event.remove(Attempt, "load", listener)
    assert sorted((r.learner, r.report["score"]) for r in records) == [("ana", 5), ("bob", 5)]
    assert len(loaded) == 2, f"{len(loaded)} attempts read with their reports for 2 counting ones"


def test_class_views_under_a_course_policy_read_counting_attempts_only_too(store):
    from sqlalchemy import event

    from grader.course.policy import parse_policy
    from grader.service.app import class_data
    from grader.service.db import Attempt

    policy = parse_policy('[assignment]\ndue = 2999-01-01T00:00:00Z\ncounts = "last"\n')
    for score in (5, 2):
        attempt_id = store.add_attempt("ana", b"x", seed=score)
        store.take(attempt_id)
        store.finish(
            attempt_id,
            GRADED,
            {
                "seed": score,
                "path": "t.py",
                "score": score,
                "max_score": 5,
                "steps": {},
                "checks": [],
                "output": {},
                "error": "",
            },
        )
    loaded = []
    listener = lambda target, _context: loaded.append(target.id)
    event.listen(Attempt, "load", listener)
    try:
        _rows, records, _outputs = class_data(store, policy)
    finally:
        event.remove(Attempt, "load", listener)
    assert [r.report["score"] for r in records] == [2] and len(loaded) == 1


# ---------------------------------------------------------------------------- fair share


def test_the_queue_serves_learners_in_turn_and_caps_one_learner_s_workers():
    # Before: first come, first served: four slow attempts of one learner pushed a classmate from 2 s to 64 s.
    from grader.service.fairness import FairQueue

    q = FairQueue(per_learner=1)
    for i in range(1, 5):
        q.push(i, "flood")
    q.push(10, "ana")
    q.push(11, "ana")
    q.push(20, "bob")
    order = [q.pop(), q.pop(), q.pop(), q.pop()]
    assert order == [(1, "flood"), (10, "ana"), (20, "bob"), None]  # each at its cap of one
    q.done("flood")
    q.done("bob")
    assert q.pop() == (2, "flood") and q.pop() is None
    q.done("ana")
    assert q.pop() == (11, "ana") and len(q) == 2


def test_a_newcomer_joins_the_turn_order_behind_the_learners_already_waiting():
    from grader.service.fairness import FairQueue

    q = FairQueue(per_learner=3)
    for attempt, learner in [(1, "a"), (2, "a"), (3, "b"), (4, "a"), (5, "c"), (6, "b")]:
        q.push(attempt, learner)
    assert [q.pop()[0] for _ in range(6)] == [1, 3, 5, 2, 6, 4]


def sleepy_grade(submission, **kwargs):
    """A grade_fn for the workers: ``sleep`` seconds named in the module, then a report with no checks."""
    from grader.report import Report

    text = bytes(submission.source).decode() if hasattr(submission, "source") else ""
    seconds = float(text.split("SLEEP=", 1)[1].split()[0]) if "SLEEP=" in text else 0.0
    time.sleep(seconds)
    return Report(seed=kwargs.get("seed") or 1, path=str(getattr(submission, "display", "tools.py")), checks=[])


def _graded_within(store, attempt_id, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = store.get(attempt_id)
        if got.status in (GRADED, ERROR):
            return got
        time.sleep(0.05)
    return store.get(attempt_id)


def test_a_classmate_is_graded_within_twice_its_idle_time_under_one_learner_s_flood(store):
    from grader.service.queue import GradingQueue

    with GradingQueue(store, jobs=2, grade_fn=sleepy_grade) as queue:
        idle_id = store.add_attempt("bob", b"SLEEP=1.0\n", seed=1)
        start = time.monotonic()
        queue.put(idle_id)
        assert _graded_within(store, idle_id, 30).status == GRADED
        idle = time.monotonic() - start
        for i in range(8):  # the flood: slower attempts than the classmate's, all queued first
            queue.put(store.add_attempt("flood", b"SLEEP=3.0\n", seed=i))
        time.sleep(0.5)
        bob_id = store.add_attempt("bob", b"SLEEP=1.0\n", seed=2)
        start = time.monotonic()
        queue.put(bob_id)
        assert _graded_within(store, bob_id, 60).status == GRADED
        loaded = time.monotonic() - start
        queue.stop()
    assert loaded < 2 * idle, f"graded in {loaded:.1f} s under the flood, {idle:.1f} s idle"


# ---------------------------------------------------------------------------- never stuck, never a grade


class FlakyStore(Store):
    """A store whose ``finish`` fails the first ``failures`` times with ``error`` (a full disk, a locked database)."""

    failures = 2
    error: Exception = OSError(28, "No space left on device")

    def finish(self, attempt_id, status, report):
        if self.failures > 0:
            self.failures -= 1
            raise self.error
        return super().finish(attempt_id, status, report)


def _locked():
    from sqlalchemy.exc import OperationalError

    return OperationalError("UPDATE attempts ...", {}, Exception("database is locked"))


@pytest.mark.parametrize("error", ["disk full", "database locked"])
def test_a_report_the_database_refused_is_stored_again_until_it_is(tmp_path, error):
    # Before: the queue logged the failure and forgot the attempt: `grading` until a restart, counted meanwhile.
    from grader.service.queue import GradingQueue

    store = FlakyStore(f"sqlite:///{tmp_path / 's.sqlite'}")
    if error == "database locked":
        store.error = _locked()
    attempt_id = store.add_attempt("ana", b"SLEEP=0\n", seed=1)
    with GradingQueue(store, jobs=1, grade_fn=sleepy_grade, retry_first=0.2) as queue:
        deadline = time.monotonic() + 30
        while not queue.not_stored() and time.monotonic() < deadline and store.failures:
            time.sleep(0.02)
        assert store.get(attempt_id).status == GRADING
        since = dt.datetime(2000, 1, 1)
        assert store.count_since("ana", since, queue.not_stored() or {attempt_id}) == 0  # not counted meanwhile
        assert queue.wait_idle(30), "the report was never stored"
    assert store.get(attempt_id).status == GRADED and store.failures == 0
    store.close()


def test_an_upload_is_not_refused_for_an_attempt_whose_report_is_not_stored_yet(store, hub):
    svc = Service(store, hub, rate_limit=1)
    try:
        stuck = store.add_attempt("alice", MODULE, seed=1)
        store.take(stuck)
        svc.queue.unstored.add(stuck)
        assert svc.request("POST", "api/submissions", "tok-alice", MODULE)[0] == 202
        assert svc.request("POST", "api/submissions", "tok-alice", MODULE)[0] == 429  # the new one counts
    finally:
        svc.stop()


def failing_once_grade(submission, **kwargs):
    """A grade_fn: the grader fails (an exception's report, kind ``grader``) the first time per marker file."""
    from grader.report import Failure, FailureKind, Report

    marker = Path(os.environ["AGTOOL_TEST_FAIL_ONCE"])
    if not marker.exists():
        marker.write_text("failed once")
        return Report(
            seed=kwargs.get("seed") or 1,
            path="t.py",
            error="the grader failed: boom",
            failure=Failure(FailureKind.GRADER, "the grader failed: boom"),
        )
    return sleepy_grade(submission, **kwargs)


def test_an_error_attempt_is_graded_again_automatically(tmp_path, monkeypatch):
    # Before: an `error` was graded again only at the next start of the service.
    from grader.service.queue import GradingQueue

    monkeypatch.setenv("AGTOOL_TEST_FAIL_ONCE", str(tmp_path / "failed"))
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    attempt_id = store.add_attempt("ana", b"SLEEP=0\n", seed=1)
    with GradingQueue(store, jobs=1, grade_fn=failing_once_grade, regrade_delays=(0.3,)) as queue:
        assert _graded_within(store, attempt_id, 30).status in (ERROR, GRADED)
        deadline = time.monotonic() + 30
        while store.get(attempt_id).status != GRADED and time.monotonic() < deadline:
            time.sleep(0.05)
        assert queue.wait_idle(30)
    got = store.get(attempt_id)
    assert (tmp_path / "failed").exists() and got.status == GRADED and got.score == 0
    store.close()


def test_error_attempts_never_count_never_replace_a_grade_and_read_as_being_regraded(store):
    from grader.course.policy import parse_policy
    from grader.service.app import class_data
    from grader.service.pages import learner_page

    report = {
        "seed": 1,
        "path": "t.py",
        "score": 133,
        "max_score": 133,
        "steps": {},
        "checks": [],
        "output": {},
        "error": "",
    }
    died = {
        **report,
        "score": 0,
        "error": "the grading process died",
        "failure": {"kind": "grader", "message": "the grading process died"},
    }
    for got, status in ((report, GRADED), (died, ERROR)):
        attempt_id = store.add_attempt("ana", b"x", seed=1)
        store.take(attempt_id)
        store.finish(attempt_id, status, got)
    last = parse_policy('[assignment]\ndue = 2999-01-01T00:00:00Z\ncounts = "last"\n')
    for policy in (None, last):
        rows, records, _ = class_data(store, policy)
        assert [r.report["score"] for r in records] == [133] and rows[0]["best_score"] == 133
    summaries = store.summaries_of("ana")
    assert summaries[0]["status"] == ERROR and "being graded again" in summaries[0]["note"]
    assert store.count_since("ana", dt.datetime(2000, 1, 1)) == 1  # the failure used no attempt
    html = learner_page("ana", [store.get(s["id"]).detail() for s in summaries], prefix="/", is_instructor=False)
    assert "being graded again" in html and "0 / 133" not in html


def test_the_class_version_changes_when_an_error_is_graded_again(store):
    # The class pages are cached by version: an error regraded must not look like the class before.
    attempt_id = store.add_attempt("ana", b"x", seed=1)
    store.take(attempt_id)
    store.finish(attempt_id, ERROR, {})
    as_error = store.version()
    store.requeue_error(attempt_id)
    store.take(attempt_id)
    time.sleep(0.01)
    store.finish(attempt_id, GRADED, {"score": 1, "max_score": 1})
    assert store.version() != as_error


# ---------------------------------------------------------------------------- similarity and the fail-closed start


def test_similarity_compares_a_capped_share_of_each_attempt(monkeypatch):
    # Before: three 231 KiB counting attempts made similarity.html take 33 s.
    from grader.outputs import similarity

    seen = []
    real = similarity._fingerprint
    monkeypatch.setattr(
        similarity, "_fingerprint", lambda name, code, b, k: seen.append(len(code)) or real(name, code, b, k)
    )
    huge = "def f(a, b):\n    return a + b * 2 - a\n" * 8000
    similarity.similarity_outputs({"ana": huge, "bob": huge + "x = 1\n"}, {"reference:tools.py": huge})
    learner_prints = [n for n in seen if n > 20_000]
    assert learner_prints and max(learner_prints) <= similarity.MAX_CHARS


def test_the_service_refuses_to_start_without_a_sandbox_unless_told(monkeypatch, tmp_path):
    # Before: with bubblewrap unusable, grading went on unconfined and the warning went to /dev/null.
    from grader.service import command

    monkeypatch.setattr(command, "sandbox_problem", lambda requested: "bubblewrap is not usable on this machine")
    started = []
    import grader.service.serve as serve_module

    monkeypatch.setattr(serve_module, "serve", lambda args, settings=None: started.append(args) or 0)
    base = ["serve", "--data-dir", str(tmp_path), "--reference", "none"]
    for extra in ([], ["--sandbox", "bwrap"], ["--sandbox", "none"], ["--sandbox", "auto"]):
        with pytest.raises(SystemExit, match="--insecure-no-sandbox"):
            command.main(base[1:] + extra)
    assert not started
    assert command.main(base[1:] + ["--insecure-no-sandbox"]) == 0
    assert started[0].sandbox == "none" and "not usable" in started[0].insecure_why
    monkeypatch.setattr(command, "sandbox_problem", lambda requested: "")
    assert command.main(base[1:] + ["--sandbox", "bwrap"]) == 0
    assert started[1].sandbox == "bwrap" and not started[1].insecure_why


@pytest.mark.parametrize("inside", [False, True])
def test_the_service_refuses_to_grade_as_the_account_that_owns_its_data(monkeypatch, tmp_path, inside):
    # Before (found by the hub recipe's fresh-Debian test): a service run as `agtool-grader`, which owns its
    # database, could not switch accounts, so learner code ran inside bubblewrap as the database's owner.
    from grader.service import command

    data = tmp_path / "data"
    data.mkdir()
    where = data / "service" if inside else data  # a --data-dir still to be made is judged by its parent
    if os.geteuid() == 0:
        os.chown(data, 4242, 4242)  # as the recipe had it: the data belongs to the account that serves
    owner = data.stat().st_uid
    monkeypatch.setattr(command, "sandbox_problem", lambda requested: "")
    monkeypatch.setattr(command.os, "geteuid", lambda: owner)
    started = []
    import grader.service.serve as serve_module

    monkeypatch.setattr(serve_module, "serve", lambda args, settings=None: started.append(args) or 0)
    base = ["--data-dir", str(where), "--reference", "none", "--sandbox", "bwrap"]
    with pytest.raises(SystemExit, match="owns the service's data"):
        command.main(base)
    assert not started
    assert command.main(base + ["--insecure-no-sandbox"]) == 0
    assert started[0].sandbox == "bwrap" and "owns the service's data" in started[0].insecure_why
    monkeypatch.setattr(command.os, "geteuid", lambda: owner + 1)  # another account grades: nothing to refuse
    assert command.main(base) == 0 and not started[1].insecure_why


def test_the_start_asks_the_engine_s_own_isolation_check(monkeypatch):
    from grader.engine import sandbox
    from grader.service.command import sandbox_problem

    def unavailable(requested, settings=None):
        raise sandbox.IsolationUnavailable("bubblewrap cannot create a user namespace here")

    monkeypatch.setattr(sandbox, "require", unavailable)
    assert "user namespace" in sandbox_problem("bwrap")
    monkeypatch.setattr(sandbox, "require", lambda requested, settings=None: sandbox.Isolation("none", "u"))
    assert sandbox_problem("auto") == "bubblewrap is not usable on this machine"


def test_the_class_page_says_plainly_when_learner_code_runs_unconfined():
    from grader.service.pages import class_page

    empty = {"checks": [], "wrong_answers": []}
    warned = class_page([], empty, prefix="/", refresh=10, insecure="bubblewrap is not usable on this machine")
    assert "WITHOUT a sandbox" in warned and "bubblewrap is not usable" in warned
    assert "WITHOUT a sandbox" not in class_page([], empty, prefix="/", refresh=10)
