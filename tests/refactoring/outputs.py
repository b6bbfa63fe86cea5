"""Write a run's results: ``summary.json`` (the counts and every graded row) and ``summary.md`` (one table).

>>> text = render_markdown({"generated": 0, "graded": 0, "seeds": [11], "passed": True, "losing": 0,
...                         "generated_by_kind": {}, "generated_by_base": {}}, [])
>>> text.splitlines()[0]
'# Refactoring run: behaviour-preserving rewrites of correct modules'
"""

from __future__ import annotations

import json
from pathlib import Path


def write_outputs(folder: str | Path, summary: dict, rows: list[dict]) -> tuple[Path, Path]:
    """Write both files into ``folder`` (made if missing) and return their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    json_path, md_path = folder / "summary.json", folder / "summary.md"
    json_path.write_text(
        json.dumps({"summary": summary, "rows": rows}, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    md_path.write_text(render_markdown(summary, rows), encoding="utf-8")
    return json_path, md_path


def summary_line(summary: dict) -> str:
    """One line: how many rewrites, how many lost points, the time.

    >>> summary_line({"generated": 310, "graded": 310, "losing": 2, "bases_losing": 0, "seeds": [11, 22, 33],
    ...               "seconds": 12.5, "seconds_per_rewrite": 0.04, "jobs": 2})
    '310 rewrites generated, 310 graded on seeds 11,22,33: 2 lost points (bases losing points: 0); 12.5 s with --jobs 2, 0.04 s per module'
    """
    each = summary.get("seeds_each") or len(summary["seeds"])
    on = "" if each >= len(summary["seeds"]) else f" ({each} each, picked by id)"
    text = (
        f"{summary['generated']} rewrites generated, {summary['graded']} graded on seeds "
        f"{','.join(map(str, summary['seeds']))}{on}: {summary['losing']} lost points "
        f"(bases losing points: {summary.get('bases_losing', 0)})"
    )
    if "seconds" in summary:
        text += (
            f"; {summary['seconds']} s with --jobs {summary.get('jobs')}, {summary['seconds_per_rewrite']} s per module"
        )
    return text


def render_markdown(summary: dict, rows: list[dict]) -> str:
    """The summary, the counts per transform and per base, then one table row per graded module, failing first."""
    lines = ["# Refactoring run: behaviour-preserving rewrites of correct modules", "", summary_line(summary), ""]
    if summary.get("tree"):
        lines += [f"Tree measured: {summary['tree']}.", ""]
    lines += [f"Gate {'passed' if summary.get('passed') else 'FAILED'}.", ""]
    losing_by = _losing_by(rows)
    for title, key, counts in (
        ("transform", "kind", summary["generated_by_kind"]),
        ("base", "base", summary["generated_by_base"]),
    ):
        if counts:
            lines += [f"| {title} | rewrites | losing points |", "|---|---:|---:|"]
            lines += [f"| {name} | {count} | {losing_by[key].get(name, 0)} |" for name, count in counts.items()]
            lines += [""]
    if summary.get("failing_checks"):
        lines += [
            "Checks failed (rewrites failing each): "
            + ", ".join(f"`{c}` {n}" for c, n in summary["failing_checks"].items())
            + ".",
            "",
        ]
    lines += ["| rewrite | base | transform | seeds | failing checks |", "|---|---|---|---|---|"]
    ordered = sorted(rows, key=lambda r: (not (r["lost"] or r["error"]), r["kind"] != "base"))
    lines += [_table_row(row) for row in ordered]
    return "\n".join(lines) + "\n"


def _losing_by(rows: list[dict]) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {"kind": {}, "base": {}}
    for row in rows:
        if row["kind"] != "base" and (row["lost"] or row["error"]):
            for key in found:
                found[key][row[key]] = found[key].get(row[key], 0) + 1
    return found


def _table_row(row: dict) -> str:
    seeds = ", ".join(f"{seed}: {score}" for seed, score in zip(row["seeds"], row["scores"])) or "-"
    failing = "; ".join(
        f"seed {lost['seed']}: "
        + ", ".join(
            [f"`{c['id']}`" for c in lost["failed"]]
            + ([f"grading failed ({lost['failure']})"] if lost["failure"] else [])
        )
        for lost in row["lost"]
    )
    if row["error"]:
        failing = (failing + "; " if failing else "") + "grader error: " + row["error"].replace("|", "/")[:200]
    return f"| `{row['id']}` | {row['base']} | {row['kind']} | {seeds} | {failing or '-'} |"
