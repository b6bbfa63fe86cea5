"""Least privilege for learner code, fail closed.

The hostile corpus grades the least-privilege cases inside bubblewrap with
the class's data planted (tests/hostile/manifest.py, ``LEAST_PRIVILEGE``;
tests/test_hostile.py). Here:

- a sandbox, a grading account or cgroups asked for and not to be had stop
  grading with the fix in the message, never a silent fallback;
- every report says which isolation was in force (JSON, text, feedback);
- a step child whose own preparation failed (a full disk) is the grader's
  failure, graded again, never a 0 stored as a grade;
- the /tmp and account cases graded as a grader without root would run them
  (no per-step mount namespace: ``step_mounts`` off), where only the private
  /tmp and the grading account hold;
- the learner's Check sees what the graded run sees.

Tests that need bubblewrap or root skip elsewhere, but fail under ``$CI``
(.ci/run installs bubblewrap and runs as root).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile.build import SOLUTION, materialise
from hostile.manifest import CASES_BY_NAME, STEP_TIMEOUT
from hostile.planted import planted_class_data
from hostile.procs import kill_marked
from hostile.verify import Run, extra_check_problems, step_outcome_problems

from grader.engine import client as client_module
from grader.engine import sandbox
from grader.engine.client import EngineClient
from grader.engine.forkserver import SERVER_FAILED
from grader.engine.protocol import FATAL, StepResult
from grader.engine.sandbox import Isolation, IsolationUnavailable, grading_account, require
from grader.grading import grade
from grader.render import render_markdown, render_text
from grader.report import FailureKind, Report
from grader.settings import Settings

REPO = Path(__file__).resolve().parent.parent
SEED = 20261202


def need(what: str) -> None:
    """Skip unless ``what`` (``bwrap``, ``root``) is here; under $CI its absence is a failure."""
    missing = {"bwrap": not sandbox.bwrap_usable(), "root": os.geteuid() != 0}[what]
    if missing:
        message = f"{what} is needed (bubblewrap usable / running as root)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: CI must run these (.ci/run)")
        pytest.skip(message)


def cli_check(path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "grader", "check", str(path), "--step", "1", "--seed", "3", *args]
    return subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}
    )


# ---------------------------------------------------------------- fail closed


def test_bwrap_asked_for_where_it_is_missing_stops_grading_with_the_fix(tmp_path):
    done = cli_check(SOLUTION, "--sandbox", "bwrap", env={"PATH": str(tmp_path)})  # no bwrap on PATH
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not installed" in done.stderr and "apt-get install bubblewrap" in done.stderr
    assert "--sandbox none" in done.stderr and not done.stdout


def test_auto_where_bubblewrap_is_missing_grades_and_says_there_is_no_sandbox(tmp_path):
    done = cli_check(SOLUTION, "--sandbox", "auto", "--verbose", env={"PATH": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert "\nisolation: none (learner code runs as" in done.stdout


def test_a_missing_grading_account_stops_grading_as_root():
    need("root")
    need("bwrap")
    done = cli_check(SOLUTION, "--sandbox", "bwrap", env={"AGTOOL_GRADING_USER": "agtool-no-such-account"})
    assert done.returncode == 2, done.stdout
    assert "useradd --system --no-create-home" in done.stderr and "agtool-no-such-account" in done.stderr
    with pytest.raises(IsolationUnavailable):
        require("bwrap", Settings(grading_user="agtool-no-such-account"))
    # auto grades, as root, and says so
    assert require("auto", Settings(grading_user="agtool-no-such-account")) == Isolation("bwrap", "root")


def test_root_is_never_a_grading_account():
    with pytest.raises(IsolationUnavailable, match="must not run as root"):
        grading_account("root")


def test_cgroups_asked_for_by_name_that_cannot_be_had_stop_grading(monkeypatch):
    monkeypatch.setattr(client_module.ServerGroup, "create", classmethod(lambda cls, settings=None: None))
    with pytest.raises(IsolationUnavailable, match="memory"):
        EngineClient(settings=Settings(cgroups="memory,pids")).start()
    with EngineClient(settings=Settings()) as engine:  # not asked for by name: whatever works
        engine.start()


# ---------------------------------------------------------------- the isolation in every output


def test_every_report_says_which_isolation_was_in_force(tmp_path):
    with EngineClient(sandbox="none") as engine:
        report = grade(SOLUTION, steps=[1], seed=1, engine=engine)
    assert report.isolation == engine.isolation.words() and report.isolation.startswith("none (learner code runs as")
    data = report.to_dict()
    assert data["isolation"] == report.isolation
    assert f"\nisolation: {report.isolation}\n" in render_text(report)
    assert "- **Isolation:** none" in render_markdown(report)
    older = {k: v for k, v in data.items() if k != "isolation"}  # a report stored before the field
    assert Report.from_dict(older).isolation == ""


NO_SPACE = "OSError: [Errno 28] No space left on device: '/tmp/agtool-warm-x/agtool-step-y/agtool/tools.py'"


class _FullDiskEngine:
    """An engine whose steps met a full disk in the grader's own work: the step child's, or the fork server's."""

    isolation = Isolation("none", "tester")
    sandbox_in_use = "none"

    def __init__(self, where: str):
        self.where = where

    def prestart(self) -> None:
        pass

    def run_many(self, jobs, **_):
        return [self.run(job) for job in jobs]

    def run(self, job):
        if self.where == "fork server":  # it could not make the step's scratch folder
            return StepResult(infra_error=SERVER_FAILED + NO_SPACE)
        return StepResult(messages=({"type": FATAL, "message": NO_SPACE},), exit_status=70)


