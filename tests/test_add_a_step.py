"""docs/architecture.md, "How to add a step", followed: every step has every artefact, in the page's order.

:data:`ARTEFACTS` is the page's list as code: each entry names the file a
step needs something in and finds it for one step. The tests check that
every step of the lab (``grader.report.STEPS``) has all of them, that a toy
step 12 lacks every one (so no rule passes on its own), and that the page
names each artefact in the same order. Run it as a script to list what a
new step still lacks::

    .venv/bin/python tests/test_add_a_step.py 12
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

# Run as a script, grader is importable from the install (`make setup`): no change of sys.path here.
REPO = Path(__file__).resolve().parent.parent

TOY_STEP = 12  # the capstone's number: no step of its own


def _read(path: str) -> str:
    return (REPO / path).read_text(encoding="utf-8")


def _check_ids(step: int) -> list[str]:
    from grader.checks.registry import checks_for

    return [c.id for c in checks_for() if c.step == step]


def _spec_step(step: int) -> bool:
    from grader.report import STEPS

    return step in STEPS


def _solution_section(step: int) -> bool:
    return re.search(rf"^# (?:---- )?Step {step}\b", _read("solutions/tools.py"), re.M) is not None


def _mutation_map(step: int) -> bool:
    from tests.mutation.steps import STEPS

    return any(step in steps for steps in STEPS.values())


def _starter_section(step: int) -> bool:
    heading = rf"^# (?:---- )?Step {step}\b[^\n]*\(labs/{step:02d}_\w+\.ipynb\)"
    return re.search(heading, _read("starter/tools.py"), re.M) is not None


def _checks_module(step: int) -> bool:
    from grader.checks.registry import STEP_MODULES

    return (
        f"grader.checks.step{step}" in STEP_MODULES
        and (REPO / f"grader/checks/step{step}.py").is_file()
        and bool(_check_ids(step))
    )


def _notebook(step: int) -> bool:
    built = re.search(rf"^NB{step:02d} = ", _read("labs/_build_notebooks.py"), re.M) is not None
    listed = re.search(rf"^NOTEBOOKS = \[.*\bNB{step:02d}\b", _read("labs/_build_notebooks.py"), re.M) is not None
    return built and listed and any((REPO / "labs").glob(f"{step:02d}_*.ipynb"))


def _checks_page(step: int) -> bool:
    page = _read("docs/checks.md")
    return bool(_check_ids(step)) and all(f"`{check_id}`" in page for check_id in _check_ids(step))


def _defects(step: int) -> bool:
    from tests.defects.catalog import DEFECTS

    return bool(_check_ids(step)) and all(check_id in DEFECTS for check_id in _check_ids(step))


# (what the page calls it, the file it lives in, how to find it for one step), in the page's order.
ARTEFACTS: list[tuple[str, str, Callable[[int], bool]]] = [
    ("the step's number", "grader/report.py", _spec_step),
    ("the solution's section", "solutions/tools.py", _solution_section),
    ("the mutation step map", "tests/mutation/steps.py", _mutation_map),
    ("the starter's section", "starter/tools.py", _starter_section),
    ("the checks module", "grader/checks/stepN.py", _checks_module),
    ("the notebook", "labs/_build_notebooks.py", _notebook),
    ("the checks page", "docs/checks.md", _checks_page),
    ("a planted defect per check", "tests/defects/catalog.py", _defects),
]


def missing(step: int) -> list[str]:
    """What ``step`` lacks, as the page names it (``[]``: nothing)."""
    lacking = []
    for name, where, found in ARTEFACTS:
        try:
            ok = found(step)
        except Exception as exc:  # a toy step can make a lookup fail: that is what is missing
            ok = False
            name = f"{name} ({type(exc).__name__})"
        if not ok:
            lacking.append(f"{name}: {where}")
    return lacking


def test_every_step_has_every_artefact():
    from grader.report import STEPS

    assert {step: missing(step) for step in STEPS if missing(step)} == {}


def test_a_toy_step_lacks_every_artefact():
    assert len(missing(TOY_STEP)) == len(ARTEFACTS), missing(TOY_STEP)


def test_the_page_names_the_artefacts_in_order():
    page = _read("docs/architecture.md")
    section = page.split("## How to add a step", 1)[1].split("\n## ", 1)[0]
    places = [section.find(f"`{where}`") for _, where, _ in ARTEFACTS]
    assert -1 not in places, [where for (_, where, _), at in zip(ARTEFACTS, places) if at == -1]
    assert places == sorted(places), "the page lists the artefacts in another order than ARTEFACTS"


if __name__ == "__main__":
    step = int(sys.argv[1]) if len(sys.argv) > 1 else TOY_STEP
    lacking = missing(step)
    print(f"step {step}: " + ("every artefact is there" if not lacking else "missing:\n  " + "\n  ".join(lacking)))
    sys.exit(1 if lacking else 0)
