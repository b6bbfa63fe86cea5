"""The correct modules the rewrites start from, and the steps each is graded on.

- ``solution``: ``solutions/tools.py``, all eleven steps;
- ``alt/<stem>``: each ``tests/alt_styles/*.py`` that git tracks (steps 1-8 only: they stop at step 8 on
  purpose);
- ``part_two/<styles>``: the solution's steps 1-8 with the step 9, 10 and 11 fragments of
  ``tests/alt_styles/part_two`` appended, composed exactly as ``tests/test_part_two_styles.py``
  does (its ``composed_text``), all eleven steps.

>>> names = list(bases()); names[0], "alt/command_routing" in names, "part_two/aaa" in names
('solution', True, True)
>>> bases()["alt/hashed_keys"].steps, bases()["solution"].steps
((1, 2, 3, 4, 5, 6, 7, 8), None)
"""

from __future__ import annotations

import functools
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
SOLUTION = ROOT / "solutions" / "tools.py"
ALT_STYLES = TESTS / "alt_styles"
PART_ONE_STEPS = tuple(range(1, 9))
# Which fragment of steps 9, 10 and 11 each composed base takes ("aba": 9a, 10b, 11a): every fragment
# appears, each step's two styles meet the other steps' two (the 20-seed stability corpus grades the same four).
PART_TWO_STYLES = ("aaa", "bbb", "aba", "bab")


@dataclass(frozen=True)
class Base:
    """A correct module: its name, its text, and the steps it is graded on (``None``: every step)."""

    name: str
    text: str = field(repr=False)
    steps: tuple[int, ...] | None = None


def _style_files() -> list[Path]:
    """The part-one styles git tracks (work in progress beside them is not a base until it is committed);
    every ``*.py`` of the folder when git cannot say."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--", str(ALT_STYLES.relative_to(ROOT))],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return sorted(ALT_STYLES.glob("*.py"))
    return sorted(ROOT / p for p in listed if Path(p).parent == ALT_STYLES.relative_to(ROOT) and p.endswith(".py"))


def _part_two():
    # tests/test_part_two_styles.py composes the modules; it imports by plain name (pytest's pythonpath is tests/).
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    import test_part_two_styles

    return test_part_two_styles


@functools.lru_cache(maxsize=1)
def bases() -> dict[str, Base]:
    """Every base by name, in a fixed order: the solution, the part-one styles, the composed part-two modules."""
    found = {"solution": Base("solution", SOLUTION.read_text(encoding="utf-8"))}
    for path in _style_files():
        found[f"alt/{path.stem}"] = Base(f"alt/{path.stem}", path.read_text(encoding="utf-8"), PART_ONE_STEPS)
    part_two = _part_two()
    for styles in PART_TWO_STYLES:
        found[f"part_two/{styles}"] = Base(f"part_two/{styles}", part_two.composed_text(styles))
    return found