@pytest.mark.parametrize("where", ["step child", "fork server"])
def test_a_full_disk_in_the_graders_own_work_is_a_grader_failure_not_a_grade(where):
    report = grade(SOLUTION, steps=[1, 2], seed=1, engine=_FullDiskEngine(where))
    assert report.score == 0
    assert report.failure is not None and report.failure.kind is FailureKind.GRADER
    assert "No space left on device" in report.error and report.failure.retry  # --resume and the service retry it


# ---------------------------------------------------------------- the allow-list


# Where a class's data lives (homes, the service's and the hub's data, accounts): never bound as such.
CLASS_DATA = ("/home", "/srv", "/var", "/root", "/etc/passwd", "/etc/shadow")

# Run by a venv under /var/tmp, in a copy of the checkout there: the bwrap line and the grader's own folders.
_ALLOW_LIST_RUN = """
import json, os, sys
from grader.engine import sandbox
own = [sys.prefix, sys.base_prefix, os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable)),
       os.path.join(sandbox.PACKAGE_ROOT, "grader"), *sandbox.library_paths()]
print(json.dumps({"args": sandbox.bwrap_prefix(), "own": sorted({os.path.realpath(p) for p in own}),
                  "checkout": os.path.realpath(sandbox.PACKAGE_ROOT), "prefix": os.path.realpath(sys.prefix)}))
"""


def _allow_list_problems(args: list[str], own: list[str], checkout: str, prefix: str) -> list[str]:
    """What is wrong with a bwrap line's binds: a class data folder (or one above it) bound, or a folder
    inside one that is not the grader's own (its interpreter, libraries, the checkout's grader package).

    Where the checkout and its venv live (``/home/teacher/agtool-lab``, ``/var/tmp/agtool-lab``) is the
    grader's own business: those binds are its code, never the class's data beside it.
    """
    binds = [args[i + 1] for i, a in enumerate(args) if a in ("--ro-bind", "--bind")]
    problems = [b for b in binds if b == "/" or any(d == b or d.startswith(b.rstrip("/") + "/") for d in CLASS_DATA)]

    def owned(b: str) -> bool:
        return any(b == o or b.startswith(o.rstrip("/") + "/") for o in own)

    problems += [b for b in binds if any(b.startswith(d + "/") for d in CLASS_DATA) and not owned(b)]
    inside = [b for b in binds if b.startswith(checkout + os.sep)]
    problems += [b for b in inside if b != os.path.join(checkout, "grader") and not b.startswith(prefix)]
    hidden = [args[i + 1] for i, a in enumerate(args) if a == "--tmpfs"]
    if os.path.join(checkout, "grader", "checks") not in hidden and os.path.isdir(os.path.join(checkout, ".git")):
        problems.append("grader/checks not hidden")
    return problems


def test_the_sandbox_binds_an_allow_list_not_the_root_of_the_file_system():
    args = sandbox.bwrap_prefix()
    own = [sys.prefix, sys.base_prefix, os.path.dirname(sys.executable), os.path.join(sandbox.PACKAGE_ROOT, "grader")]
    own = sorted({os.path.realpath(p) for p in [*own, *sandbox.library_paths()]})
    checkout = os.path.realpath(sandbox.PACKAGE_ROOT)
    assert _allow_list_problems(args, own, checkout, os.path.realpath(sys.prefix)) == []
    hidden = [args[i + 1] for i, a in enumerate(args) if a == "--tmpfs"]
    assert os.path.join(checkout, "grader", "checks") in hidden or not sandbox.is_checkout()
    # The rule itself: the class's folders, or a folder above them, are problems wherever the grader lives.
    assert _allow_list_problems(
        ["--ro-bind", "/var", "/var", "--ro-bind", "/srv/agtool", "/srv/agtool"], own, "/x", "/x"
    )


