"""Hostile learners at the level of a class: hostile text, names and archives through every output.

One set of hostile strings (backticks, ``$(id>PWNED.txt)``, an ``onerror``
image, a ``javascript:`` link, an image beacon, terminal escapes, formula
cells, a space, a newline, Korean) goes through every output -- the text,
JSON and Markdown reports, the Check cell's HTML, the dashboard's Markdown,
summary.md, grades.csv, Gradescope's results.json and the reproduce line --
and each output is read the way its reader reads it (a Markdown renderer, an
HTML parser, the csv module, shlex and bash). Then generated class folders
and zips with hostile names, uploads and members, and bad instructor input.
Most batches here use a fake grader (fast, and the text it reports is the
attack); one grades a hostile upload name for real.
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import socket
import stat
import subprocess
import threading
import time
import warnings
import zipfile
from pathlib import Path

import mistune
import pytest
from bs4 import BeautifulSoup

from agtool_lab.view import check_panel_text as widget_text
from agtool_lab.view import render_html as widget_html
from grader import cli
from grader.batch import discover, run_batch
from grader.batch import run as batch_run
from grader.engine.sandbox import bwrap_usable
from grader.escape import CSV_FORMULA_STARTS, md_code, shell_join, terminal_text
from grader.grading import _ReplayCommand
from grader.messages import GRADER_FAILED
from grader.outputs.class_folder import write_outputs
from grader.outputs.feedback import render_feedback
from grader.outputs.gradescope_results import results_json
from grader.render import render_json, render_markdown, render_text
from grader.report import CheckResult, Report

REPO = Path(__file__).resolve().parent.parent

HOSTILE = {
    "backticks": "a`b``c```d",
    "command": "$(id>PWNED.txt)",
    "backquote_command": "`id>PWNED.txt`",
    "html": "<img src=x onerror=alert(1)>",
    "link": "[x](javascript:alert(1))",
    "beacon": "![b](http://beacon)",
    "bare_url": "http://beacon.example/x",
    "terminal": "\x1b[2J\x1b[32mPASS",
    "bidi": "FAIL\u202eSSAP",
    "formula": "=1+1",
    "minus": "-1-1",
    "at": "@SUM(A1)",
    "space": "my work",
    "newline": "line one\nline two",
    "korean": "김민준의 과제",
    "math": "$x^2$ and $$y$$",
}
EVERYTHING = " | ".join(HOSTILE.values())
ONE_LINE = {name: text for name, text in HOSTILE.items() if "\n" not in text}


def hostile_report(path: str = f"class/{HOSTILE['command']} {HOSTILE['backticks']}/tools.py") -> Report:
    replay = _ReplayCommand(Path(path), 7, 10.0)
    report = Report(
        seed=7,
        path=path,
        checks=[
            CheckResult(
                id="step2/valid_passes",
                step=2,
                passed=False,
                points=0,
                max_points=2,
                title="Valid calls pass",
                call=f"validate_args({EVERYTHING!r})",
                expected="''",
                got=EVERYTHING,
                message=EVERYTHING,
                hint="Return '' for a valid call.",
                reproduce=replay.for_check("step2/valid_passes"),
            ),
            CheckResult(id="step1/names", step=1, passed=True, points=2, max_points=2, title="Data names"),
        ],
    )
    report.add_output(2, EVERYTHING)
    return report


def rendered_markdown(text: str) -> BeautifulSoup:
    """Markdown as a notebook front end reads it: raw HTML allowed, bare URLs linked, math and tables on."""
    to_html = mistune.create_markdown(escape=False, plugins=["strikethrough", "table", "url", "math"])
    return BeautifulSoup(to_html(text), "html.parser")


def assert_nothing_live_in_html(soup: BeautifulSoup, where: str) -> None:
    for tag in soup.find_all(True):
        assert tag.name not in ("img", "a", "script", "iframe", "title", "svg"), f"{where}: a live <{tag.name}>"
        assert not [a for a in tag.attrs if a.lower().startswith("on")], f"{where}: an event handler on <{tag.name}>"
    assert not soup.find_all(class_="math"), f"{where}: learner text became math"
    shown = soup.get_text()
    for name, text in ONE_LINE.items():
        if name not in ("terminal", "bidi"):  # shown as visible escapes, below
            assert text in shown, f"{where}: {name} is not shown as written"
    assert "\\x1b[2J\\x1b[32mPASS" in shown and "\\u202e" in shown, f"{where}: control characters not shown"


def assert_no_raw_controls(text: str, where: str) -> None:
    for char in ("\x1b", "\u202e", "\r"):
        assert char not in text, f"{where}: a raw {char!r} reaches the reader"


# ---------------------------------------------------------------- every output


def test_text_report_shows_controls_as_escapes_and_keeps_the_rest():
    text = render_text(hostile_report())
    assert_no_raw_controls(text, "render_text")
    assert "\\x1b[2J\\x1b[32mPASS" in text and HOSTILE["korean"] in text
    # The fake PASS line is no line of its own: every check line starts with the real mark.
    marks = [line.split()[0] for line in text.split("\n") if line.lstrip().startswith(("PASS", "FAIL"))]
    assert marks == ["PASS", "FAIL"]


def test_json_report_is_the_report_itself():
    report = hostile_report()
    assert json.loads(render_json(report))["checks"][0]["got"] == EVERYTHING


@pytest.mark.parametrize("render", [render_markdown, render_feedback], ids=["markdown", "feedback"])
def test_markdown_feedback_shows_hostile_text_and_runs_nothing(render):
    report = hostile_report()
    markdown = render(report) if render is render_markdown else render({"report": report.to_dict()})
    assert_no_raw_controls(markdown, "markdown")
    soup = rendered_markdown(markdown)
    assert_nothing_live_in_html(soup, "feedback")
    # The module path with its backticks, verbatim; feedback names the learner's own file, never the class folder.
    shown = report.path if render is render_markdown else Path(report.path).name
    assert shown in soup.get_text() and (render is render_markdown or report.path not in soup.get_text())


def test_the_dashboard_shows_feedback_through_the_escaping_renderer():
    nb = json.loads((REPO / "labs" / "instructor_dashboard.ipynb").read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "Markdown(gradebook.render_feedback(record))" in code
    assert '.md").read_text()))' not in code  # no old feedback file is displayed as live Markdown


def test_widget_html_and_text_show_hostile_text_and_run_nothing():
    report = hostile_report()
    soup = BeautifulSoup(widget_html(report, 2), "html.parser")
    assert_nothing_live_in_html(soup, "widget")
    assert_no_raw_controls(widget_text(report, 2), "widget text/plain")


def hostile_records() -> list[dict]:
    ids = ["-1-1", "-A1", "@SUM(A1)", "+1", "김민준", "ok"]
    records = []
    for learner in ids:
        report = hostile_report(f"class/{learner}/tools.py")
        report.error = f'=HYPERLINK("http://evil") {HOSTILE["html"]} <title>pwned</title>'
        records.append(
            {
                "learner": learner,
                "source": f"class/{learner}/tools.py",
                "sha256": "0" * 64,
                "seed": 7,
                "selection": {"steps": None, "only": None},
                "report": report.to_dict(),
            }
        )
    return records


def test_class_outputs_show_hostile_text_and_run_nothing(tmp_path):
    outputs = write_outputs(hostile_records(), tmp_path)
    summary = outputs["summary"].read_text(encoding="utf-8")
    assert_no_raw_controls(summary, "summary.md")
    soup = rendered_markdown(summary)
    for tag in soup.find_all(True):
        assert tag.name not in ("img", "a", "script", "title"), f"summary.md: a live <{tag.name}>"
    assert "<title>pwned</title>" in soup.get_text()  # the import error's first line, shown
    with open(outputs["csv"], newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0][-1] == "source"
    for row in rows:
        for cell in row:
            assert not cell.startswith(CSV_FORMULA_STARTS), f"grades.csv: a formula cell {cell!r}"
    learners = [row[0] for row in rows[1:]]
    assert learners == sorted(["'-1-1", "'-A1", "'@SUM(A1)", "'+1", "김민준", "ok"], key=lambda s: s.lstrip("'"))
    for learner in ("-1-1", "김민준"):
        results = json.loads((tmp_path / "gradescope" / learner / "results.json").read_text(encoding="utf-8"))
        assert terminal_text(EVERYTHING) in results["tests"][0]["output"]  # plain text, controls visible
        # Shown by Gradescope as text: no format that would make learner text live.
        assert results.get("output_format", "simple_format") in ("text", "simple_format")


def test_gradescope_results_keep_the_text_as_plain_text_with_visible_controls():
    results = results_json(hostile_report())
    again = json.loads(json.dumps(results, ensure_ascii=False))
    output = again["tests"][0]["output"]
    assert output.count(terminal_text(EVERYTHING)) >= 2  # message and got, nothing dropped
    assert "\x1b" not in output and "\u202e" not in output  # no live escape sequence or bidi override
    assert again["output_format"] == again["test_output_format"] == "text"  # never Markdown/HTML/ANSI


# ---------------------------------------------------------------- the reproduce line

HOSTILE_PATHS = [
    f"class/x_{HOSTILE['command']}_tools.py",
    f"class/x_{HOSTILE['backquote_command']}_tools.py",
    "class/moodle student/tools.py",
    "class/it's; rm -rf ~/tools.py",
    "-1-1_tools.py",
    f"class/{HOSTILE['korean']}/tools.py",
    'class/a"b\\c$HOME/tools.py',
]


@pytest.mark.parametrize("display", HOSTILE_PATHS)
def test_a_batch_reproduce_line_gives_back_the_learner_path_and_runs_nothing(display, tmp_path):
    # A batch grades the learner's bytes under the learner's path: the line is made for it, never rewritten.
    rebased = _ReplayCommand(display, 7, 2.5).for_check("step2/x")
    words = shlex.split(rebased)
    expected = display if not display.startswith("-") else "./" + display
    assert words[:3] == ["agtool-grade", "check", expected] and words[3:5] == ["--only", "step2/x"]
    # Pasted into bash: printf shows the words, and nothing in them runs.
    done = subprocess.run(
        ["bash", "-c", f"printf '%s\\n' {rebased.removeprefix('agtool-grade ')}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert done.returncode == 0 and done.stdout.splitlines()[1] == expected
    assert not (tmp_path / "PWNED.txt").exists() and not list(tmp_path.iterdir())


def test_the_markdown_of_a_reproduce_line_is_one_code_span():
    line = shell_join(["agtool-grade", "check", HOSTILE_PATHS[1]], paths=[2])
    span = md_code(line)
    soup = rendered_markdown(f"- **reproduce:** {span}")
    assert [c.get_text() for c in soup.find_all("code")] == [line]


# ---------------------------------------------------------------- class folders


def hostile_fake_grade(path, *, steps=None, only=None, seed=None, timeout=None):
    """Fails one check with the hostile text as the learner's message, and a real replay command."""
    replay = _ReplayCommand(str(path), seed, timeout or 10.0)  # path: the Submission a batch worker passes
    return Report(
        seed=seed,
        path=str(path),
        checks=[
            CheckResult(
                id="step1/names",
                step=1,
                passed=False,
                points=0,
                max_points=2,
                title="Data names",
                got=EVERYTHING,
                expected="'x'",
                message=EVERYTHING,
                reproduce=replay.for_check("step1/names"),
            ),
        ],
    )


