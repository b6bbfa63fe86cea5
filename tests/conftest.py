"""Shared fixtures: a warm grader process for the engine tests, and temporary checks."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agtool_lab.load import load_module
from grader.checks.registry import CHECKS, Check, register
from grader.engine.client import EngineClient

TESTS_DIR = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def engine_runner():
    """A warm process that can also import ``tests/engine_probes.py`` (for ``probe_function=``)."""
    with EngineClient(extra_sys_path=[str(TESTS_DIR)]) as runner:
        runner.start()  # so that no test's time bound includes the start-up imports
        yield runner


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
    def write(source: "str | bytes", name: str = "tools.py") -> Path:
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
