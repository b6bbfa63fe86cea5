"""What a newcomer reads first says what is true, and every command it names runs where it is read.

Replay lines: each replay line a learner is shown (feedback file, the hub's page,
Gradescope, the notebooks and ``labs/README.md``) runs in the terminal of the
lab it is written for: a ``make lab`` terminal (the shell the Makefile asks
JupyterLab for, with the Makefile's ``PATH``) and a hub terminal (a login
shell whose ``/etc/profile`` resets ``PATH``, then the recipe's
``/etc/profile.d`` snippet), from the lab's top folder, where the learner's
module is ``agtool/tools.py``. "Runs" means the grader graded it: exit 1
(checks failed on the starter), never 127 (not found) or 2 (no such file).

Figures: the sentences that are figures are checked against their source.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from grader import grade
from grader.outputs.feedback import render_feedback
from grader.outputs.gradescope_results import results_json
from grader.outputs.lms import grade_rows
from grader.service.pages import feedback_html

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = REPO / ".venv" / "bin"
BASH = shutil.which("bash") or "/bin/bash"
REPLAY = re.compile(r"agtool-grade check [^`<\n]*")
# What Debian's /etc/profile does to a login shell's PATH, then what it sources.
RESET_PROFILE = 'PATH="/usr/local/bin:/usr/bin:/bin"\nfor f in {d}/*.sh; do . "$f"; done\n'


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The starter graded as an instructor's batch sees it: under the instructor's own folder."""
    folder = tmp_path_factory.mktemp("class") / "teacher's class" / "ana"
    folder.mkdir(parents=True)
    (folder / "tools.py").write_bytes((REPO / "starter" / "tools.py").read_bytes())
    report = grade(str(folder / "tools.py"), steps=[2], seed=3)
    assert any("teacher" in c.reproduce for c in report.checks if not c.passed)
    return report


def _lab_top(tmp_path: Path) -> Path:
    """A lab's top folder (the checkout for ``make lab``, the home on the hub) with the starter in it."""
    (tmp_path / "agtool").mkdir(parents=True)
    (tmp_path / "agtool" / "tools.py").write_bytes((REPO / "starter" / "tools.py").read_bytes())
    return tmp_path