def hostile_class(root: Path) -> Path:
    """Learner folders and loose uploads whose names are the attack."""
    names = [
        "moodle student",
        "back`tick",
        "-1-1",
        "=1+1",
        "@SUM(A1)",
        "김민준",
        "김 민준",
        "김_민준",
        "<img src=x onerror=alert(1)>",
        "ana",
        "ANA",
    ]
    for name in names:
        (root / name).mkdir(parents=True)
        (root / name / "tools.py").write_text(f"# {name}\n", encoding="utf-8")
    loose = ["x_$(id>PWNED.txt)_tools.py", "y_`id>PWNED.txt`_tools.py", "ana_tools.py", "-A1_tools.py"]
    for name in loose:
        (root / name).write_text(f"# {name}\n", encoding="utf-8")
    (root / "zoe_tools.ipynb").write_text("{}", encoding="utf-8")
    (root / "yan_tools.py.txt").write_text("x = 1\n", encoding="utf-8")
    (root / "lee_tools.pyc").write_bytes(b"\xa7\r\r\n" + bytes(12))
    (root / "max_tools").write_text("x = 1\n", encoding="utf-8")
    return root


def test_a_hostile_class_folder_keeps_every_learner_apart_and_runs_nothing(tmp_path):
    root = hostile_class(tmp_path / "class")
    out = tmp_path / "out"
    result = run_batch(root, out, seed=7, jobs=2, grade_fn=hostile_fake_grade, progress=False)
    records = {
        r["learner"]: r for r in (json.loads(p.read_text(encoding="utf-8")) for p in (out / "results").glob("*.json"))
    }
    assert len(records) == len(result.learners) == 19  # 11 folders, 4 loose .py, 4 loose uploads that are not
    sources = {r["source"] for r in records.values()}
    assert len(sources) == 19  # nobody's feedback is someone else's
    for record in records.values():
        # Each learner's file is the one graded: the fake grader wrote its name in it.
        check = record["report"]["checks"][0]
        if record["sha256"]:
            words = shlex.split(check["reproduce"])
            assert words[2].removeprefix("./") == record["source"].removeprefix("./")
            done = subprocess.run(
                ["bash", "-c", f"printf '%s\\n' {check['reproduce'].removeprefix('agtool-grade ')}"],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=10,
            )
            assert done.stdout.splitlines()[1] == words[2]
    assert not (tmp_path / "PWNED.txt").exists() and not (REPO / "PWNED.txt").exists()
    not_graded = {r["learner"]: r["report"]["error"] for r in records.values() if not r["sha256"]}
    assert set(not_graded) == {"zoe", "yan", "lee", "max"}, not_graded
    assert all("not a .py file" in e for e in not_graded.values())
    with open(out / "grades.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert all(not cell.startswith(CSV_FORMULA_STARTS) for row in rows for cell in row.values())
    assert {row["source"] for row in rows} == sources
    assert "김민준" in {row["learner"] for row in rows}
    summary = rendered_markdown((out / "summary.md").read_text(encoding="utf-8"))
    assert not summary.find_all(["img", "a", "script"])
    for learner in records:
        feedback = rendered_markdown((out / "feedback" / f"{learner}.md").read_text(encoding="utf-8"))
        assert not feedback.find_all(["img", "a", "script"]), learner


def test_learner_ids_of_a_hostile_class_are_the_same_on_every_run(tmp_path):
    def entries(root: Path) -> list[tuple[str, str]]:
        # (learner id, the folder or loose file of the class it names)
        return [(s.learner, Path(s.display).relative_to(root).parts[0]) for s in discover(hostile_class(root))]

    first, second = entries(tmp_path / "one"), entries(tmp_path / "two")
    assert first == second
    ids = [learner for learner, _ in first]
    assert len({i.casefold() for i in ids}) == len(ids)


def test_a_hostile_upload_name_graded_for_real_gives_a_safe_replay(tmp_path):
    root = tmp_path / "class"
    root.mkdir()
    upload = root / "x_$(id>PWNED.txt)_tools.py"
    upload.write_text((REPO / "starter" / "tools.py").read_text(encoding="utf-8"), encoding="utf-8")
    run_batch(root, tmp_path / "out", seed=3, jobs=1, steps=[1], progress=False)
    record = json.loads(next((tmp_path / "out" / "results").glob("*.json")).read_text(encoding="utf-8"))
    # A check the grader did not judge (the same crash as an earlier row) carries no replay line.
    replays = {c["reproduce"] for c in record["report"]["checks"] if not c["passed"] and c["reproduce"]}
    assert replays, "the starter fails step 1: its judged failures carry replay lines"
    for line in replays:
        assert shlex.split(line)[2] == str(upload)
        subprocess.run(
            ["bash", "-c", f"printf '%s\\n' {line.removeprefix('agtool-grade ')}"],
            cwd=tmp_path,
            capture_output=True,
            timeout=10,
            check=True,
        )
    assert not (tmp_path / "PWNED.txt").exists() and not (REPO / "PWNED.txt").exists()


# ---------------------------------------------------------------- zips


def hostile_zip(path: Path) -> Path:
    """A class zip with one broken member of each kind beside good ones."""
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate names this zip holds on purpose
        zf.writestr("hw/ana/tools.py", "# ana\n")
        zf.writestr("hw/ben/" + "b" * 300 + ".py", "# long\n")
        zf.writestr("hw/ben/tools.py", "# ben\n")
        zf.writestr("hw/cy/tools.py", "# cy\n")
        zf.writestr("hw/cy/tools.py/inner.py", "# a folder named like the file\n")
        zf.writestr("hw/dee/tools.py/inner.py", "# the folder first\n")
        zf.writestr("hw/dee/tools.py", "# then the file\n")
        zf.writestr("hw/eli/tools.py", "# eli first\n")
        zf.writestr("hw/eli/tools.py", "# eli again\n")
        zf.writestr("hw/fay/TOOLS.PY", "# fay\n")
        zf.writestr("hw/fay/tools.py", "# fay, a case-insensitive duplicate\n")
        zf.writestr("hw/gus/tools.py", "# gus CRC-MARK\n")
        zf.writestr("hw/" + "\u00e9" * 200 + "/tools.py", "# a folder name of 400 bytes\n")
    data = bytearray(path.read_bytes())
    at = data.find(b"CRC-MARK")
    data[at] ^= 0xFF  # the stored bytes no longer match the CRC in the headers
    path.write_bytes(bytes(data))
    return path


def test_broken_zip_members_are_skipped_and_listed_not_fatal(tmp_path):
    skipped: list = []
    found = {s.learner: s for s in discover(hostile_zip(tmp_path / "class.zip"), workdir=tmp_path, skipped=skipped)}
    reasons = dict(skipped)
    assert "longer than 255 bytes" in reasons["hw/ben/" + "b" * 300 + ".py"]
    assert "cannot also be a folder" in reasons["hw/cy/tools.py/inner.py"]
    assert "folder of the same name" in reasons["hw/dee/tools.py"]
    assert "same name" in reasons["hw/eli/tools.py"] and "same name" in reasons["hw/fay/tools.py"]
    assert "corrupt" in reasons["hw/gus/tools.py"] and "CRC" in reasons["hw/gus/tools.py"]
    assert "longer than 255 bytes" in reasons["hw/" + "\u00e9" * 200 + "/tools.py"]
    assert found["ana"].path.read_text() == "# ana\n" and found["ben"].path.read_text() == "# ben\n"
    assert found["eli"].path.read_text() == "# eli first\n"  # the first of two members of one name
    assert found["gus"].path is None  # no half-checked file is graded; the learner keeps a row


def test_a_batch_of_a_broken_zip_lists_the_skipped_members(tmp_path, capsys):
    archive = hostile_zip(tmp_path / "class.zip")
    code = cli.main(
        [
            "batch",
            str(archive),
            "--out",
            str(tmp_path / "out"),
            "--seed",
            "2",
            "--jobs",
            "1",
            "--no-progress",
            "--steps",
            "1",
            "--timeout",
            "30",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "skipped from the zip: hw/gus/tools.py: corrupt" in captured.err
    summary = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "## Skipped from the zip" in summary and "`hw/cy/tools.py/inner.py`" in summary


# ---------------------------------------------------------------- instructor input


@pytest.mark.parametrize(
    "argv",
    [
        ["batch", "class", "--out", "OUT", "--timeout", "inf"],
        ["batch", "class", "--out", "OUT", "--timeout", "nan"],
        ["batch", "class", "--out", "OUT", "--timeout", "-10"],
        ["batch", "class", "--out", "OUT", "--timeout", "0"],
        ["batch", "class", "--out", "OUT", "--jobs", "0"],
        ["batch", "class", "--out", "OUT", "--jobs", "-1"],
        ["batch", "class", "--out", "FILE"],
        ["check", "tools.py", "--timeout", "inf"],
        ["check", "tools.py", "--parallel", "0"],
        ["check", "tools.py", "--out", "OUT"],
        ["gradescope", "--timeout", "nan"],
    ],
)
def test_bad_instructor_input_is_one_clear_line_and_exit_2(argv, tmp_path, capsys):
    (tmp_path / "FILE").write_text("an existing file")
    (tmp_path / "OUT").mkdir()
    argv = [str(tmp_path / a) if a in ("FILE", "OUT") else a for a in argv]
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "give a" in err or "name a" in err  # says what to give instead


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"timeout": float("inf")}, "timeout=inf"),
        ({"timeout": float("nan")}, "timeout=nan"),
        ({"timeout": -10}, "timeout=-10"),
        ({"timeout": 0}, "timeout=0"),
        ({"jobs": 0}, "jobs=0"),
        ({"jobs": -1}, "jobs=-1"),
    ],
)
def test_run_batch_refuses_bad_limits_before_grading_anyone(kwargs, words, tmp_path):
    root = hostile_class(tmp_path / "class")
    with pytest.raises(ValueError, match=words.replace("+", r"\+")):
        run_batch(root, tmp_path / "out", grade_fn=hostile_fake_grade, progress=False, **kwargs)
    assert not (tmp_path / "out" / "results").exists()


