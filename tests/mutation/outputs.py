"""Write a run's results: ``mutation.json`` (every mutant) and ``mutation.md`` (what needs a look).

>>> text = render_markdown({"mutants": 0, "counts": {}, "score": 1.0, "exact_score": 1.0}, [])
>>> text.splitlines()[0]
'# Mutation run of solutions/tools.py'
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

from .classify import worst_classes

# The classes listed one mutant a line in the Markdown, in this order.
LISTED = ("survived", "equivalent_killed", "error", "seed_dependent", "elsewhere", "collateral")


def write_outputs(folder: str | Path, summary: dict, rows: list[dict]) -> tuple[Path, Path]:
    """Write both files into ``folder`` (made if missing) and return their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    json_path, md_path = folder / "mutation.json", folder / "mutation.md"
    json_path.write_text(
        json.dumps({"summary": summary, "mutants": rows}, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    md_path.write_text(render_markdown(summary, rows), encoding="utf-8")
    return json_path, md_path


def render_markdown(summary: dict, rows: list[dict]) -> str:
    """The summary, the worst groups, then every mutant of each class in :data:`LISTED`."""
    lines = ["# Mutation run of solutions/tools.py", "", summary_line(summary), ""]
    if summary.get("tree"):
        lines += [f"Tree measured: {summary['tree']}.", ""]
    if summary.get("gate"):
        lines += [gate_line(summary["gate"]), ""]
    hit = extra_steps(rows)
    if hit:
        lines += [
            "Steps failed by mutants whose change does not belong to them: "
            + ", ".join(f"step {step} by {count}" for step, count in hit),
            "",
        ]
        checks = ", ".join(f"`{check}` {count}" for check, count in foreign_checks(rows)[:15])
        lines += [f"The checks those mutants fail most in the steps not theirs: {checks}.", ""]
    for kind in ("collateral", "survived", "seed_dependent", "elsewhere"):
        worst = worst_classes(rows, kind)
        if worst:
            functions = ", ".join(f"{name} {count}" for name, count in worst_classes(rows, kind, by_function=True))
            lines += [f"## Largest groups: {kind}", "", f"By function: {functions}.", ""]
            lines += [f"- {count} x {group}" for group, count in worst] + [""]
    for kind in LISTED:
        listed = [row for row in rows if row["class"] == kind]
        if listed:
            lines += [f"## {kind} ({len(listed)})", ""] + [_row_line(row) for row in listed] + [""]
    return "\n".join(lines)


def extra_steps(rows: list[dict]) -> list[tuple[int, int]]:
    """How many mutants fail each step that their change does not belong to, most first.

    >>> extra_steps([{"extra": [3, 8]}, {"extra": [8]}, {"extra": []}])
    [(8, 2), (3, 1)]
    """
    counts = Counter(step for row in rows for step in row.get("extra", []))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def foreign_checks(rows: list[dict]) -> list[tuple[str, int]]:
    """How many mutants fail each check of a step their change does not belong to (on any seed), most first.

    >>> foreign_checks([{"extra": [3], "seeds": [{"failed_checks": ["step2/x", "step3/y"]}]}])
    [('step3/y', 1)]
    """
    counts: Counter = Counter()
    for row in rows:
        extra = {f"step{step}/" for step in row.get("extra", [])}
        failed = {c for s in row.get("seeds", []) for c in s["failed_checks"]}
        counts.update(c for c in failed if any(c.startswith(prefix) for prefix in extra))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def tree_state() -> str:
    """The commit measured, and how many files of the grader, the solution and the corpora differed from it.

    Other work may change the checks while a run grades: a result says which tree it measured.

    >>> tree_state().split()[0] != ""
    True
    """
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30).stdout

    try:
        head = git("rev-parse", "--short", "HEAD").strip() or "unknown"
        changed = git("status", "--porcelain", "--", "grader", "solutions", "tests").splitlines()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + (f" + {len(changed)} changed files" if changed else "")


def summary_line(summary: dict) -> str:
    """One line: the counts per class and both scores.

    >>> summary_line({"mutants": 2, "counts": {"own": 2}, "score": 1.0, "exact_score": 1.0})
    '2 mutants: own 2; score 1.0 (killed on every seed), exact score 1.0 (own step(s) only)'
    """
    counts = ", ".join(f"{name} {count}" for name, count in summary["counts"].items() if count)
    text = (
        f"{summary['mutants']} mutants: {counts}; score {summary['score']} (killed on every seed), "
        f"exact score {summary['exact_score']} (own step(s) only)"
    )
    if summary.get("seed_dependent_with_full_marks_on_a_seed"):
        text += f"; full marks on one seed only: {summary['seed_dependent_with_full_marks_on_a_seed']}"
    if "seconds" in summary:
        text += f"; {summary['seconds']} s in all, {summary['seconds_per_mutant']} s per mutant"
    if summary.get("worker_seconds_per_mutant"):
        seeds = len(summary.get("seeds") or ())
        on = "both seeds" if seeds == 2 else f"{seeds} seed{'s' if seeds != 1 else ''}"
        text += f" ({summary['worker_seconds_per_mutant']} s of one worker per mutant, {on})"
    graded = summary.get("steps_graded")
    if graded:
        text += f"; steps graded {graded['graded']} of {graded['of']} (by {graded['by']})"
    return text


def gate_line(gate: dict) -> str:
    """The gate's counts as one line (the offenders themselves are listed by class below it).

    >>> gate_line({"passed": True, "debt_listed": 3, "debt_judged": 3, "new": 0, "cleared": 0, "changed": 0,
    ...            "stale": 0})
    'Gate passed: debt list of 3 mutants (3 graded here); new offenders 0, cleared 0, changed class 0, stale 0.'
    """
    state = "passed" if gate["passed"] else "FAILED"
    return (
        f"Gate {state}: debt list of {gate['debt_listed']} mutants ({gate['debt_judged']} graded here); "
        f"new offenders {gate['new']}, cleared {gate['cleared']}, changed class {gate['changed']}, "
        f"stale {gate['stale']}."
    )


def _row_line(row: dict) -> str:
    seeds = "; ".join(f"seed {s['seed']}: steps {s['failed_steps']}" for s in row.get("seeds", []))
    extra = f" extra {row['extra']}" if row.get("extra") else ""
    change = f"`{_one_line(row['before'])}` -> `{_one_line(row['after'])}`"
    error = f" error: {row['error']}" if row.get("error") else ""
    return f"- `{row['id']}` (line {row['line']}){extra}: {change} ({seeds}){error}"


def _one_line(text: str) -> str:
    return " / ".join(part.strip() for part in text.splitlines()).replace("`", "'")[:100]
