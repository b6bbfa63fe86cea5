"""One refactoring run: generate, grade every rewrite and every base on three seeds, judge, write.

Grading is the mutation runner's (``tests/mutation/runner.py``): the real
``grader.grading.grade`` on the module's bytes, one worker process per job
(spawned, as there). What comes back here also keeps each failed check's
message, and a base of steps 1-8 is graded on steps 1-8 only.

The bases themselves are graded too, as the control, each as written and as
``ast.unparse`` writes it: a check a rewrite fails that its base fails on the
same seed is a finding about the base (or the grader's state), not about the
rewrite; the gate fails on both.

>>> run(limit=0, out=None, bases_too=False)["summary"]["graded"]  # doctest: +SKIP
0
"""

from __future__ import annotations

import importlib
import multiprocessing
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .bases import bases
from .rewrites import KINDS, Rewrite, generate

SEEDS = (11, 22, 33)
MIN_REWRITES = 300


def _mutation(name: str):
    # tests/mutation is a sibling package: tests.mutation from the command line, mutation under pytest.
    try:
        return importlib.import_module(f"..mutation.{name}", __package__)
    except (ImportError, ValueError, TypeError):
        return importlib.import_module(f"mutation.{name}")


def _runner():
    return _mutation("runner")


def grade_text(source: str, name: str, seed: int, steps: tuple[int, ...] | None) -> dict:
    """Grade ``source`` as a ``tools.py`` on ``seed`` (``steps``: ``None`` for all): the score and every
    failed check with its message (as ``tests/mutation/runner.grade_source``, plus the messages)."""
    from grader.grading import grade

    submission_class = _runner()._submission_class()
    steps = list(steps) if steps else None
    if submission_class is not None:
        report = grade(submission_class(source=source.encode("utf-8"), name=name), steps=steps, seed=seed, parallel=1)
    else:  # an older grader: from a file
        import tempfile

        with tempfile.TemporaryDirectory(prefix="rewrite-") as folder:
            path = Path(folder) / "tools.py"
            path.write_text(source, encoding="utf-8")
            report = grade(str(path), steps=steps, seed=seed, parallel=1)
    failed = [c for c in report.checks if not c.passed]
    return {
        "seed": seed,
        "score": report.score,
        "max_score": report.max_score,
        "failure": report.failure.kind.value if report.failure else "",
        "failed": [{"id": c.id, "message": c.message, "got": c.got, "call": c.call} for c in failed],
        "elapsed": report.elapsed,
    }


def grade_rewrite(rewrite: Rewrite, seeds: tuple[int, ...]) -> dict:
    """One rewrite (or base) graded on every seed: ``{"id", "seconds", "seeds": [grade_text(...)], "error"}``."""
    started = time.monotonic()
    name = f"rewrites/{rewrite.id.replace(':', '_').replace('/', '_')}/tools.py"
    try:
        per_seed = [grade_text(rewrite.source, name, seed, rewrite.steps) for seed in seeds]
        error = ""
    except Exception as exc:  # a grader crash is a finding about the grader, not the end of the run
        per_seed, error = [], f"{type(exc).__name__}: {exc}"
    return {"id": rewrite.id, "seconds": round(time.monotonic() - started, 3), "seeds": per_seed, "error": error}


def grade_all(
    rewrites: Iterable[Rewrite],
    seeds: tuple[int, ...],
    *,
    jobs: int = 2,
    progress: Callable[[dict], None] | None = None,
    seeds_of: dict[str, tuple[int, ...]] | None = None,
) -> dict[str, dict]:
    """Every rewrite graded on ``seeds`` (or its own, ``seeds_of[id]``), ``jobs`` at a time (1 grades here)."""
    rewrites = list(rewrites)
    own = [tuple((seeds_of or {}).get(rewrite.id, seeds)) for rewrite in rewrites]
    reported = _runner()._reported
    results: dict[str, dict] = {}
    if jobs <= 1:
        for rewrite, its_seeds in zip(rewrites, own):
            results[rewrite.id] = reported(grade_rewrite(rewrite, its_seeds), progress)
        return results
    # spawn: a worker must not inherit this process's engine client or its threads.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for done in pool.map(grade_rewrite, rewrites, own, chunksize=1):
            results[done["id"]] = reported(done, progress)
    return results


def controls(names: Iterable[str]) -> list[Rewrite]:
    """Each named base twice, as rows of kind ``base``: as written, and as ``ast.unparse`` writes it (every
    rewrite's text is unparsed: if that alone lost a point, every rewrite would)."""
    from .astkit import parse, unparse

    every, rows = bases(), []
    for name in names:
        base = every[name]
        rows.append(Rewrite(f"{name}:base:as_written", name, "base", "as_written", base.steps, base.text))
        rows.append(Rewrite(f"{name}:base:unparsed", name, "base", "unparsed", base.steps, unparse(parse(base.text))))
    return rows


