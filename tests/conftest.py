"""Shared fixtures: a warm engine client for the engine tests, temporary checks, the module under test.

Helpers that are not fixtures live in ``tests/helpers.py``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from pathlib import Path

import pytest
from helpers import FILE_ORDER, MISSING_REASONS

from agtool_lab.load import load_module
from grader.checks.registry import CHECKS, Check, register
from grader.engine.client import EngineClient

TESTS_DIR = Path(__file__).resolve().parent

# What the e2e extra adds to the test extra. `make lab` installs without it; `make test` with it.
E2E_EXTRA_MODULES = ("playwright", "jupyterhub")


@functools.cache
def missing_e2e_modules() -> tuple[str, ...]:
    """The modules of the e2e extra that are not installed here (``()`` after ``make test``)."""
    return tuple(name for name in E2E_EXTRA_MODULES if importlib.util.find_spec(name) is None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    # Every skip for want of the e2e extra or of a program the e2e tests need (helpers.skip_missing)
    # is summed up on one line of the summary per reason, instead of one line per test.
    report = yield
    if not (report.skipped and isinstance(report.longrepr, tuple)):
        return report
    reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    missing = missing_e2e_modules()
    if missing and any(name in reason for name in missing):
        reason = (
            f"the e2e extra is not installed (no {', '.join(missing)}): pip install -e '.[e2e]' (make test does it)"
        )
    elif reason not in MISSING_REASONS:
        return report
    report.longrepr = (str(Path(__file__)), None, reason)  # no line number: one summary line per reason
    return report


def pytest_collection_modifyitems(config, items):
    # A stable sort: the files of helpers.FILE_ORDER in its order (why: there), then every other file as collected.
    rank = {name: position for position, name in enumerate(FILE_ORDER)}
    items.sort(key=lambda item: rank.get(Path(item.path).relative_to(TESTS_DIR).as_posix(), len(rank)))


@pytest.fixture(scope="session")
def engine_client():
    """A warm engine client whose fork server can also import ``tests/engine_probes.py`` (for ``probe_function=``)."""
    with EngineClient(extra_sys_path=[str(TESTS_DIR)]) as client:
        client.start()  # so that no test's time bound includes the start-up imports
        yield client


@pytest.fixture
def temp_checks():
    """Register checks for one test only: ``temp_checks(check, ...)`` returns their ids."""
    added: list[str] = []

    def add(*checks: Check) -> list[str]:
        for check in checks:
            register(check)
            added.append(check.id)
        return [c.id for c in checks]

    yield add
    for check_id in added:
        CHECKS.pop(check_id, None)


@pytest.fixture
def write_module(tmp_path):
    """``write_module(source)`` writes ``tools.py`` into a fresh folder and returns its path."""

    def write(source: str | bytes, name: str = "tools.py") -> Path:
        path = tmp_path / name
        path.write_bytes(source if isinstance(source, bytes) else source.encode())
        return path

    return write


@pytest.fixture(scope="session")
def spec_module_path() -> Path:
    """The module the spec tests judge: ``$AGTOOL_SPEC_MODULE`` (a defect, a learner's file), else the solution."""
    return Path(os.environ.get("AGTOOL_SPEC_MODULE") or TESTS_DIR.parent / "solutions" / "tools.py")


@pytest.fixture
def sol(spec_module_path):
    """A fresh import of that module (clean CALLS and CACHE)."""
    module = load_module(spec_module_path)
    yield module
    sys.modules.pop(module.__name__, None)
