"""Grade mutant sources with the real grader, in this process or in a pool of worker processes.

Each mutant is graded on every seed of a pair with ``grader.grading.grade``,
from its bytes (a ``Submission``) when the grader takes one, else from a
``tools.py`` written to a temporary folder. What comes back is plain data:
the failing steps and checks per seed.

>>> outcome = grade_source(SOLUTION_TEXT, "solutions/tools.py", 11, steps=[1])  # doctest: +SKIP
>>> outcome["failed_steps"]  # doctest: +SKIP
[]
"""

from __future__ import annotations

import functools
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from grader.grading import grade

from .mutator import SOLUTION, Mutant, generate  # noqa: F401 (generate: the examples)

SOLUTION_TEXT = SOLUTION.read_text(encoding="utf-8")
TESTS = Path(__file__).resolve().parents[1]


def _submission_class():
    # Another change moves Submission to grader.submission; before it, grader.locate holds it.
    try:
        from grader.submission import Submission
    except ImportError:
        try:
            from grader.locate import Submission
        except ImportError:
            return None
    return Submission


def grade_source(source: str, name: str, seed: int, *, steps=None, parallel: int = 1) -> dict:
    """Grade ``source`` as a ``tools.py`` on ``seed``: the failing steps and check ids, score and failure kind.

    >>> grade_source(SOLUTION_TEXT, "solutions/tools.py", 11, steps=[2])["failed_steps"]  # doctest: +SKIP
    []
    """
    if steps is not None and not steps:  # no step reaches the change: every step is the solution's
        whole = full_marks()
        return {
            "seed": seed,
            "failed_steps": [],
            "failed_checks": [],
            "score": whole,
            "max_score": whole,
            "failure": "",
            "elapsed": 0.0,
            "steps": [],
        }
    submission_class = _submission_class()
    if submission_class is not None:
        report = grade(
            submission_class(source=source.encode("utf-8"), name=name), steps=steps, seed=seed, parallel=parallel
        )
    else:
        with tempfile.TemporaryDirectory(prefix="mutant-") as folder:
            path = Path(folder) / "tools.py"
            path.write_text(source, encoding="utf-8")
            report = grade(str(path), steps=steps, seed=seed, parallel=parallel)
    failed = [c for c in report.checks if not c.passed]
    outcome = {
        "seed": seed,
        "failed_steps": sorted({c.step for c in failed}),
        "failed_checks": sorted(c.id for c in failed),
        "score": report.score,
        "max_score": report.max_score,
        "failure": report.failure.kind.value if report.failure else "",
        "elapsed": report.elapsed,
    }
    if steps is not None:  # the other steps are the solution's (tests/mutation/reach.py): full marks
        whole = full_marks()
        outcome.update(steps=sorted(steps), score=whole - (report.max_score - report.score), max_score=whole)
    return outcome


@functools.lru_cache(maxsize=1)
def full_marks() -> int:
    """The points of every check (the solution's score on any seed): ``tests/helpers.py``'s, read once.

    >>> full_marks() > 100
    True
    """
    if str(TESTS) not in sys.path:  # the gate runs as ``python -m tests.mutation``; pytest has tests/ on the path
        sys.path.insert(0, str(TESTS))
    from helpers import full_marks as every_point

    return every_point()


def grade_mutant(mutant: Mutant, seeds: tuple[int, ...], parallel: int = 1, steps: list[int] | None = None) -> dict:
    """One mutant graded on every seed: ``{"id", "seconds", "seeds": [grade_source(...), ...], "error"}``.

    ``steps``: grade only these (the steps whose probes reach the change, ``tests/mutation/reach.py``).

    >>> grade_mutant(generate(SOLUTION_TEXT)[0], (11, 22))["seeds"][0]["failed_steps"]  # doctest: +SKIP
    [1]
    """
    started = time.monotonic()
    name = f"mutants/{mutant.id.replace(':', '_')}/tools.py"
    try:
        per_seed = [grade_source(mutant.source, name, seed, steps=steps, parallel=parallel) for seed in seeds]
        error = ""
    except Exception as exc:  # a grader crash is a finding about the grader, not the end of the run
        per_seed, error = [], f"{type(exc).__name__}: {exc}"
    return {"id": mutant.id, "seconds": round(time.monotonic() - started, 3), "seeds": per_seed, "error": error}


def grade_all(
    mutants: Iterable[Mutant],
    seeds: tuple[int, ...],
    *,
    jobs: int = 2,
    progress: Callable[[dict], None] | None = None,
    steps: dict[str, list[int]] | None = None,
) -> dict[str, dict]:
    """Every mutant graded on ``seeds``, ``jobs`` at a time (worker processes; 1 grades here).

    Each worker grades one step process at a time, so ``jobs`` is the number of busy cores.
    ``steps``: the steps to grade, per mutant id (default: every step).

    >>> grade_all(generate(SOLUTION_TEXT)[:2], (11, 22), jobs=2).keys()  # doctest: +SKIP
    dict_keys(['REGIONS:0:item_drop:0', 'REGIONS:0:item_drop:1'])
    """
    mutants = list(mutants)
    chosen = [None if steps is None else steps[m.id] for m in mutants]
    results: dict[str, dict] = {}
    if jobs <= 1:
        for mutant, mutant_steps in zip(mutants, chosen):
            results[mutant.id] = _reported(grade_mutant(mutant, seeds, steps=mutant_steps), progress)
        return results
    # spawn: a worker must not inherit this process's engine client or its threads.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for done in pool.map(grade_mutant, mutants, [seeds] * len(mutants), [1] * len(mutants), chosen, chunksize=1):
            results[done["id"]] = _reported(done, progress)
    return results


def _reported(done: dict, progress: Callable[[dict], None] | None) -> dict:
    if progress is not None:
        progress(done)
    return done