def sample(rewrites: list[Rewrite], limit: int | None) -> list[Rewrite]:
    """The first ``limit`` rewrites taken in turn from each kind (all of them without a limit).

    >>> rows = [Rewrite(f"b:{k}:{i}", "b", k, str(i), None, "") for k in "xy" for i in range(3)]
    >>> [r.id for r in sample(rows, 3)]
    ['b:x:0', 'b:y:0', 'b:x:1']
    """
    if limit is None:
        return rewrites
    by_kind: dict[str, list[Rewrite]] = {}
    for rewrite in rewrites:
        by_kind.setdefault(rewrite.kind, []).append(rewrite)
    taken, lists = [], list(by_kind.values())
    for turn in range(max((len(v) for v in lists), default=0)):
        taken += [v[turn] for v in lists if turn < len(v)]
    return taken[:limit]


def select(
    *,
    limit: int | None = None,
    ids: list[str] | None = None,
    base_names: list[str] | None = None,
    kinds: list[str] | None = None,
) -> tuple[list[Rewrite], list[Rewrite]]:
    """``(every rewrite generated, the ones to grade)``: by id, base or kind, then ``limit`` of them."""
    everything = generate(jobs=2)
    chosen = everything
    if base_names:
        chosen = [r for r in chosen if r.base in set(base_names)]
    if kinds:
        chosen = [r for r in chosen if r.kind in set(kinds)]
    if ids:
        chosen = [r for r in chosen if r.id in set(ids)]
    return everything, sample(chosen, limit)


def run(
    *,
    limit: int | None = None,
    ids: list[str] | None = None,
    base_names: list[str] | None = None,
    kinds: list[str] | None = None,
    seeds: tuple[int, ...] = SEEDS,
    jobs: int = 2,
    out: str | Path | None = None,
    bases_too: bool = True,
    progress: Callable[[dict], None] | None = None,
    seeds_each: int | None = None,
) -> dict:
    """Grade the selected rewrites (and their bases) on ``seeds``; ``{"summary", "rows", "verdict"}``, written to
    ``out`` (``summary.json``, ``summary.md``).

    ``seeds_each``: each rewrite on that many of ``seeds``, picked by its id as the stability sweep picks a
    module's (``tests/mutation/stability.rotating_seeds``), so the rewrites together meet every seed; the
    bases, the control, on all of them.
    """
    from .gate import judge

    started = time.monotonic()
    tree = _tree_state()
    everything, chosen = select(limit=limit, ids=ids, base_names=base_names, kinds=kinds)
    generated_seconds = round(time.monotonic() - started, 1)
    base_rows = controls(sorted({r.base for r in chosen}, key=list(bases()).index)) if bases_too else []
    rotating_seeds, pool = _mutation("stability").rotating_seeds, tuple(seeds)
    seeds_of = {r.id: rotating_seeds(r.id, min(seeds_each, len(pool)), pool) for r in chosen} if seeds_each else None
    graded = grade_all([*base_rows, *chosen], tuple(seeds), jobs=jobs, progress=progress, seeds_of=seeds_of)
    rows = [_row(r, graded[r.id]) for r in [*base_rows, *chosen]]
    seconds = round(time.monotonic() - started, 1)
    verdict = judge(rows, generated=len(everything), minimum=MIN_REWRITES)
    summary = {
        "generated": len(everything),
        "graded": len(chosen),
        "minimum": MIN_REWRITES,
        "generated_by_kind": dict(Counter(r.kind for r in everything)),
        "generated_by_base": dict(Counter(r.base for r in everything)),
        "kinds": list(KINDS),
        "seeds": list(seeds),
        "seeds_each": seeds_each or len(seeds),
        "jobs": jobs,
        "seconds": seconds,
        "generation_seconds": generated_seconds,
        "tree": tree,
        "seconds_per_rewrite": round(seconds / len(rows), 2) if rows else 0.0,
        **verdict.summary(),
    }
    if out is not None:
        from .outputs import write_outputs

        write_outputs(out, summary, rows)
    return {"summary": summary, "rows": rows, "verdict": verdict}


def _tree_state() -> str:
    try:
        from ..mutation.outputs import tree_state
    except (ImportError, ValueError):
        from mutation.outputs import tree_state
    return tree_state()


def _row(rewrite: Rewrite, graded: dict) -> dict:
    """A graded rewrite as plain data; ``lost``: each seed's failed checks when it lost a point there."""
    lost = []
    for outcome in graded["seeds"]:
        if outcome["score"] < outcome["max_score"] or outcome["failure"] or outcome["failed"]:
            lost.append(
                {
                    "seed": outcome["seed"],
                    "score": outcome["score"],
                    "max_score": outcome["max_score"],
                    "failure": outcome["failure"],
                    "failed": outcome["failed"],
                }
            )
    return {
        "id": rewrite.id,
        "base": rewrite.base,
        "kind": rewrite.kind,
        "variant": rewrite.variant,
        "steps": list(rewrite.steps) if rewrite.steps else "all",
        "seeds": [s["seed"] for s in graded["seeds"]],
        "scores": [f"{s['score']}/{s['max_score']}" for s in graded["seeds"]],
        "lost": lost,
        "error": graded["error"],
        "seconds": graded["seconds"],
    }
