"""The examples in the grader's docstrings are true: each module's doctests run here.

Examples that need a class folder or a browser are marked ``# doctest: +SKIP`` where
they stand; every other example must pass as written.
"""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import grader

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(grader.__path__, prefix="grader.")
    if not info.name.endswith("__main__")  # running it is what it is for
)


def test_the_grader_has_modules_to_test():
    assert {"grader.runner", "grader.registry", "grader.child", "grader.checks.step6"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (see the output)"
