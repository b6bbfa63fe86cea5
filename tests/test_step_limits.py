"""Limits of a step as a whole: cgroups, priority, the disk budget, and the fallback.

The hostile corpus (``tests/hostile``: memory_tree_in_function, pids_bomb_setsid,
disk_spread_in_function, priority_raise_import, and the CPU storm batch in
``tests/test_hostile.py``) shows the limits holding against learner code. Here:
the pieces on their own, the words ``agtool-grade check`` prints, and the
fallback (``AGTOOL_CGROUPS=0``, ``AGTOOL_STEP_MOUNTS=0``), which runs everywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.engine import cgroups, confine
from grader.engine.client import EngineClient
from grader.engine.protocol import Limits
from grader.grading import grade

REPO = Path(__file__).resolve().parent.parent
SOLUTION = REPO / "solutions" / "tools.py"


@pytest.fixture
def fallback(monkeypatch):
    """No cgroups and no per-step mounts: what a host without them (or a non-root user) gets."""
    monkeypatch.setenv(cgroups.CGROUPS_ENV, "0")
    monkeypatch.setenv(confine.MOUNTS_ENV, "0")
    with EngineClient() as engine:
        yield engine


def test_the_fallback_grades_honest_code_and_says_which_limits_hold(fallback):
    report = grade(SOLUTION, steps=[1], seed=3, engine=fallback)
    assert report.passed, report.summary()
    assert "cgroup" not in report.limits
    assert "cpu nice 19" in report.limits and "scratch measured after the step" in report.limits


def test_the_fallback_still_bounds_each_process_and_measures_the_scratch_folder(fallback, tmp_path):
    # cache_key (step 5) writes five 15 MiB files into its working folder: 75 MiB, over the 64 MiB budget.
    source = SOLUTION.read_text(encoding="utf-8")
    anchor = "def cache_key(name: str, args: dict) -> str:\n"
    payload = (
        "    import os as _o\n    if not _o.environ.get('FILLED'):\n        _o.environ['FILLED'] = '1'\n"
        "        for _i in range(5):\n            with open(f'fill{_i}.bin', 'wb') as _f:\n"
        "                _f.write(b'1' * (15 << 20))\n"
    )
    assert source.count(anchor) == 1
    (tmp_path / "tools.py").write_text(source.replace(anchor, anchor + payload), encoding="utf-8")
    report = grade(tmp_path / "tools.py", steps=[1, 5], seed=3, engine=fallback)
    step5 = [c for c in report.checks if c.step == 5]
    assert step5 and all(not c.passed for c in step5)
    assert "disk budget" in step5[0].message and "64 MiB" in step5[0].message
    assert all(c.passed for c in report.checks if c.step == 1), "only the step that wrote loses"
    assert list(tmp_path.iterdir()) == [tmp_path / "tools.py"]


def test_the_fallback_keeps_the_priority_low(fallback, tmp_path):
    code = (
        "import os\ntry:\n    os.nice(-5)\nexcept OSError:\n    pass\n"
        "print('NICE', os.getpriority(os.PRIO_PROCESS, 0))\n"
    )
    (tmp_path / "tools.py").write_text(SOLUTION.read_text(encoding="utf-8") + "\n" + code, encoding="utf-8")
    report = grade(tmp_path / "tools.py", steps=[1], seed=3, engine=fallback)
    assert "NICE 19" in report.output["1"]


def test_cgroup_step_group_holds_a_forked_tree_and_kills_it():
    server = cgroups.ServerGroup.create()
    if server is None:
        pytest.skip("cgroups are not usable here (no writable v1 controllers or delegated v2 tree)")
    try:
        group = server.step("s-test", Limits(memory_bytes=256 << 20, pids=16))
        assert group is not None and {"memory", "pids"} <= set(group.limits)
        pid = os.fork()
        if pid == 0:  # joins, then leaves a setsid() grandchild behind
            try:
                group.join()
                if os.fork() == 0:
                    os.setsid()
                    time.sleep(30)
                time.sleep(30)
            finally:
                os._exit(0)
        deadline = time.monotonic() + 5
        while len(cgroups._pids(group.dirs["pids"])) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(cgroups._pids(group.dirs["pids"])) == 2
        assert group.kill() >= 2
        os.waitpid(pid, 0)
        assert group.close() == ()  # empty and within its limits: kept for the next step
        assert server.free == [group] and server.step("s-next", Limits(memory_bytes=256 << 20, pids=16)) is group
    finally:
        server.remove()
    assert not any(os.path.exists(d) for d in server.dirs.values())


def test_the_limits_line_is_in_the_verbose_text_and_the_json_output_of_check_and_nowhere_else():
    command = [sys.executable, "-m", "grader", "check", str(SOLUTION), "--step", "1", "--seed", "3"]
    plain = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    # A learner's check says what their code did: no limits, isolation or sandbox lines (the grader's business).
    assert plain.returncode == 0 and plain.stderr == "", plain.stderr
    assert not [row for row in plain.stdout.splitlines() if row.startswith(("limits: ", "isolation: "))]
    assert "cgroup" not in plain.stdout and "nice 19" not in plain.stdout
    done = subprocess.run(command + ["--verbose"], cwd=REPO, capture_output=True, text=True, timeout=120)
    text = done.stdout
    assert done.stderr.count("learner code ran") == 1  # once, on standard error
    line = [row for row in text.splitlines() if row.startswith("limits: ")]
    assert line and "cpu nice 19" in line[0] and "sandbox" in line[0] and "disk 64 MiB/step" in line[0]
    probe = cgroups.ServerGroup.create()
    if probe is not None:
        probe.remove()
        assert "cgroup v" in line[0] and "memory 1 GiB/step" in line[0] and "pids 256/step" in line[0]
    data = json.loads(
        subprocess.run(command + ["--format", "json"], cwd=REPO, capture_output=True, text=True, timeout=120).stdout
    )
    assert data["limits"] == line[0][len("limits: ") :]


# A repair loop that never ends: ``fetch`` never counts its attempt, so the routing always repairs.
_ENDLESS = ('"attempts": 1,\n        "calls":', '"attempts": 0,\n        "calls":')


def test_a_graph_run_stops_at_the_graders_superstep_bound_and_the_steps_other_checks_are_judged(tmp_path):
    from grader.engine.protocol import GRAPH_SUPERSTEPS

    text = SOLUTION.read_text(encoding="utf-8")
    assert text.count(_ENDLESS[0]) == 1
    (tmp_path / "tools.py").write_text(text.replace(*_ENDLESS), encoding="utf-8")
    # The no-cache report's handle repairs a result that is too big again and again: write_report raises.
    follows = grade(tmp_path / "tools.py", steps=[8], seed=11, only=["step8/follows_module"]).checks[0]
    said = f"{follows.message} {follows.got}"
    assert f"Recursion limit of {GRAPH_SUPERSTEPS} reached" in said, said  # LangGraph's own default: 10,007
    # Judged check by check (a step over its time would have lost every check): the loop's own checks fail,
    # the checks of what does not loop pass.
    report = grade(tmp_path / "tools.py", steps=[7], seed=11)
    passed = {c.id for c in report.checks if c.passed}
    assert "step7/graph_has_repair" in passed and "step7/repair_region" not in passed
