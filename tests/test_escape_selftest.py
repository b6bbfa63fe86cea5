"""The fork server's escape self-test: every wall its configuration promises is tried before ``ready``.

Each case that switches a wall off does it in a process of its own (a fresh
interpreter that sets up the fork server's walls as ``serve()`` does, with one
of them broken on purpose), so the self-test there must name the probe that
got through and the wall; with every wall in place it must find nothing.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from grader.engine import audit, confine, selftest
from grader.engine.client import EngineClient, EngineUnavailable
from grader.engine.protocol import FATAL, OBS, UNSAFE, StepResult
from grader.engine.sandbox import bwrap_usable
from grader.settings import Settings

REPO = Path(__file__).resolve().parents[1]
ROOT_AND_BWRAP = bwrap_usable() and os.geteuid() == 0
needs_walls = pytest.mark.skipif(
    not os.environ.get("CI") and not ROOT_AND_BWRAP,
    reason="needs bubblewrap and root (CI has both: a missing one fails there)",
)

# What a fresh interpreter runs: the fork server's walls as serve() sets them (step walls on,
# no grading account), one of them broken by BREAK, then the self-test; its answer as JSON.
SETUP = """
import json, sys, tempfile
from grader.engine import audit, confine, namespaces, selftest, syscall_filter
from grader.engine.step_process import SERVER
import os
confine.set_step_user({USER!r})
audit.set_code_walls(True)
confine.set_server_private(confine.private_mounts())
{BREAK}
problem = confine.set_walls(True)
assert not problem, problem
SERVER.scratch_base = tempfile.mkdtemp(prefix="agtool-warm-")
os.chmod(SERVER.scratch_base, 0o711)  # as serve() does: the grading account passes through to its scratch
print(json.dumps(selftest.run(sandboxed=False)))
"""

# One wall off at a time: the probe that must then get through, and the words of the wall.
BROKEN = {
    "code object": ('audit._EVENTS = audit._EVENTS - {"code.__new__"}', "hand-built code objects"),
    "probe file": ('audit._WALL_EVENTS = audit._WALL_EVENTS - {"open"}', "the grader's files"),
    "outside scratch": ("confine._read_only_except = lambda keep: None", "read-only mounts"),
    "network": (
        "namespaces.OWN_NAMESPACES = namespaces.CLONE_NEWUSER | namespaces.CLONE_NEWIPC",
        "own network namespace",
    ),
    "keyring": (
        'syscall_filter.REFUSED = tuple(n for n in syscall_filter.REFUSED if n != "keyctl")',
        "syscall filter (keyrings)",
    ),
    "namespace": (
        'syscall_filter.REFUSED = tuple(n for n in syscall_filter.REFUSED if n != "unshare")',
        "syscall filter (namespaces)",
    ),
}


# With the grading account: the step child switches to it (and drops every capability) before learner code.
BROKEN_WITH_ACCOUNT = {
    "grader memory": ("confine.drop_privileges = lambda user=None: None", "the grading account"),
}


def _grading_account() -> str:
    """``uid:gid`` of the grading account (the fork server's ``$AGTOOL_STEP_USER`` as root in bubblewrap)."""
    account = pwd.getpwnam(Settings().grading_user)
    return f"{account.pw_uid}:{account.pw_gid}"


def _selftest(broken: str = "", *, user: str = "") -> tuple[list[str], str]:
    """The self-test's (probes, problem) in a fresh interpreter with the wall of ``broken`` off (as ``user``)."""
    brake = {**BROKEN, **BROKEN_WITH_ACCOUNT}[broken][0] if broken else ""
    code = SETUP.replace("{BREAK}", brake).replace("{USER!r}", repr(user))
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    probes, problem = json.loads(done.stdout.strip().splitlines()[-1])
    return probes, problem


@needs_walls
def test_every_promised_probe_is_refused_when_every_wall_holds():
    probes, problem = _selftest()
    assert problem == ""
    assert probes == [
        "code object",
        "grader import",
        "probe file",
        "solution file",
        "outside scratch",
        "network",
        "keyring",
        "namespace",
    ]


@needs_walls
@pytest.mark.parametrize("probe", sorted(BROKEN))
def test_a_wall_switched_off_stops_the_grading_naming_its_probe(probe):
    _, problem = _selftest(probe)
    assert problem.startswith(f"the escape self-test's probe {probe!r} got through (")
    assert BROKEN[probe][1] in problem
    assert problem.endswith("no grading runs without it")


@needs_walls
def test_as_the_grading_account_the_fork_servers_memory_is_probed_too():
    probes, problem = _selftest(user=_grading_account())
    assert problem == "" and "grader memory" in probes and "outside scratch" in probes
    _, problem = _selftest("grader memory", user=_grading_account())
    assert problem.startswith("the escape self-test's probe 'grader memory' got through (the memory of process ")
    assert "the grading account" in problem


def test_only_the_walls_the_configuration_promises_are_probed():
    """The code walls and the steps' own walls are switches: each removes its probes, and only those."""
    try:
        confine.set_step_user("")
        confine.set_server_private(False)
        audit.set_code_walls(False)
        assert confine.set_walls(False) == ""
        assert [p.name for p in selftest.promised_probes(sandboxed=False)] == ["code object"]
        assert [p.name for p in selftest.promised_probes(sandboxed=True)] == [
            "code object",
            "solution file",
            "host file",
        ]
        audit.set_code_walls(True)
        assert [p.name for p in selftest.promised_probes(sandboxed=False)] == [
            "code object",
            "grader import",
            "probe file",
            "solution file",
        ]
        if confine.set_walls(True) == "":  # libseccomp here: the steps' own walls add theirs
            names = [p.name for p in selftest.promised_probes(sandboxed=True, listener_port=1)]
            assert names[-3:] == ["network", "keyring", "namespace"] and "host file" in names
    finally:
        audit.set_code_walls(True)
        confine.set_walls(False)


def test_a_selftest_step_that_could_not_run_stops_the_grading_too():
    probes = [selftest.EscapeProbe("code object", "code_object", "the audit hook")]
    fatal = StepResult(messages=({"type": FATAL, "message": "the step's isolation could not be set up", "nonce": "n"},))
    assert selftest.judge(probes, fatal) == (
        "the escape self-test could not run its probe 'code object' "
        "(the step's isolation could not be set up); no grading runs"
    )
    refused = {"type": OBS, "index": 0, "nonce": "n", "obs": {"refused": True, "how": "CodeRefused: refused"}}
    assert selftest.judge(probes, StepResult(messages=(refused,))) == ""


def test_the_attempts_file_is_not_the_submissions_to_read():
    """The probe module sits in the grader's package, whose files the audit hook refuses to open."""
    roots = audit._grader_roots()
    assert any(os.path.realpath(selftest.ATTEMPTS_FILE).startswith(root) for root in roots)


def _serve(broken: str = "") -> subprocess.CompletedProcess[str]:
    """``serve()`` itself, without a sandbox, with the wall of ``BROKEN[broken]`` off; its stdin at its end."""
    code = (BROKEN[broken][0] if broken else "") + "\nfrom grader.engine.forkserver import serve\nserve()\n"
    code = "from grader.engine import audit, confine\n" + code
    env = {**os.environ, **Settings(cgroups="off").to_environ()}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        input="",
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_the_fork_server_says_ready_with_its_probes_when_every_wall_holds():
    done = _serve()
    ready = json.loads(done.stdout.splitlines()[0])
    assert ready["type"] == "ready" and ready["selftest"][0] == "code object", done.stderr[-2000:]
    assert done.returncode == 0


def test_the_fork_server_refuses_to_grade_when_a_wall_is_missing():
    done = _serve("code object")
    said = json.loads(done.stdout.splitlines()[0])
    assert said["type"] == UNSAFE and "probe 'code object' got through" in said["message"]
    assert done.returncode != 0 and "probe 'code object' got through" in done.stderr


def test_the_client_stops_with_the_fork_servers_words(monkeypatch):
    client = EngineClient(sandbox="none", idle_timeout=0)
    message = "the escape self-test's probe 'keyring' got through (...), so the syscall filter does not hold"
    monkeypatch.setattr(client, "_spawn", lambda: None)
    monkeypatch.setattr(client, "_read_line", lambda wait: {"type": UNSAFE, "message": message})
    monkeypatch.setattr(client, "_kill", lambda: None)
    with pytest.raises(EngineUnavailable, match="refused to grade: the escape self-test's probe 'keyring'"):
        client._ensure_started()


@needs_walls
def test_a_sandboxed_fork_server_probes_every_wall_before_grading():
    with EngineClient(sandbox="bwrap", idle_timeout=0, settings=Settings(sandbox="bwrap")) as client:
        client.start()
        assert client.selftest == (
            "code object",
            "grader import",
            "probe file",
            "solution file",
            "host file",
            "grader memory",
            "outside scratch",
            "network",
            "keyring",
            "namespace",
        )
