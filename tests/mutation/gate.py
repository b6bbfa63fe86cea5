"""The mutation gate: a run's offenders against the reviewed debt list, which may only shrink.

An **offender** is a graded mutant of any class but ``own`` and ``equivalent``
(collateral, only other steps, seed-dependent, survived, a wrong equivalent,
a grader error). While the grading-truth work is still removing them, the ones
measured and reviewed are listed in ``tests/mutation/debt.json`` (mutant id ->
class as measured). A run passes the gate when it has no offender outside the
list and the list holds nothing the run contradicts:

- ``new``: an offender that is not listed (a regression, or a new mutant);
- ``cleared``: a listed mutant that is now ``own`` or ``equivalent`` (take it off the list);
- ``changed``: a listed mutant now of another offending class (the list no longer says what it is);
- ``stale``: a listed id that the mutator no longer makes (judged only when every mutant was graded).

``python -m tests.mutation --write-debt`` rewrites the list from a run (the
entries of mutants the run did not grade are kept).

>>> rows = [{"id": "a", "class": "own"}, {"id": "b", "class": "survived"}, {"id": "c", "class": "collateral"}]
>>> verdict = compare(rows, {"a": "collateral", "c": "collateral"})
>>> verdict.new, verdict.cleared, verdict.passed
({'b': 'survived'}, {'a': 'collateral'}, False)
>>> compare(rows, {"b": "survived", "c": "collateral"}).passed
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

DEBT = Path(__file__).resolve().parent / "debt.json"
CLEAN = ("own", "equivalent")  # the classes a mutant may end in without a listing


@dataclass
class GateVerdict:
    """What a run's offenders and the debt list disagree on, each ``{mutant id: class}``."""

    listed: int  # the debt list's size
    judged: int  # listed mutants this run graded
    new: dict[str, str] = field(default_factory=dict)
    cleared: dict[str, str] = field(default_factory=dict)  # the class the list had
    changed: dict[str, str] = field(default_factory=dict)  # "listed -> now"
    stale: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not (self.new or self.cleared or self.changed or self.stale)

    def summary(self) -> dict:
        """The counts, for ``mutation.json``'s summary.

        >>> GateVerdict(listed=3, judged=2, new={"x": "survived"}).summary()["new"]
        1
        """
        return {
            "passed": self.passed,
            "debt_listed": self.listed,
            "debt_judged": self.judged,
            **{name: len(getattr(self, name)) for name in ("new", "cleared", "changed", "stale")},
        }

    def lines(self) -> list[str]:
        """The gate's verdict for a terminal: one line, then each disagreement and what to do about it.

        >>> GateVerdict(listed=1, judged=1, cleared={"x": "survived"}).lines()[1]
        '  cleared (listed as survived, now own or equivalent: take it off the list): x'
        """
        state = "passed" if self.passed else "FAILED"
        lines = [
            f"mutation gate {state}: debt list {self.listed} mutants ({self.judged} graded in this run); "
            f"new offenders {len(self.new)}, cleared {len(self.cleared)}, changed {len(self.changed)}, "
            f"stale {len(self.stale)}"
        ]
        for mutant, kind in sorted(self.new.items()):
            lines.append(f"  new offender ({kind}, not on the debt list): {mutant}")
        for mutant, kind in sorted(self.cleared.items()):
            lines.append(f"  cleared (listed as {kind}, now own or equivalent: take it off the list): {mutant}")
        for mutant, kinds in sorted(self.changed.items()):
            lines.append(f"  changed class ({kinds}): {mutant}")
        for mutant, kind in sorted(self.stale.items()):
            lines.append(f"  stale (listed as {kind}, no longer generated): {mutant}")
        if not self.passed:
            lines.append("  fix the grader, or after review: python -m tests.mutation --from RUN.json --write-debt")
        return lines


def offenders(rows: list[dict]) -> dict[str, str]:
    """The graded mutants outside the clean classes, ``{id: class}``.

    >>> offenders([{"id": "a", "class": "own"}, {"id": "b", "class": "error"}])
    {'b': 'error'}
    """
    return {row["id"]: row["class"] for row in rows if row["class"] not in CLEAN}


def compare(rows: list[dict], debt: dict[str, str], *, generated: set[str] | None = None) -> GateVerdict:
    """Judge a run's ``rows`` against ``debt``; ``generated``: every id the mutator makes (a whole run only).

    >>> compare([], {"gone": "survived"}, generated={"a"}).stale
    {'gone': 'survived'}
    """
    graded = {row["id"]: row["class"] for row in rows}
    verdict = GateVerdict(listed=len(debt), judged=len(set(debt) & set(graded)))
    for mutant, kind in offenders(rows).items():
        if mutant not in debt:
            verdict.new[mutant] = kind
        elif debt[mutant] != kind:
            verdict.changed[mutant] = f"listed {debt[mutant]}, now {kind}"
    verdict.cleared = {m: kind for m, kind in debt.items() if graded.get(m) in CLEAN}
    if generated is not None:
        verdict.stale = {m: kind for m, kind in debt.items() if m not in generated}
    return verdict


def load_debt(path: str | Path | None = None) -> dict[str, str]:
    """The debt list at ``path`` (default :data:`DEBT`; ``{}`` when there is none).

    >>> load_debt("/nonexistent/debt.json")
    {}
    """
    path = Path(path or DEBT)
    if not path.exists():
        return {}
    return dict(json.loads(path.read_text(encoding="utf-8"))["debt"])


def updated_debt(rows: list[dict], debt: dict[str, str], generated: set[str]) -> dict[str, str]:
    """The list after a run: graded mutants as measured, ungraded ones kept, ids no longer made dropped.

    >>> updated_debt([{"id": "a", "class": "own"}, {"id": "b", "class": "survived"}],
    ...              {"a": "collateral", "c": "elsewhere", "gone": "error"}, generated={"a", "b", "c"})
    {'b': 'survived', 'c': 'elsewhere'}
    """
    graded = {row["id"] for row in rows}
    kept = {m: kind for m, kind in debt.items() if m not in graded and m in generated}
    return dict(sorted({**kept, **offenders(rows)}.items()))


def write_debt(debt: dict[str, str], summary: dict, path: str | Path | None = None) -> Path:
    """Write the list (default :data:`DEBT`; sorted, one mutant a line) with the run it was measured on."""
    path = Path(path or DEBT)
    measured = {key: summary.get(key) for key in ("mutants", "counts", "score", "exact_score", "seeds", "tree")}
    text = json.dumps(
        {
            "about": "Mutants outside their own step's class, as measured and reviewed (tests/mutation/gate.py). "
            "The list may only shrink: `make mutation` fails on an offender not listed here and on a "
            "listed mutant that is now clean. Regenerate with `python -m tests.mutation --write-debt`.",
            "measured": measured,
            "debt": dict(sorted(debt.items())),
        },
        indent=1,
        sort_keys=False,
    )
    path.write_text(text + "\n", encoding="utf-8")
    return path
