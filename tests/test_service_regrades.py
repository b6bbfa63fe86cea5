"""Bounded regrade requests: a limit per learner, the learner's storage bound, a short class page.

Without these bounds a learner's regrade requests (``POST api/appeals``, the
form on their page) have no rate or count limit and their text is outside the
per-learner storage bound: measured so, 400 requests in 5 s were all accepted,
added 6.7 MB, made the class page (quoting every open request, and logging
every one again) 6.6 MB, and each one threw away the cached class outputs.

Each test runs on SQLite and, with ``$AGTOOL_TEST_POSTGRES_URL``, on
PostgreSQL (the size of a request's text is measured in SQL on both), through
the real ``HubOAuth`` client and a stand-in hub (tests/service_stand_ins.py):
alice and bob are learners, the teacher an instructor. Each says what the
service did before (what it fails with when its fix is turned off).
"""

from __future__ import annotations

import datetime as dt
import json
import threading

import pytest

pytest.importorskip("jupyterhub")

from service_stand_ins import FakeHub, Service, database_url

from grader.service.actions_db import APPEAL, ActionLog, kept_bytes
from grader.service.db import Store

MODULE = b"def search_stocks(query):\n    return []\n"


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    s = Store(database_url(request.param, tmp_path))
    yield s
    s.close()


@pytest.fixture
def hub():
    h = FakeHub()
    yield h
    h.stop()


def graded(store: Store, learner: str) -> int:
    attempt = store.add_attempt(learner, MODULE, seed=1)
    store.take(attempt)
    store.finish(attempt, "graded", {"score": 1, "max_score": 2, "checks": []})
    return attempt


def ask(svc, token: str, attempt: int, text: str):
    """``POST api/appeals``: (status, headers, the JSON answer)."""
    status, headers, body = svc.request(
        "POST", "api/appeals", token, json.dumps({"attempt": attempt, "text": text}).encode(), ctype="application/json"
    )
    return status, headers, json.loads(body) if body else None


def test_requests_over_the_limit_get_429_naming_the_limit_and_when_to_try_again(store, hub):
    # Before: every request was stored (400 in 5 s).
    alice, bob = graded(store, "alice"), graded(store, "bob")
    svc = Service(store, hub, appeal_limit=3, appeal_window=600)
    try:
        codes = [ask(svc, "tok-alice", alice, f"request {i}")[0] for i in range(3)]
        status, headers, body = ask(svc, "tok-alice", alice, "one more")
        assert codes == [201] * 3 and status == 429, (codes, status, body)
        message = body["error"]
        assert message.startswith("at most 3 regrade requests per 10 minutes: your next request is allowed at ")
        assert 590 <= int(headers["Retry-After"]) <= 600, headers
        when = dt.datetime.fromisoformat(message.split("allowed at ")[1].split(" ")[0].replace("Z", "+00:00"))
        assert dt.timedelta(minutes=9) < when - dt.datetime.now(dt.timezone.utc) <= dt.timedelta(minutes=10)
        assert ask(svc, "tok-bob", bob, "mine")[0] == 201  # a classmate's limit is their own
        page = svc.request("GET", "", "tok-bob")[2].decode()
        assert "Regrade requests: at most 3 per 10 minutes." in page  # said beside the form, before any 429
        assert [a["reason"] for a in ActionLog(store).all("alice")] == ["request 0", "request 1", "request 2"]
    finally:
        svc.stop()