def test_run_batch_refuses_an_out_that_is_a_file(tmp_path):
    (tmp_path / "out").write_text("grades from last year")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        run_batch(hostile_class(tmp_path / "class"), tmp_path / "out", grade_fn=hostile_fake_grade, progress=False)
    assert (tmp_path / "out").read_text() == "grades from last year"


# ---------------------------------------------------------------- storing a result


def test_a_failure_to_store_one_result_becomes_that_learners_row(tmp_path, monkeypatch):
    root = tmp_path / "class"
    for name in ("ana", "bob", "cy"):
        (root / name).mkdir(parents=True)
        (root / name / "tools.py").write_text(f"# {name}\n")
    real_write = batch_run.write_json_atomically
    attempts: dict[str, int] = {}

    def flaky_write(path, data):
        name = Path(path).stem
        attempts[name] = attempts.get(name, 0) + 1
        if name == "bob":
            raise OSError(28, "No space left on device")  # both tries: kept in memory for this run's outputs
        if name == "cy" and attempts[name] == 1:
            raise TypeError("Object of type bytes is not JSON serializable")  # the first try only
        return real_write(path, data)

    monkeypatch.setattr(batch_run, "write_json_atomically", flaky_write)
    result = run_batch(root, tmp_path / "out", seed=1, jobs=1, grade_fn=hostile_fake_grade, progress=False)
    assert result.learners == ["ana", "bob", "cy"]
    with open(result.outputs["csv"], newline="", encoding="utf-8") as fh:
        rows = {row["learner"]: row for row in csv.DictReader(fh)}
    assert set(rows) == {"ana", "bob", "cy"}
    assert rows["bob"]["error"].startswith(GRADER_FAILED) and "No space left" in rows["bob"]["error"]
    assert rows["cy"]["error"].startswith(GRADER_FAILED) and "not JSON serializable" in rows["cy"]["error"]
    assert rows["ana"]["error"] == ""
    saved = json.loads((tmp_path / "out" / "results" / "cy.json").read_text())
    assert saved["report"]["error"].startswith(GRADER_FAILED)  # --resume grades cy again


