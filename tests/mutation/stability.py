"""Same code, same grade: each module of the corpora fails the same checks on every one of 20 seeds.

The corpora: the reference solution, every ``tests/alt_styles`` module, every
planted defect (``DEFECTS``: one per check) and every plausible mistake
(``MORE_DEFECTS``, with ``tests/defects/mistakes/``). Each is graded on
:data:`SEEDS` the way a class batch grades (:mod:`grader.batch`: its worker
pool, warm fork servers, ``grade_task`` on the module's bytes, the batch's
time budget), and a module is **unstable** when the set of checks it fails
is not the same on every seed. The seed may change the values a check draws,
never whether a mistake is seen.

``python -m tests.mutation.stability [--jobs 2] [--seeds 20] [--only NAME]...``
(``make stability``) prints each unstable module with the seeds of each
outcome, the counts and the time, writes ``stability.json`` into ``--out``,
and exits 1 when a module is unstable; ``tests/test_stability.py`` asserts the
same per module.

>>> outcomes = {"m": {1: ("step2/x",), 2: ("step2/x",), 3: ()}, "ok": {1: (), 2: ()}}
>>> unstable(outcomes)
{'m': {'step2/x': [1, 2], '(none)': [3]}}
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
SEEDS = tuple(range(1, 21))
CORRECT_PREFIXES = ("solution", "alt_styles/")  # the modules that must also get full marks
PART_TWO_STYLES = ("aaa", "bbb", "aba", "bab", "abb", "baa")  # tests/alt_styles/part_two: each step's two styles, mixed


def rotating_seeds(name: str, count: int, pool: tuple[int, ...] = SEEDS) -> tuple[int, ...]:
    """``count`` seeds of ``pool`` picked by the module's name: the same every run, different module to module.

    A module graded on a few seeds is judged on those; across a corpus, every
    seed of the pool is graded, so a check that draws badly on one seed is met
    by some module of it.

    >>> rotating_seeds("mistake/x", 2) == rotating_seeds("mistake/x", 2), len(set(rotating_seeds("m", 3)))
    (True, 3)
    >>> len({rotating_seeds(f"m{i}", 2, SEEDS[:10]) for i in range(40)}) > 10
    True
    """
    rng = random.Random(hashlib.sha256(name.encode("utf-8")).digest())
    return tuple(sorted(rng.sample(pool, count)))


def corpus() -> dict[str, bytes]:
    """Every module of the corpora by name: ``solution``, ``alt_styles/<stem>``, ``defect/<id>``, ``mistake/<name>``.

    A defect or mistake whose edits no longer apply to the solution is left
    out here and named by :func:`unplantable`.

    >>> names = list(corpus()); names[0], sum(n.startswith("defect/") for n in names) >= 80
    ('solution', True)
    """
    return {name: text.encode("utf-8") for name, text in _texts().items() if not isinstance(text, Exception)}


def unplantable() -> dict[str, str]:
    """The defects and mistakes whose edits do not apply to the solution (an anchor not found once), with why.

    >>> isinstance(unplantable(), dict)
    True
    """
    return {name: str(text) for name, text in _texts().items() if isinstance(text, Exception)}


def _texts() -> dict[str, str | AssertionError]:
    catalog = _catalog()
    solution = catalog.SOLUTION.read_text(encoding="utf-8")
    texts: dict[str, str | AssertionError] = {"solution": solution}
    texts.update(
        {f"alt_styles/{p.stem}": p.read_text(encoding="utf-8") for p in sorted((TESTS / "alt_styles").glob("*.py"))}
    )
    import test_part_two_styles as part_two  # steps 1-8 of the solution with other styles of steps 9-11

    texts.update({f"alt_styles/part_two/{styles}": part_two.composed_text(styles) for styles in PART_TWO_STYLES})
    for check_id in sorted(catalog.DEFECTS):
        texts[f"defect/{check_id}"] = _planted(solution, catalog.DEFECTS[check_id].edits)
    for name in sorted(catalog.MORE_DEFECTS):
        texts[f"mistake/{name}"] = _planted(solution, catalog.MORE_DEFECTS[name][1].edits)
    styled = _styled()  # mistakes built on the correct modules of other styles (tests/defects/styled.py)
    for name in sorted(styled.STYLED_MISTAKES):
        try:
            texts[f"styled/{name}"] = styled.materialise_styled(name)
        except AssertionError as exc:
            texts[f"styled/{name}"] = exc
    return texts


def expected_failure(name: str) -> str | None:
    """The check a defect or mistake must fail on every seed (``None`` for a correct module).

    >>> expected_failure("defect/step2/extra"), expected_failure("solution")
    ('step2/extra', None)
    """
    kind, _, rest = name.partition("/")
    if kind == "defect":
        return rest
    if kind == "mistake":
        return _catalog().MORE_DEFECTS[rest][0]
    if kind == "styled":
        return _styled().STYLED_MISTAKES[rest][1]
    return None


def _catalog():
    # tests/defects imports by plain name (pytest's pythonpath is tests/); so does this, from the command line too.
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    import defects.catalog

    return defects.catalog


def _styled():
    _catalog()  # puts tests/ on the import path
    import defects.styled

    return defects.styled


def _planted(text: str, edits) -> str | AssertionError:
    # Every anchor must occur once (as tests/defects/catalog.py requires); else the error, kept for the report.
    for anchor, replacement in edits:
        if text.count(anchor) != 1:
            return AssertionError(f"anchor occurs {text.count(anchor)} times in the solution: {anchor!r}")
        text = text.replace(anchor, replacement)
    return text


def outcome(report: dict) -> tuple[str, ...]:
    """What a report says about the module: the failed check ids, and the failure's kind when grading failed.

    >>> outcome({"checks": [{"id": "step2/x", "passed": False}, {"id": "step1/y", "passed": True}], "failure": None})
    ('step2/x',)
    >>> outcome({"checks": [], "failure": {"kind": "time"}})
    ('failure:time',)
    """
    failed = sorted(c["id"] for c in report["checks"] if not c["passed"])
    failure = report.get("failure") or {}
    return tuple(failed + ([f"failure:{failure['kind']}"] if failure.get("kind") else []))


def grade_corpus(
    modules: dict[str, bytes],
    seeds: tuple[int, ...] = SEEDS,
    *,
    jobs: int = 2,
    progress: Callable[[str, int], None] | None = None,
    steps: dict[str, list[int]] | None = None,
    seeds_of: dict[str, tuple[int, ...]] | None = None,
) -> dict[str, dict[int, tuple[str, ...]]]:
    """Every module graded on every seed in the batch's worker pool: ``{name: {seed: outcome}}``.

    ``steps``: the steps to grade, by module name (default, and for a name it
    does not hold: every step); a module with none is the solution on those
    seeds (tests/mutation/reach.py), graded nowhere and failing nothing.
    ``seeds_of``: the seeds of a module, by name (default, and for a name it
    does not hold: ``seeds``), each one of ``seeds``.

    >>> grade_corpus({"solution": (ROOT / "solutions/tools.py").read_bytes()}, (1, 2))  # doctest: +SKIP
    {'solution': {1: (), 2: ()}}
    """
    from grader.batch.pool import run_pool
    from grader.batch.run import GRACE
    from grader.batch.task import GradeTask, grade_task, step_timeout
    from grader.limits import SUBMISSION_TIMEOUT
    from grader.report import STEPS

    chosen = steps or {}
    own = seeds_of or {}
    tasks = [
        GradeTask(
            learner=name,
            display=f"{name}/tools.py",
            source=source,
            sha256="",
            seed=seed,
            steps=None if chosen.get(name) is None else tuple(chosen[name]),
            timeout=step_timeout(SUBMISSION_TIMEOUT, len(STEPS)),
        )
        # Seed by seed: a worker draws a step's probes once per seed and keeps only the last few seeds'
        # plans (grader.grading._draw_plan), so module by module it drew them again on every grading.
        for seed in seeds
        for name, source in modules.items()
        if chosen.get(name) != [] and seed in own.get(name, seeds)
    ]
    results: dict[str, dict[int, tuple[str, ...]]] = {
        name: {seed: () for seed in own.get(name, seeds)} if chosen.get(name) == [] else {} for name in modules
    }
    limit = SUBMISSION_TIMEOUT + GRACE
    for task, report in run_pool(tasks, jobs=jobs, hard_limit=limit, work=grade_task, on_lost=_lost):
        results[task.learner][task.seed] = outcome(report)
        if progress is not None:
            progress(task.learner, task.seed)
    return results


def _lost(task, timed_out: bool) -> dict:
    """The report of a grading whose batch worker died or ran over the batch's budget (and was killed)."""
    from grader.batch.task import failed_report

    kind = "time" if timed_out else "grader"
    return failed_report(task.seed, task.display, f"batch worker lost ({kind})", kind=kind).to_dict()