def _make_lab_terminal() -> tuple[list[str], str]:
    """The shell a ``make lab`` terminal runs (the Makefile's terminado setting) and its PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "-o", ".venv/.installed", "lab"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    line = " ".join(x.strip().rstrip("\\") for x in done.stdout.splitlines() if "jupyter" in x or "--" in x)
    setting = re.search(r'--ServerApp\.terminado_settings="shell_command=([^"]*)"', line)
    assert setting, f"make lab sets no terminal shell: JupyterLab starts a login shell when headless\n{line}"
    shell = shlex.split(
        subprocess.run([BASH, "-c", f'echo "{setting.group(1)}"'], capture_output=True, text=True, check=True).stdout
    )
    assert "-l" not in shell and "--login" not in shell, shell
    path = re.match(r'PATH="([^"]*):\$PATH"', line).group(1)
    return shell, f"{path}:/usr/bin:/bin"


def _run_in_make_lab(command: str, top: Path) -> subprocess.CompletedProcess:
    shell, path = _make_lab_terminal()
    return subprocess.run(
        [*shell, "-c", command],
        cwd=top,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": path, "HOME": str(top), "TERM": "dumb"},
    )


def _run_in_hub(command: str, top: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    # The recipe's snippet, for a prefix whose venv is this checkout's.
    prefix = tmp_path / "prefix"
    prefix.mkdir(parents=True)
    (prefix / "venv").symlink_to(REPO / ".venv")
    root = tmp_path / "root"
    subprocess.run(
        [BASH, "-c", f"source {REPO / 'deploy/jupyterhub/setup_hub.sh'}\nINSTRUCTOR=''\nwrite_profile"],
        env={"PATH": os.environ["PATH"], "AGTOOL_ROOT": str(root), "AGTOOL_PREFIX": str(prefix)},
        capture_output=True,
        text=True,
        check=True,
    )
    profile = tmp_path / "profile"
    profile.write_text(RESET_PROFILE.format(d=root / "etc" / "profile.d"), encoding="utf-8")
    # A login shell: the venv the hub started in is on PATH, and /etc/profile throws it away.
    return subprocess.run(
        [BASH, "--noprofile", "--norc", "-c", f". {profile}; {command}"],
        cwd=top,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(top)},
    )


def _learner_commands(report) -> dict[str, str]:
    """One replay line of each place a learner reads one."""
    record = {"learner": "ana", "report": report.to_dict()}
    feedback = REPLAY.findall(render_feedback(record))
    page = [
        m.replace("&#x27;", "'").replace("&amp;", "&")
        for m in REPLAY.findall(re.sub(r"<[^>]+>", "", feedback_html(report.to_dict()).replace("</dd>", "\n")))
    ]
    scope = [
        line.split("Replay: ", 1)[1]
        for test in results_json(report)["tests"]
        for line in test["output"].splitlines()
        if line.startswith("Replay: ")
    ]
    notebook = json.loads((REPO / "labs" / "11_identity.ipynb").read_text(encoding="utf-8"))
    notebook_text = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    readme = (REPO / "labs" / "README.md").read_text(encoding="utf-8")
    commands = {
        "feedback": feedback[1],
        "service page": page[0],
        "gradescope": scope[0],
        "notebook 11": REPLAY.findall(notebook_text)[0],
        "labs/README.md": REPLAY.findall(readme)[0],
    }
    for where, command in commands.items():
        assert "teacher" not in command and "attempt-" not in command, (where, command)  # the learner's path
        assert "agtool/tools.py" in command, (where, command)
    return commands


def test_every_command_a_learner_reads_runs_in_a_make_lab_terminal(graded, tmp_path):
    top = _lab_top(tmp_path)
    for where, command in _learner_commands(graded).items():
        if where == "notebook 11" or where == "labs/README.md":
            command += " --step 1"  # the whole module on the starter: one step is enough to show it runs
        done = _run_in_make_lab(command, top)
        assert done.returncode == 1, (where, command, done.returncode, done.stderr[-500:])


def test_every_command_a_learner_reads_runs_in_a_hub_terminal_whose_login_profile_resets_path(graded, tmp_path):
    top = _lab_top(tmp_path / "home")
    lost = subprocess.run(
        [BASH, "--noprofile", "--norc", "-c", 'PATH="/usr/bin:/bin"; command -v agtool-grade'],
        capture_output=True,
        text=True,
        env={"PATH": f"{VENV_BIN}:/usr/bin:/bin"},
    )
    assert lost.returncode != 0  # what a login shell without the recipe's snippet gets: "not found"
    for i, (where, command) in enumerate(_learner_commands(graded).items()):
        if where in ("notebook 11", "labs/README.md"):
            command += " --step 1"
        done = _run_in_hub(command, top, tmp_path / str(i))
        assert done.returncode == 1, (where, command, done.returncode, done.stderr[-500:])


def test_replay_lines_for_each_reader_come_from_one_function():
    from grader.messages import replay_for

    graded_as = (
        "agtool-grade check '/srv/agtool/attempts/bob/attempt-3/tools.py' --only step2/x --seed 4 --timeout 5.45455"
    )
    assert (
        replay_for(graded_as, "service") == "agtool-grade check agtool/tools.py --only step2/x --seed 4 --timeout 5.5"
    )
    assert replay_for(graded_as, "gradescope") == replay_for(graded_as, "feedback") == replay_for(graded_as, "service")
    assert replay_for(graded_as, "terminal").endswith("--timeout 5.5") and "attempt-3" in replay_for(
        graded_as, "terminal"
    )
    assert replay_for(graded_as, "lab", runner="/v/python -m grader").startswith("/v/python -m grader check /srv")


# ------------------------------------------------------------------ sentences that are figures

_NUMBER_WORDS = {8: "Eight", 11: "Eleven", 12: "Twelve"}


def test_labs_readme_counts_the_notebooks_there_are():
    from agtool_lab.view import NOTEBOOKS

    readme = (REPO / "labs" / "README.md").read_text(encoding="utf-8")
    assert readme.count(f"{_NUMBER_WORDS[len(NOTEBOOKS)]} short notebooks") == 1
    assert len(sorted((REPO / "labs").glob("[01][0-9]_*.ipynb"))) == len(NOTEBOOKS) + 1  # and the capstone


def test_check_help_gives_the_import_timeout_of_the_settings():
    from grader.cli import build_parser
    from grader.settings import Settings

    help_text = " ".join(build_parser()._subparsers._group_actions[0].choices["check"].format_help().split())
    assert f"$AGTOOL_IMPORT_TIMEOUT (default {Settings().import_timeout:g})" in help_text


def test_make_test_minutes_are_one_figure_in_the_readme_and_the_development_guide():
    said = {
        name: re.findall(r"`make test` runs everything \(about (\d+) minutes", (REPO / name).read_text("utf-8"))
        for name in ("README.md", "docs/development.md")
    }
    assert all(len(v) == 1 for v in said.values()) and len({v[0] for v in said.values()}) == 1, said
    # The clean-clone run of tree 8e11050 measured 33 min 8 s on two workers (2026-12-07, files in a measured
    # order): "about" may round it, not halve it.
    assert abs(int(said["README.md"][0]) - 33) <= 5


def test_learner_texts_name_no_checkout_path_and_no_grader_internals(graded):
    for notebook in sorted((REPO / "labs").glob("*.ipynb")):
        assert ".venv/bin/" not in notebook.read_text(encoding="utf-8"), notebook.name
    starter = (REPO / "starter" / "tools.py").read_text(encoding="utf-8")
    assert "LAB_SPEC" not in starter and "step 11  labs/11_identity.ipynb" in starter.replace("step 11 ", "step 11  ")
    feedback = render_feedback({"learner": "ana", "report": graded.to_dict()})
    assert "Isolation" not in feedback and "bwrap" not in feedback  # the grader's isolation is the instructor's
    rows = grade_rows([{"learner": "ana", "report": {"score": 5, "max_score": 10}}])
    assert "no course policy" not in rows[0]["why"]


def test_an_import_time_out_says_while_importing_once():
    from grader.messages import import_death, timeout_text

    what, cause = timeout_text("import", 31.0, import_timeout=30, timeout=10, per_probe=10)
    assert import_death(what, cause).count("while importing") == 1


def test_the_readme_s_cost_figures_are_the_benchmarks_pairings_with_their_trees_and_dates():
    """Each ratio, tree and date of the README's cost paragraph is in docs/benchmarks.md, the page it cites."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    paragraph = readme.split("**What the coverage and the isolation cost.**")[1].split("\n\n")[0]
    benchmarks = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    trees = re.findall(r"\b[0-9a-f]{7}\b", paragraph)
    dates = re.findall(r"\b2026-\d\d-\d\d\b", paragraph)
    ratios = re.findall(r"\b\d\.\d\d\b", paragraph)
    assert len(trees) >= 2 and len(dates) >= 3 and len(ratios) >= 4, paragraph
    assert [x for x in trees + dates + ratios if x not in benchmarks] == []
    # A pairing is named by the tree it was measured against, never "the tree before them" alone.
    assert "the tree before them" not in paragraph


def test_labs_readme_reaches_agtool_the_way_jupyterlab_4_s_file_browser_does():
    """JupyterLab 4's file browser lists no `..` row: the path's first crumb (a folder icon) is the way up."""
    readme = (REPO / "labs" / "README.md").read_text(encoding="utf-8")
    start = " ".join(readme.split("## Start")[1].split("## ")[0].split())
    assert "`..`" not in start
    assert "folder icon at the start of the path" in start and "open `agtool`" in start
    # The browser test opens tools.py that way: the home crumb, then agtool (tests/e2e/newcomer.py).
    newcomer = (REPO / "tests" / "e2e" / "newcomer.py").read_text(encoding="utf-8")
    assert ".jp-BreadCrumbs-home" in newcomer
