"""Count the suite's distinct assertions: the measure that says no test was dropped.

A test file's assertions are its ``assert`` statements and its
``pytest.raises``/``pytest.fail`` calls, each written out by ``ast.unparse``
(so formatting, quotes and comments do not count); the same text twice in a
file is one assertion. Moving a test to another file keeps the count; deleting
the only copy lowers it. ``tests/assertion_floor.txt`` holds the count the
suite must not fall below (``tests/test_test_suite.py`` checks it); raise it
when tests are added, and lower it only with a reason in the commit.

Run it on another tree to compare, e.g. a commit checked out in a worktree::

    python tests/assertions.py            # this checkout's tests/
    python tests/assertions.py /tmp/old   # another checkout's tests/

Example::

    >>> distinct_assertions({"t.py": "def test():\\n    assert f(1) == 2\\n    assert f( 1 )==2\\n"})
    1
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Mapping
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# Not tests: learner modules of the corpora (their asserts are the learner's), fragments, generated trees.
SKIPPED_PARTS = {"alt_styles", "hostile", "defects", "__pycache__", "golden", "schemas"}


def _assertions(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            found.add(ast.unparse(node))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("raises", "fail")
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "pytest"
        ):
            found.add(ast.unparse(node))
    return found


def distinct_assertions(files: Mapping[str, str]) -> int:
    """The number of distinct assertions in ``files`` (name -> Python text), counted per file."""
    return sum(len(_assertions(ast.parse(text))) for text in files.values())


def test_files(root: Path = TESTS) -> dict[str, str]:
    """The suite's Python files under ``root`` (name relative to it -> text), corpora left out."""
    return {
        str(path.relative_to(root)): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*.py"))
        if not SKIPPED_PARTS & set(path.relative_to(root).parts)
    }


if __name__ == "__main__":
    root = Path(sys.argv[1]) / "tests" if len(sys.argv) > 1 else TESTS
    print(distinct_assertions(test_files(root)))