# ---------------------------------------------------------------- the corpus's text cases, graded for real

TEXT_CASES = (
    "markdown_in_exception",
    "markdown_in_return",
    "markdown_in_output",
    "html_in_import_error",
    "terminal_escapes_in_exception",
    "terminal_escapes_in_output",
    "terminal_escapes_in_import_error",
    "bidi_in_return",
    "shell_in_exception",
    "formula_in_import_error",
    "formula_in_return",
    "formula_at_sign_in_exception",
)
LIVE_TAGS = ("img", "a", "script", "iframe", "title", "svg")


@pytest.fixture(scope="module")
def graded_text_cases(tmp_path_factory):
    from hostile.build import materialise
    from hostile.manifest import CASES_BY_NAME

    from grader.grading import grade

    root = tmp_path_factory.mktemp("text_cases")
    reports = {}
    for name in TEXT_CASES:
        case = CASES_BY_NAME[name]
        path = materialise(case, root / "class", marker=f"text-{name}", outside=root / "outside")
        step = 1 if case.at == "import" else 2  # the step the case's text reaches first
        reports[name] = grade(path, steps=[step], seed=11, timeout=10)
    return reports


@pytest.mark.parametrize("name", TEXT_CASES)
def test_each_text_case_of_the_corpus_is_shown_and_never_live(name, graded_text_cases, tmp_path):
    report = graded_text_cases[name]
    step = next(iter(report.steps))
    assert not report.passed or "HOSTILE" in "".join(report.output.values()), f"{name}: its text is not in the report"
    texts = {
        "text": render_text(report),
        "markdown": render_markdown(report),
        "widget html": widget_html(report, step),
        "widget text": widget_text(report, step),
    }
    record = {
        "learner": "-1-1",
        "source": str(report.path),
        "sha256": "0" * 64,
        "seed": 11,
        "selection": {"steps": [step], "only": None},
        "report": report.to_dict(),
    }
    outputs = write_outputs([record], tmp_path)
    texts["summary"] = outputs["summary"].read_text(encoding="utf-8")
    texts["feedback"] = (tmp_path / "feedback" / "-1-1.md").read_text(encoding="utf-8")
    for where, text in texts.items():
        assert_no_raw_controls(text, f"{name} {where}")
        assert "\u202e" not in text and "\x9b" not in text
        soup = (
            rendered_markdown(text)
            if where in ("markdown", "summary", "feedback")
            else BeautifulSoup(text, "html.parser")
            if where == "widget html"
            else None
        )
        if soup is not None:
            assert not soup.find_all(LIVE_TAGS), f"{name} {where}: {soup.find_all(LIVE_TAGS)}"
            assert not soup.find_all(class_="math"), f"{name} {where}: learner text became math"
    with open(outputs["csv"], newline="", encoding="utf-8") as fh:
        for row in csv.reader(fh):
            assert not any(cell.startswith(CSV_FORMULA_STARTS) for cell in row), f"{name} grades.csv: {row}"
    for check in report.failed:
        if check.reproduce:
            assert shlex.split(check.reproduce)[2] == str(report.path)


