"""One mutation run: generate, sample, grade on a seed pair, classify, summarize, write.

>>> run(sample=0, out=None)["summary"]["mutants"]  # doctest: +SKIP
0
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from .classify import classify, summarize
from .equivalent import EQUIVALENT
from .gate import GateVerdict, compare, load_debt
from .mutator import SOLUTION, Mutant, generate, stratified
from .runner import grade_all
from .steps import ALL_STEPS as STEP_NUMBERS
from .steps import STEPS

SEED_PAIR = (11, 22)


def select(
    *,
    sample: int | None = None,
    ids: list[str] | None = None,
    functions: list[str] | None = None,
    mutants: list[Mutant] | None = None,
) -> list[Mutant]:
    """The mutants of a run: all, those with the given ids, those of the given functions, or a stratified sample.

    >>> len(select(sample=20)), select(ids=["cache_key:6:kwarg_drop:0"])[0].after
    (20, '(left out)')
    """
    mutants = generate(SOLUTION.read_text(encoding="utf-8")) if mutants is None else mutants
    if functions:
        mutants = [m for m in mutants if m.function in set(functions)]
    if ids:
        wanted = set(ids)
        return [m for m in mutants if m.id in wanted]
    return stratified(mutants, sample) if sample else mutants


def run(
    *,
    sample: int | None = None,
    ids: list[str] | None = None,
    functions: list[str] | None = None,
    seeds: tuple[int, ...] = SEED_PAIR,
    jobs: int = 2,
    out: str | Path | None = None,
    progress: Callable[[dict], None] | None = None,
    every_step: bool = False,
) -> dict:
    """Grade the selected mutants on ``seeds`` and return ``{"summary", "mutants", "gate"}`` (written to ``out``).

    ``gate`` is the :class:`tests.mutation.gate.GateVerdict` of the graded
    mutants against the debt list; its counts are also in the summary.
    Each mutant is graded on the steps whose probes reach its change
    (:mod:`tests.mutation.reach`), or on every step with ``every_step``.
    """
    from .outputs import tree_state, write_outputs  # only a run that writes needs them

    started, tree = time.monotonic(), tree_state()
    everything = generate(SOLUTION.read_text(encoding="utf-8"))
    mutants = select(sample=sample, ids=ids, functions=functions, mutants=everything)
    declared(m.function for m in mutants)  # before minutes of grading, not after
    steps = None if every_step else reach_steps(mutants, tuple(seeds))
    graded = grade_all(mutants, tuple(seeds), jobs=jobs, progress=progress, steps=steps)
    rows = [_row(mutant, graded[mutant.id]) for mutant in mutants]
    summary = summarize(rows)
    seconds = time.monotonic() - started
    summary.update(
        seeds=list(seeds),
        jobs=jobs,
        seconds=round(seconds, 1),
        tree=tree,
        seconds_per_mutant=round(seconds / len(rows), 2) if rows else 0.0,
        generated=len(everything),
        equivalent_listed=len(EQUIVALENT),
        **_grading_time(rows),
        steps_graded=_steps_graded(steps, mutants),
    )
    verdict = judged(rows, {m.id for m in everything})
    summary["gate"] = verdict.summary()
    if out is not None:
        write_outputs(out, summary, rows)
    return {"summary": summary, "mutants": rows, "gate": verdict}


def resummarize(path: str | Path, *, sample: int | None = None, out: str | Path | None = None) -> dict:
    """A written run's rows classified again (with today's equivalent list), optionally cut to the sample.

    The stratified sample of a size is the same set of ids every time, so the
    sample's numbers can be read off a run of the whole set.

    >>> resummarize("build/mutation/mutation.json", sample=150)["summary"]["mutants"]  # doctest: +SKIP
    150
    """
    from .outputs import write_outputs

    old = json.loads(Path(path).read_text(encoding="utf-8"))
    declared(row["function"] for row in old["mutants"])
    rows = [_classified(row) for row in old["mutants"]]
    if sample:
        wanted = {m.id for m in select(sample=sample)}
        rows = [row for row in rows if row["id"] in wanted]
    summary = summarize(rows)
    summary.update(
        seeds=old["summary"].get("seeds"),
        generated=old["summary"].get("generated"),
        tree=old["summary"].get("tree"),
        **({} if sample else _timing(old["summary"])),
        equivalent_listed=len(EQUIVALENT),
        resummarized_from=str(path),
        **_grading_time(rows),
    )
    verdict = judged(rows, {m.id for m in select()})
    summary["gate"] = verdict.summary()
    if out is not None:
        write_outputs(out, summary, rows)
    return {"summary": summary, "mutants": rows, "gate": verdict}


def declared(functions) -> None:
    """Stop with the names to add when a mutated top-level name is missing from the step map.

    >>> declared(["validate_args"])
    >>> declared(["validate_args", "not_in_the_map"])
    Traceback (most recent call last):
    SystemExit: declare the step(s) of ['not_in_the_map'] in tests/mutation/steps.py (STEPS) first
    """
    missing = sorted(set(functions) - set(STEPS))
    if missing:
        raise SystemExit(f"declare the step(s) of {missing} in tests/mutation/steps.py (STEPS) first")


def judged(rows: list[dict], generated: set[str], debt: dict[str, str] | None = None) -> GateVerdict:
    """The gate's verdict on ``rows`` (``debt``: default the committed list); stale ids only when all were graded.

    >>> judged([{"id": "x", "class": "survived"}], {"x"}, debt={}).new
    {'x': 'survived'}
    """
    whole = generated <= {row["id"] for row in rows}
    return compare(rows, load_debt() if debt is None else debt, generated=generated if whole else None)


def reach_steps(mutants: list[Mutant], seeds: tuple[int, ...]) -> dict[str, list[int]]:
    """The steps each mutant is graded on: those whose probes reach its change on ``seeds`` (measured once)."""
    from .reach import Reach

    reach = Reach(seeds)
    return {mutant.id: reach.steps(mutant) for mutant in mutants}


def _steps_graded(steps: dict[str, list[int]] | None, mutants: list[Mutant]) -> dict:
    """How many mutant steps were graded of all there are (per seed), and how: by reach or every step."""
    every = len(mutants) * len(STEP_NUMBERS)
    graded = every if steps is None else sum(len(chosen) for chosen in steps.values())
    return {"by": "every step" if steps is None else "reach", "graded": graded, "of": every}


def _timing(summary: dict) -> dict:
    # A written run's wall time and jobs still describe it when its rows are classified again.
    return {key: summary[key] for key in ("jobs", "seconds", "seconds_per_mutant") if key in summary}


def _grading_time(rows: list[dict]) -> dict:
    """Seconds one worker spent per mutant (every seed), on average: the cost of a mutant."""
    spent = [row["seconds"] for row in rows if row.get("seconds")]
    return {"worker_seconds_per_mutant": round(sum(spent) / len(spent), 2) if spent else 0.0}


def _row(mutant: Mutant, graded: dict) -> dict:
    return _classified(
        {
            "id": mutant.id,
            "function": mutant.function,
            "line": mutant.line,
            "operator": mutant.operator,
            "before": mutant.before,
            "after": mutant.after,
            "seeds": graded["seeds"],
            "seconds": graded["seconds"],
            "error": graded["error"],
        }
    )


def _classified(row: dict) -> dict:
    per_seed = row["seeds"]
    grader_failed = bool(row["error"]) or any(s["failure"] == "grader" for s in per_seed)
    site = ":".join(row["id"].split(":")[:2])  # function:line-in-function (tests/mutation/steps.py LINES)
    kind, extra = classify(
        site, [s["failed_steps"] for s in per_seed], equivalent=row["id"] in EQUIVALENT, grader_failed=grader_failed
    )
    return {**row, "class": kind, "extra": extra}
