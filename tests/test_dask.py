"""The batch on a Dask cluster gives the same outputs as the local pool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from helpers import full_marks  # noqa: E402

from grader.batch import run_batch  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SOLUTION = REPO / "solutions" / "tools.py"
FULL = full_marks()  # the solution's score: every registered check's points


@pytest.fixture(scope="module")
def cluster():
    # Real worker processes (as on a cluster), each of which starts its own warm runner.
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    ) as local:
        yield local


def small_class(root: Path) -> Path:
    solution = SOLUTION.read_text()
    sources = {
        "ada": solution,
        "bea": solution.replace("if isinstance(value, bool) and expected is not bool:", "if False:"),
        "cy": solution.replace("    CACHE[key] = value\n", "    CACHE[key] = value\n    CACHE.clear()\n"),
        "dee": "def broken(:\n",
    }
    for learner, source in sources.items():
        (root / learner).mkdir(parents=True)
        (root / learner / "tools.py").write_text(source)
    return root


# A generous budget (10 s per step): on a loaded machine a tight one could time a
# step out in one run and not in the other, which is not what this test is about.
def test_dask_and_local_give_the_same_outputs(cluster, tmp_path):
    root = small_class(tmp_path / "class")
    local = run_batch(root, tmp_path / "local", jobs=2, seed=42, timeout=80, progress=False)
    on_dask = run_batch(
        root,
        tmp_path / "dask",
        executor="dask",
        scheduler=cluster.scheduler_address,
        seed=42,
        timeout=80,
        progress=False,
    )
    assert local.graded == on_dask.graded == 4

    for learner in ("ada", "bea", "cy", "dee"):  # first per learner: a difference names the check
        a = json.loads((tmp_path / "local" / "results" / f"{learner}.json").read_text())
        b = json.loads((tmp_path / "dask" / "results" / f"{learner}.json").read_text())
        assert [c for c in a["report"]["checks"] if c not in b["report"]["checks"]] == []
        assert a == b
    for name in ("grades.csv", "grades.json", "summary.md"):
        assert (tmp_path / "dask" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name

    book = (tmp_path / "dask" / "grades.csv").read_text().splitlines()
    scores = {line.split(",")[0]: line.split(",")[1:3] for line in book[1:]}
    assert scores["ada"][0] == scores["ada"][1]  # the solution: full marks
    assert int(scores["bea"][0]) < int(scores["ada"][0]) and int(scores["cy"][0]) < int(scores["ada"][0])
    assert scores["dee"][0] == "0"


def test_dask_resume_skips_on_the_cluster_too(cluster, tmp_path):
    root = small_class(tmp_path / "class")
    out = tmp_path / "out"
    first = run_batch(
        root, out, executor="dask", scheduler=cluster.scheduler_address, seed=1, timeout=80, progress=False
    )
    again = run_batch(
        root, out, executor="dask", scheduler=cluster.scheduler_address, resume=True, timeout=80, progress=False
    )
    assert (first.graded, again.graded, again.skipped, again.seed) == (4, 0, 4, 1)


# ---------------------------------------------------------------- the grading service on the cluster


def test_the_service_queue_grades_stored_attempts_on_the_cluster(cluster, tmp_path):
    """``agtool-grade serve --executor dask --scheduler ADDRESS``: the same queue, its tasks run by Dask workers."""
    import argparse

    from grader.service.command import add_serve_parser
    from grader.service.db import ERROR, GRADED, Store
    from grader.service.queue import GradingQueue

    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers())
    args = parser.parse_args(["serve", "--executor", "dask", "--scheduler", cluster.scheduler_address])
    store = Store(f"sqlite:///{tmp_path / 'service.sqlite'}")
    solution = SOLUTION.read_bytes()
    ids = [store.add_attempt("ana", solution, seed=5), store.add_attempt("ben", b"def broken(:\n", seed=6)]
    # Built as server.serve builds it from the options.
    queue = GradingQueue(store, jobs=args.jobs, sandbox=args.sandbox, executor=args.executor, scheduler=args.scheduler)
    with queue:
        late = store.add_attempt("ana", solution, seed=7)  # given while the queue runs
        queue.put(late)
        assert queue.wait_idle(240), "the Dask queue did not finish"
    ana, ben, again = (store.get(i) for i in (*ids, late))
    assert (ana.status, ana.score, ana.max_score) == (GRADED, FULL, FULL)
    assert json.loads(ana.report)["seed"] == 5
    assert ben.status == GRADED and ben.score == 0 and "SyntaxError" in json.loads(ben.report)["error"]
    assert (again.status, again.score) == (GRADED, FULL)
    assert store.unfinished() == [] and queue.finished_count == 3
    assert ERROR not in {a.status for a in (ana, ben, again)}
    store.close()
