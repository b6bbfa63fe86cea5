"""The Check cell (``agtool_lab.widget``): rendering against golden files, the panel's data model, never raising.

Refresh the golden files with ``UPDATE_GOLDEN=1 pytest tests/test_notebook_widget.py``.
"""

from __future__ import annotations

import html as html_module
import os
import re
import subprocess
from pathlib import Path

import pytest

from agtool_lab import widget as notebook
from agtool_lab.view import NOTEBOOKS, check_panel_text, render_html
from agtool_lab.widget import CheckPanel, check, grade_step, kernel_runner
from grader.escape import html_text
from grader.report import CheckResult, Report

GOLDEN = Path(__file__).resolve().parent / "golden" / "notebook"
REPO = Path(__file__).resolve().parent.parent


def _passing(step: int, seed: int = 11) -> Report:
    return Report(
        seed=seed,
        path="agtool/tools.py",
        checks=[
            CheckResult(f"step{step}/first", step, True, 2, 2, "First behaviour"),
            CheckResult(f"step{step}/second", step, True, 3, 3, "Second behaviour"),
        ],
    )


def _mixed(seed: int = 4242) -> Report:
    return Report(
        seed=seed,
        path="agtool/tools.py",
        checks=[
            CheckResult("step3/returns_dict", 3, True, 2, 2, "call_tool returns ok/value/error"),
            CheckResult(
                "step3/blocked_before_call",
                3,
                False,
                0,
                3,
                "A refused call never runs the tool body",
                call="call_tool('stock_lookup', {'sku': 'SKU-2040', 'region': 'mars', 'limit': 2})",
                expected="body runs: 0",
                got="body runs: 1",
                message="The tool ran although validate_args refused the arguments.",
                hint="Return the args: failure before touching TOOLS[name]['fn'].",
                reproduce="agtool-grade agtool/tools.py --only step3/blocked_before_call --seed 4242",
            ),
            CheckResult(
                "step3/raised_name",
                3,
                False,
                0,
                2,
                "An exception becomes raised:<Name> <&>",
                call="call_tool('stock_lookup', {...})",
                expected="'raised:KeyError'",
                got="KeyError: 'boom' escaped call_tool",
                message="",
                hint="",
            ),
        ],
        output={"3": "debug: called stock_lookup\n<b>not html</b>"},
    )


IMPORT_FAILURE = (
    "Your module could not be imported: SyntaxError at tools.py line 12: invalid syntax\n    12 | REGIONS = ["
)


# As the grader reports a module that does not import: every check failed with that one message and its own hint.
def _import_failed() -> Report:
    return Report(
        seed=9,
        path="agtool/tools.py",
        error=IMPORT_FAILURE,
        checks=[
            CheckResult(
                f"step2/check_{i}",
                2,
                False,
                0,
                2,
                f"Check {i} of step 2",
                message=IMPORT_FAILURE,
                hint=f"HINT-{i}: an unrelated hint",
                reproduce=f"agtool-grade check agtool/tools.py --only step2/check_{i} --seed 9",
            )
            for i in range(14)
        ],
    )