# ---------------------------------------------------------------- borrowed grades


def _borrowing_class(root: Path) -> Path:
    """bob did the work; four classmates point at it by links, one swaps in a FIFO."""
    (root / "bob" / "agtool").mkdir(parents=True)
    (root / "bob" / "agtool" / "tools.py").write_text("X = 'bob'\n")
    (root / "alice").symlink_to(root / "bob")  # the whole folder
    (root / "carl").mkdir()
    (root / "carl" / "agtool").symlink_to(root / "bob" / "agtool")  # the package folder
    (root / "dora").mkdir()
    (root / "dora" / "tools.py").symlink_to(root / "bob" / "agtool" / "tools.py")  # the file
    (root / "emil").mkdir()
    os.link(root / "bob" / "agtool" / "tools.py", root / "emil" / "tools.py")  # a hard link
    (root / "fay").mkdir()
    os.mkfifo(root / "fay" / "tools.py")  # never written to
    return root


def test_no_learner_borrows_a_classmates_file_and_a_fifo_does_not_hang_the_batch(tmp_path):
    found = {s.learner: s for s in discover(_borrowing_class(tmp_path / "class"))}
    # bob's own file is refused only for its second name (emil's hard link): neither may be graded as
    # someone else's work, and the instructor sees why in each row.
    borrowed = ("alice", "carl", "dora", "emil")
    for learner in borrowed:
        source, problem = batch_run._read_submission(found[learner])
        assert source == b"" and problem, learner
    started = time.monotonic()
    source, problem = batch_run._read_submission(found["fay"])
    assert time.monotonic() - started < 5 and source == b"" and problem  # refused, not waited on


