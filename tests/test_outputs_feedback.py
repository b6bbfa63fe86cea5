"""Feedback and class outputs that read well where they land.

Feedback files name the learner's own file and replay commands the learner
can run in the lab, put the failed checks first, state the grade that
counts once, and come as Markdown (escaped only where Markdown needs it) and
as plain text for an LMS comment box. ``summary.md`` names the learners who
handed in the starter and keeps the starter's ``NotImplementedError`` out of
the wrong answers. The plots count in whole numbers and stay readable. The
dashboard notebook says what its code does.

Golden files: ``tests/golden/feedback/`` and ``tests/golden/summary_starter.md``;
refresh them with ``UPDATE_GOLDEN=1 pytest tests/test_outputs_feedback.py``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import struct
from pathlib import Path

import mistune
import pytest
from bs4 import BeautifulSoup

from grader.escape import md_prose, plain_text
from grader.messages import replay_command
from grader.outputs.class_folder import write_outputs
from grader.outputs.feedback import LAB_MODULE, lab_replay, render_feedback
from grader.outputs.plain import render_feedback_plain
from grader.outputs.starter import starter_submissions, starter_text
from grader.report import CheckResult, Report

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden"
CLASS = "/home/teacher/courses/2026/class"  # the instructor's folder: never in what a learner reads
HOSTILE = "<img src=x onerror=alert(1)> [x](javascript:alert(1)) \x1b[2J\x1b[32mPASS FAIL\u202eSSAP `a` $x^2$ &amp;"
CREDIT = {
    "attempt": 3,
    "submitted_at": "2026-03-02T10:00:00Z",
    "period": "late",
    "raw_score": 4,
    "raw_max": 9,
    "score": 4.0,
    "max_score": 9.0,
    "factor": 0.8,
    "credited": 3.2,
    "why": "the last attempt on time, of 3; late (80% credit until 2026-03-08T12:00:00Z)",
}


def _replay(path: str, check_id: str, seed: int) -> str:
    return replay_command(path, check_id, seed, 10.0, default_timeout=10.0)


def feedback_record(*, credit: dict | None = CREDIT, keyed: bool = False) -> dict:
    """One learner under the instructor's folder: passes, then failures with grader and hostile learner text."""
    path = f"{CLASS}/ana/agtool/tools.py"
    checks = [
        CheckResult("step1/names", 1, True, 2, 2, "REGIONS, MAX_ROWS and CALLS have the spec's values"),
        CheckResult("step2/missing", 2, True, 1, 1, "A required argument that is absent gives missing:<arg>"),
        CheckResult(
            "step2/extra",
            2,
            False,
            0,
            1,
            "An argument the contract does not list gives extra:<arg>",
            call="validate_args('stock_lookup', {'sku': 'SKU-1001', 'colour': 'red'})",
            expected="'extra:colour'",
            got=HOSTILE,
            message=f"Your code raised ValueError: {HOSTILE}",
            hint="Give 'extra:<arg>' for an argument whose name is not in TOOLS[name]['args'].",
            reproduce=_replay(path, "step2/extra", 41),
        ),
        CheckResult("step2/valid_passes", 2, True, 2, 2, "A valid call gives the empty string"),
        CheckResult(
            "step3/args_prefix",
            3,
            False,
            0,
            3,
            "A refused call gives error 'args:<reason>'",
            call="call_tool('stock_lookup', {'limit': 0})",
            expected="'args:range:limit'",
            got="None",
            message="Traceback (most recent call last):\n  File \"tools.py\", line 9\nKeyError: 'limit'",
            reproduce=_replay(path, "step3/args_prefix", 41),
        ),
    ]
    report = Report(seed=41, path=path, checks=checks, output={"3": "debug: limit=0\n\x1b[31mred\n"})
    record = {
        "learner": "ana",
        "source": path,
        "sha256": "0" * 64,
        "seed": 41,
        "selection": {"steps": None, "only": None},
        "report": report.to_dict(),
    }
    if keyed:  # the grade that counts ran on a hidden seed; the learner is shown another run
        counted = Report(
            seed=999,
            path=path,
            checks=[CheckResult(c.id, c.step, True, c.max_points, c.max_points, c.title) for c in checks],
        )
        record.update(report=counted.to_dict(), seed=999, feedback_seed=41, feedback_report=report.to_dict())
    if credit:
        record["credit"] = credit
    return record


