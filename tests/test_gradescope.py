"""Gradescope: results.json against a schema of Gradescope's format, the entry, the deploy scripts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import jsonschema
import pytest

from grader.batch.gradescope import grade_for_gradescope
from grader.outputs.gradescope_results import results_json
from grader.report import CheckResult, Report

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO / "tests" / "schemas" / "gradescope_results.schema.json").read_text())
DEPLOY = REPO / "deploy" / "gradescope"
SOLUTION = REPO / "solutions" / "tools.py"
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin"


def validate(results: dict) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(results, SCHEMA, cls=jsonschema.Draft202012Validator)
    # What a schema cannot say: the total is the sum, and no test gives more than its maximum.
    assert results["score"] == sum(t["score"] for t in results["tests"])
    assert all(0 <= t["score"] <= t["max_score"] for t in results["tests"])


def hand_report() -> Report:
    return Report(
        seed=9,
        path="alice/tools.py",
        checks=[
            CheckResult(id="step1/names", step=1, passed=True, points=2, max_points=2, title="Names"),
            CheckResult(
                id="step2/type_bool_limit",
                step=2,
                passed=False,
                points=0,
                max_points=3,
                title="bool is not int",
                call="validate_args('stock_lookup', {...})",
                expected="'type:limit'",
                got="''",
                message="True was accepted as a limit",
                hint="check bool before int",
                reproduce="agtool-grade check alice/tools.py --seed 9",
            ),
            CheckResult(id="step2/missing", step=2, passed=True, points=1, max_points=1, title="Missing"),
        ],
    )


def test_results_json_has_gradescope_shape():
    results = results_json(hand_report())
    validate(results)
    assert results["score"] == 3.0
    assert [(t["number"], t["status"]) for t in results["tests"]] == [
        ("1.1", "passed"),
        ("2.1", "failed"),
        ("2.2", "passed"),
    ]
    failed = results["tests"][1]
    for text in ("True was accepted", "Expected: 'type:limit'", "Got: ''", "--seed 9", "check bool before int"):
        assert text in failed["output"]
    assert "seed 9" in results["output"]


@pytest.mark.parametrize(
    "break_it",
    [
        lambda r: r["tests"][0].update(status="ok"),
        lambda r: r["tests"][0].pop("max_score"),
        lambda r: r["tests"][0].update(visibility="sometimes"),
        lambda r: r.update(score="3"),
        lambda r: r.pop("tests"),
    ],
)
def test_schema_rejects_what_gradescope_would_reject(break_it):
    results = results_json(hand_report())
    break_it(results)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(results, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_entry_grades_a_nested_upload(tmp_path):
    upload = tmp_path / "submission" / "my-work" / "agtool"
    upload.mkdir(parents=True)
    shutil.copy(SOLUTION, upload / "tools.py")
    results_file = tmp_path / "results" / "results.json"
    report = grade_for_gradescope(tmp_path / "submission", results_file, seed=5)
    results = json.loads(results_file.read_text())
    validate(results)
    assert report.score == report.max_score > 0
    assert results["score"] == report.max_score and results["extra_data"]["seed"] == 5
    assert len(results["tests"]) == len(report.checks)


def test_entry_without_a_module_still_writes_results(tmp_path):
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "notes.txt").write_text("forgot the file")
    results_file = tmp_path / "results.json"
    grade_for_gradescope(tmp_path / "submission", results_file, seed=1)
    results = json.loads(results_file.read_text())
    validate(results)
    assert results["score"] == 0 and "no tools.py" in results["output"]
    assert results["tests"] and all(t["status"] == "failed" for t in results["tests"])


def test_run_autograder_script_end_to_end(tmp_path):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "tools.py").write_text(
        SOLUTION.read_text().replace('"count": 0}', '"count": 1}')
    )  # one wrong count in STOCK
    env = {
        **os.environ,
        "AUTOGRADER_ROOT": str(root),
        "AGTOOL_GRADE": str(VENV_BIN / "agtool-grade"),
        "AGTOOL_SEED": "77",
    }
    done = subprocess.run([str(DEPLOY / "run_autograder")], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    validate(results)
    assert results["extra_data"]["seed"] == 77
    failed = [t["name"] for t in results["tests"] if t["status"] == "failed"]
    assert any(name.startswith("step1/stock_table") for name in failed)
    assert 0 < results["score"] < results["extra_data"]["max_score"]


def test_batch_writes_valid_gradescope_files(tmp_path):
    from grader.batch import run_batch

    for learner, source in {"alice": SOLUTION.read_text(), "bob": "raise SystemExit(3)\n"}.items():
        (tmp_path / "class" / learner).mkdir(parents=True)
        (tmp_path / "class" / learner / "tools.py").write_text(source)
    run_batch(tmp_path / "class", tmp_path / "out", jobs=2, seed=3, timeout=80, progress=False)
    files = sorted((tmp_path / "out" / "gradescope").glob("*/results.json"))
    assert [f.parent.name for f in files] == ["alice", "bob"]
    scores = []
    for f in files:
        results = json.loads(f.read_text())
        validate(results)
        scores.append(results["score"])
    assert scores[0] > 0 and scores[1] == 0


def test_autograder_zip_has_gradescope_layout(tmp_path):
    if not (REPO / ".git").exists():
        pytest.skip("build_zip.sh packs the committed tree; this checkout has no git metadata")
    target = tmp_path / "autograder.zip"
    subprocess.run([str(DEPLOY / "build_zip.sh"), str(target)], check=True, capture_output=True, timeout=120)
    names = zipfile.ZipFile(target).namelist()
    assert {"setup.sh", "run_autograder", "agtool-lab/pyproject.toml", "agtool-lab/grader/batch/gradescope.py"} <= set(
        names
    )
    assert not any(n.startswith("agtool-lab/.venv") for n in names)


def test_entry_writes_results_even_when_the_grader_fails(tmp_path):
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "tools.py").write_text("x = 1\n")

    def broken_grade(path, **kwargs):
        raise RuntimeError("disk full")

    grade_for_gradescope(tmp_path / "submission", tmp_path / "results.json", seed=2, grade_fn=broken_grade)
    results = json.loads((tmp_path / "results.json").read_text())
    validate(results)
    assert results["score"] == 0 and "disk full" in results["output"]


def test_the_autograder_zip_ships_the_committed_starter_and_refuses_a_committed_learner_file(tmp_path):
    """The zip's starter is the starter as given, by hash; a commit of someone's work as agtool/tools.py is refused."""
    import hashlib

    from grader.outputs.starter import STARTER_SHA256, starter_bytes

    repo = tmp_path / "repo"
    for rel in ("deploy/gradescope/build_zip.sh", "deploy/gradescope/setup.sh", "deploy/gradescope/run_autograder"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, repo / rel)
    (repo / "grader" / "outputs").mkdir(parents=True)
    (repo / "grader" / "outputs" / "starter.py").write_text(f'STARTER_SHA256 = "{STARTER_SHA256}"\n')
    for folder in ("starter", "agtool"):
        (repo / folder).mkdir()
        (repo / folder / "tools.py").write_bytes(starter_bytes())
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "starter"], check=True)
    build = repo / "deploy" / "gradescope" / "build_zip.sh"
    done = subprocess.run([str(build), str(tmp_path / "ok.zip")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(tmp_path / "ok.zip") as zf:
        assert hashlib.sha256(zf.read("agtool-lab/starter/tools.py")).hexdigest() == STARTER_SHA256
    # The lab done in the checkout and committed by mistake: the learner's file is no starter, no zip.
    (repo / "agtool" / "tools.py").write_bytes((REPO / "solutions" / "tools.py").read_bytes())
    subprocess.run([*git, "commit", "-q", "-am", "my work"], check=True)
    done = subprocess.run([str(build), str(tmp_path / "bad.zip")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "agtool/tools.py is not the starter as given" in done.stderr
    assert not (tmp_path / "bad.zip").exists()
