"""Steps of one submission share a step child, and what a step leaves behind never reaches the next.

The fork server runs a submission's steps in a few step children, several
steps each in turn, with a new import per step (``grader.engine.forkserver.run_jobs``
with ``chain``). These tests drive it with the engine's own probe function
(``tests/engine_probes.py``) and read the observations: a step child's pid
says which steps shared it, a module-level counter that every import starts
at zero says each step had its module anew.
"""

from __future__ import annotations

import time

import pytest
from engine_probes import ENGINE_PROBES

from grader.engine import cgroups
from grader.engine.protocol import IMPORT_ERROR, IMPORTED, OBS, StepJob, encode_source

BASE = (
    "import os, sys, time, threading, json\n"
    "COUNT = []\n"
    "def seen():\n"
    "    COUNT.append(1)\n"
    "    return [os.getpid(), len(COUNT)]\n"
)


def _jobs(source: str, *calls: str | tuple[str, ...]) -> list[StepJob]:
    """One job per entry: the functions it calls, in order (``seen`` last)."""
    jobs = []
    for n, fns in enumerate(calls, start=1):
        fns = () if fns == "seen" else (fns,) if isinstance(fns, str) else fns
        probes = tuple({"kind": "call", "params": {"fn": fn, "args": []}} for fn in (*fns, "seen"))
        jobs.append(
            StepJob(
                step=n,
                source_b64=encode_source(source.encode()),
                probes=probes,
                nonce=f"{n:02d}" + "ab" * 15,
                probe_function=ENGINE_PROBES,
            )
        )
    return jobs


def _seen(result) -> tuple[int, int] | None:
    """(pid, counter) the step's last probe saw, or None."""
    obs = [m["obs"] for m in result.messages if m["type"] == OBS]
    value = obs[-1].get("value") if obs else None
    return tuple(value) if isinstance(value, list) else None


def test_the_steps_of_a_submission_share_a_step_child_and_each_imports_its_module_anew(engine_client):
    results = engine_client.run_many(_jobs(BASE, *["seen"] * 5), parallel=1, chain=True)
    seen = [_seen(r) for r in results]
    assert all(s is not None for s in seen), results
    assert len({pid for pid, _ in seen}) == 1  # one step child ran all five
    assert [count for _, count in seen] == [1] * 5  # each step had its own, just-imported module
    assert all(r.exit_status == 0 and not r.timed_out and IMPORTED in {m["type"] for m in r.messages} for r in results)


def test_parallel_lanes_split_the_steps_between_step_children(engine_client):
    results = engine_client.run_many(_jobs(BASE, *["seen"] * 6), parallel=2, chain=True)
    pids = [_seen(r)[0] for r in results]
    assert len(set(pids)) == 2 and pids == sorted(pids, key=pids.index)  # two runs of consecutive steps


LEFT_BEHIND = {
    # What one step may leave in its process, and must not reach the next.
    "a thread still running": "def leave():\n    threading.Thread(target=time.sleep, args=(20,), daemon=True).start()\n",
    "a patched standard module": "def leave():\n    json.dumps = repr\n",
    "a patched builtin": "def leave():\n    import builtins\n    builtins.len = lambda x: 0\n",
    "a signal handler": "import signal\ndef leave():\n    signal.signal(signal.SIGUSR1, lambda *a: None)\n",
    "a lowered limit": "import resource\ndef leave():\n    resource.setrlimit(resource.RLIMIT_NOFILE, (100, 100))\n",
    "a child process": "def leave():\n    if os.fork() == 0:\n        time.sleep(20)\n        os._exit(0)\n",
    "an exception hook": "def leave():\n    sys.excepthook = print\n",
    "its start pipe closed": (
        "import stat\n"
        "def leave():\n"
        "    for fd in range(3, 256):\n"
        "        try:\n"
        "            info = os.fstat(fd)\n"
        "        except OSError:\n"
        "            continue\n"
        "        if stat.S_ISFIFO(info.st_mode):\n"
        "            with open(f'/proc/self/fdinfo/{fd}') as fh:\n"
        "                flags = int(fh.read().split('flags:')[1].split()[0], 8)\n"
        "            if flags & 3 == 0:  # read-only: a pipe the grader writes to\n"
        "                os.close(fd)\n"
    ),
}


