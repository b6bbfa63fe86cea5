"""Helpers that more than one test module uses (fixtures live in conftest.py).

``tests/`` is on ``sys.path`` through pytest's ``pythonpath`` option in
pyproject.toml, so a test writes ``from helpers import fake_grade``; no test
module imports another one.

* a fake grader for the batch and course tests (``fake_grade``, ``make_class``);
* disguised copies of a module for the similarity tests (``disguised``);
* a check whose one probe calls a function (``call_check``), for the engine tests;
* loading a file that is not on ``sys.path`` as a module (``load_file``, ``notebook_builder``);
* skipping a test for a missing prerequisite, summed up on one line (``skip_missing``);
* the solution's score, for tests that grade it end to end (``full_marks``, ``PART_ONE_MARKS``).
"""

from __future__ import annotations

import importlib.util
import io
import itertools
import keyword
import os
import sys
import time
import tokenize
from pathlib import Path
from types import ModuleType

import pytest

from grader.checks.registry import Check, Probe, Verdict
from grader.report import CheckResult, Report

TESTS_DIR = Path(__file__).resolve().parent
REPO = TESTS_DIR.parent

# ---------------------------------------------------------------- the solution's score

PART_ONE_MARKS = 133  # steps 1-8 (LAB_SPEC part one): a module that stops at step 8 keeps these


def full_marks() -> int:
    """The points of every registered check: what the reference solution scores (steps 1-11).

    A test that grades the solution end to end compares with this, not with a number
    written down, so adding a check does not break it (part one alone is ``PART_ONE_MARKS``).
    """
    from grader.checks.registry import checks_for

    return sum(check.points for check in checks_for())


# ---------------------------------------------------------------- the fake grader

# (check id, step, points): the fake grader's registry.
FAKE_CHECKS = [("step1/names", 1, 2), ("step1/table", 1, 1), ("step2/type_limit", 2, 3)]


def fake_grade(path, *, steps=None, only=None, seed=None, timeout=None):
    """Pass check X when the source contains ``pass:X``; ``HANG``/``DIE``/``SLOW`` misbehave.

    ``path``: a ``grader.locate.Submission`` (what batch workers pass) or a path.
    """
    source = path.source.decode() if hasattr(path, "source") else Path(path).read_text()
    if "HANG" in source:
        time.sleep(3600)
    if "DIE" in source:
        os._exit(3)
    if "SLOW" in source:
        time.sleep(0.4)
    if "RAISE" in source:
        raise RuntimeError("grader bug")
    checks = []
    for cid, step, points in FAKE_CHECKS:
        ok = f"pass:{cid}" in source
        checks.append(
            CheckResult(
                id=cid,
                step=step,
                passed=ok,
                points=points if ok else 0,
                max_points=points,
                title=f"title of {cid}",
                call="" if ok else f"validate_args(...)  # {path}",
                expected="" if ok else "'type:limit'",
                got="" if ok else "''",
                message="" if ok else "wrong reason",
                reproduce="" if ok else f"agtool-grade {path} --only {cid}",
            )
        )
    return Report(seed=seed, path=str(path), checks=checks)


ALL_PASS = " ".join(f"pass:{cid}" for cid, _, _ in FAKE_CHECKS)


def make_class(root: Path, sources: dict[str, str], *, nested: set[str] = frozenset()) -> Path:
    """One folder per learner under ``root`` with its ``tools.py`` (under ``agtool/`` for ``nested``)."""
    for learner, source in sources.items():
        folder = root / learner / ("agtool" if learner in nested else "")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "tools.py").write_text(source)
    return root


# ---------------------------------------------------------------- disguised copies


def renamed(source: str, template: str = "q{}_z") -> str:
    """Every local name renamed (to ``template`` with a number), nothing else: a copier's first disguise."""
    names: dict = {}
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if (
            tok.type == tokenize.NAME
            and not keyword.iskeyword(tok.string)
            and tok.string.islower()
            and len(tok.string) > 3
            and tok.string not in dir(__builtins__)
        ):
            tok = tok._replace(string=names.setdefault(tok.string, template.format(len(names))))
        out.append(tok)
    return tokenize.untokenize(out)