def unstable(results: dict[str, dict[int, tuple[str, ...]]]) -> dict[str, dict[str, list[int]]]:
    """The modules whose outcome differs between seeds: ``{name: {outcome as text: [seeds]}}``."""
    found = {}
    for name, per_seed in results.items():
        if len(set(per_seed.values())) > 1:
            groups: dict[str, list[int]] = {}
            for seed, failed in sorted(per_seed.items()):
                groups.setdefault(", ".join(failed) or "(none)", []).append(seed)
            found[name] = groups
    return found


def varying(per_seed: dict[int, tuple[str, ...]]) -> dict[str, list[int]]:
    """The checks failed on some seeds and not on others, each with the seeds it failed on.

    >>> varying({1: ("a", "b"), 2: ("a",), 3: ("a", "b")})
    {'b': [1, 3]}
    """
    sets = [set(failed) for failed in per_seed.values()]
    if not sets:
        return {}
    always, ever = set.intersection(*sets), set.union(*sets)
    return {
        check: [seed for seed, failed in sorted(per_seed.items()) if check in failed] for check in sorted(ever - always)
    }


def describe(name: str, per_seed: dict[int, tuple[str, ...]]) -> str:
    """One line for an unstable module: what it fails on every seed, then each check that comes and goes.

    >>> describe("m", {1: ("a", "b"), 2: ("a",)})
    'm: fails [a] on every seed; b on seeds [1] only'
    """
    sets = [set(failed) for failed in per_seed.values()]
    always = sorted(set.intersection(*sets)) if sets else []
    changing = "; ".join(f"{check} on seeds {seeds} only" for check, seeds in varying(per_seed).items())
    return f"{name}: fails [{', '.join(always)}] on every seed; {changing}"