def import_error_record() -> dict:
    path = f"{CLASS}/eli/tools.py"
    error = "Your module could not be imported: SyntaxError at tools.py line 3: invalid syntax\n    3 | def f(:"
    report = Report(
        seed=8,
        path=path,
        error=error,
        checks=[
            CheckResult(
                f"step{n}/x", n, False, 0, 1, "x", message=error, hint="h", reproduce=_replay(path, f"step{n}/x", 8)
            )
            for n in (1, 2)
        ],
    )
    return {"learner": "eli", "source": path, "report": report.to_dict()}


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; UPDATE_GOLDEN=1 to accept"


GOLDEN_FEEDBACK = {
    "feedback/credited.md": lambda: render_feedback(feedback_record()),
    "feedback/credited.txt": lambda: render_feedback_plain(feedback_record()),
    "feedback/keyed.md": lambda: render_feedback(feedback_record(credit=None, keyed=True)),
    "feedback/keyed.txt": lambda: render_feedback_plain(feedback_record(credit=None, keyed=True)),
    "feedback/import_error.md": lambda: render_feedback(import_error_record()),
    "feedback/import_error.txt": lambda: render_feedback_plain(import_error_record()),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_FEEDBACK))
def test_feedback_matches_its_golden_file(name):
    assert_golden(name, GOLDEN_FEEDBACK[name]())


# ---------------------------------------------------------------- what a learner reads


@pytest.mark.parametrize("render", [render_feedback, render_feedback_plain], ids=["md", "txt"])
def test_feedback_names_the_learner_s_file_and_a_replay_they_can_run(render):
    text = render(feedback_record())
    assert CLASS not in text and "/ana/" not in text
    assert "tools.py" in text.splitlines()[0]
    replays = [line for line in text.splitlines() if "agtool-grade check" in line]
    assert len(replays) == 2
    for line in replays:
        words = shlex.split(re.search(r"agtool-grade check[^`\n]*", line).group(0))
        assert words[:3] == ["agtool-grade", "check", LAB_MODULE] and words[-2:] == ["--seed", "41"]


@pytest.mark.parametrize("render", [render_feedback, render_feedback_plain], ids=["md", "txt"])
def test_failures_come_before_the_passing_checks(render):
    text = render(feedback_record())
    first_failure = text.index("extra:")
    assert text.index("args:") > first_failure  # failures in step order
    assert "step1/names" not in text  # passing checks folded into their step's row, after the failures
    assert first_failure < text.lower().index("points per step")


@pytest.mark.parametrize("render", [render_feedback, render_feedback_plain], ids=["md", "txt"])
def test_the_grade_that_counts_is_stated_once_with_its_attempt_and_late_credit(render):
    text = render(feedback_record())
    assert text.count("The grade that counts") == 1 and "Credited" not in text
    assert "The grade that counts: 3.2/9, from attempt 3: 4/9 points, late (80% credit)." in text
    keyed = render(feedback_record(credit=None, keyed=True))
    assert keyed.count("The grade that counts: 9/9.") == 1 and keyed.count("The grade that counts") == 1
    # The run shown is not the grade: its points are named as the points of these cases.
    assert "3/5 passed, 5/9 points on these cases" in keyed


def test_an_overridden_grade_is_the_one_grade_stated_with_the_instructor_s_reason():
    record = feedback_record(
        credit={
            "attempt": 3,
            "max_score": 9.0,
            "credited": 7.0,
            "why": "overridden by t at 2030-01-01T00:00:00Z: hand-checked (the grade was 3/9)",
            "override": {"score": 7.0, "reason": "hand-checked", "was": 3.0},
        }
    )
    for text in (render_feedback(record), render_feedback_plain(record)):
        assert text.count("The grade that counts") == 1 and "7/9, set by your instructor for attempt 3" in text
        assert "hand-checked (the grade was 3/9)" in text