def reordered(source: str) -> str:
    """The top-level blocks after the imports in reverse order."""
    blocks = source.split("\n\n\n")
    return "\n\n\n".join(blocks[:2] + list(reversed(blocks[2:])))


def disguised(source: str) -> str:
    """A copy with every local name renamed, functions reordered and comments added (what a copier does)."""
    return reordered(renamed(source, "v{}_x")).replace("\n    return", "\n    # my own work\n    return")


# ---------------------------------------------------------------- engine test checks


def call_check(step: int, name: str, fn: str, *, expect=None, draw=None, args=(), points=1) -> Check:
    """A check whose one probe calls ``fn(*args)`` (or ``fn(draw(rng))``) and wants ``expect``."""

    def probes(rng):
        call_args = [draw(rng)] if draw else list(args)
        return [Probe("call", {"fn": fn, "args": call_args}, label=f"{fn}({', '.join(map(repr, call_args))})")]

    def judge(probes, observations):
        got = observations[0]
        if got == {"value": expect}:
            return Verdict.ok()
        return Verdict.fail("unexpected value", call=probes[0].label, expected=expect, got=got.get("value", got))

    return Check(
        id=f"step{step}/zz_engine_{name}",
        step=step,
        points=points,
        title=f"engine test {name}",
        hint="engine hint",
        probes=probes,
        judge=judge,
    )


# ---------------------------------------------------------------- files that are not on sys.path


def load_file(path: Path, name: str) -> ModuleType:
    """Import the file at ``path`` as module ``name`` (registered in ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # LangGraph resolves State's annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def notebook_builder(name: str = "_build_notebooks_under_test") -> ModuleType:
    """``labs/_build_notebooks.py``, the generator of the lab notebooks, as a module."""
    return load_file(REPO / "labs" / "_build_notebooks.py", name)


# ---------------------------------------------------------------- missing prerequisites

# Reasons given to skip_missing: conftest.py folds every skip with one of them into one summary line.
MISSING_REASONS: set[str] = set()


def skip_missing(reason: str) -> None:
    """Skip this test because something it needs is not installed; ``reason`` says how to install it."""
    MISSING_REASONS.add(reason)
    pytest.skip(reason)


# The order in which `make test` hands whole files to its two pytest-xdist workers (it runs with
# --no-loadscope-reorder, so a worker takes the next file of this order when it is nearly done with
# its own). From the suite's timeline (per-minute CPU beside which file ran where): the
# stability sweep's own pool of two grading processes keeps both cores busy for about ten minutes,
# so the files that mostly wait (a hub, a browser, a Debian tree, sleeping imports) go beside it;
# after it, a file that grades by the dozen alternates with one that waits, so that one worker's
# waiting is the other's CPU; the rest, short files, close. xdist's default (the files with the
# most tests first) left the waiting files to the end, where the two cores stood half idle.
# A file named here and since renamed loses its place, not its tests (tests/test_test_suite.py
# checks the names); tests/conftest.py sorts by it.
FIRST_FILES = ("test_stability.py", "test_service.py", "test_slow_imports.py", "e2e/test_lab_check_panel.py")
GRADING_FILES = (  # longest first
    "test_hostile.py",
    "test_done_clone.py",
    "test_batch.py",
    "test_mutation.py",
    "test_notebooks.py",
    "test_styled_corpus.py",
    "test_grading_walls.py",
    "test_engine_client.py",
    "test_refactoring.py",
    "test_batch_hostile.py",
    "test_checks_meta.py",
    "test_domain_dimensions.py",
    "test_service_hardening.py",
    "test_model_endpoint.py",
)
WAITING_FILES = (  # longest first
    "e2e/test_hub_recipe.py",
    "e2e/test_hub_instructor_actions.py",
    "e2e/test_hub_submit.py",
    "e2e/test_lti_course.py",
    "e2e/test_lti_launch.py",
    "e2e/test_newcomer_path.py",
    "e2e/test_hub_classroom.py",
    "e2e/test_instructor_path.py",
    "e2e/test_lab_a11y.py",
    "e2e/test_lab_replay_line.py",
    "e2e/test_lab_widgets_render.py",
    "e2e/test_service_a11y.py",
)
FILE_ORDER = FIRST_FILES + tuple(
    name for pair in itertools.zip_longest(GRADING_FILES, WAITING_FILES) for name in pair if name is not None
)
