"""Checks of one step share their runs: a guard on what one grading costs (counts, never times).

Steps 6-8 run the learner's LangGraph graphs, which is most of a submission's
CPU (see ``benchmarks/cost_breakdown.py``). Their checks draw shared runs from
``rng.shared(...)`` as ``fresh`` or ``reset`` probes, and grading sends
identical ones once. A change that breaks the sharing (a label that differs
between two checks, a run drawn from the check's own stream) would silently
double the cost, and so would a run turned back from ``reset`` into ``fresh``
(a fork of the step child each, about 12 ms of page copies on a VM); these
tests say so instead.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from langgraph.graph import StateGraph

from grader import grading
from grader.checks import step7
from grader.checks.registry import checks_for
from grader.engine import child, probes

SOLUTION = Path(__file__).resolve().parent.parent / "solutions" / "tools.py"
# Probes sent to the child per step after sharing, and graph compiles one grading of the solution makes.
# Each step judged by its own route, with the same classes on every seed, takes these runs: step 6's
# run with the grader's pick and the one with two reasons; step 7's loop and limit-only runs, and the run
# where the same reason comes back and a graph built before MAX_ATTEMPTS changes runs after (2 compiles).
PROBE_BUDGET = {6: 10, 7: 16, 8: 4}
# Step 8: its four reports run the module's own handle on the real route, two orders each, and the report
# with MAX_ATTEMPTS = 1 runs it twice more outside the report.
COMPILE_BUDGET = {6: 10, 7: 19, 8: 10}
# Forks of the step child per step (fresh probes but the job's last, see grader.engine.child).
FORK_BUDGET = {1: 2, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 1, 8: 3}


def _job_probes(step: int, seed: int) -> tuple[int, list[dict]]:
    plan, job = grading._plan(checks_for([step]), seed)
    return sum(len(item.probes) for item in plan), job


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("step", sorted(PROBE_BUDGET))
def test_checks_of_a_graph_step_share_their_runs(step, seed):
    asked, job = _job_probes(step, seed)
    assert len(job) <= PROBE_BUDGET[step] < asked, f"step {step}: {asked} probes asked, {len(job)} sent"


@pytest.mark.parametrize("seed", [1, 2])
def test_a_grading_forks_the_step_child_only_for_the_probes_that_need_the_module_as_imported(seed):
    forks = {}
    for step in FORK_BUDGET:
        _, job = _job_probes(step, seed)
        fresh = [i for i, probe in enumerate(job) if child.is_fresh(probe)]
        assert fresh == list(range(len(fresh))), f"step {step}: fresh probes are not sent first"
        forks[step] = len([i for i in fresh if i < len(job) - 1])
    assert forks == FORK_BUDGET


def test_identical_reset_probes_of_several_checks_are_sent_once_and_after_the_fresh_ones():
    plan, job = grading._plan(checks_for([7]), 3)
    reset = [i for i, probe in enumerate(job) if probe["params"].get("reset")]
    asked = [i for item in plan for i, probe in zip(item.indices, item.probes) if probe.params.get("reset")]
    assert len(reset) >= len(step7.HANDLE_RUNS) and sorted(set(asked)) == reset and len(asked) > len(reset)
    assert not any(child.is_fresh(job[i]) for i in reset) and min(reset) > 0  # step 7's constants go first


def test_a_shared_run_is_sent_once_even_when_many_checks_judge_it():
    plan, job = grading._plan(checks_for([8]), 5)
    # Four reports (step8: as is, changed, no cache, limit one); follows_module judges the last three.
    assert len(job) == 4 and {tuple(item.indices) for item in plan} == {(0,), (1,), (1, 2, 3)}


def _compiles_in_process(step: int, seed: int) -> int:
    """Graph compiles when the step's probes run against the solution, here, without a fork."""
    _, job = _job_probes(step, seed)
    count = [0]
    original = StateGraph.compile

    def counting(self, *args, **kwargs):
        count[0] += 1
        return original(self, *args, **kwargs)

    scratch, here = tempfile.mkdtemp(prefix="agtool-sharing-"), os.getcwd()
    StateGraph.compile = counting
    try:
        path = child._prepare_scratch(scratch, SOLUTION.read_bytes())
        ctx = child.StepContext(scratch, path, f"agtool_sharing_{step}_{seed}")
        module = ctx.fresh_module()
        for probe in job:
            obs = probes.run_probe(module, probe, ctx)
            assert "raised" not in obs and "setup_error" not in obs, obs
    finally:
        StateGraph.compile = original
        os.chdir(here)
        shutil.rmtree(scratch, ignore_errors=True)
    return count[0]


@pytest.mark.parametrize("step", sorted(COMPILE_BUDGET))
def test_one_grading_of_the_solution_stays_within_its_graph_compiles(step):
    assert _compiles_in_process(step, seed=4) <= COMPILE_BUDGET[step]


def _walk() -> tuple[str, ...]:
    import sys

    return tuple(n for n in sys.modules if n == "grader" or n.startswith("grader."))


def test_the_grader_modules_a_step_child_drops_are_all_of_them_even_after_a_new_import():
    import sys

    child.GraderModules.prepare()
    assert child.GraderModules.names() == _walk()
    sys.modules["grader.zz_imported_after_the_list"] = sys.modules["grader"]
    try:
        assert "grader.zz_imported_after_the_list" in child.GraderModules.names()  # walked again
    finally:
        del sys.modules["grader.zz_imported_after_the_list"]
    assert child.GraderModules.names() == _walk()


def test_signatures_of_builtins_are_the_same_with_the_fork_servers_memo():
    import inspect
    import operator

    from grader.engine.sharedpages import memoize_builtin_signatures

    functions = [operator.add, operator.iadd, len, sorted, dict.get, {}.get, "".join, divmod, max]
    before = [str(inspect.signature(f)) if _has_signature(f) else None for f in functions]
    assert memoize_builtin_signatures() and memoize_builtin_signatures()  # idempotent
    assert [str(inspect.signature(f)) if _has_signature(f) else None for f in functions] == before
    assert str(inspect.signature({}.get)) == "(key, default=None, /)"  # bound: self dropped
    assert str(inspect.signature(dict.get)) == "(self, key, default=None, /)"


def _has_signature(fn) -> bool:
    import inspect

    try:
        inspect.signature(fn)
        return True
    except ValueError:
        return False