def test_markdown_feedback_escapes_only_where_markdown_needs_it():
    markdown = render_feedback(feedback_record())
    assert "&lt;" not in markdown and "&gt;" not in markdown and "&amp;amp;" not in markdown
    assert "MAX\\_ROWS" not in markdown and "extra:\\<arg>" in markdown
    html = mistune.create_markdown(escape=False, plugins=["strikethrough", "table", "url", "math"])(markdown)
    soup = BeautifulSoup(html, "html.parser")
    assert not soup.find_all(["img", "a", "script", "em"]) and not soup.find_all(class_="math")
    shown = soup.get_text()
    assert "extra:<arg>" in shown and "[x](javascript:alert(1))" in shown and "\\x1b[2J" in shown
    assert "&amp;" in shown  # the learner's text, as written


def test_plain_feedback_has_no_markup_no_escapes_and_no_control_characters():
    text = render_feedback_plain(feedback_record())
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text)
    assert "**" not in text and "`" not in text.replace("`a`", "") and "|---" not in text and "\\" not in text
    assert "extra:<arg>" in text and "[2J[32mPASS FAILSSAP" in text and "<img src=x onerror=alert(1)>" in text
    assert "      KeyError: 'limit'" in text  # a multi-line value keeps its lines, indented


def test_the_class_folder_writes_both_forms_of_feedback(tmp_path):
    write_outputs([feedback_record(), import_error_record()], tmp_path)
    for learner in ("ana", "eli"):
        md = (tmp_path / "feedback" / f"{learner}.md").read_text(encoding="utf-8")
        txt = (tmp_path / "feedback" / f"{learner}.txt").read_text(encoding="utf-8")
        assert md.startswith("# Feedback on tools.py") and txt.startswith("Feedback on tools.py")


def test_an_import_failure_is_said_once_with_one_replay():
    for text in (render_feedback(import_error_record()), render_feedback_plain(import_error_record())):
        assert text.count("SyntaxError") == 1 and "step2/x" not in text
        assert "agtool-grade check agtool/tools.py --seed 8" in text


@pytest.mark.parametrize(
    "given, expected",
    [
        (
            "agtool-grade check '/srv/a b/$(id)/tools.py' --only step1/x --seed 3 --timeout 2.5",
            "agtool-grade check agtool/tools.py --only step1/x --seed 3 --timeout 2.5",
        ),
        (
            "agtool-grade check -x.py --only step1/x --seed 3",
            "agtool-grade check agtool/tools.py --only step1/x --seed 3",
        ),
        ("not a 'command", "not a 'command"),
        ("python -m other thing", "python -m other thing"),
    ],
)
def test_lab_replay_puts_the_lab_module_in_the_path_word_only(given, expected):
    assert lab_replay(given) == expected


def test_md_prose_and_plain_text_escape_only_what_their_reader_acts_on():
    assert md_prose("MAX_ROWS and 2 < 3 & 4") == "MAX_ROWS and 2 < 3 & 4"
    assert md_prose("_x_ *y* <b> &amp; \\` a\\") == "\\_x\\_ \\*y\\* \\<b> \\&amp; \\\\\\` a\\\\"
    assert plain_text("a\x1b[1mb\u202ec\nd", multiline=False) == "a[1mbc d"


# ---------------------------------------------------------------- summary.md and the starter