def _odd_files_class(root: Path) -> Path:
    """A class whose tools.py files are a device, a socket, a 64 MiB sparse file, a link to a device, one regular."""
    (root / "bob" / "agtool").mkdir(parents=True)
    (root / "bob" / "agtool" / "tools.py").write_text("X = 'bob'\n")
    (root / "gus").mkdir()
    os.mknod(root / "gus" / "tools.py", 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero: endless bytes
    (root / "hal").mkdir()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(root / "hal" / "tools.py"))  # a socket
    (root / "ivy").mkdir()
    with open(root / "ivy" / "tools.py", "wb") as fh:  # sparse, 64 MiB
        fh.truncate(64 << 20)
    (root / "jon").mkdir()
    (root / "jon" / "tools.py").symlink_to("/dev/zero")  # a link to a device
    return root


@pytest.mark.skipif(os.geteuid() != 0, reason="making a character device (mknod) needs root")
def test_devices_sockets_and_huge_files_are_refused_quickly_with_a_reason(tmp_path):
    found = {s.learner: s for s in discover(_odd_files_class(tmp_path / "class"))}
    for learner in ("gus", "hal", "ivy", "jon"):
        started = time.monotonic()
        source, problem = batch_run._read_submission(found[learner]) if learner in found else (b"", "not found")
        assert time.monotonic() - started < 2 and source == b"" and problem, learner
    assert batch_run._read_submission(found["bob"]) == (b"X = 'bob'\n", "")