# A path with a space: the replay line quotes it, and wraps only between its words.
RUNNER = "'/opt/lab env/bin/python' -m grader"
CASES = {
    "passing_step2": (2, _passing(2), {}),
    "passing_step8": (8, _passing(8), {}),
    "mixed_step3": (3, _mixed(), {}),
    "mixed_step3_replay_runner": (3, _mixed(), {"runner": RUNNER}),
    "import_failed_step2": (2, _import_failed(), {}),
    "no_checks_step5": (5, Report(seed=1, path="agtool/tools.py"), {}),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("kind", ["html", "txt"])
def test_rendering_matches_golden_file(name, kind):
    step, report, options = CASES[name]
    if kind == "html" and options.get("runner"):
        options = {**options, "copy": True}  # the widget's view: the copy button too
    rendered = (render_html if kind == "html" else check_panel_text)(report, step, **options) + "\n"
    golden = GOLDEN / f"{name}.{kind}"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(rendered, encoding="utf-8")
    assert golden.exists(), f"missing {golden}; create it with UPDATE_GOLDEN=1 pytest {__file__}"
    assert rendered == golden.read_text(encoding="utf-8")


def test_html_escapes_learner_text_and_marks_rows_in_words():
    html = render_html(_mixed(), 3)
    assert "<b>not html</b>" not in html and "&lt;b&gt;not html&lt;/b&gt;" in html
    assert "&lt;&amp;&gt;" in html  # the title's <&> is text, not markup
    assert html.count(">passed<") == 1 and html.count(">failed<") == 2
    assert "1/3 checks passed, 2/7 points" in html
    assert "Next:" not in html  # a failing step does not send the learner on


def test_passing_step_names_the_next_notebook():
    assert "Next: 05_cache.ipynb" in check_panel_text(_passing(4), 4)
    assert "Next: 05_cache.ipynb" in render_html(_passing(4), 4)
    assert "Next: 09_coercion.ipynb" in check_panel_text(_passing(8), 8)
    assert "all 11 steps are done. Capstone: 12_capstone.ipynb" in check_panel_text(_passing(11), 11)


def test_every_notebook_named_by_the_widget_exists():
    for step, name in NOTEBOOKS.items():
        assert (REPO / "labs" / name).is_file(), f"step {step}: labs/{name} is missing"


# --------------------------------------------------------------------------
# The panel's data model and the re-run button
# --------------------------------------------------------------------------


class FakeGrader:
    """Stands in for grader.grading.grade: records calls, returns the next prepared Report."""

    def __init__(self, *reports: Report):
        self.reports = list(reports)
        self.calls: list[dict] = []

    def __call__(self, path, *, steps, seed):
        self.calls.append({"path": path, "steps": steps, "seed": seed})
        report = self.reports.pop(0)
        report.seed = seed
        return report


def test_panel_rows_and_counts_come_from_the_report():
    panel = CheckPanel(3, _mixed(), path=str(REPO / "solutions" / "tools.py"))
    assert [row["passed"] for row in panel.rows] == [True, False, False]
    assert panel.rows[1]["expected"] == "body runs: 0" and panel.rows[1]["got"] == "body runs: 1"
    assert "call" not in panel.rows[0]  # a passing row carries no failure details
    assert panel.summary == "1/3 checks passed, 2/7 points"
    assert panel.body.value == render_html(panel.report, 3, runner=kernel_runner(), copy=True)


def test_rerun_button_grades_again_with_a_new_seed_and_updates_in_place():
    solution = REPO / "solutions" / "tools.py"
    fake = FakeGrader(_passing(3))
    panel = CheckPanel(3, _mixed(seed=4242), path=str(solution), grade=fake)
    body_before = panel.body.value
    panel.button.click()
    assert len(fake.calls) == 1
    call = fake.calls[0]
    assert call["steps"] == [3] and call["seed"] != 4242 and Path(call["path"]) == solution
    assert panel.report.passed and panel.summary == "2/2 checks passed, 5/5 points"
    assert panel.body.value != body_before and "Next: 04_validate_result.ipynb" in panel.body.value
    assert str(call["seed"]) in panel.status.value
    assert not panel.button.disabled


def test_rerun_with_a_grader_that_raises_shows_a_red_box():
    def broken(path, *, steps, seed):
        raise RuntimeError("pipe closed")

    panel = CheckPanel(3, _passing(3), path=str(REPO / "solutions" / "tools.py"), grade=broken)
    report = panel.rerun(seed=77)
    assert report.error.startswith("The grader itself failed: RuntimeError: pipe closed")
    assert "could not be graded" in panel.body.value and "pipe closed" in panel.body.value
    assert not panel.button.disabled


def test_mime_bundle_carries_widget_html_and_text():
    bundle = CheckPanel(3, _mixed(), path="x")._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/html"] == render_html(_mixed(), 3, runner=kernel_runner())
    assert bundle["text/plain"].startswith("Step 3: 1/3 checks passed")


# --------------------------------------------------------------------------
# check(): never raises, returns the Report
# --------------------------------------------------------------------------


def test_bad_path_is_a_report_not_an_exception(tmp_path, capsys):
    missing = tmp_path / "nowhere" / "tools.py"
    report = check(2, path=missing)
    assert isinstance(report, Report)
    assert "does not exist" in report.error and report.checks == []
    assert "could not be graded" in report.panel.body.value
    assert "[ERROR]" in capsys.readouterr().out  # outside IPython, the text view is printed


def test_grader_exception_is_a_report(monkeypatch, tmp_path):
    module = tmp_path / "tools.py"
    module.write_text("X = 1\n")

    def exploding(path, *, steps, seed):
        raise ValueError("no such step")

    monkeypatch.setattr(notebook, "_default_grade", exploding)
    report = grade_step(4, path=module, seed=5)
    assert report.error == "The grader itself failed: ValueError: no such step"
    assert report.seed == 5 and report.path == str(module)


@pytest.mark.parametrize("source, error", [("REGIONS = [\n", "SyntaxError"), ("X = undefined_name + 1\n", "NameError")])
def test_module_that_fails_to_import_shows_one_red_row_without_hints(tmp_path, source, error):
    module = tmp_path / "tools.py"
    module.write_text(source)
    report = check(2, path=module, seed=1)
    assert len(report.checks) > 1, "every check of the step is still in the report, failed"
    assert not any(c.passed for c in report.checks)
    assert error in report.error
    html = report.panel.body.value
    assert "could not be graded" in html and error in html
    assert ">passed<" not in html
    # Before: one row per check, each repeating the error with its own unrelated hint.
    assert html.count(">failed<") == 1 and html.count(html_text(report.error.splitlines()[0])) == 1
    assert f"All {len(report.checks)} checks of step 2 need your module to import" in html
    assert not [c.hint for c in report.checks if c.hint and c.hint in html]
    text = check_panel_text(report, 2)
    assert text.count("[FAILED]") == 1 and "hint:" not in text


def _replay_lines(text: str) -> list[str]:
    return [line.split("replay:", 1)[1].strip() for line in text.splitlines() if line.strip().startswith("replay:")]


def test_the_replay_command_the_widget_shows_replays_the_check_in_a_terminal_without_the_venv(tmp_path):
    # Before: `agtool-grade ...` was "command not found" in JupyterLab's terminal (the venv is not on PATH).
    module = tmp_path / "my work" / "tools.py"
    module.parent.mkdir()
    solution = (REPO / "solutions" / "tools.py").read_text(encoding="utf-8")
    module.write_text(solution.replace('return "unknown_tool"', 'return "no_such_tool"'), encoding="utf-8")
    report = check(2, path=module, seed=8)
    assert "step2/unknown_tool" in [c.id for c in report.failed], report.summary()
    bundle = report.panel._repr_mimebundle_()
    line = next(x for x in _replay_lines(bundle["text/plain"]) if "step2/unknown_tool" in x)
    assert line.startswith(kernel_runner() + " check ")
    # The widget's view shows the same words and its copy button copies exactly this line.
    assert f'data-copy="{line.replace(chr(39), "&#x27;")}"' in report.panel.body.value
    # Run as a terminal would: from the lab's folder, by bash, with no virtualenv on PATH.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    done = subprocess.run(["bash", "-c", line], cwd=REPO / "labs", env=env, capture_output=True, text=True, timeout=300)
    assert "command not found" not in done.stderr and "No module named" not in done.stderr, done.stderr
    assert done.returncode == 1, (done.returncode, done.stderr)  # a check failed, as in the panel
    assert "step2/unknown_tool" in done.stdout and "seed 8" in done.stdout, done.stdout


def test_the_replay_command_wraps_only_between_words_and_has_an_exact_copy_button():
    html = render_html(_mixed(), 3, runner=RUNNER, copy=True)
    command = RUNNER + " agtool/tools.py --only step3/blocked_before_call --seed 4242"
    code = re.search(r'<code class="agtool-replay">(.*?)</code>', html).group(1)
    assert html_module.unescape(re.sub("<[^>]+>", "", code)) == command  # the text is the command, exactly
    # Unbreakable pieces, separated by the spaces between words or by <wbr> after a path's "/", nothing else.
    pieces = re.split(r"(?<=</span>)(?: |<wbr>)", code)
    assert all(re.fullmatch(r'<span style="white-space:nowrap">[^<]*</span>', piece) for piece in pieces), pieces
    assert '<span style="white-space:nowrap">--only</span>' in code
    assert '<span style="white-space:nowrap">&#x27;/</span><wbr><span style="white-space:nowrap">opt/</span>' in code
    button = re.search(r'<button [^>]*data-copy="([^"]*)"[^>]*>copy</button>', html)
    assert button and button.group(1).replace("&#x27;", "'") == command
    assert "<button" not in render_html(_mixed(), 3, runner=RUNNER)  # no button where scripts do not run


def test_check_on_the_solution_passes_and_names_the_next_notebook():
    report = check(2, path=REPO / "solutions" / "tools.py", seed=3)
    assert report.checks and report.passed, report.summary()
    assert "Next: 03_call_boundary.ipynb" in report.panel.body.value


def test_returned_report_is_displayed_once_in_ipython(monkeypatch):
    shown = []

    class Events:
        def __init__(self):
            self.callbacks = []

        def register(self, _name, fn):
            self.callbacks.append(fn)

        def unregister(self, _name, fn):
            self.callbacks.remove(fn)

    class Shell:
        events = Events()

    shell = Shell()
    monkeypatch.setattr(notebook, "_ipython_shell", lambda: shell)
    monkeypatch.setattr("IPython.display.display", lambda obj, **kw: shown.append(obj))
    monkeypatch.setattr(notebook, "_default_grade", lambda path, *, steps, seed: _passing(steps[0], seed or 1))
    report = check(1, path=REPO / "solutions" / "tools.py")
    assert shown == [report.panel]
    report._ipython_display_()  # the cell's last value: already shown, so nothing more
    assert shown == [report.panel]
    for callback in list(shell.events.callbacks):  # the cell ends
        callback()
    report._ipython_display_()  # typed alone in a later cell: shown again
    assert shown == [report.panel, report.panel]


def test_an_edit_on_disk_is_seen_by_the_next_check_without_restarting(tmp_path):
    module = tmp_path / "tools.py"
    solution = (REPO / "solutions" / "tools.py").read_text(encoding="utf-8")
    module.write_text(solution.replace('return "unknown_tool"', 'return "no_such_tool"'), encoding="utf-8")
    before = check(2, path=module, seed=8)
    assert "step2/unknown_tool" in [c.id for c in before.failed], before.summary()
    module.write_text(solution, encoding="utf-8")
    after = check(2, path=module, seed=8)
    assert after.passed, after.summary()


def test_playground_module_is_reimported_when_the_file_changes(tmp_path):
    from agtool_lab.playground import LiveModule

    module = tmp_path / "tools.py"
    module.write_text("VALUE = 1\n")
    live = LiveModule(module)
    first = live.get()
    assert first.VALUE == 1 and live.get() is first  # unchanged file: same module, counters kept
    module.write_text("VALUE = 22\n")
    assert live.get().VALUE == 22


def test_submit_is_offered_beside_check_only_where_a_grading_service_is_configured(monkeypatch):
    from agtool_lab import submit as service

    report = Report(seed=5, path="t.py", checks=[CheckResult("step1/names", 1, True, 2, 2, "Data names")])
    monkeypatch.delenv(service.SERVICE_URL_ENV, raising=False)
    assert CheckPanel(1, report, path="t.py").submit_button is None  # a laptop: Check alone

    monkeypatch.setenv(service.SERVICE_URL_ENV, "http://127.0.0.1:9/services/agtool-grader/")
    monkeypatch.setenv(service.TOKEN_ENV, "token")
    panel = CheckPanel(1, report, path="t.py")
    assert panel.submit_button is not None and panel.submit_button in panel.children[1].children
    sent = []
    monkeypatch.setattr(
        service, "submit", lambda path, **kw: sent.append(path) or service.Message("Attempt 4 <graded>")
    )
    panel.send()
    assert sent == ["t.py"] and "Attempt 4 &lt;graded&gt;" in panel.submitted.value


def test_make_lab_starts_jupyter_with_the_venv_bin_first_on_the_path_its_terminals_inherit():
    # Before: `make lab` left PATH as it was, so `agtool-grade` in a lab terminal was "command not found".
    done = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", "lab"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    line = next(x for x in done.stdout.splitlines() if "jupyter lab" in x)
    assignment = line.split(" ", 1)[0]
    assert assignment == f'PATH="{REPO / ".venv" / "bin"}:$PATH"', line
    found = subprocess.run(
        ["bash", "-c", f"{assignment}; command -v agtool-grade"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert found.stdout.strip() == str(REPO / ".venv" / "bin" / "agtool-grade"), found.stderr


def test_the_copy_button_carries_hostile_paths_as_inert_text():
    from bs4 import BeautifulSoup

    from agtool_lab.replay import replay_html

    evil = "agtool-grade check '/x/\"><img src=x onerror=alert(1)>/tools.py' --only step1/names --seed 1"
    soup = BeautifulSoup(replay_html(evil, copy=True), "html.parser")
    assert soup.find("img") is None and [b["data-copy"] for b in soup.find_all("button")] == [evil]
    assert "alert" not in soup.find("button")["onclick"]  # the handler is ours alone; the text is data
    # A path with control characters is shown with visible escapes and gets no button: nothing raw is copied.
    controls = "agtool-grade check '/x/\x1b[2Jevil/tools.py' --only step1/names --seed 1"
    shown = replay_html(controls, copy=True)
    assert "<button" not in shown and "\x1b" not in shown and "\\x1b[2Jevil" in shown


def test_make_lab_serves_the_checkout_so_the_learner_can_open_agtool_tools_py():
    # Before: the server's root was labs/, and the contents API answered 404 for ../agtool/tools.py.
    # Under CI this test runs inside `make test`: a make called from a make prints "Entering directory"
    # lines unless told not to, and inherits the parent's MAKEFLAGS; both are kept out.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "-o", ".venv/.installed", "lab", "LAB_ARGS=--no-browser --port=9999"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    line = " ".join(x.strip().rstrip("\\") for x in done.stdout.splitlines() if x.strip())
    assert f'--ServerApp.root_dir="{REPO}"' in line and "--LabApp.default_url=/lab/tree/labs" in line, line
    assert line.endswith("--no-browser --port=9999"), line
