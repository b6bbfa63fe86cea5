"""Crashes: one plausible edit of ``solutions/tools.py`` that makes a call *raise* inside the learner's code.

One crash is one row: the first check of the step that meets it
shows the call, the error and the line of the learner's file where it was
raised; every later check of the step that met the same crash says it follows
from that row (``grader.render.crash_notes``), and the points stay the report's.
``tests/test_crash_rows.py`` grades each case's step and holds it to that.

Each entry: ``name -> (step, edits, crash_source)``. ``edits`` are
``(anchor, replacement)`` pairs (each anchor occurs once in the solution), or
``None`` for a case of the plausible-mistakes corpus (``MORE_DEFECTS[name]``,
graded there for its points); ``crash_source`` is the text of the line that
raises, whose line number the row must name.

Example::

    >>> CRASHES["int_fix_isdigit"][0]
    10
"""

from __future__ import annotations

from pathlib import Path

from .catalog import MORE_DEFECTS, SOLUTION

CRASHES: dict = {
    # Step 10: '²'.isdigit() is True, int('²') raises ValueError inside explain.
    "int_fix_isdigit": (10, None, "        return int(text)\n"),
    # Step 9: the same slip in coerce.
    "int_by_isdigit": (9, None, '            return int(bare), ["int_from_str"]\n'),
    # Step 2: the range is compared before the type is known: 'x' < 1 raises TypeError in validate_args.
    "range_before_type": (
        2,
        (
            ('        if not _has_type(value, rule["type"]):\n            return f"type:{arg}"\n', ""),
            (
                '            return f"range:{arg}"\n    return ""',
                '            return f"range:{arg}"\n        if not _has_type(value, rule["type"]):\n'
                '            return f"type:{arg}"\n    return ""',
            ),
        ),
        '        if "min" in rule and value < rule["min"]:\n',
    ),
    # Step 11: the first exact name is taken even when there is none: IndexError in resolve_sku.
    "resolve_first_exact": (
        11,
        (
            (
                "    chosen = exact if len(exact) == 1 else matches  # an exact name wins over partial ones\n",
                "    chosen = [exact[0]] if matches else matches\n",
            ),
        ),
        "    chosen = [exact[0]] if matches else matches\n",
    ),
}


def materialise_crash(name: str, folder: Path) -> tuple[Path, int]:
    """Write the crashing copy of ``name`` under ``folder``; return its path and the line number of the crash."""
    step, edits, crash_source = CRASHES[name]
    text = SOLUTION.read_text(encoding="utf-8")
    for anchor, replacement in MORE_DEFECTS[name][1].edits if edits is None else edits:
        if text.count(anchor) != 1:
            raise AssertionError(f"{name}: anchor occurs {text.count(anchor)} times: {anchor!r}")
        text = text.replace(anchor, replacement)
    lines = [i for i, line in enumerate(text.splitlines(keepends=True), 1) if line == crash_source]
    if len(lines) != 1:
        raise AssertionError(f"{name}: the crash line occurs {len(lines)} times: {crash_source!r}")
    target = folder / name / "tools.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target, lines[0]