@pytest.mark.parametrize("what", sorted(LEFT_BEHIND))
def test_a_step_that_leaves_something_behind_hands_the_next_steps_to_a_new_step_child(engine_client, what):
    source = BASE + LEFT_BEHIND[what]
    results = engine_client.run_many(_jobs(source, "seen", ("leave",), "seen", "seen"), parallel=1, chain=True)
    seen = [_seen(r) for r in results]
    assert all(s is not None for s in seen), [(r.exit_status, r.signal, r.messages[-1:]) for r in results]
    pids = [pid for pid, _ in seen]
    assert pids[0] == pids[1] != pids[2] == pids[3], f"{what}: steps ran in {pids}"
    assert [seen[i][1] for i in (0, 2, 3)] == [1, 1, 1]  # (step 2 may have broken its own len())


def test_the_solution_keeps_one_step_child_for_all_its_steps(engine_client):
    # Nothing the reference solution does in a step changes its process: a
    # change found there would cost every submission a process per step.
    from pathlib import Path

    solution = (Path(__file__).resolve().parent.parent / "solutions" / "tools.py").read_text()
    source = solution + "\nimport os as _os\ndef seen():\n    return [_os.getpid(), 1]\n"
    calls = ["seen", "handle_demo", "report_demo", "seen"]
    source += (
        "def handle_demo():\n    return handle('please check sku A-1 in eu') and None\n"
        "def report_demo():\n    import tempfile\n    return write_report(tempfile.mkdtemp()) and None\n"
    )
    results = engine_client.run_many(_jobs(source, *calls), parallel=1, chain=True)
    assert len({_seen(r)[0] for r in results}) == 1, [r.messages[-2:] for r in results]


def test_a_step_child_that_dies_costs_its_step_only_and_a_new_one_runs_the_rest(engine_client):
    source = BASE + "def die():\n    os._exit(3)\n"
    results = engine_client.run_many(_jobs(source, "seen", ("die",), "seen", "seen"), parallel=1, chain=True)
    assert results[1].exit_status == 3 and _seen(results[1]) is None
    seen = [_seen(results[i]) for i in (0, 2, 3)]
    assert seen[0][0] != seen[1][0] == seen[2][0] and [c for _, c in seen] == [1, 1, 1]


def test_a_step_that_overruns_is_killed_alone_and_the_rest_still_run(engine_client):
    from grader.engine.protocol import Limits

    source = BASE + "def hang():\n    time.sleep(30)\n"
    jobs = [
        StepJob(**{**job.__dict__, "limits": Limits(timeout=1.0)}) for job in _jobs(source, "seen", ("hang",), "seen")
    ]
    results = engine_client.run_many(jobs, parallel=1, chain=True)
    assert results[1].timed_out and results[1].timeout_phase == "probe"
    assert _seen(results[0]) and _seen(results[2]) and _seen(results[2])[0] != _seen(results[0])[0]


def test_a_module_that_does_not_import_fails_every_step_with_one_process(engine_client):
    jobs = _jobs(BASE + "raise ValueError('no')\n", *["seen"] * 4)
    results = engine_client.run_many(jobs, parallel=2, chain=True)
    errors = [next(m for m in r.messages if m["type"] == IMPORT_ERROR) for r in results]
    assert all(e["error_type"] == "ValueError" for e in errors)
    assert {e["nonce"] for e in errors} == {jobs[0].nonce}  # the first step's one result, handed to every step


def test_a_slow_import_gives_each_step_a_step_child_of_its_own_and_the_imports_overlap(engine_client):
    source = BASE + "time.sleep(0.6)\n"
    started = time.monotonic()
    results = engine_client.run_many(_jobs(source, *["seen"] * 5), parallel=2, chain=True)
    elapsed = time.monotonic() - started
    assert len({_seen(r)[0] for r in results}) == 5
    # One after another the five imports would take 3 s; overlapping, the first and then the others.
    assert elapsed < 2.6, f"{elapsed:.1f} s"


@pytest.mark.skipif(not cgroups.enabled(), reason="no usable cgroups here: a step's leftovers die with the request")
def test_what_a_step_left_running_in_its_group_is_killed_before_the_next_step(engine_client):
    source = BASE + (
        "def leave():\n    if os.fork() == 0:\n        os.setsid()\n        if os.fork() == 0:\n"
        "            time.sleep(30)\n        os._exit(0)\n    os.wait()\n"
    )
    results = engine_client.run_many(_jobs(source, ("leave",), "seen"), parallel=1, chain=True)
    assert results[0].killed_descendants >= 1  # the orphan of step 1 was killed at its end
    assert _seen(results[1])[1] == 1


