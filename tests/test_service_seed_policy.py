"""Same code, same grade in the classroom service (/work design "seed policy").

With a seed key each attempt is graded twice: on the learner's hidden seed
(``grader.seeds.grading_seed``: the score that counts, the same for every
attempt) and on the fresh seed the learner is shown. The fake grader below
fails one check iff ``seed % 3 == 0``: a module whose verdict depends on the
seed, the unfairness the policy removes (one unchanged file scored 125, 120 and 122).
"""

from __future__ import annotations

import json
import os
import stat
import time

import pytest

from grader.seeds import SeedPlan
from grader.service.db import ERROR, GRADED, Store

LEARNER = "alice"  # a learner of the stand-in hub of tests/service_stand_ins.py
SOURCE = b"def search_stocks(query):\n    return []\n"
SHOWN_SEEDS = (3, 4, 5)  # one of them fails the seed-dependent check when it is the grading seed


def seedy_grade(submission, **kwargs):
    """A grade_fn for the workers: check ``step1/lucky`` fails iff ``seed % 3 == 0``; its ``got`` names the seed."""
    from grader.report import CheckResult, Report

    seed = kwargs["seed"]
    lucky = seed % 3 != 0
    checks = [
        CheckResult(id="step1/always", step=1, passed=True, points=2, max_points=2, title="always right"),
        CheckResult(
            id="step1/lucky",
            step=1,
            passed=lucky,
            points=1 if lucky else 0,
            max_points=1,
            title="right on some values",
            call=f"search_stocks('call-{seed}')",
            expected="[]",
            got="" if lucky else f"got-{seed}",
            hint=f"hint-{seed}",
        ),
    ]
    return Report(seed=seed, path=str(getattr(submission, "display", "tools.py")), checks=checks)


def counted_fails_grade(submission, **kwargs):
    """A grade_fn: the grading machinery fails on the seed in ``$AGTOOL_TEST_FAIL_SEED`` (the counted run) only."""
    from grader.report import Failure, FailureKind, Report

    if str(kwargs["seed"]) == os.environ["AGTOOL_TEST_FAIL_SEED"]:
        return Report(
            seed=kwargs["seed"],
            path="t.py",
            error="the grader failed: boom",
            failure=Failure(FailureKind.GRADER, "the grader failed: boom"),
        )
    return seedy_grade(submission, **kwargs)


def unlucky_key(learner: str = LEARNER) -> bytes:
    """A key whose grading seed for ``learner`` fails the seed-dependent check (the shown seeds 4, 5 pass)."""
    return next(k for k in (f"key-{n}".encode() for n in range(100)) if SeedPlan(key=k).grading(learner) % 3 == 0)


def _grade(store: Store, key: bytes | None, attempts, grade_fn=seedy_grade) -> list[int]:
    """Store ``attempts`` ((learner, bytes, shown seed)), grade them on one worker, return their ids."""
    from grader.service.queue import GradingQueue

    ids = [store.add_attempt(learner, source, seed=seed) for learner, source, seed in attempts]
    with GradingQueue(store, jobs=1, grade_fn=grade_fn, seed_key=key, regrade_delays=()) as queue:
        for attempt_id in ids:
            queue.put(attempt_id)
        assert queue.wait_idle(120)
    return ids


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """alice: the same bytes three times, then the same code with a comment, on the shown seeds 3, 4, 5, 7."""
    key = unlucky_key()
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('seed') / 's.sqlite'}")
    attempts = [(LEARNER, SOURCE, seed) for seed in SHOWN_SEEDS] + [(LEARNER, b"# my comment\n" + SOURCE, 7)]
    ids = _grade(store, key, attempts)
    yield store, key, ids
    store.close()


