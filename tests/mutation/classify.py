"""Sort graded mutants into classes, and count them into a mutation score.

Classes, from best to worst for the grader:

- ``own``: fails its own step(s) only, the same on every seed;
- ``equivalent``: full marks, and listed in ``equivalent.py`` with a reason;
- ``collateral``: fails its own step and also others (``extra`` lists them);
- ``elsewhere``: fails only steps its change does not belong to;
- ``seed_dependent``: the failing steps differ between the seeds;
- ``survived``: full marks on every seed and not listed as equivalent;
- ``equivalent_killed``: listed as equivalent, yet some check fails (the list is wrong);
- ``error``: the grader raised or reported its own failure (a finding about the grader).

>>> classify("validate_args", [[2], [2]])
('own', [])
>>> classify("validate_args", [[2, 3], [2, 3]])
('collateral', [3])
>>> classify("validate_args", [[2], []])
('seed_dependent', [])
"""

from __future__ import annotations

from collections import Counter

from .steps import allowed_steps, steps_of

CLASSES = ("own", "equivalent", "collateral", "elsewhere", "seed_dependent", "survived", "equivalent_killed", "error")
KILLED = ("own", "collateral", "elsewhere")  # a failing check on every seed, the same steps on each


def classify(
    function: str, failed_per_seed: list[list[int]], *, equivalent: bool = False, grader_failed: bool = False
) -> tuple[str, list[int]]:
    """The class of a mutant of ``function`` from its failing steps on each seed, and the steps outside its own."""
    if grader_failed or not failed_per_seed:
        return "error", []
    sets = [frozenset(steps) for steps in failed_per_seed]
    union = frozenset().union(*sets)
    extra = sorted(union - allowed_steps(function))
    if not union:
        return ("equivalent" if equivalent else "survived"), []
    if equivalent:
        return "equivalent_killed", extra
    if len(set(sets)) > 1:
        return "seed_dependent", extra
    if not union & steps_of(function):
        return "elsewhere", extra
    return ("collateral" if extra else "own"), extra


def summarize(rows: list[dict]) -> dict:
    """Counts per class, the mutation score (killed on every seed) and the exact score (own step only).

    >>> summarize([{"class": "own"}, {"class": "collateral"}, {"class": "equivalent"}, {"class": "survived"}])["score"]
    0.667
    """
    counts = Counter(row["class"] for row in rows)
    scored = len(rows) - counts["equivalent"]
    killed = sum(counts[name] for name in KILLED)
    # The worst kind of seed dependence: full marks on one seed, a failure on another.
    passes_on_a_seed = sum(
        1
        for row in rows
        if row["class"] == "seed_dependent" and any(not s["failed_steps"] for s in row.get("seeds", []))
    )
    return {
        "mutants": len(rows),
        "counts": {name: counts[name] for name in CLASSES},
        "seed_dependent_with_full_marks_on_a_seed": passes_on_a_seed,
        "score": round(killed / scored, 3) if scored else 1.0,
        "exact_score": round(counts["own"] / scored, 3) if scored else 1.0,
    }


def worst_classes(rows: list[dict], kind: str, limit: int = 10, *, by_function: bool = False) -> list[tuple[str, int]]:
    """The most frequent (function, operator, extra steps) groups among mutants of class ``kind``.

    >>> rows = [{"class": "collateral", "function": "f", "operator": "o", "extra": [3]}] * 2
    >>> worst_classes(rows, "collateral"), worst_classes(rows, "collateral", by_function=True)
    ([('f / o -> extra steps [3]', 2)], [('f', 2)])
    """

    def group(row: dict) -> str:
        if by_function:
            return row["function"]
        return f"{row['function']} / {row['operator']}" + (
            f" -> extra steps {row['extra']}" if row.get("extra") else ""
        )

    return Counter(group(row) for row in rows if row["class"] == kind).most_common(limit)