def test_a_file_swapped_with_a_fifo_while_the_batch_runs_never_hangs_it(tmp_path):
    """A learner process flips tools.py between a file and a FIFO all along."""
    root = tmp_path / "class"
    for name in ("ana", "kim"):
        (root / name).mkdir(parents=True)
        (root / name / "tools.py").write_text((REPO / "starter" / "tools.py").read_text(encoding="utf-8"))
    target, stop = root / "kim" / "tools.py", threading.Event()

    def swap() -> None:
        while not stop.is_set():
            for make in (lambda: os.mkfifo(target), lambda: target.write_text("X = 1\n")):
                try:
                    target.unlink()
                except FileNotFoundError:
                    pass
                try:
                    make()
                except OSError:
                    pass

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        started = time.monotonic()
        result = run_batch(root, tmp_path / "out", seed=3, jobs=1, steps=[1], progress=False)
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        swapper.join(5)
    assert elapsed < 60 and sorted(result.learners) == ["ana", "kim"]
    rows = {
        r["learner"]: r
        for r in (json.loads(p.read_text(encoding="utf-8")) for p in (tmp_path / "out" / "results").glob("*.json"))
    }
    assert rows["ana"]["sha256"] and set(rows) == {"ana", "kim"}  # kim: graded bytes, or a row saying why not


# ---------------------------------------------------------------- classmates' results

_REWRITER = """
import os as _ro

_OUT, _CLASS = {out!r}, {klass!r}


def _attempt(what):
    try:
        what()
        return "done"
    except OSError as exc:
        return type(exc).__name__


def _rewrite_records():
    folder = _ro.path.join(_OUT, "results")
    for name in _ro.listdir(folder):
        with open(_ro.path.join(folder, name), "w") as fh:
            fh.write("{{}}")


def _append_grade():
    with open(_ro.path.join(_OUT, "grades.csv"), "a") as fh:
        fh.write("bob,133,forged\\n")


def _break_classmate():
    with open(_ro.path.join(_CLASS, "bob", "tools.py"), "w") as fh:
        fh.write("X = 'broken by zzz'\\n")


_TRIED = [_attempt(f) for f in (_rewrite_records, _append_grade, _break_classmate)]
print("REWRITER", _TRIED)
"""


@pytest.mark.parametrize("sandbox", ["default", "none"])
def test_a_submission_cannot_rewrite_a_classmates_result_or_file_under_the_default_sandbox(sandbox, tmp_path):
    """zzz is graded last and knows the real paths: the batch's results, grades.csv and bob's tools.py.

    Under the default (``--sandbox auto``, bubblewrap where it works) the file
    system is read-only to learner code and the grader's /tmp is not even
    visible. Without a sandbox it works unless the step's files are read-only
    (SECURITY.md); that case shows the checks above can fail.
    """
    if sandbox == "default" and not bwrap_usable():
        pytest.skip("bubblewrap is not usable here: the default falls back to no sandbox (SECURITY.md)")
    klass, out = tmp_path / "class", tmp_path / "out"
    solution = (REPO / "solutions" / "tools.py").read_text(encoding="utf-8")
    for name in ("bob", "zzz"):
        (klass / name).mkdir(parents=True)
    (klass / "bob" / "tools.py").write_text(solution, encoding="utf-8")
    (klass / "zzz" / "tools.py").write_text(
        solution + _REWRITER.format(out=str(out), klass=str(klass)), encoding="utf-8"
    )
    argv = ["batch", str(klass), "--out", str(out), "--jobs", "1", "--seed", "5", "--steps", "1"]
    code = cli.main(argv + (["--sandbox", "none"] if sandbox == "none" else []))
    assert code in (0, 1)
    bob_after = (klass / "bob" / "tools.py").read_text(encoding="utf-8")
    record = json.loads((out / "results" / "bob.json").read_text(encoding="utf-8") or "{}")
    # Without a sandbox, the step's own confinement (root: a mount namespace with every
    # mount read-only but scratch, see grader.engine.confine) may still hold; where
    # neither holds the attack reaches bob, as SECURITY.md says.
    limits = record.get("report", {}).get("limits", "") if isinstance(record.get("report"), dict) else ""
    if sandbox == "none" and "read-only" not in limits:
        assert bob_after != solution or not record
        return
    assert bob_after == solution
    assert record["report"]["score"] == record["report"]["max_score"] > 0
    with open(out / "grades.csv", newline="", encoding="utf-8") as fh:
        assert "forged" not in fh.read()