def starter_class() -> tuple[list[dict], dict[str, str]]:
    """ben handed in the starter with comments and layout changed; cleo wrote step 1 only; dan changed one line."""
    starter = starter_text()
    ben = "# my lab\n" + starter.replace("    ", "  ").replace("\n\n", "\n\n\n")
    dan = starter.replace("MAX_ROWS = 0", "MAX_ROWS = 5", 1) if "MAX_ROWS = 0" in starter else starter + "X = 1\n"
    not_started = "raised NotImplementedError: step {0}: write f (labs/0{0}_x.ipynb)"

    def record(learner, checks):
        report = Report(seed=5, path=f"{CLASS}/{learner}/tools.py", checks=checks)
        return {"learner": learner, "source": report.path, "seed": 5, "report": report.to_dict()}

    records = [
        record(
            "ben",
            [
                CheckResult("step1/names", 1, False, 0, 2, "Names", expected="['north']", got="[]"),
                CheckResult(
                    "step2/missing", 2, False, 0, 1, "Missing", expected="'missing:sku'", got=not_started.format(2)
                ),
            ],
        ),
        record(
            "cleo",
            [
                CheckResult("step1/names", 1, True, 2, 2, "Names"),
                CheckResult(
                    "step2/missing", 2, False, 0, 1, "Missing", expected="'missing:sku'", got=not_started.format(2)
                ),
            ],
        ),
        record(
            "dan",
            [
                CheckResult("step1/names", 1, False, 0, 2, "Names", expected="['north']", got="[]"),
                CheckResult("step2/missing", 2, True, 1, 1, "Missing"),
            ],
        ),
    ]
    return records, {"ben": ben, "cleo": starter.replace("REGIONS: list = []", "REGIONS: list = ['north']"), "dan": dan}


def test_starter_submissions_ignore_comments_and_layout_only():
    starter = starter_text()
    sources = {"ben": "# mine\n" + starter.replace("    ", "\t"), "dan": starter + "X = 1\n", "eli": "def f(:\n"}
    assert starter_submissions(sources) == ["ben"]
    assert starter_submissions({"ana": starter}, starter="x = 1\n") == []


def test_summary_names_starter_submissions_and_leaves_not_implemented_out_of_wrong_answers(tmp_path):
    records, sources = starter_class()
    summary = write_outputs(records, tmp_path, sources=sources)["summary"].read_text(encoding="utf-8")
    assert_golden("summary_starter.md", summary)
    starter_section = summary.split("## Submitted the starter unchanged")[1].split("\n## ")[0]
    assert "- ben" in starter_section and "dan" not in starter_section and "cleo" not in starter_section
    wrong = summary.split("## Most common wrong answers")[1].split("\n## ")[0]
    assert "NotImplementedError" not in wrong and "ben" not in wrong and ": dan" in wrong
    assert "- step 2: 1 learner: cleo" in summary  # a step not started, counted apart


def test_every_class_statistic_counts_the_same_learners_and_says_which(tmp_path, monkeypatch):
    """Summary (mean, steps, hardest), the three plots and the dashboard's tables: one rule, said on each."""
    from grader.outputs import class_folder, plots
    from grader.outputs.gradebook import COUNTED_RULE

    records, sources = starter_class()  # ben handed in the starter unchanged; cleo and dan are counted
    drawn = {}

    def capture(book, stats, steps, folder, rule):
        drawn.update(book=book, stats=stats, steps=steps, rule=rule)
        return lambda: []

    monkeypatch.setattr(class_folder, "start_plots", capture)
    summary = write_outputs(records, tmp_path, sources=sources)["summary"].read_text(encoding="utf-8")
    assert sorted(drawn["book"]["learner"]) == sorted(drawn["steps"]["learner"].unique()) == ["cleo", "dan"]
    assert set(drawn["stats"]["graded"]) == {2} and drawn["rule"] == COUNTED_RULE
    tables = class_folder.class_tables(records, sources)
    assert sorted(tables["steps"]["learner"].unique()) == ["cleo", "dan"] and set(tables["checks"]["graded"]) == {2}
    # Before: the step table and the mean counted ben's zeros (a mean of 0.67 for step 1, 1.00 overall).
    assert "| 1 | 1.00 | 2 | 1 |" in summary and "- mean score: 1.50 / 3" in summary
    assert summary.count(f"2 learners counted: {COUNTED_RULE}") == 3  # the totals, the steps, the hardest checks
    figures = {
        "score_histogram": plots.score_histogram(drawn["book"]),
        "check_pass_rate": plots.check_pass_rate(drawn["stats"]),
        "step_scores": plots.step_scores(drawn["steps"]),
    }
    for name, fig in figures.items():
        words = " ".join(t.get_text() for t in fig.findobj(lambda o: hasattr(o, "get_text")))
        assert "2 learners counted" in words and COUNTED_RULE in words.replace("\n", " "), (name, words)
    # Without the files' texts (the service's class page), the plots say a starter unchanged could not be told.
    from grader.outputs.gradebook import COUNTED_RULE_NO_TEXTS

    assert COUNTED_RULE_NO_TEXTS != COUNTED_RULE
    assert COUNTED_RULE_NO_TEXTS in write_outputs(records, tmp_path / "no-texts")["summary"].read_text("utf-8")