def test_the_same_bytes_get_one_counted_grade_whatever_seed_they_are_shown(graded):
    # Before: each attempt was graded on its own fresh seed, so the three scores were 2, 3, 3 and "best" took 3.
    store, key, ids = graded
    same = [store.get(i) for i in ids[:3]]
    assert [a.seed for a in same] == list(SHOWN_SEEDS)
    shown = [json.loads(a.report)["score"] for a in same]
    assert shown == [2, 3, 3]  # the module's verdict does depend on the seed it is shown
    assert all(a.status == GRADED for a in same)
    assert {a.score for a in same} == {2}, "resubmitting unchanged bytes changed the grade that counts"
    failed = {tuple(c["id"] for c in json.loads(a.counted_report)["checks"] if not c["passed"]) for a in same}
    assert failed == {("step1/lucky",)}
    assert {json.loads(a.counted_report)["seed"] for a in same} == {SeedPlan(key=key).grading(LEARNER)}


def test_a_comment_added_gets_the_same_counted_grade(graded):
    store, _key, ids = graded
    first, commented = store.get(ids[0]), store.get(ids[3])
    assert commented.sha256 != first.sha256 and commented.score == first.score == 2


def test_the_counted_run_is_the_instructor_s_record_and_resubmitting_cannot_raise_it(graded):
    from grader.course.policy import parse_policy
    from grader.service.app import class_data

    store, key, _ids = graded
    for policy in (None, parse_policy('[assignment]\ndue = 2099-01-01T00:00:00Z\ncounts = "best"\n')):
        _rows, records, _outputs = class_data(store, policy)
        (record,) = records
        assert record.score == 2 and record.seed == SeedPlan(key=key).grading(LEARNER)
        assert record.feedback_seed in SHOWN_SEEDS + (7,) and record.feedback_report["seed"] == record.feedback_seed


def _leaks(store: Store, key: bytes, text: str) -> list[str]:
    """What of the counted runs ``text`` shows: the grading seed's digits, a call, a value or a hint."""
    secret = [str(SeedPlan(key=key).grading(LEARNER))]
    for attempt in store.finished_of(LEARNER):
        for check in json.loads(store.get(attempt.id).counted_report)["checks"]:
            secret += [check[f] for f in ("call", "got", "hint") if check.get(f)]
    return [s for s in secret if s in text]


def test_no_learner_facing_response_shows_the_counted_seed_or_its_cases(graded):
    from service_stand_ins import FakeHub, Service

    store, key, ids = graded
    hub = FakeHub()
    svc = Service(store, hub)
    try:
        bodies = {}
        for path in (
            "api/submissions",
            *(f"api/submissions/{i}" for i in ids),
            "",
            "learners/alice",
            "learners/alice/feedback.md",
            "learners/alice/results.json",
        ):
            status, _headers, body = svc.request("GET", path, token="tok-alice")
            assert status == 200, (path, status, body[:300])
            bodies[path] = body.decode()
    finally:
        svc.stop()
        hub.stop()
    for path, body in bodies.items():
        assert not _leaks(store, key, body), f"{path} shows the counted run: {_leaks(store, key, body)}"
    # What the learner is told instead: which checks failed on the hidden cases, by id and title.
    detail = json.loads(bodies[f"api/submissions/{ids[1]}"])
    assert detail["score"] == 2 and detail["hidden_failed"] == [{"id": "step1/lucky", "title": "right on some values"}]
    assert "hidden cases that stay the same for every attempt" in bodies[""]


def test_the_key_file_is_made_private_on_the_first_start_and_read_at_the_next(tmp_path):
    from grader.service.command import KEY_FILE, seed_key

    first = seed_key(None, "", tmp_path)
    path = tmp_path / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert seed_key(None, "", tmp_path) == first == path.read_text().strip().encode()
    assert seed_key(str(path), "from-environment", tmp_path / "other") == first  # the file given wins
    assert seed_key(None, "from-environment", tmp_path) == b"from-environment"


def test_a_different_key_is_refused_at_start(tmp_path):
    from grader.service.queue import GradingQueue, KeyChanged

    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    _grade(store, b"key-one", [(LEARNER, SOURCE, 4)])
    changed = GradingQueue(store, jobs=1, grade_fn=seedy_grade, seed_key=b"key-two")
    try:
        with pytest.raises(KeyChanged, match="the seed key changed"):
            changed.start()
    finally:
        changed.stop()
    GradingQueue(store, jobs=1, grade_fn=seedy_grade, seed_key=b"key-one").start().stop()  # the same key starts
    store.close()


