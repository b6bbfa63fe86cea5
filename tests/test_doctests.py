"""The examples in the docstrings of the grader and the lab's kernel side are true: each module's doctests run here.

Examples that need a class folder or a browser are marked ``# doctest: +SKIP`` where
they stand; every other example must pass as written.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import agtool_lab
import grader

MODULES = sorted(
    info.name
    for package in (grader, agtool_lab)
    for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + ".")
    if not info.name.endswith("__main__")  # running it is what it is for
) + ["agtool_lab", "grader"]


def test_the_grader_has_modules_to_test():
    assert {
        "grader.grading",
        "grader.checks.registry",
        "grader.engine.child",
        "grader.checks.step6",
        "agtool_lab.widget",
        "agtool_lab.noisy.model",
    } <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (see the output)"


def test_examples_that_would_kill_or_stop_this_process_s_children_are_not_run():
    # kill_descendants() in a doctest killed the test session's browser and servers once.
    import grader.engine.client
    import grader.engine.forkserver
    import grader.engine.proctree
    import grader.engine.scheduling
    import grader.engine.step_process

    dangerous = (
        "kill_descendants()",
        "become_subreaper()",
        "run_jobs(",
        "run_job(",
        "close()",
        ".run()",
        "StepProcess(",
    )
    for module in (
        grader.engine.proctree,
        grader.engine.forkserver,
        grader.engine.scheduling,
        grader.engine.step_process,
        grader.engine.client,
    ):
        for test in doctest.DocTestFinder().find(module):
            for example in test.examples:
                if any(call in example.source for call in dangerous) and "runner.close()" not in example.source:
                    assert example.options.get(doctest.SKIP), f"{test.name}: {example.source.strip()}"
