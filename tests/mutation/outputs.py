"""Write a run's results: ``mutation.json`` (every mutant) and ``mutation.md`` (what needs a look).

>>> text = render_markdown({"mutants": 0, "counts": {}, "score": 1.0, "exact_score": 1.0}, [])
>>> text.splitlines()[0]
'# Mutation run of solutions/tools.py'
"""
from __future__ import annotations

import json
from pathlib import Path

from .classify import worst_classes

# The classes listed one mutant a line in the Markdown, in this order.
LISTED = ("survived", "equivalent_killed", "error", "seed_dependent", "elsewhere", "collateral")


def write_outputs(folder: "str | Path", summary: dict, rows: "list[dict]") -> "tuple[Path, Path]":
    """Write both files into ``folder`` (made if missing) and return their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    json_path, md_path = folder / "mutation.json", folder / "mutation.md"
    json_path.write_text(json.dumps({"summary": summary, "mutants": rows}, indent=1, sort_keys=True) + "\n",
                         encoding="utf-8")
    md_path.write_text(render_markdown(summary, rows), encoding="utf-8")
    return json_path, md_path


def render_markdown(summary: dict, rows: "list[dict]") -> str:
    """The summary, the worst groups, then every mutant of each class in :data:`LISTED`."""
    lines = ["# Mutation run of solutions/tools.py", "", summary_line(summary), ""]
    for kind in ("collateral", "survived", "seed_dependent", "elsewhere"):
        worst = worst_classes(rows, kind)
        if worst:
            lines += [f"## Largest groups: {kind}", ""] + [f"- {count} x {group}" for group, count in worst] + [""]
    for kind in LISTED:
        listed = [row for row in rows if row["class"] == kind]
        if listed:
            lines += [f"## {kind} ({len(listed)})", ""] + [_row_line(row) for row in listed] + [""]
    return "\n".join(lines)


def summary_line(summary: dict) -> str:
    """One line: the counts per class and both scores.

    >>> summary_line({"mutants": 2, "counts": {"own": 2}, "score": 1.0, "exact_score": 1.0})
    '2 mutants: own 2; score 1.0 (killed on every seed), exact score 1.0 (own step(s) only)'
    """
    counts = ", ".join(f"{name} {count}" for name, count in summary["counts"].items() if count)
    text = (f"{summary['mutants']} mutants: {counts}; score {summary['score']} (killed on every seed), "
            f"exact score {summary['exact_score']} (own step(s) only)")
    if "seconds" in summary:
        text += f"; {summary['seconds']} s in all, {summary['seconds_per_mutant']} s per mutant"
    return text


def _row_line(row: dict) -> str:
    seeds = "; ".join(f"seed {s['seed']}: steps {s['failed_steps']}" for s in row.get("seeds", []))
    extra = f" extra {row['extra']}" if row.get("extra") else ""
    change = f"`{_one_line(row['before'])}` -> `{_one_line(row['after'])}`"
    error = f" error: {row['error']}" if row.get("error") else ""
    return f"- `{row['id']}` (line {row['line']}){extra}: {change} ({seeds}){error}"


def _one_line(text: str) -> str:
    return " / ".join(part.strip() for part in text.splitlines()).replace("`", "'")[:100]