def test_a_keyed_batch_regrade_of_the_counting_attempts_gives_the_service_s_scores(graded, tmp_path):
    from grader.batch.records import load_records
    from grader.batch.run import run_batch
    from grader.service.app import class_data

    store, key, _ids = graded
    (record,) = class_data(store)[1]
    folder = tmp_path / "class" / LEARNER
    folder.mkdir(parents=True)
    (folder / "tools.py").write_bytes(store.sources([record.attempt])[record.attempt])
    key_file = tmp_path / "seed.key"
    key_file.write_text(key.decode() + "\n")
    from grader.cli import _read_key  # what `agtool-grade batch --seed-key-file` reads

    run_batch(
        tmp_path / "class", tmp_path / "out", jobs=1, grade_fn=seedy_grade, progress=False, seed_key=_read_key(key_file)
    )
    (batch,) = load_records(tmp_path / "out")
    assert (batch.seed, batch.score) == (record.seed, record.score)


def test_a_grader_failure_in_either_run_is_an_error_never_a_zero(tmp_path, monkeypatch):
    from grader.service.queue import status_of_runs

    failed = {"failure": {"kind": "grader", "message": "the grading process died"}}
    assert status_of_runs({"feedback": failed, "grade": {}}) == ERROR
    assert status_of_runs({"feedback": {}, "grade": failed}) == ERROR
    assert status_of_runs({"feedback": {}, "grade": {}}) == GRADED
    key = b"key-fail"
    monkeypatch.setenv("AGTOOL_TEST_FAIL_SEED", str(SeedPlan(key=key).grading(LEARNER)))
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    (attempt_id,) = _grade(store, key, [(LEARNER, SOURCE, 4)], grade_fn=counted_fails_grade)
    got = store.get(attempt_id)
    assert got.status == ERROR and got.score is None  # the shown run passed; the counted one is graded again
    store.close()


def test_attempts_graded_before_the_key_are_queued_for_their_counted_run(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    (old,) = _grade(store, None, [(LEARNER, SOURCE, 4)])  # no key: the shown run is all there is
    assert store.get(old).counted_report is None and store.get(old).score == 3
    key = unlucky_key()
    _grade(store, key, [])
    deadline = time.monotonic() + 60
    while store.get(old).status != GRADED and time.monotonic() < deadline:
        time.sleep(0.05)
    got = store.get(old)
    assert got.counted_report is not None and got.score == 2 and got.seed == 4
    store.close()


def test_submit_keeps_waiting_while_an_attempt_is_graded_again_and_shows_the_counted_grade(monkeypatch):
    # Before: submit() stopped at the first `error` answer, though the service grades such an attempt again.
    from agtool_lab import submit as service
    from grader.service.db import REGRADING

    env = {service.SERVICE_URL_ENV: "http://hub/services/agtool-grader/", service.TOKEN_ENV: "token"}
    error = {"id": 1, "status": "error", "note": REGRADING, "score": None, "max_score": None, "report": None}
    shown = seedy_grade(None, seed=4).to_dict()
    graded = {
        "id": 1,
        "status": "graded",
        "score": 2,
        "max_score": 3,
        "report": shown,
        "hidden_failed": [{"id": "step1/lucky", "title": "right on some values"}],
    }
    answers = iter([error, error, graded])
    monkeypatch.setattr(service, "POLL", 0.01)
    monkeypatch.setattr(service, "_request", lambda *args, **kwargs: next(answers))
    assert service.wait_for(1, env=env, timeout=30)["status"] == GRADED
    html = service.attempt_html(graded)
    assert "2/3 points" in html and "step1/lucky" in html and "hidden cases" in html  # the counted grade, not 3/3
    monkeypatch.setattr(service, "_request", lambda *args, **kwargs: error)
    late = service.wait_for(1, env=env, timeout=0.1)  # bounded: after the timeout the note is what is shown
    assert late["status"] == ERROR and "being graded again" in service.attempt_html(late)
