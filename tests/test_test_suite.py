"""The test suite itself: modules that stand on their own, and Makefile targets that exist.

* No test module imports another test module: what several share lives in
  ``tests/helpers.py`` (functions) or ``conftest.py`` (fixtures).
* No test changes ``sys.path``: ``tests/`` is on it through pytest's
  ``pythonpath`` option, so ``helpers``, ``defects``, ``hostile`` and ``e2e``
  import by their plain names.
* Every target the Makefile declares ``.PHONY`` has a rule.
* The suite holds at least as many distinct assertions as ``tests/assertion_floor.txt``
  says (``tests/assertions.py`` counts them): a test is not dropped unnoticed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
TEST_MODULES = {p.stem for p in TESTS.rglob("test_*.py")}


# The test code: modules, conftests, helpers. Not the learner code the tests grade
# (tests/alt_styles, the hostile corpus under tests/hostile/*/): a payload may well touch sys.path.
TEST_CODE_FOLDERS = (TESTS, TESTS / "e2e", TESTS / "defects", TESTS / "hostile")


def _python_files() -> list[Path]:
    return sorted(p for folder in TEST_CODE_FOLDERS for p in folder.glob("*.py"))


def _imported_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def _path_changes(tree: ast.AST) -> list[int]:
    # sys.path.insert(...), sys.path.append(...), sys.path.extend(...), sys.path[...] = ...
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("insert", "append", "extend")
            and ast.unparse(node.func.value) == "sys.path"
        ):
            lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign)) and "sys.path" in ast.unparse(node).split("=")[0]:
            lines.append(node.lineno)
    return lines


def test_no_test_module_imports_another():
    offenders = {}
    for path in _python_files():
        imported = {name.split(".")[-1] for name in _imported_names(ast.parse(path.read_text(encoding="utf-8")))}
        if imported & TEST_MODULES:
            offenders[str(path.relative_to(REPO))] = sorted(imported & TEST_MODULES)
    assert not offenders, f"move what they share to tests/helpers.py or a conftest.py fixture: {offenders}"


def test_no_test_changes_sys_path():
    offenders = {}
    for path in _python_files():
        lines = _path_changes(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            offenders[str(path.relative_to(REPO))] = lines
    assert not offenders, f"tests/ is on sys.path through pyproject's pythonpath option: {offenders}"


def test_the_path_checks_catch_the_mistakes_they_look_for():
    tree = ast.parse("import sys\nsys.path.insert(0, 'x')\nfrom test_batch import fake_grade\n")
    assert _path_changes(tree) == [2]
    assert "test_batch" in _imported_names(tree)
    # A child process's bootstrap in a string is code for another process, not this one's path.
    assert _path_changes(ast.parse("code = 'import sys; sys.path.append(root)'\n")) == []


def test_every_phony_makefile_target_has_a_rule():
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    declared = {name for line in re.findall(r"^\.PHONY:(.*)$", text, re.M) for name in line.split()}
    defined = set(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, re.M)) - {".PHONY"}
    assert declared and not declared - defined, f"declared .PHONY but no rule: {sorted(declared - defined)}"


def test_no_assertion_was_dropped():
    import assertions

    floor = int((TESTS / "assertion_floor.txt").read_text().split()[0])
    count = assertions.distinct_assertions(assertions.test_files())
    assert count >= floor, (
        f"{floor - count} distinct assertions fewer than tests/assertion_floor.txt ({count} < {floor}): "
        "a test was dropped; bring it back, or lower the floor with the reason in the commit"
    )


def test_the_assertion_count_sees_a_dropped_assertion_and_ignores_form():
    import assertions

    one = "def test():\n    assert f(1) == 2\n    with pytest.raises(ValueError):\n        g()\n"
    assert assertions.distinct_assertions({"a.py": one}) == 2
    assert assertions.distinct_assertions({"a.py": one.replace("f(1) == 2", "f( 1 )==2  # same")}) == 2
    assert assertions.distinct_assertions({"a.py": one.replace("    assert f(1) == 2\n", "")}) == 1


def test_every_file_the_suite_orders_exists():
    from helpers import FILE_ORDER

    missing = [name for name in FILE_ORDER if not (TESTS / name).is_file()]
    assert not missing, f"renamed or removed: put the new names in tests/helpers.py's FILE_ORDER: {missing}"
    assert len(set(FILE_ORDER)) == len(FILE_ORDER), "a file is named twice in FILE_ORDER"