def _lost(name: str, failed: tuple[str, ...]) -> tuple[str, ...]:
    """The failed checks a correct module must not have: a part-one style (``tests/alt_styles/*.py``,
    steps 1-8 only) fails part two's checks (steps 9-11) by design, so only steps 1-8 count for it.

    >>> _lost("alt_styles/x", ("step9/a", "step11/b")), _lost("alt_styles/x", ("step8/a", "failure:time"))
    ((), ('step8/a', 'failure:time'))
    >>> _lost("solution", ("step9/a",))
    ('step9/a',)
    """
    if not name.startswith("alt_styles/"):
        return failed
    step = [c.split("/")[0].removeprefix("step") for c in failed]  # "failure:time" is no check id: it counts
    return tuple(c for c, s in zip(failed, step) if not (s.isdigit() and int(s) > 8))


def wrong(results: dict[str, dict[int, tuple[str, ...]]]) -> dict[str, list[int]]:
    """Seeds on which a correct module lost a check, or a defect or mistake kept its own: ``{name: [seeds]}``.

    >>> wrong({"solution": {1: (), 2: ("step1/x",)}, "defect/step1/x": {1: ("step1/x",), 2: ()}})
    {'solution': [2], 'defect/step1/x': [2]}
    """
    found = {}
    for name, per_seed in results.items():
        check = expected_failure(name)
        bad = [
            seed
            for seed, failed in sorted(per_seed.items())
            if (check is None and _lost(name, failed)) or (check is not None and check not in failed)
        ]
        if bad:
            found[name] = bad
    return found


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation.stability", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="batch workers (gradings at once)")
    parser.add_argument("--seeds", type=int, default=len(SEEDS), help="grade on seeds 1..N")
    parser.add_argument("--only", action="append", help="grade only this module of the corpora (repeatable)")
    parser.add_argument("--out", default="build/stability", help="folder for stability.json")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    modules = corpus()
    if args.only:
        modules = {name: modules[name] for name in args.only}
    seeds = tuple(range(1, args.seeds + 1))
    from .outputs import tree_state

    started, tree = time.monotonic(), tree_state()
    total, done = len(modules) * len(seeds), {"n": 0}

    def progress(name: str, seed: int) -> None:
        done["n"] += 1
        if done["n"] % 100 == 0 or done["n"] == total:
            print(f"[{done['n']}/{total}] {round(time.monotonic() - started)} s", flush=True)

    results = grade_corpus(modules, seeds, jobs=args.jobs, progress=progress)
    seconds = round(time.monotonic() - started, 1)
    found, missed = unstable(results), wrong(results)
    for name in found:
        print(f"unstable: {describe(name, results[name])}")
    for name, seeds_ in missed.items():
        print(f"wrong verdict: {name} on seeds {seeds_}")
    broken = {} if args.only else unplantable()
    for name, why in broken.items():
        print(f"not graded: {name}: {why}")
    print(
        f"{len(modules)} modules x {len(seeds)} seeds: {len(found)} unstable, {len(missed)} with a wrong verdict "
        f"on a seed; {seconds} s with --jobs {args.jobs} ({round(seconds / max(1, len(modules) * len(seeds)), 3)} s "
        f"a grading); tree {tree}"
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "stability.json").write_text(
        json.dumps(
            {
                "seeds": list(seeds),
                "jobs": args.jobs,
                "seconds": seconds,
                "tree": tree,
                "unstable": found,
                "wrong": missed,
                "outcomes": {name: {str(s): list(f) for s, f in per.items()} for name, per in results.items()},
            },
            indent=1,
            sort_keys=True,
        )
        + "\n",
        encoding="utf-8",
    )
    return 1 if found or missed or broken else 0


if __name__ == "__main__":
    sys.exit(main())
