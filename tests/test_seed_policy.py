"""The seed policy of a batch: with a class key the grade that counts is drawn from seeds no learner sees.

A learner who knows the seed of the grade that counts can enumerate its
cases and hard-code the answers. With a key, every output a
learner reads (feedback, their Gradescope file) shows only the feedback
run, on other seeds, under the score of the grade that counts; the
instructor's records keep the grading seed. A fake grader whose score
depends on the seed makes every leak visible.
"""

from __future__ import annotations

import json
from pathlib import Path

from grader.batch.run import run_batch
from grader.report import CheckResult, Report
from grader.seeds import feedback_seed, grading_seed

KEY = "test-class-key-0123456789"


def seed_grade(path, *, steps=None, only=None, seed=None, timeout=None):
    """One 4-point check whose points are the seed mod 5, and whose failing call names the seed."""
    points = seed % 5
    return Report(
        seed=seed,
        path=str(path),
        checks=[
            CheckResult(
                id="step1/names",
                step=1,
                passed=points == 4,
                points=points,
                max_points=4,
                title="names",
                call=f"probe with case {seed}",
                expected="x",
                got="y",
                reproduce=f"agtool-grade check {path} --seed {seed}",
            )
        ],
    )


def make_class(root: Path) -> Path:
    for learner in ("ana", "ben"):
        (root / learner).mkdir(parents=True)
        (root / learner / "tools.py").write_text(f"# {learner}\n")
    return root


def learner_files(out: Path, learner: str) -> str:
    return (out / "feedback" / f"{learner}.md").read_text() + (
        out / "gradescope" / learner / "results.json"
    ).read_text()


def test_with_a_key_no_learner_output_shows_the_grading_seed(tmp_path):
    out = tmp_path / "out"
    run_batch(make_class(tmp_path / "class"), out, jobs=1, seed_key=KEY, grade_fn=seed_grade, progress=False)
    manifest = (out / "batch.json").read_text()
    assert KEY not in manifest and json.loads(manifest)["seed"] is None
    for learner in ("ana", "ben"):
        secret, shown = grading_seed(KEY.encode(), learner), feedback_seed(KEY.encode(), learner, 1)
        files = learner_files(out, learner)
        assert str(secret) not in files  # neither as a seed nor inside a case
        assert f"--seed {shown}" in files  # the feedback run replays
        record = json.loads((out / "results" / f"{learner}.json").read_text())
        assert record["seed"] == secret and record["feedback_seed"] == shown
        # What counts is the secret run's score, in the gradebook and in the learner's Gradescope file.
        assert f"The grade that counts: {secret % 5}/4" in files
        gradescope = json.loads((out / "gradescope" / learner / "results.json").read_text())
        assert gradescope["score"] == secret % 5
    book = (out / "grades.csv").read_text().splitlines()
    assert any(line.startswith(f"ana,{grading_seed(KEY.encode(), 'ana') % 5},") for line in book)


def test_resume_keeps_the_seeds_and_a_new_run_gives_new_feedback_cases_only(tmp_path):
    root, out = make_class(tmp_path / "class"), tmp_path / "out"
    run_batch(root, out, jobs=1, seed_key=KEY, grade_fn=seed_grade, progress=False)
    again = run_batch(root, out, jobs=1, seed_key=KEY, grade_fn=seed_grade, progress=False, resume=True)
    assert (again.graded, again.skipped) == (0, 2)
    run_batch(root, out, jobs=1, seed_key=KEY, grade_fn=seed_grade, progress=False)  # a new round
    record = json.loads((out / "results" / "ana.json").read_text())
    assert record["seed"] == grading_seed(KEY.encode(), "ana")  # the grade that counts is stable
    assert record["feedback_seed"] == feedback_seed(KEY.encode(), "ana", 2)


def test_without_a_key_one_class_seed_is_shown_and_replays(tmp_path, monkeypatch):
    monkeypatch.delenv("AGTOOL_SEED_KEY", raising=False)
    out = tmp_path / "out"
    result = run_batch(make_class(tmp_path / "class"), out, jobs=1, seed=12, grade_fn=seed_grade, progress=False)
    assert result.seed == 12 and "--seed 12" in learner_files(out, "ana")
    assert "feedback_report" not in json.loads((out / "results" / "ana.json").read_text())


def test_an_empty_key_file_is_refused_before_grading(tmp_path, capsys):
    from grader.cli import main

    key_file = tmp_path / "key.txt"
    key_file.write_text("\n")
    code = main(
        [
            "batch",
            str(make_class(tmp_path / "class")),
            "--out",
            str(tmp_path / "out"),
            "--seed-key-file",
            str(key_file),
            "--no-progress",
        ]
    )
    assert code == 2 and "is empty" in capsys.readouterr().err