def test_each_step_of_a_step_child_has_its_own_cpu_seconds(engine_client):
    from grader.engine.protocol import Limits

    source = (
        BASE + "def burn():\n    end = time.process_time() + 0.7\n    while time.process_time() < end:\n        pass\n"
    )
    jobs = [StepJob(**{**job.__dict__, "limits": Limits(cpu_seconds=1)}) for job in _jobs(source, *[("burn",)] * 3)]
    results = engine_client.run_many(jobs, parallel=1, chain=True)
    assert [r.signal for r in results] == [None] * 3 and all(_seen(r) for r in results)  # 2.1 s in all, 0.7 a step
    assert len({_seen(r)[0] for r in results}) == 1


@pytest.mark.parametrize("what", ["a thread still running", "a patched standard module", "a signal handler"])
def test_a_fresh_probe_that_changes_the_step_child_hands_the_rest_of_its_step_to_a_new_one(engine_client, what):
    # Fresh probes of a quick import run on imports of their own in the step
    # child; one that changes the process must not reach the probes after it.
    source = BASE + LEFT_BEHIND[what] + "def leave_here():\n    leave()\n    return [os.getpid(), 0]\n"
    call = lambda fn, fresh: {"kind": "call", "params": {"fn": fn, "args": [], **({"fresh": True} if fresh else {})}}
    # Its import counts as quick however busy the machine is (its quickness is not what is tested).
    job = StepJob(
        step=1,
        source_b64=encode_source(source.encode()),
        nonce="cd" * 16,
        probe_function=ENGINE_PROBES,
        probes=(call("seen", True), call("leave_here", True), call("seen", True), call("seen", False)),
        reimport_seconds=5.0,
    )
    result = engine_client.run(job)
    values = [m["obs"].get("value") for m in result.messages if m["type"] == OBS]
    assert len(values) == 4 and result.exit_status == 0, result
    pids = [v[0] for v in values]
    assert pids[0] == pids[1] != pids[2] == pids[3]  # after the change, a new step child
    assert [values[i][1] for i in (0, 2, 3)] == [1, 1, 1]  # each fresh probe, and the step's module, as imported


def test_a_quick_fresh_probe_runs_without_a_fork_and_sees_the_environment_as_it_was(engine_client):
    source = (
        BASE + "def env():\n    os.environ['LEFT'] = 'x'\n    return [os.getpid(), len(os.environ.get('SEEN', ''))]\n"
    )
    source += "def look():\n    return [os.getpid(), len(os.environ.get('LEFT', ''))]\n"
    call = lambda fn: {"kind": "call", "params": {"fn": fn, "args": [], "fresh": True}}
    job = StepJob(
        step=1,
        source_b64=encode_source(source.encode()),
        nonce="ef" * 16,
        probe_function=ENGINE_PROBES,
        probes=(call("env"), call("look"), call("seen")),
    )
    values = [m["obs"]["value"] for m in engine_client.run(job).messages if m["type"] == OBS]
    assert len({v[0] for v in values}) == 1  # one process: no fork, no new step child
    assert values[1][1] == 0 and values[2][1] == 1  # the environment was put back; a new module


def test_fresh_probes_of_an_import_that_changes_the_process_run_in_forks(engine_client):
    # An import that patches a standard module changes the process each time:
    # a new import per fresh probe would not start where the import left off.
    source = BASE + "json.dumps = lambda *a, **k: 'patched'\n"
    call = lambda fn, fresh: {"kind": "call", "params": {"fn": fn, "args": [], **({"fresh": True} if fresh else {})}}
    job = StepJob(
        step=1,
        source_b64=encode_source(source.encode()),
        nonce="aa" * 16,
        probe_function=ENGINE_PROBES,
        probes=(call("seen", True), call("seen", True), call("seen", False)),
    )
    values = [m["obs"]["value"] for m in engine_client.run(job).messages if m["type"] == OBS]
    assert [v[1] for v in values] == [1, 1, 1]
    assert values[0][0] != values[1][0] != values[2][0]  # forks of the step child, then the step child itself


def test_the_fork_server_warm_up_runs_a_graph_before_any_step_child_is_forked():
    # Each step child would otherwise pay LangGraph's lazy imports of a first run.
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    code = f"import sys; sys.path.append({str(root)!r}); import grader.engine.forkserver as s; print(s._preload())"
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert "'graph warm-up'" in out.stdout, out.stdout + out.stderr
