"""Learner text that no UTF-8 writer accepts (lone surrogates) cannot stop any output.

A surrogate reaches a report through an exception message, a returned value,
captured output or an import error (the hostile corpus grades each for
real: ``surrogate_in_*``). Here the same texts go through every writer:
the three renderers, the Gradescope file and a whole batch's outputs.
"""

from __future__ import annotations

import json

import pytest

from grader.outputs.class_folder import write_outputs
from grader.outputs.gradescope_results import write_results
from grader.render import render_json, render_markdown, render_text
from grader.report import CheckResult, Report, clean_text

LONE = ["\ud800", "\udcff", "a\udc80b", "\udfff\ud800"]


def hostile_report(text: str) -> Report:
    report = Report(
        seed=3,
        path=f"learners/{text}/tools.py",
        checks=[
            CheckResult(
                id="step2/valid_passes",
                step=2,
                passed=False,
                points=0,
                max_points=2,
                title="t",
                call=f"validate_args({text!r})",
                expected="''",
                got=text,
                message=f"raised {text}",
                hint="h",
                reproduce="r",
            ),
            CheckResult(id="step1/names", step=1, passed=True, points=2, max_points=2, title="names"),
        ],
    )
    report.error = f"Your module could not be imported: ValueError: {text}"
    report.add_output(2, f"printed {text}")
    return report


@pytest.mark.parametrize("text", LONE)
def test_every_text_of_a_report_encodes_as_utf8(text):
    data = hostile_report(text).to_dict()
    json.dumps(data, ensure_ascii=False).encode("utf-8")  # raised UnicodeEncodeError before
    assert "\ufffd" in data["checks"][0]["got"] and "\ufffd" in data["error"] and "\ufffd" in data["output"]["2"]


@pytest.mark.parametrize("render", [render_text, render_markdown, render_json])
@pytest.mark.parametrize("text", LONE)
def test_every_renderer_gives_encodable_text(render, text):
    render(hostile_report(text)).encode("utf-8")


def test_a_class_with_a_hostile_learner_gets_all_its_outputs(tmp_path):
    records = [
        {
            "learner": name,
            "source": f"{name}/tools.py",
            "sha256": "0" * 64,
            "seed": 3,
            "selection": {"steps": None, "only": None},
            "report": report.to_dict(),
        }
        for name, report in (("ana", hostile_report(LONE[0])), ("bo", hostile_report("fine")))
    ]
    outputs = write_outputs(records, tmp_path)
    for name in ("csv", "json", "summary"):
        outputs[name].read_bytes().decode("utf-8")
    assert (tmp_path / "feedback" / "ana.md").read_text(encoding="utf-8")
    results = write_results(hostile_report(LONE[1]), tmp_path / "results.json")
    assert json.loads(results.read_text(encoding="utf-8"))["tests"]


def test_valid_text_is_kept_exactly():
    text = "naïve 🙂 \u200b tab\tand newline\n"
    assert clean_text(text) == text
    assert hostile_report(text).checks[0].got == text