# ----------------------------------------------------------- least privilege in a batch


def _need_bwrap_here() -> None:
    if not bwrap_usable():
        if os.environ.get("CI"):  # .ci/run installs bubblewrap: there these must run
            pytest.fail("bubblewrap is not usable in CI")
        pytest.skip("bubblewrap is not usable here")


def _hostile_module(name: str, root: Path) -> str:
    from hostile.build import materialise
    from hostile.manifest import CASES_BY_NAME

    path = materialise(CASES_BY_NAME[name], root, marker=f"agtool-hostile-batch-{name}", outside=root / "outside")
    return (path / "tools.py" if path.is_dir() else path).read_text(encoding="utf-8")


def test_a_learner_who_fills_tmp_costs_the_next_learner_on_the_worker_nothing(tmp_path, monkeypatch):
    """aaa fills every shared writable place; bbb, graded next by the same worker, keeps every point.

    Without per-step mounts (``AGTOOL_STEP_MOUNTS=0``: as a grader that is not
    root runs), only the sandbox's private /tmp (emptied after each learner,
    not the grading account's to write) stands between them.
    """
    _need_bwrap_here()
    klass, out = tmp_path / "class", tmp_path / "out"
    for name in ("aaa", "bbb"):
        (klass / name).mkdir(parents=True)
    (klass / "aaa" / "tools.py").write_text(
        _hostile_module("tmp_fill_next_learner", tmp_path / "corpus"), encoding="utf-8"
    )
    (klass / "bbb" / "tools.py").write_text(
        (REPO / "solutions" / "tools.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    monkeypatch.setenv("AGTOOL_STEP_MOUNTS", "0")
    run_batch(klass, out, seed=5, jobs=1, sandbox="bwrap", progress=False)
    report = json.loads((out / "results" / "bbb.json").read_text(encoding="utf-8"))["report"]
    failed = [(c["id"], c["message"][:200]) for c in report["checks"] if not c["passed"]]
    assert report["failure"] is None and report["score"] == report["max_score"] > 0, failed
    assert report["isolation"].startswith("bwrap")


def test_a_learner_reaches_neither_the_batch_out_nor_the_service_database(tmp_path):
    """aaa knows the batch's real OUT path, reads and writes every SQLite database it finds (a planted service one).

    Inside the sandbox neither is there, and learner code runs as the grading
    account (root only): bbb's result, grades.csv and the database stay as they were.
    """
    _need_bwrap_here()
    from hostile.planted import database_rows, planted_class_data

    klass, out = tmp_path / "class", tmp_path / "out"
    solution = (REPO / "solutions" / "tools.py").read_text(encoding="utf-8")
    for name in ("aaa", "bbb"):
        (klass / name).mkdir(parents=True)
    writer = (Path(__file__).parent / "hostile" / "cases" / "writes_service_database" / "payload.py").read_text(
        encoding="utf-8"
    )
    hostile = _hostile_module("reads_service_database", tmp_path / "corpus") + "\n\n" + writer
    (klass / "aaa" / "tools.py").write_text(
        hostile + _REWRITER.format(out=str(out), klass=str(klass)), encoding="utf-8"
    )
    (klass / "bbb" / "tools.py").write_text(solution, encoding="utf-8")
    with planted_class_data() as planted:
        before = database_rows() if planted else []
        code = cli.main(
            ["batch", str(klass), "--out", str(out), "--jobs", "1", "--seed", "5", "--steps", "1", "--sandbox", "bwrap"]
        )
        after = database_rows() if planted else []
    assert code in (0, 1) and before == after
    aaa = json.loads((out / "results" / "aaa.json").read_text(encoding="utf-8"))["report"]
    said = json.dumps(aaa["output"])
    assert "HOSTILE-" not in said and "'done'" not in said, said[:2000]
    if os.geteuid() == 0:
        assert "user agtool-sandbox" in aaa["isolation"] or "user root" not in aaa["isolation"]
    bbb = json.loads((out / "results" / "bbb.json").read_text(encoding="utf-8"))["report"]
    assert bbb["score"] == bbb["max_score"] > 0 and (klass / "bbb" / "tools.py").read_text(encoding="utf-8") == solution
    with open(out / "grades.csv", newline="", encoding="utf-8") as fh:
        assert "forged" not in fh.read()
