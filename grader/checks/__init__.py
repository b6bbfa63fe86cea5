"""Judging: the check registry, the parent-side random cases, one module per step.

Checks are data (:class:`grader.checks.registry.Check`): each draws its
probes from a seeded stream in the grading process and judges the
observations that come back; none of this runs beside learner code. The
step modules register their checks when :func:`grader.checks.registry.checks_for`
first loads them. This package also renders the coverage table of ``docs/checks.md``: which check covers
which LAB_SPEC rule (:func:`rules_table_markdown`).

Example::

    >>> from grader.checks.registry import checks_for
    >>> "step3/blocked_before_call" in {c.id for c in checks_for()}
    True
"""

from __future__ import annotations

import json
import re

from grader import spec
from grader.checks.registry import checks_for
from grader.checks.sentences import NOTEBOOK_SENTENCES, normalised
from grader.spec import RULES

__all__ = ["RULES", "rules_table_markdown"]


def _with_facts(sentence: str) -> str:
    """A notebook sentence with its ``@NAME@`` placeholders filled from ``grader.spec``, as the notebook shows it.

    >>> _with_facts("`MAX_ATTEMPTS` | `@MAX_ATTEMPTS@`")
    '`MAX_ATTEMPTS` | `3`'
    """

    def fill(match: re.Match[str]) -> str:
        value = getattr(spec, match.group(1))
        return str(value) if isinstance(value, int) else json.dumps(value)

    return re.sub(r"@([A-Z_]+)@", fill, sentence)


def rules_table_markdown() -> str:
    """The Markdown of ``docs/checks.md``, generated from the registry.

    >>> rules_table_markdown().splitlines()[0]
    '# Checks and the LAB_SPEC rules they cover'
    """
    covering: dict[str, list[str]] = {rule: [] for rule in RULES}
    for check in checks_for():  # loads every step module; by step, whatever was imported first
        for rule in check.rules:
            covering.setdefault(rule, []).append(check.id)
    lines = [
        "# Checks and the LAB_SPEC rules they cover",
        "",
        "Generated from the check registry by `grader.checks.rules_table_markdown()`;",
        "`tests/test_checks_meta.py` fails when this file is out of date",
        "(refresh: `python -c \"import grader.checks as c; print(c.rules_table_markdown(), end='')\" > docs/checks.md`).",
        "",
        "How a check works: in the parent, `probes(rng)` draws this run's cases from the seed and",
        "describes calls as JSON (`grader/checks/stepN.py`, cases from `grader/checks/cases.py`); a child",
        "process runs them against the learner's module (`grader/engine/probes.py`), with spies in",
        '`TOOLS[name]["fn"]` and in the module\'s own tool functions counting real tool-body runs',
        "(checks of refused calls also watch `CALLS`), and sends back type-strict encodings",
        "(`grader/engine/encode.py`); the parent's `judge` compares them with the spec. Every check has a",
        "planted defect that it rejects (`tests/defects/catalog.py`), and correct modules written in",
        "other styles get full marks: steps 1-8 in `tests/alt_styles/` (`tests/test_checks_meta.py`), steps",
        "9-11 in `tests/alt_styles/part_two/` (`tests/test_part_two_styles.py`).",
        "",
        "## Rules",
        "",
        "| rule | LAB_SPEC says | checked by |",
        "|---|---|---|",
    ]
    for rule, text in RULES.items():
        checks = ", ".join(f"`{cid}`" for cid in covering[rule]) or "**not covered**"
        lines.append(f"| {rule} | {text} | {checks} |")
    lines += [
        "",
        "## Notebook sentences and the checks that enforce them",
        "",
        "Each sentence of a notebook that says what the learner's code must do, with the rule it states",
        "(`grader/checks/sentences.py`; the meta test fails when a sentence leaves its notebook).",
        "",
    ]
    for notebook, sentence, rule in NOTEBOOK_SENTENCES:
        checks = ", ".join(f"`{cid}`" for cid in covering.get(rule, [])) or "**not checked yet**"
        lines.append(f"- {notebook}: \u201c{_with_facts(normalised(sentence))}\u201d \u2014 {rule}: {checks}")
    ordered = checks_for()
    total = sum(c.points for c in ordered)
    lines += [
        "",
        f"## Checks ({len(ordered)} checks, {total} points)",
        "",
        "| id | step | points | title | rules |",
        "|---|---|---|---|---|",
    ]
    for check in ordered:
        lines.append(f"| `{check.id}` | {check.step} | {check.points} | {check.title} | {', '.join(check.rules)} |")
    return "\n".join(lines) + "\n"