def test_without_sources_the_summary_names_no_starter_but_still_counts_steps_not_started(tmp_path):
    records, _ = starter_class()
    summary = write_outputs(records, tmp_path)["summary"].read_text(encoding="utf-8")
    assert "starter unchanged" not in summary and "- step 2: 2 learners: ben, cleo" in summary
    wrong = summary.split("## Most common wrong answers")[1].split("\n## ")[0]
    assert "NotImplementedError" not in wrong and ": ben, dan" in wrong


# ---------------------------------------------------------------- plots


def png_size(path: Path) -> tuple[int, int]:
    return struct.unpack(">II", path.read_bytes()[16:24])


def eleven_step_class() -> list[dict]:
    """Three learners, 16 checks in the fullest step, as many steps as the lab has."""
    records = []
    for n, learner in enumerate(("ana", "ben", "cleo")):
        checks = [
            CheckResult(f"step{step}/check_with_a_long_name_{i}", step, (i + n) % 3 != 0, 1, 1, "t")
            for step in range(1, 12)
            for i in range(16 if step in (2, 7) else 9)
        ]
        records.append({"learner": learner, "seed": 1, "report": Report(seed=1, path="t.py", checks=checks).to_dict()})
    return records


def test_plots_stay_readable_at_their_own_size(tmp_path):
    from grader.outputs.gradebook import check_stats
    from grader.outputs.plots import check_pass_rate

    records = eleven_step_class()
    paths = write_outputs(records, tmp_path)
    for name in ("score_histogram", "check_pass_rate", "step_scores"):
        width, height = png_size(paths[f"plot:{name}"])
        assert max(width, height) <= 1200, (name, width, height)
    panels = [ax for ax in check_pass_rate(check_stats(records)).axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == [f"Step {s}" for s in range(1, 12)]
    labels = [t.get_text() for t in panels[1].get_yticklabels()]
    assert len(labels) == 16 and labels[0] == "check_with_a_long_name_0"  # step 2's checks, without the prefix


def test_the_score_histogram_counts_learners_in_whole_numbers():
    from grader.outputs.gradebook import gradebook_frame
    from grader.outputs.plots import score_histogram

    ax = score_histogram(gradebook_frame(eleven_step_class())).axes[0]
    ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    assert all(float(t).is_integer() for t in ax.get_xticks())


# ---------------------------------------------------------------- the dashboard notebook

NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def test_the_dashboard_says_how_many_names_to_set_and_names_them():
    cells = json.loads((REPO / "labs" / "instructor_dashboard.ipynb").read_text(encoding="utf-8"))["cells"]
    intro, settings = "".join(cells[0]["source"]), "".join(cells[1]["source"])
    count = re.search(r"Set the (\w+) names below \(([^)]*)\)", intro)
    assigned = re.findall(r"^([A-Z_]+)\s*=", settings, flags=re.M)
    assert count and NUMBER_WORDS[count.group(1)] == len(assigned)
    assert re.findall(r"`([A-Z_]+)`", count.group(2)) == assigned
    assert "[docs/instructor.md](../docs/instructor.md)" in intro


def test_the_dashboard_renders_summary_md_as_markdown():
    cells = json.loads((REPO / "labs" / "instructor_dashboard.ipynb").read_text(encoding="utf-8"))["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert 'display(Markdown((Path(OUT) / "summary.md").read_text(' in code
    assert 'print((Path(OUT) / "summary.md")' not in code
