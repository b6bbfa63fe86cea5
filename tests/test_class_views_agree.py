"""The instructor's views of a class agree: summary.md, the plots, the dashboard and the class page.

A class of five (the starter unchanged, a module that does not import, two
planted mistakes and the solution) is batched once. The pass rates and wrong
answers of ``summary.md``, of the pass-rate plot, of the dashboard
(``grader.outputs.class_tables``) and of the service's class tables count the
same learners: not the starter, not the ungradable file; and no wrong answer is
the starter's ``[]`` or ``NotImplementedError``. The starter's feedback file is
a paragraph, not a thousand lines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from defects.catalog import SOLUTION, materialise_text

from grader.batch import load_records, run_batch
from grader.outputs import class_folder, class_tables
from grader.service.classview import class_outputs

REPO = Path(__file__).resolve().parents[1]
STEPS = [1, 2]


@pytest.fixture(scope="module")
def batched(tmp_path_factory):
    root = tmp_path_factory.mktemp("views")
    subs = root / "subs"
    texts = {
        "starter": (REPO / "starter" / "tools.py").read_text(encoding="utf-8"),
        "broken": "import no_such_module_anywhere\n",
        "mistake_a": materialise_text("step2/valid_passes"),
        "mistake_b": materialise_text("step2/unknown_tool"),
        "solution": SOLUTION.read_text(encoding="utf-8"),
    }
    for learner, text in texts.items():
        (subs / learner).mkdir(parents=True)
        (subs / learner / "tools.py").write_text(text, encoding="utf-8")
    drawn = {}
    real = class_folder.start_plots

    def spy(book, stats, steps, folder, *rule):
        drawn.update(stats=stats.copy(), book=book.copy(), steps=steps.copy())
        return real(book, stats, steps, folder, *rule)

    mp = pytest.MonkeyPatch()
    mp.setattr(class_folder, "start_plots", spy)
    try:
        run_batch(subs, root / "out", jobs=2, seed=5, steps=STEPS, progress=False)
    finally:
        mp.undo()
    return root / "out", drawn["stats"], drawn


def _summary_rates(out: Path) -> dict[str, str]:
    summary = (out / "summary.md").read_text(encoding="utf-8")
    hardest = summary.split("## Hardest checks", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"\| `([^`]+)` \| [^|]* \| (\d+/\d+) \|", hardest)}


def test_summary_plot_dashboard_and_class_page_count_the_same_learners(batched):
    out, plotted, drawn = batched
    records = load_records(out)
    summary = _summary_rates(out)
    dashboard = class_tables(records)
    assert dashboard["starter"] == ["starter"]
    assert summary, "summary.md lists no hardest checks"
    for view in (plotted, dashboard["checks"]):
        rates = {row.check: f"{row.passed}/{row.graded}" for row in view.itertuples()}
        assert all(rates[check] == shown for check, shown in summary.items()), (rates, summary)
        assert set(view["graded"]) == {3}  # two mistakes and the solution: not the starter, not the broken file
    # The histogram, the step plot, the step table and the mean count the same three (before: the starter too).
    book, steps = drawn["book"], drawn["steps"]
    assert len(book) == steps["learner"].nunique() == len(dashboard["counted"]) == 3
    text = (out / "summary.md").read_text(encoding="utf-8")
    assert text.count("3 learners counted: graded files that imported") == 3
    # The service knows no sources: it leaves out the ungradable file and the placeholder answers.
    assert {c["graded"] for c in class_outputs(records)["checks"]} == {4}


def test_no_wrong_answer_is_the_starter_s_placeholder(batched):
    out, _, _ = batched
    records = load_records(out)
    summary = (out / "summary.md").read_text(encoding="utf-8").split("## Most common wrong answers", 1)[1]
    table = class_tables(records)["wrong_answers"]
    assert not table.empty
    assert not any("NotImplementedError" in got or got == "[]" for got in table["got"]), table
    assert "starter" not in ", ".join(table["learners"])
    for got in table["got"]:
        assert got.split("\n")[0][:60] in summary
    # The service's class page has no sources to name the starter by: still no placeholder answer.
    assert not any("NotImplementedError" in w["got"] for w in class_outputs(records)["wrong_answers"])


def test_the_starter_s_feedback_is_short_and_says_what_to_do(batched):
    out, _, _ = batched
    for suffix in (".md", ".txt"):
        text = (out / "feedback" / f"starter{suffix}").read_text(encoding="utf-8")
        assert len(text.splitlines()) < 40, len(text.splitlines())
        assert "starter as it was given" in text and "01_contract_table.ipynb" in text
        assert "replay" not in text.lower() or text.count("agtool-grade check") <= 1
    mistake = (out / "feedback" / "mistake_a.md").read_text(encoding="utf-8")
    assert "step2/valid_passes" in mistake and "starter as it was given" not in mistake


def test_the_dashboard_uses_the_shared_tables():
    source = (REPO / "labs" / "instructor_dashboard.ipynb").read_text(encoding="utf-8")
    assert "class_tables(records)" in source
    assert "check_stats(records)" not in source and "common_wrong_answers(records)" not in source
