"""The classroom grading service (grader/service): storage, the queue, and the API behind a real JupyterHub.

The storage and queue tests run against SQLite and, when
``$AGTOOL_TEST_POSTGRES_URL`` is set (``.ci/run`` starts a PostgreSQL and sets
it), against PostgreSQL too; under ``$CI`` a missing PostgreSQL fails instead
of skipping. The API tests (marked ``e2e``) start JupyterHub with
configurable-http-proxy, two learners and one instructor, and the service as
an external hub service, so that the test can kill and restart it.
"""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from grader.service.db import ERROR, GRADED, GRADING, QUEUED, Store

REPO = Path(__file__).resolve().parents[1]
SOLUTION = (REPO / "solutions" / "tools.py").read_bytes()
STARTER = (REPO / "agtool" / "tools.py").read_bytes()
GRADE_LOG_ENV = "AGTOOL_TEST_GRADE_LOG"


def counting_grade(path, **kwargs):
    """``grader.grading.grade``, and one line per call in ``$AGTOOL_TEST_GRADE_LOG`` (runs in the workers)."""
    from grader.grading import grade

    with open(os.environ[GRADE_LOG_ENV], "a") as log:
        log.write(Path(path).parent.name + "\n")  # grade_task grades <tmp>/<learner>/tools.py
    return grade(path, **kwargs)


# ---------------------------------------------------------------------------- databases

def _postgres_url() -> "str | None":
    url = os.environ.get("AGTOOL_TEST_POSTGRES_URL")
    if not url and os.environ.get("CI"):
        pytest.fail("AGTOOL_TEST_POSTGRES_URL is not set under CI: .ci/run must start PostgreSQL", pytrace=False)
    return url


def _empty_postgres(url: str) -> str:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as conn:  # each test starts from no schema: the migration creates it
        conn.execute(text("DROP TABLE IF EXISTS attempts"))
        conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
    engine.dispose()
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A fresh, empty database URL: an SQLite file, or the test PostgreSQL emptied."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'service.sqlite'}"
    url = _postgres_url()
    if not url:
        pytest.skip("set AGTOOL_TEST_POSTGRES_URL=postgresql+psycopg://user:pw@host/db to run on PostgreSQL")
    return _empty_postgres(url)


def test_an_attempt_is_stored_with_its_bytes_hash_and_seed(db_url):
    store = Store(db_url)
    attempt_id = store.add_attempt("ana", b"\xff not utf-8\n", seed=123456)
    got = store.get(attempt_id)
    assert (got.learner, got.source, got.seed, got.status) == ("ana", b"\xff not utf-8\n", 123456, QUEUED)
    assert got.sha256 == __import__("hashlib").sha256(b"\xff not utf-8\n").hexdigest()
    store.close()


def test_migrations_run_again_on_an_existing_database_without_losing_attempts(db_url):
    first = Store(db_url)
    attempt_id = first.add_attempt("ana", b"x = 1\n", seed=1)
    first.close()
    again = Store(db_url)  # a restart: upgrade to head is a no-op
    assert again.get(attempt_id).source == b"x = 1\n"
    again.close()


def test_a_report_is_stored_once_and_only_for_an_unfinished_attempt(db_url):
    store = Store(db_url)
    attempt_id = store.add_attempt("ana", b"x = 1\n", seed=1)
    assert store.claim(attempt_id)
    assert store.get(attempt_id).status == GRADING
    assert store.finish(attempt_id, GRADED, {"score": 3, "max_score": 5})
    assert not store.finish(attempt_id, GRADED, {"score": 5, "max_score": 5})  # a second grading loses
    assert not store.claim(attempt_id)
    assert (store.get(attempt_id).score, store.unfinished()) == (3, [])
    with pytest.raises(ValueError):
        store.finish(attempt_id, QUEUED, {})
    store.close()


def test_a_learner_s_attempts_are_listed_newest_first_and_counted_for_the_rate_limit(db_url):
    import datetime as dt

    store = Store(db_url)
    ids = [store.add_attempt("ana", b"%d" % i, seed=i) for i in range(3)]
    store.add_attempt("ben", b"b", seed=9)
    assert [a.id for a in store.attempts_of("ana")] == ids[::-1]
    assert store.count_since("ana", dt.datetime(2000, 1, 1)) == 3
    assert store.count_since("ana", dt.datetime(2999, 1, 1)) == 0
    store.close()


def test_a_restart_grades_every_stored_unfinished_attempt_exactly_once(db_url, tmp_path, monkeypatch):
    from grader.service.queue import GradingQueue

    grade_log = tmp_path / "graded.txt"
    grade_log.touch()
    monkeypatch.setenv(GRADE_LOG_ENV, str(grade_log))
    store = Store(db_url)
    # What a killed service leaves: attempts stored but never graded, one cut off while grading,
    # and one graded before the crash (which must not be graded again).
    queued = [store.add_attempt(f"learner{i}", SOLUTION, seed=i) for i in range(3)]
    cut_off = store.add_attempt("cut", STARTER, seed=5)
    store.claim(cut_off)
    done = store.add_attempt("done", SOLUTION, seed=6)
    store.claim(done)
    store.finish(done, GRADED, {"score": 1, "max_score": 133})

    queue = GradingQueue(store, jobs=2, grade_fn=counting_grade)
    queue.put(queued[0])  # queued twice (a submit racing the start): still graded once
    with queue:
        queue.put(queued[0])
        assert queue.wait_idle(180), "the queue did not finish"
    graded = sorted(grade_log.read_text().split())
    assert graded == sorted(["learner0", "learner1", "learner2", "cut"])
    for attempt_id in queued:
        a = store.get(attempt_id)
        assert (a.status, a.score, a.max_score) == (GRADED, 133, 133)
        assert json.loads(a.report)["seed"] == a.seed
    cut = store.get(cut_off)
    assert cut.status == GRADED and cut.score < cut.max_score  # the starter fails checks: graded, not error
    assert store.get(done).score == 1
    assert store.unfinished() == []
    store.close()


def test_a_worker_that_dies_costs_its_attempt_an_error_status_not_the_queue(tmp_path):
    from grader.service.queue import GradingQueue

    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    dies = store.add_attempt("ana", b"x", seed=1)
    fine = store.add_attempt("ben", SOLUTION, seed=2)
    with GradingQueue(store, jobs=1, grade_fn=_die_for_ana) as queue:
        assert queue.wait_idle(120)
    assert store.get(dies).status == ERROR
    assert "died" in json.loads(store.get(dies).report)["error"]
    assert (store.get(fine).status, store.get(fine).score) == (GRADED, 133)
    store.close()


def _die_for_ana(path, **kwargs):
    if Path(path).parent.name == "ana":
        os._exit(9)  # the worker process dies, as a grader crash or an OOM kill would
    from grader.grading import grade

    return grade(path, **kwargs)