def test_the_allow_list_holds_for_a_clone_and_its_venv_under_var_tmp():
    """A clone under /var/tmp binds its own .venv and grader/ there: the grader's code, not the class's data."""
    import shutil
    import tempfile

    if not os.access("/var/tmp", os.W_OK):
        pytest.skip("/var/tmp is not writable here")
    top = Path(tempfile.mkdtemp(prefix="agtool-clone-", dir="/var/tmp"))
    try:
        clone = top / "agtool-lab"
        shutil.copytree(
            Path(sandbox.PACKAGE_ROOT) / "grader", clone / "grader", ignore=shutil.ignore_patterns("__pycache__")
        )
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(clone / ".venv")], check=True, timeout=120)
        # The venv finds the test run's packages after its own (LangGraph...), never the checkout's grader.
        site = next((clone / ".venv" / "lib").glob("python3*/site-packages"))
        theirs = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
        (site / "zz_deps.pth").write_text("\n".join(theirs) + "\n", encoding="utf-8")
        done = subprocess.run(
            [str(clone / ".venv" / "bin" / "python"), "-c", _ALLOW_LIST_RUN],
            cwd=clone,
            capture_output=True,
            text=True,
            timeout=120,
            env={"PATH": os.environ["PATH"], "HOME": str(top)},
        )
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
        assert seen["checkout"] == os.path.realpath(clone) and seen["prefix"].startswith("/var/tmp/")
        binds = [seen["args"][i + 1] for i, a in enumerate(seen["args"]) if a in ("--ro-bind", "--bind")]
        assert os.path.join(seen["checkout"], "grader") in binds  # what the old rule ("nothing under /var") refused
        assert _allow_list_problems(seen["args"], seen["own"], seen["checkout"], seen["prefix"]) == []
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_a_script_run_from_tmp_does_not_hide_the_private_tmp(tmp_path):
    """A script in /tmp puts /tmp on the import path: bound in, it would cover the sandbox's own /tmp."""
    assert "/tmp" not in sandbox.allowed_paths(keep=["/tmp", "/"])
    assert os.path.realpath(tmp_path) in sandbox.allowed_paths(keep=[str(tmp_path)])


# ---------------------------------------------------------------- as a grader without root would run

UNMOUNTED_CASES = (
    "tmp_mark_seen_later",
    "tmp_fill_next_learner",
    "writes_beside_scratch",
    "runs_as_root",
    "signals_grader",
    "lists_root",
    "solution_from_classmate_home",
)


@pytest.fixture(scope="module")
def unmounted_engine():
    """bubblewrap without the per-step mount namespace: only the private /tmp and the grading account hold."""
    need("bwrap")
    with planted_class_data(), EngineClient(sandbox="bwrap", settings=Settings(step_mounts=False)) as engine:
        yield engine


@pytest.mark.parametrize("name", UNMOUNTED_CASES)
def test_least_privilege_holds_without_per_step_mounts(name, unmounted_engine, tmp_path):
    case = CASES_BY_NAME[name]
    marker = f"agtool-hostile-lp-{os.getpid()}-{name}"
    path = materialise(case, tmp_path / "corpus", marker=marker, outside=tmp_path / "outside")
    run = Run(case, path, tmp_path / "outside", marker, sandbox="bwrap", seed=SEED)
    try:
        run.report = grade(path, seed=SEED, timeout=STEP_TIMEOUT, engine=unmounted_engine)
        problems = step_outcome_problems(case, run.report) + extra_check_problems(run, unmounted_engine, "-")
    finally:
        kill_marked(marker)
    assert "step_mounts" not in run.report.limits and "scratch measured" in run.report.limits
    assert not problems, f"{name} ({case.threat}):\n  " + "\n  ".join(problems)


# ---------------------------------------------------------------- the Check is the graded run


def _seen(report: Report) -> dict[str, str]:
    line = next(line for text in report.output.values() for line in text.splitlines() if "HOSTILE-SEES" in line)
    return dict(part.split("=", 1) for part in line.split()[1:])


@pytest.fixture(scope="module")
def check_and_graded(tmp_path_factory):
    need("bwrap")
    from agtool_lab.widget import _default_grade

    root = tmp_path_factory.mktemp("detect")
    path = materialise(CASES_BY_NAME["grader_detection"], root / "corpus", marker="m", outside=root / "outside")
    checked = _default_grade(path, steps=[1], seed=SEED)
    done = cli_check(path, "--format", "json")  # the commands' default: --sandbox auto
    assert done.returncode == 0, done.stderr
    return _seen(checked), _seen(Report.from_dict(json.loads(done.stdout)))


@pytest.mark.parametrize("fact", ["name", "file", "env", "files", "uid"])
def test_the_check_and_the_graded_run_look_the_same_to_the_module(fact, check_and_graded):
    checked, graded = check_and_graded
    assert checked[fact] == graded[fact], f"{fact}: the Check sees {checked[fact]!r}, the graded run {graded[fact]!r}"


def test_a_venv_reached_through_a_symlink_runs_sandboxed(tmp_path):
    """A clone whose .venv links to another checkout's: the interpreter's path exists in the sandbox too."""
    need("bwrap")
    link = tmp_path / "clone-venv"
    link.symlink_to(Path(sys.prefix).resolve())
    python = link / "bin" / Path(sys.executable).name
    code = "from grader.engine import sandbox; print(repr(sandbox.bwrap_problem()), sandbox._interpreter_links())"
    done = subprocess.run(
        [str(python), "-c", code], cwd=sandbox.PACKAGE_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("'' ") and str(link) in done.stdout, done.stdout  # before: execvp ... No such file
