"""Batch grading: discovery, the worker pool, result files, resume, class outputs.

Most tests inject ``fake_grade`` (a grade function whose verdicts are written
in the submitted source) so they test the orchestration, not the checks;
``test_real_class_*`` grade a generated class with the real grader.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from helpers import ALL_PASS, FAKE_CHECKS, fake_grade, make_class

from grader.batch import discover, discovery, run_batch, sanitize_learner_id
from grader.batch import run as batch
from grader.batch.discovery import UnsafeArchive
from grader.cli import main as cli_main
from grader.report import CheckResult, Report

TESTS_DIR = Path(__file__).resolve().parent
REPO = TESTS_DIR.parent


def read_csv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"learner": str, "error": str}).fillna({"error": ""})


# ---------------------------------------------------------------- discovery


def test_folder_discovery_finds_both_layouts_and_reports_missing(tmp_path):
    make_class(tmp_path, {"bob": "x", "alice": "y"}, nested={"alice"})
    (tmp_path / "carol").mkdir()
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / "__MACOSX").mkdir()
    found = discover(tmp_path)
    assert [s.learner for s in found] == ["alice", "bob", "carol"]
    assert found[0].path == tmp_path / "alice" / "agtool" / "tools.py"
    assert found[2].path is None and "without tools.py" in found[2].error


def test_loose_module_files_are_learners_too(tmp_path):
    make_class(tmp_path, {"bob": "x"})
    (tmp_path / "ana_1234_5678_tools.py").write_text("y")  # an LMS that renames uploads
    (tmp_path / "cy.py").write_text("z")
    (tmp_path / "notes.txt").write_text("not a module")
    found = discover(tmp_path)
    assert [(s.learner, s.path.name) for s in found] == [
        ("ana_1234_5678", "ana_1234_5678_tools.py"),
        ("bob", "tools.py"),
        ("cy", "cy.py"),
    ]


def test_loose_uploads_that_are_not_py_files_get_a_row_saying_why(tmp_path):
    (tmp_path / "dee_77_tools.ipynb").write_text("{}")
    (tmp_path / "eli_tools.py.txt").write_text("x = 1")
    (tmp_path / "notes.txt").write_text("a class note, not an upload")
    found = {s.learner: s for s in discover(tmp_path)}
    assert sorted(found) == ["dee_77", "eli"]
    assert all(s.path is None for s in found.values())
    assert "is a notebook, not a .py file" in found["dee_77"].error
    assert "eli_tools.py.txt was not graded" in found["eli"].error and "Upload tools.py" in found["eli"].error


def test_glob_learner_id_is_first_differing_part(tmp_path):
    for user in ("ana", "ben"):
        make_class(tmp_path / "home", {user: "x"}, nested={user})
    found = discover(str(tmp_path / "home" / "*" / "agtool" / "tools.py"))
    assert [(s.learner, s.path.parent.parent.name) for s in found] == [("ana", "ana"), ("ben", "ben")]
    single = discover(str(tmp_path / "home" / "a*" / "agtool" / "tools.py"))
    assert [s.learner for s in single] == ["ana"]


def test_learner_ids_are_sanitised_and_unique(tmp_path):
    make_class(tmp_path, {"a b": "x", "a_b": "y", "d:n": "z", "é": "w", ".hidden": "v"})
    found = {s.learner: s.path.parent.name for s in discover(tmp_path)}
    suffixed = [i for i in found if i.startswith("a_b-")]
    assert sorted(found) == sorted(["a_b", *suffixed, "d_n", "é"]) and len(suffixed) == 1
    assert found["a_b"] == "a_b" and found[suffixed[0]] == "a b"  # the folder named a_b keeps its id
    assert all(i == sanitize_learner_id(i) for i in found)
    assert sanitize_learner_id("../../etc/passwd") == "_.._etc_passwd"


def test_learner_ids_keep_unicode_and_are_stable_whatever_the_order(tmp_path):
    names = ["김민준", "김 민준", "김_민준", "Jose\u0301", "José", "ANA", "ana"]
    first = tmp_path / "one"
    make_class(first, {n: n for n in names})
    second = tmp_path / "two"
    make_class(second, {n: n for n in reversed(names)})
    ids = {s.learner: s.path.read_text() for s in discover(first)}
    assert ids == {s.learner: s.path.read_text() for s in discover(second)}  # the same learner, the same id
    assert len(ids) == len(names)  # nobody merged, nobody lost
    assert ids["김_민준"] == "김_민준" and "___" not in "".join(ids)
    assert len({i.casefold() for i in ids}) == len(ids)  # unique on a case-insensitive file system too
    # A folder named exactly an id keeps it; the NFD spelling of José gets a suffix from its own name.
    assert ids["José"] == "José" and sum(i.startswith("José-") for i in ids) == 1


def test_zip_is_extracted_and_unwrapped(tmp_path):
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("hw/alice/tools.py", ALL_PASS)
        zf.writestr("hw/bob/agtool/tools.py", "nothing")
        zf.writestr("__MACOSX/hw/._alice", "junk")
    found = discover(archive, workdir=tmp_path / "out")
    assert [s.learner for s in found] == ["alice", "bob"]
    assert found[0].path.read_text() == ALL_PASS
    assert found[0].path.is_relative_to(tmp_path / "out" / "submissions")


@pytest.mark.parametrize("name", ["../escape.py", "/abs/tools.py", "a/../../escape.py", "C:/x/tools.py"])
def test_zip_with_path_traversal_is_refused(tmp_path, name):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("alice/tools.py", "x")
        zf.writestr(name, "x")
    with pytest.raises(UnsafeArchive):
        discover(archive, workdir=tmp_path / "out")
    assert not (tmp_path / "escape.py").exists()
    assert not list((tmp_path / "out" / "submissions").rglob("*.py"))


def test_zip_symlinks_are_not_created(tmp_path):
    archive = tmp_path / "links.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("alice/tools.py", "x")
        link = zipfile.ZipInfo("bob/tools.py")
        link.external_attr = 0o120777 << 16
        zf.writestr(link, "/etc/passwd")
    found = {s.learner: s for s in discover(archive, workdir=tmp_path / "out")}
    assert found["alice"].path is not None
    assert "bob" not in found  # the link was skipped, so nothing of bob's was extracted
    assert not any(p.is_symlink() for p in (tmp_path / "out").rglob("*"))


def test_zip_size_cap_counts_real_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(discovery, "ZIP_MAX_MEMBER_BYTES", 1000)
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("alice/tools.py", "0" * 100_000)  # compresses to a few hundred bytes
    with pytest.raises(UnsafeArchive, match="exceeds"):
        discover(archive, workdir=tmp_path / "out")


# ---------------------------------------------------------------- the batch


@pytest.fixture
def fake_class(tmp_path):
    return make_class(
        tmp_path / "class",
        {
            "full": ALL_PASS,
            "half": "pass:step1/names pass:step1/table",
            "none": "# nothing yet",
            "hangs": "HANG",
            "dies": "DIE",
            "buggy": "RAISE",
        },
        nested={"half"},
    )


def test_batch_outputs_and_isolation(fake_class, tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "GRACE", 1.0)  # the hanging module is killed 1 s after its budget
    out = tmp_path / "out"
    started = time.monotonic()
    result = run_batch(fake_class, out, jobs=2, seed=11, timeout=1.0, grade_fn=fake_grade, progress=False)
    elapsed = time.monotonic() - started
    assert elapsed < batch.GRACE + 15  # the hanging module cost its own time limit, once
    assert (result.graded, result.skipped) == (6, 0)

    book = read_csv(out / "grades.csv")
    assert list(book["learner"]) == ["buggy", "dies", "full", "half", "hangs", "none"]
    assert list(book.columns[:3]) == ["learner", "score", "max_score"]
    assert [c for c in book.columns if c.startswith("step") and "/" not in c] == [f"step{i}" for i in range(1, 12)]
    assert set(book.columns) >= {cid for cid, _, _ in FAKE_CHECKS} | {"seed", "error"}
    rows = book.set_index("learner")
    assert (rows.loc["full", "score"], rows.loc["full", "max_score"]) == (6, 6)
    assert (rows.loc["half", "score"], rows.loc["half", "step1"], rows.loc["half", "step2"]) == (3, 3, 0)
    assert rows.loc["none", "score"] == 0 and rows.loc["none", "error"] == ""
    assert "time limit" in rows.loc["hangs", "error"]
    assert "died" in rows.loc["dies", "error"]
    assert "grader failed" in rows.loc["buggy", "error"]
    assert set(book["seed"]) == {11}

    record = json.loads((out / "results" / "half.json").read_text())
    import hashlib

    module = fake_class / "half" / "agtool" / "tools.py"
    assert record["sha256"] == hashlib.sha256(module.read_bytes()).hexdigest()
    # Reports name the learner's file, never the worker's scratch copy.
    assert record["report"]["path"] == str(module)
    assert str(module) in record["report"]["checks"][2]["reproduce"]
    assert "agtool-batch-" not in json.dumps(record)

    summary = (out / "summary.md").read_text()
    assert "- 2 learners returned `''` where `'type:limit'` was expected (`step2/type_limit`): half, none" in summary
    assert "- 1 learner returned `''` where `'type:limit'` was expected (`step1/names`): none" in summary
    assert "## Could not be graded" in summary and "hangs:" in summary
    for learner in book["learner"]:
        assert (out / "feedback" / f"{learner}.md").read_text().strip()
        assert (out / "gradescope" / learner / "results.json").is_file()
    assert sorted(p.name for p in (out / "plots").iterdir()) == [
        "check_pass_rate.png",
        "score_histogram.png",
        "step_scores.png",
    ]
    from PIL import Image

    for png in (out / "plots").glob("*.png"):
        with Image.open(png) as image:
            image.verify()  # a valid PNG, not just a file with the name
        with Image.open(png) as image:
            assert image.format == "PNG" and image.size[0] > 100 and image.size[1] > 100
    grades = json.loads((out / "grades.json").read_text())
    assert grades["seeds"] == [11] and [g["learner"] for g in grades["learners"]] == list(book["learner"])


def scratch_logging_grade(path, **kwargs):
    """``fake_grade``, and one line per call in ``$AGTOOL_TEST_SCRATCH_LOG`` with the name it got (in the workers)."""
    with open(os.environ["AGTOOL_TEST_SCRATCH_LOG"], "a") as log:
        log.write(f"{path}\n")
    return fake_grade(path, **kwargs)


def test_workers_grade_the_bytes_under_the_learners_names_with_no_scratch_copy(fake_class, tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "GRACE", 1.0)
    log = tmp_path / "scratch.log"
    monkeypatch.setenv("AGTOOL_TEST_SCRATCH_LOG", str(log))
    run_batch(
        fake_class, tmp_path / "out", jobs=2, seed=11, timeout=1.0, grade_fn=scratch_logging_grade, progress=False
    )
    names = [Path(line) for line in log.read_text().splitlines()]
    # A worker grades the learner's bytes (grader.locate.Submission) under the learner's own path: no
    # copy is written, so none is left behind, also by the killed workers ("hangs", "dies").
    assert sorted(p.relative_to(fake_class).parts[0] for p in names) == [
        "buggy",
        "dies",
        "full",
        "half",
        "hangs",
        "none",
    ]
    assert not any("agtool-batch" in str(p) for p in names)


def test_resume_skips_unchanged_learners_and_keeps_the_seed(tmp_path):
    root = make_class(tmp_path / "class", {f"l{i}": ALL_PASS if i % 2 else "none" for i in range(5)})
    out = tmp_path / "out"
    first = run_batch(root, out, jobs=2, grade_fn=fake_grade, progress=False)
    csv_before = (out / "grades.csv").read_bytes()

    again = run_batch(root, out, jobs=2, resume=True, grade_fn=fake_grade, progress=False)
    assert (again.graded, again.skipped, again.seed) == (0, 5, first.seed)
    assert (out / "grades.csv").read_bytes() == csv_before

    (root / "l0" / "tools.py").write_text(ALL_PASS)
    changed = run_batch(root, out, jobs=2, resume=True, grade_fn=fake_grade, progress=False)
    assert (changed.graded, changed.skipped) == (1, 4)
    assert read_csv(out / "grades.csv").set_index("learner").loc["l0", "score"] == 6

    other_seed = run_batch(root, out, jobs=2, resume=True, seed=first.seed + 1, grade_fn=fake_grade, progress=False)
    assert other_seed.graded == 5  # a different seed means different cases: regrade everyone

    without_resume = run_batch(root, out, jobs=2, seed=first.seed + 1, grade_fn=fake_grade, progress=False)
    assert without_resume.graded == 5


def test_out_inside_the_submissions_folder_is_not_a_learner(tmp_path):
    root = make_class(tmp_path / "class", {"a": ALL_PASS})
    for _ in range(2):  # the second time, OUT exists and holds files
        result = run_batch(root, root / "grades", jobs=1, seed=1, grade_fn=fake_grade, progress=False)
        assert result.learners == ["a"]


def test_outputs_drop_learners_who_left(tmp_path):
    root = make_class(tmp_path / "class", {"a": ALL_PASS, "b": "x"})
    out = tmp_path / "out"
    run_batch(root, out, jobs=1, seed=1, grade_fn=fake_grade, progress=False)
    import shutil

    shutil.rmtree(root / "b")
    run_batch(root, out, jobs=1, seed=1, resume=True, grade_fn=fake_grade, progress=False)
    assert list(read_csv(out / "grades.csv")["learner"]) == ["a"]
    assert not (out / "feedback" / "b.md").exists() and not (out / "gradescope" / "b").exists()


# ---------------------------------------------------------------- killed midway

_FAKE_BATCH = """
from helpers import fake_grade
from grader.batch import run_batch
run_batch({root!r}, {out!r}, jobs=1, seed=5, resume=True, grade_fn=fake_grade, progress=False)
"""


def _batch_process(root: Path, out: Path) -> subprocess.Popen:
    code = _FAKE_BATCH.format(root=str(root), out=str(out))
    env = {**os.environ, "PYTHONPATH": str(TESTS_DIR)}  # the fake grader in tests/helpers.py
    return subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, start_new_session=True)


def test_batch_killed_midway_resumes_to_identical_csv(tmp_path):
    sources = {f"learner{i:02d}": "SLOW " + (ALL_PASS if i % 3 else "pass:step1/names") for i in range(10)}
    root = make_class(tmp_path / "class", sources)
    out, reference = tmp_path / "out", tmp_path / "reference"

    proc = _batch_process(root, out)
    deadline = time.monotonic() + 60
    while len(list((out / "results").glob("*.json"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the batch and its workers, like a lost SSH session
    proc.wait()
    done = len(list((out / "results").glob("*.json")))
    assert 3 <= done < 10, "the batch must be killed midway"
    assert not (out / "grades.csv").exists()

    resumed = run_batch(root, out, jobs=1, seed=5, resume=True, grade_fn=fake_grade, progress=False)
    assert resumed.skipped == done and resumed.graded == 10 - done
    run_batch(root, reference, jobs=2, seed=5, grade_fn=fake_grade, progress=False)
    assert (out / "grades.csv").read_bytes() == (reference / "grades.csv").read_bytes()
    assert (out / "summary.md").read_bytes() == (reference / "summary.md").read_bytes()


# ---------------------------------------------------------------- command line


def test_cli_rejects_unknown_submissions(tmp_path, capsys):
    code = cli_main(["batch", str(tmp_path / "nope"), "--out", str(tmp_path / "out"), "--no-progress"])
    assert code == 2
    assert "neither a folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message", [(["--steps", "2,12"], "no step 12"), (["--only", "step2/no_such_check"], "unknown check id")]
)
def test_cli_rejects_a_bad_selection_before_grading(tmp_path, capsys, args, message):
    root = make_class(tmp_path / "class", {"a": "x"})
    code = cli_main(["batch", str(root), "--out", str(tmp_path / "out"), "--no-progress", *args])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- the real grader on a generated class

SOLUTION = REPO / "solutions" / "tools.py"
STARTER = REPO / "starter" / "tools.py"
SOME_DEFECTS = ["step2/type_bool_limit", "step3/blocked_before_call", "step5/second_call_cached", "step7/repair_region"]


def generated_class(root: Path, defects: list[str]) -> Path:
    """The solution, the starter, planted defects, a syntax error and a module that hangs at import."""
    from defects.catalog import materialise_text  # tests/defects, on sys.path under pytest

    sources = {
        "solution": SOLUTION.read_text(),
        "starter": STARTER.read_text(),
        "syntax_error": SOLUTION.read_text().replace(
            "def call_tool(name: str, args: dict) -> dict:", "def call_tool(name: str, args: dict) -> dict"
        ),
        "hangs_at_import": "import time\nwhile True:\n    time.sleep(0.1)\n",
    }
    for check_id in defects:
        sources["defect-" + check_id.replace("/", "-")] = materialise_text(check_id)
    return make_class(root, sources, nested={"starter"})


def assert_expected_rows(book: pd.DataFrame, defects: list[str]) -> None:
    rows = book.set_index("learner")
    full = int(rows.loc["solution", "max_score"])
    assert full > 0 and rows.loc["solution", "score"] == full and rows.loc["solution", "error"] == ""
    check_ids = [c for c in book.columns if "/" in c]
    assert (rows.loc["solution", check_ids] > 0).all()
    assert rows.loc["starter", "score"] == 0
    assert rows.loc["syntax_error", "score"] == 0 and "SyntaxError" in rows.loc["syntax_error", "error"]
    assert rows.loc["hangs_at_import", "score"] == 0 and "time limit" in rows.loc["hangs_at_import", "error"]
    for check_id in defects:
        learner = "defect-" + check_id.replace("/", "-")
        assert rows.loc[learner, "score"] < full, learner
        assert rows.loc[learner, check_id] == 0, f"{learner} kept the points of {check_id}"
        assert rows.loc[learner, "error"] == ""
    assert set(book["seed"]) == {1234}


def test_real_class_gradebook(tmp_path):
    root = generated_class(tmp_path / "class", SOME_DEFECTS)
    out = tmp_path / "out"
    result = run_batch(root, out, jobs=2, seed=1234, timeout=40, progress=False)
    assert result.graded == 4 + len(SOME_DEFECTS)
    book = read_csv(out / "grades.csv")
    assert list(book["learner"]) == sorted(
        [
            "solution",
            "starter",
            "syntax_error",
            "hangs_at_import",
            *("defect-" + d.replace("/", "-") for d in SOME_DEFECTS),
        ]
    )
    assert_expected_rows(book, SOME_DEFECTS)
    feedback = (out / "feedback" / "defect-step2-type_bool_limit.md").read_text()
    # The learner's own file and a replay they can run in the lab: never the instructor's folder.
    assert "step2/type_bool_limit" in feedback and str(root) not in feedback
    assert "agtool-grade check agtool/tools.py --only step2/type_bool_limit --seed 1234" in feedback
    assert (out / "feedback" / "defect-step2-type_bool_limit.txt").read_text().startswith("Feedback on tools.py")
    assert "## Submitted the starter unchanged\n\n1 learner" in (out / "summary.md").read_text()
    wrong = (out / "summary.md").read_text().split("## Most common wrong answers")[1].split("\n## ")[0]
    counts = [int(line.split()[1]) for line in wrong.strip().splitlines()]
    assert counts and counts == sorted(counts, reverse=True)  # most frequent first
    records = [json.loads(p.read_text()) for p in sorted((out / "results").glob("*.json"))]
    from grader.outputs.gradebook import common_wrong_answers

    groups = common_wrong_answers(records, top=1000)
    bool_limit = groups[groups["check"] == "step2/type_bool_limit"]
    defect_row = bool_limit[bool_limit["learners"] == "defect-step2-type_bool_limit"]
    assert len(defect_row) == 1 and defect_row["expected"].item() == "'type:limit'"
    assert defect_row["got"].item() not in ("", "'type:limit'")


@pytest.mark.slow
def test_real_class_with_two_planted_defects_of_every_step(tmp_path):
    # The batch's own path, end to end, for defects of every step; that every planted defect fails its own
    # check on every seed is the stability sweep's (tests/test_stability.py grades them all with grade_task).
    from defects.catalog import DEFECTS

    from grader.checks.registry import checks_for

    step_of = {check.id: check.step for check in checks_for()}
    by_step: dict[int, list[str]] = {}
    for check_id in sorted(DEFECTS):
        by_step.setdefault(step_of[check_id], []).append(check_id)
    # The first and the last of each step (one, where a step has one).
    defects = [check_id for ids in by_step.values() for check_id in dict.fromkeys((ids[0], ids[-1]))]
    assert sorted(by_step) == list(range(1, 12)), sorted(by_step)
    root = generated_class(tmp_path / "class", defects)
    run_batch(root, tmp_path / "out", jobs=os.cpu_count(), seed=1234, timeout=80, progress=False)
    assert_expected_rows(read_csv(tmp_path / "out" / "grades.csv"), defects)


# ---------------------------------------------------------------- the JupyterHub recipe


def load_hub_config(prefix: Path) -> dict:
    """Execute deploy/jupyterhub/jupyterhub_config.py as JupyterHub would; return its namespace."""
    traitlets = pytest.importorskip("traitlets.config")
    config = traitlets.Config()
    namespace = {"get_config": lambda: config, "__file__": "jupyterhub_config.py"}
    old = os.environ.get("AGTOOL_PREFIX")
    os.environ["AGTOOL_PREFIX"] = str(prefix)
    try:
        exec(
            compile(
                (REPO / "deploy" / "jupyterhub" / "jupyterhub_config.py").read_text(), "jupyterhub_config.py", "exec"
            ),
            namespace,
        )
    finally:
        if old is None:
            del os.environ["AGTOOL_PREFIX"]
        else:
            os.environ["AGTOOL_PREFIX"] = old
    namespace["c"] = config
    return namespace


def test_hub_config_gives_each_learner_the_lab_once(tmp_path):
    import pwd
    from types import SimpleNamespace

    prefix = tmp_path / "opt"
    (prefix / "template" / "labs").mkdir(parents=True)
    (prefix / "template" / "agtool").mkdir()
    (prefix / "template" / "labs" / "01_contract_table.ipynb").write_text("{}")
    (prefix / "template" / "agtool" / "tools.py").write_text(STARTER.read_text())
    (prefix / "roster.csv").write_text("learner,lms_id,name\nana,101,Ana\nben,102,Ben\n")  # setup_hub.sh seeds it
    (prefix / "instructors.txt").write_text("teacher\n")
    ns = load_hub_config(prefix)
    c = ns["c"]
    assert c.Authenticator.allowed_users == {"ana", "ben"} and c.Authenticator.admin_users == {"teacher"}
    # Each learner's server grades their own file and knows where the grading service is.
    assert c.Spawner.environment == {
        "AGTOOL_MODULE": "~/agtool/tools.py",
        "AGTOOL_SERVICE_URL": "http://127.0.0.1:10101/services/agtool-grader/",
    }
    assert c.Spawner.cmd == [str(prefix / "venv" / "bin" / "jupyterhub-singleuser")]

    home = tmp_path / "home" / "ana"
    home.mkdir(parents=True)
    me = pwd.getpwuid(os.getuid())
    ns["pwd"] = SimpleNamespace(
        getpwnam=lambda name: SimpleNamespace(pw_dir=str(home), pw_uid=me.pw_uid, pw_gid=me.pw_gid)
    )
    spawner = SimpleNamespace(user=SimpleNamespace(name="ana"))
    c.Spawner.pre_spawn_hook(spawner)
    module = home / "agtool" / "tools.py"
    assert module.read_text() == STARTER.read_text() and (home / "labs" / "01_contract_table.ipynb").exists()

    module.write_text("# ana's work")
    c.Spawner.pre_spawn_hook(spawner)  # the next login must not overwrite it
    assert module.read_text() == "# ana's work"
    # ...and the instructor's glob finds it, with the home folder's name as the learner id.
    found = discover(str(tmp_path / "home" / "*" / "agtool" / "tools.py"))
    assert [(s.learner, s.path) for s in found] == [("ana", module)]


# ---------------------------------------------------------------- the dashboard notebook

DASHBOARD = REPO / "labs" / "instructor_dashboard.ipynb"


def test_dashboard_is_committed_without_outputs():
    import nbformat

    nb = nbformat.read(DASHBOARD, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


def test_dashboard_executes_headless_on_a_small_class(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(DASHBOARD, as_version=4)
    home, labs = tmp_path / "home", tmp_path / "checkout" / "labs"
    labs.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))  # the kernel's ~: OUT's default is ~/agtool-dashboard
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # the demo class's private folder
    (tmp_path / "tmp").mkdir()
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(labs)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 3  # the three plots, inline
    markdown = [o["data"]["text/markdown"] for o in outputs if "text/markdown" in o.get("data", {})]
    assert len(markdown) >= 2  # one learner's feedback, and summary.md rendered (never printed raw)
    assert "## Submitted the starter unchanged" in markdown[-1] and "- ben" in markdown[-1]
    assert not [o for o in outputs if o.output_type == "stream" and "# Class summary" in o.get("text", "")]
    # The statistics count ada, cleo and dev: not ben's starter, nor eli's file that does not parse; so says each.
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "3 learners counted: graded files that imported" in printed
    assert "3 learners counted" in markdown[-1] and "- mean score" in markdown[-1]
    # Outside the checkout: nothing beside the notebook, the demo's solution copies in a folder of its own (0700).
    assert list(labs.iterdir()) == []
    assert (home / "agtool-dashboard").stat().st_mode & 0o077 == 0
    (demo,) = (tmp_path / "tmp").glob("agtool-demo-class-*")
    assert demo.stat().st_mode & 0o077 == 0 and sorted(p.name for p in demo.iterdir()) == [
        "ada",
        "ben",
        "cleo",
        "dev",
        "eli",
    ]
    from grader.outputs.starter import starter_text

    assert (demo / "ben" / "agtool" / "tools.py").read_text(encoding="utf-8") == starter_text()
    book = read_csv(home / "agtool-dashboard" / "grades.csv").set_index("learner")
    assert list(book.index) == ["ada", "ben", "cleo", "dev", "eli"]
    assert book.loc["ada", "score"] == book.loc["ada", "max_score"] and book.loc["ben", "score"] == 0
    assert 0 < book.loc["cleo", "score"] < book.loc["ada", "score"]
    assert "SyntaxError" in book.loc["eli", "error"]


def test_unreadable_and_oversized_files_cost_their_own_row(tmp_path):
    from grader.grading import MAX_SOURCE_BYTES

    root = make_class(tmp_path / "class", {"ok": ALL_PASS, "huge": "#" * (MAX_SOURCE_BYTES + 1), "locked": "x"})
    (root / "locked" / "tools.py").chmod(0)
    if os.access(root / "locked" / "tools.py", os.R_OK):  # root reads anything
        (root / "locked" / "tools.py").chmod(0o644)
        (root / "locked" / "tools.py").unlink()
        (root / "locked" / "tools.py").symlink_to(root / "locked" / "missing.py")
    out = tmp_path / "out"
    result = run_batch(root, out, jobs=1, seed=2, grade_fn=fake_grade, progress=False)
    assert result.graded == 1
    rows = read_csv(out / "grades.csv").set_index("learner")
    assert rows.loc["ok", "score"] == 6
    assert "larger than" in rows.loc["huge", "error"]
    assert rows.loc["locked", "score"] == 0 and rows.loc["locked", "error"]


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_sandbox_keeps_a_hostile_submission_away_from_the_outputs(tmp_path, sandbox):
    from grader.engine.sandbox import bwrap_usable

    if sandbox == "bwrap" and not bwrap_usable():
        pytest.skip("bubblewrap cannot create namespaces on this machine")
    out = tmp_path / "out"
    forged = out / "forged.txt"  # OUT exists before any learner is graded
    future = "from __future__ import annotations\n"
    hostile = SOLUTION.read_text().replace(
        future, future + f"from pathlib import Path\nPath({str(forged)!r}).write_text('forged')\n", 1
    )
    root = make_class(tmp_path / "class", {"mallory": hostile, "ok": SOLUTION.read_text()})
    run_batch(root, out, jobs=1, seed=8, timeout=80, sandbox=sandbox, progress=False)
    rows = read_csv(out / "grades.csv").set_index("learner")
    assert rows.loc["ok", "score"] == rows.loc["ok", "max_score"]
    record = json.loads((out / "results" / "mallory.json").read_text(encoding="utf-8"))
    if sandbox == "none" and "read-only" not in record["report"].get("limits", ""):
        assert forged.exists()  # the risk the sandbox exists for: same user, same files
    elif sandbox == "none":  # root without a sandbox: the step's mounts are read-only but scratch
        assert not forged.exists() and "Read-only file system" in rows.loc["mallory", "error"]
    else:
        assert not forged.exists()
        assert rows.loc["mallory", "score"] == 0 and "could not be imported" in rows.loc["mallory", "error"]


# ---------------------------------------------------------------- rendering, exactly


def _record(learner, names_ok, limit_ok, *, got="''", error=""):
    checks = [
        CheckResult(
            id="step1/names",
            step=1,
            passed=names_ok,
            points=2 * names_ok,
            max_points=2,
            title="Names",
            expected="" if names_ok else "['north']",
            got="" if names_ok else "[]",
        ),
        CheckResult(
            id="step2/type_bool_limit",
            step=2,
            passed=limit_ok,
            points=3 * limit_ok,
            max_points=3,
            title="bool | int",
            expected="" if limit_ok else "'type:limit'",
            got="" if limit_ok else got,
        ),
    ]
    if error:
        checks = [
            CheckResult(
                id=c.id, step=c.step, passed=False, points=0, max_points=c.max_points, title=c.title, message=error
            )
            for c in checks
        ]
    return {
        "learner": learner,
        "source": f"{learner}/tools.py",
        "sha256": "0" * 64,
        "seed": 5,
        "selection": {"steps": None, "only": None},
        "report": Report(seed=5, path=f"{learner}/tools.py", checks=checks, error=error).to_dict(),
    }


HAND_CLASS = [
    _record("dan", True, False, got="'range:limit'"),
    _record("ann", True, True),
    _record("bob", True, False),
    _record("cat", False, False),
    _record("eve", False, False, error="SyntaxError at tools.py line 3\n  detail"),
]

EXPECTED_CSV = """\
learner,score,max_score,step1,step2,step3,step4,step5,step6,step7,step8,step9,step10,step11,step1/names,step2/type_bool_limit,seed,error,source
ann,5,5,2,3,,,,,,,,,,2,3,5,,ann/tools.py
bob,2,5,2,0,,,,,,,,,,2,0,5,,bob/tools.py
cat,0,5,0,0,,,,,,,,,,0,0,5,,cat/tools.py
dan,2,5,2,0,,,,,,,,,,2,0,5,,dan/tools.py
eve,0,5,0,0,,,,,,,,,,0,0,5,SyntaxError at tools.py line 3,eve/tools.py
"""

EXPECTED_SUMMARY = """\
# Class summary

