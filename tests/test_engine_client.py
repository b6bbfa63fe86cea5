"""The grading engine: children per step, fail-fast imports, limits, cleanup, replay.

These tests register small checks of their own (ids ``stepN/zz_engine_*``)
whose probes call learner functions through ``tests/engine_probes.py``, so
they exercise the engine independently of the real checks. The last tests use
the real registry once it has checks.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from engine_probes import ENGINE_PROBES
from helpers import call_check

from grader.checks.registry import CHECKS, Check, Probe, Verdict, checks_for
from grader.engine.child import with_filename
from grader.engine.instrument import compile_instrumented
from grader.engine.step_process import TRUNCATED_MARK
from grader.grading import grade
from grader.locate import SubmissionNotFound

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def run(path, ids, engine_client, **kwargs):
    return grade(path, only=ids, engine=engine_client, probe_function=ENGINE_PROBES, **kwargs)


def by_id(report):
    return {c.id.split("/zz_engine_")[-1]: c for c in report.checks}


def test_each_step_runs_in_its_own_fresh_module(write_module, temp_checks, engine_client):
    path = write_module("COUNT = []\ndef bump():\n    COUNT.append(1)\n    return len(COUNT)\n")
    ids = temp_checks(
        call_check(1, "a", "bump", expect=1), call_check(2, "b", "bump", expect=1), call_check(2, "c", "bump", expect=2)
    )
    report = run(path, ids, engine_client, seed=1)
    assert [c.passed for c in report.checks] == [True, True, True]
    assert report.score == report.max_score == 3 and report.error == ""


def fresh_check(step: int, name: str, *, expect: int, shareable: bool = True) -> Check:
    """A check whose one probe re-imports the module and reads ``IMPORTS`` off the new copy."""
    params = {"name": "IMPORTS", "fresh": True} if shareable else {"name": "IMPORTS"}

    def judge(probes, observations):
        got = observations[0].get("value")
        return Verdict.ok() if got == expect else Verdict.fail("unexpected", expected=expect, got=got)

    return Check(
        id=f"step{step}/zz_engine_{name}",
        step=step,
        points=1,
        title=f"engine test {name}",
        hint="engine hint",
        probes=lambda rng: [Probe("fresh", dict(params), label="import")],
        judge=judge,
    )


@pytest.mark.parametrize(
    "import_line, reimport_seconds, imports",
    [
        # A quick import: each fresh probe has an import of its own (cheaper than a fork).
        # (d, its step's last probe, takes the step's import.) Its threshold is set far above the
        # import's time, so that a loaded machine measuring the import slowly still takes this path.
        ("", 5.0, {"a": 2, "b": 2, "c": 3, "d": 1}),
        # A slower one (over child.REIMPORT_SECONDS, the default threshold): the step imports
        # once, a fresh probe gets that import's module in a fork; only c, which re-imports
        # after other probes ran, imports again.
        ("import time; time.sleep(0.05)\n", None, {"a": 1, "b": 1, "c": 2, "d": 1}),
    ],
    ids=["quick import", "slower import"],
)
def test_identical_fresh_probes_of_a_step_run_once_and_each_check_gets_the_observation(
    write_module, temp_checks, engine_client, import_line, reimport_seconds, imports
):
    # Every import appends to a log in the step's scratch folder; IMPORTS is its length.
    # b is the same probe as a: it runs once and both get its observation.
    path = write_module(
        import_line + "with open('imports.log', 'a') as f:\n    f.write('x')\n"
        "IMPORTS = len(open('imports.log').read())\n"
    )
    ids = temp_checks(
        fresh_check(2, "a", expect=imports["a"]),
        fresh_check(2, "b", expect=imports["b"]),
        fresh_check(2, "c", expect=imports["c"], shareable=False),
        fresh_check(3, "d", expect=imports["d"]),
    )
    report = run(path, ids, engine_client, seed=1, reimport_seconds=reimport_seconds)
    seen = {k: (c.passed, c.got) for k, c in by_id(report).items()}
    assert seen == {
        "a": (True, ""),
        "b": (True, ""),
        "c": (True, ""),
        "d": (True, ""),
    }


def fresh_call_check(step: int, name: str, *, expect: int, fresh: bool, n: int, fn: str = "bump") -> Check:
    """A check whose one probe calls ``fn()`` (``bump``), in a fork of the just-imported step child when ``fresh``."""
    params = {"fn": fn, "args": [], "n": n, **({"fresh": True} if fresh else {})}

    def judge(probes, observations):
        got = observations[0].get("value")
        return Verdict.ok() if got == expect else Verdict.fail("unexpected", expected=expect, got=got)

    return Check(
        id=f"step{step}/zz_engine_{name}",
        step=step,
        points=1,
        title=f"engine test {name}",
        hint="engine hint",
        probes=lambda rng: [Probe("call", dict(params), label="bump()")],
        judge=judge,
    )


def test_each_fresh_probe_starts_from_the_import_and_changes_nothing_another_probe_sees(
    write_module, temp_checks, engine_client
):
    # bump() changes module state and the process (an environment variable);
    # each fresh probe sees neither what another fresh probe did nor what the
    # shared probes did, and the shared probes (run after the fresh ones) see
    # nothing of the fresh ones.
    path = write_module(
        "import os\nCOUNT = []\ndef bump():\n    COUNT.append(1)\n"
        "    os.environ['BUMPS'] = os.environ.get('BUMPS', '') + 'x'\n"
        "    return len(COUNT) * 10 + len(os.environ['BUMPS'])\n"
    )
    ids = temp_checks(
        fresh_call_check(2, "shared1", expect=11, fresh=False, n=1),
        fresh_call_check(2, "fresh1", expect=11, fresh=True, n=2),
        fresh_call_check(2, "shared2", expect=22, fresh=False, n=3),
        fresh_call_check(2, "fresh2", expect=11, fresh=True, n=4),
    )
    report = run(path, ids, engine_client, seed=1)
    assert {k: (c.passed, c.got) for k, c in by_id(report).items()} == {
        "shared1": (True, ""),
        "fresh1": (True, ""),
        "shared2": (True, ""),
        "fresh2": (True, ""),
    }


def test_a_fresh_probe_that_ends_the_job_sees_the_import_as_it_was(write_module, temp_checks, engine_client):
    # The job's last probe, when fresh, runs in the step child itself (no fork):
    # it still sees only the import, and a module that ends the process there
    # costs that probe, as it would in a fork.
    path = write_module(
        "import os\nCOUNT = []\ndef bump():\n    COUNT.append(1)\n"
        "    os.environ['BUMPS'] = os.environ.get('BUMPS', '') + 'x'\n"
        "    return len(COUNT) * 10 + len(os.environ['BUMPS'])\n"
        "def leave():\n    os._exit(3)\n"
    )
    ids = temp_checks(
        fresh_call_check(2, "fresh1", expect=11, fresh=True, n=1),
        fresh_call_check(2, "fresh2", expect=11, fresh=True, n=2),
    )
    report = run(path, ids, engine_client, seed=1)
    assert {k: c.passed for k, c in by_id(report).items()} == {"fresh1": True, "fresh2": True}
    ids = temp_checks(
        fresh_call_check(3, "fine", expect=11, fresh=True, n=1),
        fresh_call_check(3, "gone", expect=0, fresh=True, n=2, fn="leave"),
    )
    report = run(path, ids, engine_client, seed=1)
    assert by_id(report)["fine"].passed and not by_id(report)["gone"].passed
    assert "exit" in (by_id(report)["gone"].message + by_id(report)["gone"].got).lower()


def test_syntax_error_fails_every_check_fast_naming_the_line(write_module, temp_checks, engine_client):
    path = write_module("X = 1\n\ndef broken(:\n    pass\n")
    ids = temp_checks(*(call_check(step, f"s{step}", "f", expect=1) for step in (1, 2, 3)))
    began = time.monotonic()
    report = run(path, ids, engine_client, timeout=5)
    assert time.monotonic() - began < 2
    assert report.score == 0 and len(report.checks) == 3
    assert report.error.startswith("Your module could not be imported: SyntaxError at tools.py line 3")
    assert "def broken(:" in report.error
    assert {c.message for c in report.checks} == {report.error}


def test_exception_at_import_names_the_learner_line(write_module, temp_checks, engine_client):
    path = write_module("import os\n\nVALUE = {}['missing']\n")
    ids = temp_checks(call_check(1, "a", "f"))
    report = run(path, ids, engine_client)
    assert report.error.startswith("Your module could not be imported: KeyError at tools.py line 3: 'missing'")


def test_import_that_hangs_costs_one_timeout_not_one_per_step(write_module, temp_checks, engine_client):
    path = write_module("while True:\n    pass\n")
    ids = temp_checks(*(call_check(step, f"h{step}", "f") for step in (1, 2, 3, 4)))
    began = time.monotonic()
    report = run(path, ids, engine_client, timeout=5, limits={"import_timeout": 1})
    assert time.monotonic() - began < 3.5  # one 1 s timeout (four would take 4 s and more)
    assert len(report.checks) == 4 and not any(c.passed for c in report.checks)
    assert "time limit" in report.error and "importing" in report.error
    assert "the import ran 1.0 s, over its time limit of 1 s" in report.error


def test_a_slow_import_has_its_own_bound_and_is_paid_once_per_step(write_module, temp_checks, engine_client):
    # The import takes longer than the step's whole time limit for its calls;
    # three fresh probes and a shared one in a step, none pays for it again.
    path = write_module(
        "import time\ntime.sleep(1.5)\nCOUNT = []\ndef bump():\n    COUNT.append(1)\n    return len(COUNT)\n"
    )
    ids = temp_checks(
        *(fresh_call_check(2, f"f{n}", expect=1, fresh=True, n=n) for n in range(3)),
        fresh_call_check(2, "shared", expect=1, fresh=False, n=9),
    )
    began = time.monotonic()
    report = run(path, ids, engine_client, seed=1, timeout=1)
    assert report.score == report.max_score == 4, [c.message for c in report.checks]
    assert time.monotonic() - began < 1.5 * 2 + 3  # one import per step (two steps would be 3 s)


def test_a_call_past_its_limit_is_named_with_how_long_it_ran(write_module, temp_checks, engine_client):
    path = write_module("import time\ndef slow():\n    time.sleep(60)\n")
    ids = temp_checks(call_check(1, "slow", "slow"))
    report = run(path, ids, engine_client, timeout=5, limits={"probe_timeout": 1})
    assert "`slow()` was stopped after it ran 1.0 s, over the time limit of 1 s per call" in report.checks[0].message


def test_exit_inside_a_function_costs_only_that_step(write_module, temp_checks, engine_client):
    path = write_module("import os\ndef ok():\n    return 1\ndef leave():\n    os._exit(0)\n")
    ids = temp_checks(
        call_check(1, "first", "ok", expect=1),
        call_check(2, "dies", "leave", expect=1),
        call_check(2, "after", "ok", expect=1),
        call_check(3, "later", "ok", expect=1),
    )
    checks = by_id(run(path, ids, engine_client))
    assert checks["first"].passed and checks["later"].passed
    assert not checks["dies"].passed and not checks["after"].passed
    assert "exited with status 0" in checks["dies"].message and "during `leave()`" in checks["dies"].message
    assert checks["dies"].call == "leave()"
    assert "earlier" in checks["after"].message


def test_system_exit_and_keyboard_interrupt_are_recorded_per_probe(write_module, temp_checks, engine_client):
    path = write_module(
        "import sys\ndef quit():\n    sys.exit(0)\ndef stop():\n    raise KeyboardInterrupt\ndef ok():\n    return 1\n"
    )
    ids = temp_checks(call_check(1, "quit", "quit"), call_check(1, "stop", "stop"), call_check(1, "ok", "ok", expect=1))
    checks = by_id(run(path, ids, engine_client))
    assert "raised SystemExit(0)" in checks["quit"].message
    assert "KeyboardInterrupt" in checks["stop"].message
    assert checks["ok"].passed  # the step's process survived both


def test_steps_of_a_submission_share_one_compile_and_still_name_the_learner_line(
    write_module, temp_checks, engine_client
):
    # Compiled once in the step child (under its limits) for the steps it runs: the traceback names tools.py.
    path = write_module("def f():\n    return 1\n\ndef broken():\n    return {}['k']\n")
    ids = temp_checks(
        call_check(1, "f", "f", expect=1), call_check(2, "g", "f", expect=1), call_check(3, "b", "broken", expect=1)
    )
    report = run(path, ids, engine_client)
    assert [c.passed for c in report.checks] == [True, True, False]
    tree = compile_instrumented(Path(path).read_bytes(), "<agtool-submission>")
    assert with_filename(tree, "/x/tools.py").co_consts[0].co_filename == "/x/tools.py"


def test_a_compile_time_warning_reaches_the_steps_output(write_module, temp_checks, engine_client):
    # The step child compiles, so the learner sees the warning in the step's output.
    path = write_module("def f():\n    return 1 is 1\n")
    report = run(path, temp_checks(call_check(1, "f", "f", expect=True)), engine_client)
    assert report.checks[0].passed and "SyntaxWarning" in report.output.get("1", "")


def test_output_is_captured_and_capped_while_reading(write_module, temp_checks, engine_client):
    # 200 MB of prints: if the parent buffered it before capping, its memory would show it.
    path = write_module(
        "import sys\ndef loud():\n    print('fake: 100/100 PASSED')\n    chunk = 'x' * 1_000_000\n"
        "    for _ in range(200):\n        sys.stdout.write(chunk)\n    return 1\n"
    )
    ids = temp_checks(call_check(1, "loud", "loud", expect=1))
    report = run(path, ids, engine_client, limits={"output_bytes": 4096})
    assert report.checks[0].passed
    output = report.output["1"]
    assert output.startswith("fake: 100/100 PASSED") and output.endswith(TRUNCATED_MARK)
    assert len(output) <= 4096 + len(TRUNCATED_MARK)
    peak_kb = _status_kb(engine_client.pid, "VmHWM")
    assert peak_kb < 150_000, f"the fork server peaked at {peak_kb} kB"


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


def test_timeout_kills_the_group_and_an_escaped_grandchild(write_module, temp_checks, engine_client):
    path = write_module(
        "import os, time\n"
        "def spawn():\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"  # leaves the step's process group
        "        if os.fork() == 0:\n"
        "            print('grandchild', os.getpid(), flush=True)\n"
        "            time.sleep(300)\n"
        "        os._exit(0)\n"
        "    print('child', os.getpid(), flush=True)\n"
        "    time.sleep(300)\n"
    )
    ids = temp_checks(call_check(1, "spawn", "spawn"))
    began = time.monotonic()
    report = run(path, ids, engine_client, timeout=1)
    assert time.monotonic() - began < 5
    assert "`spawn()` was stopped after it ran 1.0 s, over the time limit of 1 s" in report.checks[0].message
    pids = [
        int(line.split()[1]) for line in report.output["1"].splitlines() if line.split()[0] in ("child", "grandchild")
    ]
    assert len(pids) == 2
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists(), f"process {pid} survived the step"


def test_children_left_behind_after_a_normal_end_are_killed(write_module, temp_checks, engine_client):
    path = write_module(
        "import os, time\ndef spawn():\n    pid = os.fork()\n    if pid == 0:\n"
        "        os.setsid()\n        time.sleep(300)\n    return pid\n"
    )
    ids = temp_checks(call_check(1, "spawn", "spawn", expect=-1))
    pid = run(path, ids, engine_client).checks[0].got
    assert not Path(f"/proc/{int(pid)}").exists()


def test_a_stray_thread_does_not_lose_results(write_module, temp_checks, engine_client):
    path = write_module(
        "import threading, time\ndef start():\n"
        "    threading.Thread(target=time.sleep, args=(300,)).start()\n    return 1\n"
    )
    ids = temp_checks(call_check(1, "thread", "start", expect=1))
    began = time.monotonic()
    report = run(path, ids, engine_client, timeout=5)
    assert report.checks[0].passed and time.monotonic() - began < 4  # not the 5 s timeout


def test_child_environment_is_clean_and_works_in_a_scratch_folder(
    write_module, temp_checks, engine_client, monkeypatch
):
    monkeypatch.setenv("AGTOOL_TEST_SECRET", "hunter2")
    path = write_module("import os\ndef env():\n    return sorted(os.environ)\ndef cwd():\n    return os.getcwd()\n")
    (path.parent / "json.py").write_text("raise SystemExit('shadowed')\n")  # must not be importable
    ids = temp_checks(
        call_check(1, "env", "env", expect=["HOME", "LANG", "LC_ALL", "PATH"]), call_check(1, "cwd", "cwd", expect="?")
    )
    checks = by_id(run(path, ids, engine_client))
    assert checks["env"].passed, checks["env"].got
    assert str(path.parent) not in checks["cwd"].got and "agtool-step-" in checks["cwd"].got


def test_memory_limit_turns_a_bomb_into_an_error(write_module, temp_checks, engine_client):
    path = write_module("def bomb():\n    return len(bytearray(3 << 30))\n")
    ids = temp_checks(call_check(1, "bomb", "bomb"))
    report = run(path, ids, engine_client)
    assert "MemoryError" in report.checks[0].got


def test_same_seed_same_cases_other_seed_other_cases(write_module, temp_checks, engine_client):
    path = write_module("def echo(x):\n    return x\n")
    ids = temp_checks(call_check(1, "echo", "echo", expect="never", draw=lambda rng: rng.randint(0, 10**9)))
    first, again, other = (run(path, ids, engine_client, seed=s).checks[0] for s in (42, 42, 43))
    assert first.got == again.got and first.call == again.call
    assert first.got != other.got
    assert "--seed 42" in first.reproduce and "--only step1/zz_engine_echo" in first.reproduce


def test_a_judge_that_raises_is_an_internal_error_not_a_crash(write_module, temp_checks, engine_client):
    def bad_judge(probes, observations):
        raise RuntimeError("bug in a judge")

    path = write_module("def f():\n    return 1\n")
    broken = Check(
        id="step1/zz_engine_broken",
        step=1,
        points=2,
        title="t",
        hint="h",
        probes=lambda rng: [Probe("call", {"fn": "f"}, "f()")],
        judge=bad_judge,
    )
    ids = temp_checks(broken, call_check(1, "fine", "f", expect=1))
    checks = by_id(run(path, ids, engine_client))
    assert checks["broken"].message.startswith("internal grader error") and "bug in a judge" in checks["broken"].message
    assert checks["fine"].passed


def test_bad_paths_and_selections_raise(tmp_path, engine_client):
    with pytest.raises(SubmissionNotFound):
        grade(tmp_path / "nothing.py", engine=engine_client)
    with pytest.raises(SubmissionNotFound):
        grade(tmp_path, engine=engine_client)  # a folder without a module
    (tmp_path / "tools.py").write_text("")
    with pytest.raises(ValueError):
        grade(tmp_path, steps=[12], engine=engine_client)
    with pytest.raises(KeyError):
        grade(tmp_path, only=["step1/no_such_check"], engine=engine_client)


def test_the_fork_server_restarts_after_its_process_dies(write_module, temp_checks, engine_client):
    path = write_module("def f():\n    return 1\n")
    ids = temp_checks(call_check(1, "f", "f", expect=1))
    assert run(path, ids, engine_client).passed
    scratch_base = engine_client._scratch_base
    assert scratch_base and Path(scratch_base).is_dir()
    os.kill(engine_client.pid, 9)
    time.sleep(0.05)
    assert run(path, ids, engine_client).passed
    assert engine_client.starts >= 2
    assert not Path(scratch_base).exists()  # what the killed process left is removed by the client


# --------------------------------------------------------------- with the real checks

real_checks = pytest.mark.skipif(
    not checks_for() or not (REPO / "grader" / "engine" / "probes.py").exists(), reason="no real checks registered yet"
)


@real_checks
def test_reproduce_command_replays_the_failure(tmp_path):
    report = grade(REPO / "starter" / "tools.py", steps=[2], seed=1234)
    failed = report.failed[0]
    command = shlex.split(failed.reproduce) + ["--format", "json"]
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1, done.stderr
    replay = json.loads(done.stdout)
    assert [c["id"] for c in replay["checks"]] == [failed.id]
    assert replay["checks"][0]["passed"] is False
    assert (replay["checks"][0]["call"], replay["checks"][0]["got"]) == (failed.call, failed.got)


@real_checks
@pytest.mark.slow
def test_solution_gets_full_marks_and_starter_zero():
    solution = grade(REPO / "solutions" / "tools.py", seed=99)
    assert solution.passed, [(c.id, c.message) for c in solution.failed]
    assert solution.score == solution.max_score == sum(c.points for c in CHECKS.values())
    starter = grade(REPO / "starter" / "tools.py", seed=99)
    assert starter.score == 0 and starter.error == "" and len(starter.checks) == len(CHECKS)


def test_killing_the_worker_costs_that_submission_only(write_module, temp_checks, engine_client):
    path = write_module("import os\ndef kill_parent():\n    os.kill(os.getppid(), 9)\ndef ok():\n    return 1\n")
    ids = temp_checks(
        call_check(1, "first", "ok", expect=1),
        *(call_check(step, f"kill{step}", "kill_parent") for step in (2, 3, 4, 5)),
    )
    checks = by_id(run(path, ids, engine_client))
    assert checks["first"].passed
    assert all("worker process stopped" in checks[f"kill{s}"].message for s in (2, 3, 4, 5))
    fine = write_module("def ok():\n    return 1\n", name="fine.py")
    assert run(fine, ids[:1], engine_client).passed  # the next submission gets a fresh worker


def test_killing_the_worker_at_import_ends_the_run_after_two_losses(write_module, temp_checks, engine_client):
    path = write_module("import os\nos.kill(os.getppid(), 9)\n")
    ids = temp_checks(*(call_check(step, f"s{step}", "f") for step in (1, 2, 3, 4)))
    starts = engine_client.starts
    report = run(path, ids, engine_client)
    assert "worker process stopped" in report.error and not any(c.passed for c in report.checks)
    assert engine_client.starts - starts <= 2  # not one restart per step


def test_a_forked_process_gets_its_own_shared_engine_client():
    from grader.engine.client import shared_client

    parent = shared_client()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.write(write_end, b"1" if shared_client() is not parent else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read_end, 1) == b"1"
    os.close(read_end)
    os.close(write_end)


@pytest.mark.skipif(
    not __import__("grader.engine.sandbox").engine.sandbox.bwrap_usable(), reason="bubblewrap not usable here"
)
def test_bwrap_sandbox_keeps_the_file_system_read_only(write_module, temp_checks, tmp_path):
    from grader.engine.client import EngineClient

    target = tmp_path / "written_by_learner.txt"
    path = write_module(f"def write():\n    open({str(target)!r}, 'w').write('x')\n    return 'wrote'\n")
    ids = temp_checks(call_check(1, "write", "write", expect="wrote"))
    with EngineClient(sandbox="bwrap", extra_sys_path=[str(Path(__file__).parent)]) as sandboxed:
        report = grade(path, only=ids, engine=sandboxed, probe_function=ENGINE_PROBES)
        assert sandboxed.sandbox_in_use == "bwrap"
    # /tmp is private in the sandbox and the rest read-only: either way the write fails.
    assert not report.passed and "Error" in report.checks[0].got and not target.exists()


def test_lines_written_to_inherited_fds_are_refused_not_believed(write_module, temp_checks, engine_client):
    forged = '{"type": "obs", "index": 1, "obs": {"value": 2}, "nonce": "guess"}\\n{"type": "done"}\\n'
    path = write_module(
        "import os\n"
        "def forge():\n"
        "    for fd in range(3, 64):\n"
        "        try:\n"
        f"            os.write(fd, b'{forged}')\n"
        "        except OSError:\n"
        "            pass\n"
        "    return 1\n"
        "def honest():\n"
        "    return 1\n"
    )
    ids = temp_checks(call_check(1, "forge", "forge", expect=1), call_check(1, "honest", "honest", expect=2))
    checks = by_id(run(path, ids, engine_client))
    assert checks["forge"].passed  # its own observation still arrives
    assert not checks["honest"].passed and checks["honest"].got == "1"  # the forged value 2 was not taken


def test_an_observation_that_is_not_json_is_a_probe_error(write_module, temp_checks, engine_client):
    path = write_module(
        "def deep():\n    value = []\n    for _ in range(100_000):\n        value = [value]\n"
        "    return value\ndef ok():\n    return 1\n"
    )
    ids = temp_checks(call_check(1, "deep", "deep"), call_check(1, "ok", "ok", expect=1))
    checks = by_id(run(path, ids, engine_client))
    assert "could not take back" in checks["deep"].message
    assert checks["ok"].passed


def test_closing_the_engine_client_mid_step_leaves_nothing_running(write_module, temp_checks):
    import threading

    from grader.engine.client import EngineClient

    path = write_module(
        "import os, time\ndef spawn():\n    if os.fork() == 0:\n        os.setsid()\n"
        "        print('grandchild', os.getpid(), flush=True)\n        time.sleep(300)\n"
        "    time.sleep(300)\n"
    )
    ids = temp_checks(call_check(1, "spawn", "spawn"))
    engine = EngineClient(extra_sys_path=[str(Path(__file__).parent)])
    engine.start()
    warm_pid = engine.pid
    worker = threading.Thread(target=lambda: run(path, ids, engine, timeout=60), daemon=True)
    worker.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not _descendant_pids(warm_pid):
        time.sleep(0.05)
    time.sleep(0.3)
    victims = _descendant_pids(warm_pid)
    assert victims, "the step never started"
    began = time.monotonic()
    engine.close()  # a job is running: close() must not wait for its 60 s
    assert time.monotonic() - began < 3
    worker.join(timeout=5)
    assert not worker.is_alive()
    time.sleep(0.2)
    assert [pid for pid in victims + [warm_pid] if _alive(pid)] == []


def _descendant_pids(root: int) -> list[int]:
    from grader.engine.proctree import descendants

    return [pid for pid, state in descendants(root) if state != "Z"]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_patched_builtins_and_json_do_not_change_what_is_reported(write_module, temp_checks, engine_client):
    path = write_module(
        "import builtins, json\n"
        "class _Liar(json.JSONEncoder):\n"
        "    def encode(self, o):\n"
        '        return \'{"type": "done"}\'\n'
        "json._default_encoder = _Liar()\n"
        "json.encoder.c_make_encoder = None\n"
        "json.dumps = lambda *a, **k: '{}'\n"
        "builtins.len = lambda value: 0\n"
        "builtins.isinstance = lambda *a: True\n"
        "def answer():\n"
        "    return 41\n"
    )
    ids = temp_checks(call_check(1, "answer", "answer", expect=42))
    check = run(path, ids, engine_client).checks[0]
    assert not check.passed and check.got == "41"


def test_steps_after_the_first_run_in_parallel(write_module, temp_checks, engine_client):
    path = write_module("import time\ndef ok():\n    return 1\ndef slow():\n    time.sleep(0.75)\n    return 1\n")
    ids = temp_checks(
        call_check(1, "ok", "ok", expect=1),
        *(call_check(step, f"slow{step}", "slow", expect=1) for step in (2, 3, 4, 5)),
    )
    timings = {}
    for parallel in (1, 2):
        began = time.monotonic()
        assert run(path, ids, engine_client, parallel=parallel).passed
        timings[parallel] = time.monotonic() - began
    assert timings[1] >= 3.0 and timings[2] < timings[1] - 0.75, timings  # two at a time save 1.5 s


def test_a_parallel_step_that_hangs_costs_only_itself(write_module, temp_checks, engine_client):
    path = write_module(
        "import os, time\n"
        "def ok():\n    return 1\n"
        "def spawn():\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        print('escaped', os.getpid(), flush=True)\n"
        "        time.sleep(300)\n"
        "    time.sleep(300)\n"
    )
    ids = temp_checks(
        call_check(1, "first", "ok", expect=1),
        call_check(2, "hang", "spawn"),
        call_check(3, "sibling", "ok", expect=1),
        call_check(4, "later", "ok", expect=1),
    )
    report = run(path, ids, engine_client, timeout=1, parallel=2)
    checks = by_id(report)
    assert checks["first"].passed and checks["sibling"].passed and checks["later"].passed
    assert "time limit" in checks["hang"].message
    pid = int(report.output["2"].split()[1])
    assert not _alive(pid)


def test_a_step_that_kills_the_worker_in_parallel_costs_only_itself(write_module, temp_checks, engine_client):
    path = write_module(
        "import os, time\ndef kill_parent():\n    time.sleep(0.2)\n    os.kill(os.getppid(), 9)\n"
        "def ok():\n    time.sleep(0.2)\n    return 1\n"
    )
    ids = temp_checks(
        call_check(1, "s1", "ok", expect=1),
        call_check(2, "s2", "ok", expect=1),
        call_check(3, "s3", "kill_parent"),
        call_check(4, "s4", "ok", expect=1),
        call_check(5, "s5", "ok", expect=1),
    )
    report = run(path, ids, engine_client, parallel=2)
    checks = by_id(report)
    assert [name for name, c in checks.items() if not c.passed] == ["s3"]
    assert "worker process stopped" in checks["s3"].message and report.error == ""


def test_an_idle_fork_server_stops_and_the_next_check_starts_a_new_one(write_module, temp_checks):
    from grader.engine.client import EngineClient

    path = write_module("def ok():\n    return 1\n")
    ids = temp_checks(call_check(1, "ok", "ok", expect=1))
    with EngineClient(extra_sys_path=[str(REPO / "tests")], idle_timeout=1.0) as engine:
        assert run(path, ids, engine).passed
        first = engine.pid
        assert first is not None and engine.starts == 1
        time.sleep(0.5)
        assert run(path, ids, engine).passed and engine.pid == first  # used again: the clock restarts
        deadline = time.monotonic() + 10
        while engine.pid is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert engine.pid is None and engine.idle_stops == 1
        with pytest.raises(ProcessLookupError):
            os.kill(first, 0)  # gone, not only forgotten
        assert run(path, ids, engine).passed  # a Check after the stop starts a new one
        assert engine.starts == 2 and engine.pid not in (None, first)


def test_an_idle_timeout_of_zero_never_stops_the_fork_server(write_module, temp_checks):
    from grader.engine.client import EngineClient

    path = write_module("def ok():\n    return 1\n")
    ids = temp_checks(call_check(1, "ok", "ok", expect=1))
    with EngineClient(extra_sys_path=[str(REPO / "tests")], idle_timeout=0) as engine:
        assert run(path, ids, engine).passed
        time.sleep(1.0)
        assert engine.pid is not None and engine._idle_timer is None and engine.idle_stops == 0


def test_a_detached_fork_server_ends_by_itself_and_leaves_no_group(write_module, temp_checks):
    from grader.engine.client import EngineClient

    path = write_module("def ok():\n    return 1\n")
    ids = temp_checks(call_check(1, "ok", "ok", expect=1))
    engine = EngineClient(extra_sys_path=[str(REPO / "tests")])
    assert run(path, ids, engine).passed
    pid, group = engine.pid, engine._cgroup
    folders = group.folders() if group is not None else []
    engine.detach()  # returns at once: what a one-shot `check` does on its way out
    assert engine.pid is None
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (_alive(pid) or any(os.path.isdir(f) for f in folders)):
        time.sleep(0.1)
    assert not _alive(pid)
    assert not [f for f in folders if os.path.isdir(f)], "the janitor removes the fork server's cgroups"
    assert run(path, ids, engine).passed and engine.pid not in (None, pid)  # usable again: a new one
    engine.close()
