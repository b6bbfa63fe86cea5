"""``agtool-grade``: exit codes, formats, selection and --out.

Most tests run ``grader.cli.main`` in-process with the engine's test checks
(``helpers.call_check``); a few run the real command in a subprocess.
"""

from __future__ import annotations

import contextlib
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from engine_probes import ENGINE_PROBES
from helpers import call_check

from grader import cli
from grader.checks.registry import checks_for
from grader.grading import grade

REPO = Path(__file__).resolve().parent.parent
MODULE = "def one():\n    return 1\ndef two():\n    return 2\n"


@pytest.fixture
def engine_cli(monkeypatch, engine_client, temp_checks):
    """``cli.main`` grading with the engine's test probes; returns the ids of three test checks."""
    # The session's engine (it can import the test probes), lent to the command without being closed.
    monkeypatch.setattr(cli, "engine_for", lambda sandbox: contextlib.nullcontext(engine_client))
    monkeypatch.setattr(cli, "grade", functools.partial(grade, probe_function=ENGINE_PROBES))
    return temp_checks(
        call_check(1, "one", "one", expect=1),
        call_check(2, "two", "two", expect=2),
        call_check(2, "wrong", "two", expect=3),
    )


def test_exit_0_when_every_selected_check_passes(write_module, engine_cli, capsys):
    path = write_module(MODULE)
    assert cli.main(["check", str(path), "--only", engine_cli[0], "--only", engine_cli[1], "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "PASS  step1/zz_engine_one" in out and "PASS  step2/zz_engine_two" in out and "seed 3" in out


def test_exit_1_when_graded_with_failures(write_module, engine_cli, capsys):
    path = write_module(MODULE)
    assert cli.main(["check", str(path), *sum((["--only", i] for i in engine_cli), [])]) == 1
    out = capsys.readouterr().out
    assert "FAIL  step2/zz_engine_wrong" in out and "reproduce: agtool-grade check" in out


def test_exit_1_when_the_module_does_not_import(write_module, engine_cli, capsys):
    path = write_module("def broken(:\n")
    assert cli.main(["check", str(path), "--only", engine_cli[0]]) == 1
    assert "SyntaxError at tools.py line 1" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, words",
    [
        (["check", "{missing}"], "does not exist"),
        (["check", "{folder}"], "folder without tools.py"),
        (["check", "{module}", "--only", "step1/no_such_check"], "agtool-grade checks"),
        (["check", "{module}", "--step", "12"], "there is no step 12"),
    ],
)
def test_exit_2_with_one_line_saying_what_to_do(argv, words, tmp_path, write_module, engine_cli, capsys):
    module = write_module(MODULE)
    empty = tmp_path / "empty"
    empty.mkdir()
    names = {"missing": tmp_path / "nope.py", "folder": empty, "module": module}
    assert cli.main([a.format(**names) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agtool-grade: cannot grade:") and words in err and err.count("\n") == 1


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["check"])
    assert stop.value.code == 2
    assert cli.main([]) == 2


def test_step_selects_whole_steps(write_module, engine_cli, capsys):
    path = write_module(MODULE)
    cli.main(["check", str(path), "--step", "2", "--only", engine_cli[0], "--only", engine_cli[1], "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in report["checks"]] == [engine_cli[1]]


@pytest.mark.parametrize("fmt, marker", [("json", '"max_score"'), ("markdown", "# Grading report"), ("text", "Total:")])
def test_formats(fmt, marker, write_module, engine_cli, capsys):
    path = write_module(MODULE)
    cli.main(["check", str(path), "--only", engine_cli[2], "--format", fmt, "--seed", "11"])
    out = capsys.readouterr().out
    assert marker in out
    if fmt == "json":
        data = json.loads(out)
        assert data["seed"] == 11 and data["steps"] == {"2": {"score": 0, "max_score": 1, "passed": False}}


def test_out_writes_the_report_to_a_file(tmp_path, write_module, engine_cli, capsys):
    path = write_module(MODULE)
    target = tmp_path / "reports" / "feedback.md"
    assert cli.main(["check", str(path), "--only", engine_cli[0], "--format", "markdown", "--out", str(target)]) == 0
    assert target.read_text().startswith("# Grading report")
    assert str(target) in capsys.readouterr().out


def test_checks_lists_the_registry(temp_checks, capsys):
    temp_checks(call_check(3, "listed", "f", points=4))
    assert cli.main(["checks"]) == 0
    out = capsys.readouterr().out
    assert any(line.split()[:3] == ["step3/zz_engine_listed", "3", "4"] for line in out.splitlines())
    assert cli.main(["checks", "--markdown"]) == 0
    assert "| `step3/zz_engine_listed` | 3 | 4 |" in capsys.readouterr().out


def test_python_dash_m_grader_is_the_same_command(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "grader", "check", str(tmp_path / "nope.py")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "cannot grade" in done.stderr


@pytest.mark.skipif(
    not checks_for() or not (REPO / "grader" / "engine" / "probes.py").exists(), reason="no real checks registered yet"
)
def test_real_command_on_the_solution_exits_0(tmp_path):
    out = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "check",
            str(REPO / "solutions"),
            "--seed",
            "8",
            "--format",
            "json",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text())
    assert report["score"] == report["max_score"] > 0 and report["path"].endswith("tools.py")


def test_a_selection_without_checks_cannot_be_graded(write_module, engine_cli, capsys):
    path = write_module(MODULE)
    assert cli.main(["check", str(path), "--step", "3", "--only", engine_cli[0]]) == 2
    assert "no check matches" in capsys.readouterr().err