- learners: 5
- seed: 5
- statistics: 4 learners counted: graded files that imported (their texts not at hand: a starter handed in unchanged counts)
- mean score: 2.25 / 5
- median score: 2 / 5
- full marks: 1
- could not be graded: 1

## Score per step

Over the 4 learners counted: graded files that imported (their texts not at hand: a starter handed in unchanged counts).

| step | mean | max | learners with full marks |
|---|---|---|---|
| 1 | 1.50 | 2 | 3 |
| 2 | 0.75 | 3 | 1 |

## Hardest checks

Over the 4 learners counted: graded files that imported (their texts not at hand: a starter handed in unchanged counts).

| check | title | passed | pass rate |
|---|---|---|---|
| `step2/type_bool_limit` | bool \\| int | 1/4 | 25% |
| `step1/names` | Names | 3/4 | 75% |

## Most common wrong answers

- 2 learners returned `''` where `'type:limit'` was expected (`step2/type_bool_limit`): bob, cat
- 1 learner returned `[]` where `['north']` was expected (`step1/names`): cat
- 1 learner returned `'range:limit'` where `'type:limit'` was expected (`step2/type_bool_limit`): dan

## Could not be graded

- eve: `SyntaxError at tools.py line 3`
"""


def test_gradebook_and_summary_render_exactly(tmp_path):
    from grader.outputs import class_folder as gradebook

    outputs = gradebook.write_outputs(HAND_CLASS, tmp_path)
    assert outputs["csv"].read_text() == EXPECTED_CSV
    assert outputs["summary"].read_text() == EXPECTED_SUMMARY
    # Record order does not matter: the outputs are sorted by learner.
    again = gradebook.write_outputs(list(reversed(HAND_CLASS)), tmp_path / "again")
    for name in ("csv", "json", "summary"):
        assert again[name].read_bytes() == outputs[name].read_bytes()


def test_agtool_grade_batch_command(tmp_path, capsys):
    from grader.cli import main as agtool_grade

    root = make_class(tmp_path / "class", {"solo": SOLUTION.read_text()}, nested={"solo"})
    code = agtool_grade(
        [
            "batch",
            str(root / "*" / "agtool" / "tools.py"),
            "--out",
            str(tmp_path / "out"),
            "--seed",
            "31",
            "--jobs",
            "1",
            "--steps",
            "1,2",
            "--no-progress",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert printed.startswith("seed 31: 1 learners, 1 graded, 0 unchanged")
    book = read_csv(tmp_path / "out" / "grades.csv")
    assert list(book["learner"]) == ["solo"] and book.loc[0, "score"] == book.loc[0, "max_score"] > 0
    assert book.loc[0, "step1"] > 0 and pd.isna(book.loc[0, "step3"])  # steps not asked for stay empty
    assert {c.split("/")[0] for c in book.columns if "/" in c} == {"step1", "step2"}


def test_resume_grades_again_the_rows_the_grader_itself_failed(fake_class, tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "GRACE", 1.0)
    out = tmp_path / "out"
    run_batch(fake_class, out, jobs=2, seed=4, timeout=1.0, grade_fn=fake_grade, progress=False)
    again = run_batch(fake_class, out, jobs=2, resume=True, timeout=1.0, grade_fn=fake_grade, progress=False)
    # 'buggy' (the grader raised) and 'dies' (the worker died) are retried; the learner's own
    # failures, including the hang that hit its time limit, are kept.
    assert (again.graded, again.skipped) == (2, 4)


@pytest.mark.slow
def test_real_batch_command_killed_midway_resumes_to_identical_outputs(tmp_path):
    root = generated_class(tmp_path / "class", SOME_DEFECTS)  # 8 learners
    out, reference = tmp_path / "out", tmp_path / "reference"
    command = [
        sys.executable,
        "-m",
        "grader.batch",
        str(root),
        "--seed",
        "77",
        "--jobs",
        "1",
        "--no-progress",
        "--timeout",
        "40",
    ]
    proc = subprocess.Popen(
        [*command, "--out", str(out)],
        cwd=REPO,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while len(list((out / "results").glob("*.json"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = len(list((out / "results").glob("*.json")))
    assert 2 <= done < 8 and not (out / "grades.csv").exists()

    subprocess.run([*command, "--out", str(out), "--resume"], cwd=REPO, check=True, capture_output=True)
    subprocess.run([*command, "--out", str(reference)], cwd=REPO, check=True, capture_output=True)
    for name in ("grades.csv", "grades.json", "summary.md"):
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name


# ---------------------------------------------------------------- learner records and grading failures

RECORD_SCHEMA = json.loads((TESTS_DIR / "schemas" / "learner_record.schema.json").read_text())


def test_saved_records_fit_the_learner_record_schema_and_round_trip(fake_class, tmp_path, monkeypatch):
    import jsonschema

    from grader.batch.records import load_records
    from grader.outputs.record import LearnerRecord

    monkeypatch.setattr(batch, "GRACE", 1.0)
    out = tmp_path / "out"
    run_batch(fake_class, out, jobs=2, seed=3, timeout=1.0, grade_fn=fake_grade, progress=False)
    records = load_records(out)
    assert [r.learner for r in records] == ["buggy", "dies", "full", "half", "hangs", "none"]
    for record in records:
        saved = json.loads((out / "results" / f"{record.learner}.json").read_text())
        jsonschema.validate(saved, RECORD_SCHEMA)
        assert LearnerRecord.from_dict(saved).to_dict() == saved == record.to_dict()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**records[0].to_dict(), "sha256": "not a hash"}, RECORD_SCHEMA)


def _failed(kind: str, message: str) -> dict:
    from grader.report import Failure

    report = Report(
        seed=1,
        path="t.py",
        checks=[
            CheckResult(id="step1/names", step=1, passed=False, points=0, max_points=2, title="t", message=message)
        ],
        failure=Failure(kind, message),
    )
    return report.to_dict()


def test_a_grading_failure_is_a_row_but_never_a_grade_in_any_output(tmp_path):
    from grader.outputs.class_folder import write_outputs
    from grader.outputs.lms import grade_rows

    ok = Report(
        seed=1,
        path="t.py",
        checks=[CheckResult(id="step1/names", step=1, passed=True, points=2, max_points=2, title="t")],
    ).to_dict()
    records = [
        {"learner": "ana", "seed": 1, "report": ok},
        {"learner": "bob", "seed": 1, "report": _failed("grader", "the grading process died")},
        {"learner": "cy", "seed": 1, "report": _failed("time", "grading stopped: over the time limit of 1 s")},
        {"learner": "dee", "seed": 1, "report": _failed("learner", "SyntaxError at tools.py line 1")},
    ]
    outputs = write_outputs(records, tmp_path)
    book = read_csv(outputs["csv"]).set_index("learner")
    # The learner's own failures (its code, or its code using the whole time budget): a zero.
    assert book.loc["ana", "score"] == 2 and book.loc["dee", "score"] == 0 and book.loc["cy", "score"] == 0
    assert pd.isna(book.loc["bob", "score"])  # the machinery's failure: no grade, not a zero
    assert "died" in book.loc["bob", "error"]
    grades = {g["learner"]: g for g in json.loads(outputs["json"].read_text())["learners"]}
    assert grades["bob"]["score"] is None and grades["cy"]["score"] == 0 and grades["dee"]["score"] == 0
    summary = outputs["summary"].read_text()
    # The statistics count the graded files that answered: cy (out of time) and dee (no import) have their
    # zeros in the gradebook, bob no grade; none of the three is in the mean.
    assert "- statistics: 1 learner counted:" in summary
    assert "- mean score: 2.00 / 2" in summary and "- full marks: 1" in summary
    assert [row["learner"] for row in grade_rows(records)] == ["ana", "cy", "dee"]


def test_resume_grades_again_every_stored_failure_of_the_grading_machinery(tmp_path):
    root = make_class(tmp_path / "class", {name: ALL_PASS for name in ("ana", "bob", "cy", "dee")})
    out = tmp_path / "out"
    run_batch(root, out, jobs=1, seed=2, grade_fn=fake_grade, progress=False)
    failures = {
        "bob": _failed("grader", "the grader failed: OSError: disk full"),
        "cy": _failed("time", "grading stopped: over the time limit of 1 s"),
        "dee": _failed("learner", "SyntaxError at tools.py line 1"),
    }
    for learner, report in failures.items():  # as stored by an earlier run
        path = out / "results" / f"{learner}.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "report": report}))
    again = run_batch(root, out, jobs=1, resume=True, grade_fn=fake_grade, progress=False)
    # bob again; ana, cy (its code used the whole time budget) and dee (the learner's own) stand
    assert (again.graded, again.skipped) == (1, 3)
    book = read_csv(out / "grades.csv").set_index("learner")
    assert list(book["score"]) == [6, 6, 0, 0]