def test_a_burst_of_requests_is_held_to_the_limit(store, hub, monkeypatch):
    # Unbounded, a burst of requests at once is accepted whole (400 in 5 s). The limit is checked and
    # the request stored as one step: with a slow database (each write 50 ms here), concurrent requests that all
    # read "4 so far" would otherwise all be stored.
    import time

    record = ActionLog.record

    def slow_record(self, *args, **kwargs):
        time.sleep(0.05)
        return record(self, *args, **kwargs)

    monkeypatch.setattr(ActionLog, "record", slow_record)
    alice = graded(store, "alice")
    svc = Service(store, hub)  # the defaults: 5 requests an hour
    codes: list[int] = []
    try:

        def burst(n):
            for i in range(n):
                codes.append(ask(svc, "tok-alice", alice, f"burst {i}")[0])

        threads = [threading.Thread(target=burst, args=(10,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(codes) == [201] * 5 + [429] * 35, codes
        assert len(ActionLog(store).all("alice")) == 5
    finally:
        svc.stop()


def test_request_texts_count_in_the_learner_s_storage_bound(store, hub):
    # Before: requests were stored whatever the learner kept, and never counted against their bound.
    alice, bob = graded(store, "alice"), graded(store, "bob")
    kept = store.stored_bytes_of("alice")
    svc = Service(store, hub, max_learner_bytes=kept + 3000, appeal_limit=100, rate_limit=100)
    try:
        assert ask(svc, "tok-alice", alice, "é" * 1000)[0] == 201  # 2,000 bytes of UTF-8
        assert kept_bytes(store, "alice") == kept + 2000
        status, _headers, body = ask(svc, "tok-alice", alice, "é" * 600)
        assert status == 413, body
        assert f"at most {kept + 3000} bytes" in body["error"] and "regrade requests" in body["error"]
        assert ask(svc, "tok-alice", alice, "x" * 980)[0] == 201  # what still fits is taken
        # The same bound holds a submission: the requests take the room an attempt would have had.
        status, _headers, body = svc.request("POST", "api/submissions", "tok-alice", MODULE)
        assert status == 413 and "regrade requests" in json.loads(body)["error"]
        assert ask(svc, "tok-bob", bob, "é" * 1000)[0] == 201
    finally:
        svc.stop()


def test_the_class_page_shows_a_count_with_a_link_not_every_text(store, hub):
    # Before: the class page quoted every open request in full and listed each again in its log (6.6 MB after
    # 400 requests); now it grows by a few shortened lines at most, and class/actions has every text.
    from bs4 import BeautifulSoup

    alice, bob = graded(store, "alice"), graded(store, "bob")
    svc = Service(store, hub, appeal_limit=100)
    try:
        empty = len(svc.request("GET", "class", "tok-teacher")[2])
        texts = [f"request {i:02d}: " + chr(0x41 + i % 26) * 1980 for i in range(30)]
        for i, text in enumerate(texts):
            assert ask(svc, "tok-alice" if i % 3 else "tok-bob", alice if i % 3 else bob, text)[0] == 201
        status, _headers, body = svc.request("GET", "class", "tok-teacher")
        page = body.decode()
        soup = BeautifulSoup(page, "html.parser")
        section = soup.find("section", attrs={"aria-labelledby": "appeals"})
        assert status == 200 and "Open regrade requests (30)" in section.get_text()
        assert "30 open, from 2 learners; the oldest 3" in section.get_text()
        assert [a["href"] for a in section.find_all("a") if a["href"].endswith("class/actions")]
        quoted = [q.get_text() for q in section.find_all("q")]
        assert len(quoted) == 3 and all(len(q) <= 200 + len("… (shortened)") for q in quoted), quoted
        assert not any(text[:40] in page for text in texts[3:])  # the others are counted, not quoted
        assert len(body) - empty < 3000, len(body) - empty
        actions = svc.request("GET", "class/actions", "tok-teacher")[2].decode()
        assert all(text in actions for text in texts)  # where the instructor answers: every request in full
    finally:
        svc.stop()


def test_a_request_leaves_the_cached_class_outputs_alone(store):
    # Before: the class's version was the newest action of any kind, so each request recomputed the class.
    alice = graded(store, "alice")
    log = ActionLog(store)
    before = log.version()
    log.record("alice", APPEAL, learner="alice", attempt=alice, reason="step 1?")
    assert log.version() == before
    override = log.record(
        "teacher",
        "override",
        learner="alice",
        attempt=alice,
        reason="by hand",
        data={"score": 2.0, "max_score": 2.0, "was": 1.0},
    )
    assert log.version() == override["id"] != before


def test_the_limits_are_serve_options_with_help_and_defaults_declared_once():
    import argparse

    from grader.service import options
    from grader.service.command import add_serve_parser, run_serve

    parser = argparse.ArgumentParser()
    serve = add_serve_parser(parser.add_subparsers())
    args = parser.parse_args(["serve"])
    assert (args.appeal_limit, args.appeal_window) == (options.APPEAL_LIMIT, options.APPEAL_WINDOW)
    assert (options.ServiceOptions().appeal_limit, options.ServiceOptions().appeal_window) == (
        options.APPEAL_LIMIT,
        options.APPEAL_WINDOW,
    )
    text = " ".join(serve.format_help().split())
    assert "--appeal-limit N regrade requests per learner per --appeal-window (default: 5;" in text
    assert "--appeal-window S seconds of the regrade requests' limit window (default: 3600.0)" in text
    assert "regrade requests each learner may keep" in text  # --max-learner-bytes says they count
    for bad in (["--appeal-limit", "0"], ["--appeal-window", "0"]):
        with pytest.raises(SystemExit, match="--appeal-limit must be at least 1"):
            run_serve(parser.parse_args(["serve", *bad]))
