"""The starter as given (the committed ``starter/tools.py``): it imports, earns nothing, and matches the solution.

The lab's ``agtool/tools.py`` is the learner's work: nothing here reads it (in
a clone where the lab was done it holds the learner's module), except git's
committed copy of it, which must be the starter byte for byte.

The drift test follows the course-repository habit of deriving the exercise
from the solution: both files must define the same public names, of the same
kinds, with the same parameters, so a rename in one cannot go unnoticed.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import typing
from pathlib import Path

import pytest

from agtool_lab.load import load_module
from grader.report import STEPS

ROOT = Path(__file__).resolve().parent.parent
STARTER = ROOT / "starter" / "tools.py"
LEARNER_FILE = ROOT / "agtool" / "tools.py"  # the learner's: only its path and git's committed copy are read here
SOLUTION = ROOT / "solutions" / "tools.py"

# The lab step that introduces each public function (LAB_SPEC headings).
FUNCTION_STEP = {
    "stock_lookup": 1,
    "legacy_stock": 1,
    "validate_args": 2,
    "call_tool": 3,
    "validate_result": 4,
    "cache_key": 5,
    "pick": 6,
    "fetch": 6,
    "reply": 6,
    "giveup": 6,
    "build_naive": 6,
    "run_naive": 6,
    "can_repair": 7,
    "repair": 7,
    "build_graph": 7,
    "handle": 7,
    "write_report": 8,
}


@pytest.fixture(scope="module")
def starter():
    module = load_module(STARTER)
    yield module
    sys.modules.pop(module.__name__, None)


@pytest.fixture(scope="module")
def solution():
    module = load_module(SOLUTION)
    yield module
    sys.modules.pop(module.__name__, None)


def defined_names(path: Path) -> set[str]:
    """Public names a file binds itself at top level (def, class, assignment), not by import."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_")}


def kind(value) -> str:
    if inspect.isclass(value):
        return "class"
    if inspect.isfunction(value):
        return "function"
    return "data"


def dummy_call(fn):
    """Call ``fn`` with ``None`` for every parameter that has no default."""
    params = inspect.signature(fn).parameters.values()
    return fn(*[None for p in params if p.default is inspect.Parameter.empty])


def test_starter_imports_cleanly_as_a_package_module():
    import agtool.tools  # the notebooks import it this way

    assert Path(agtool.tools.__file__).resolve() == LEARNER_FILE.resolve()


def test_same_public_names_as_the_solution():
    starter_names, solution_names = defined_names(STARTER), defined_names(SOLUTION)
    assert starter_names == solution_names, {
        "only in the starter": sorted(starter_names - solution_names),
        "only in the solution": sorted(solution_names - starter_names),
    }
    # Guard the guard: the AST walk must really find the spec's names.
    assert {"STOCK", "TOOLS", "State", "handle", "write_report", "MAX_ATTEMPTS"} <= solution_names
    assert set(FUNCTION_STEP) <= solution_names


def test_same_kinds_and_parameters_as_the_solution(starter, solution):
    for name in sorted(defined_names(SOLUTION)):
        mine, ref = getattr(starter, name), getattr(solution, name)
        assert kind(mine) == kind(ref), name
        if kind(ref) == "function":
            mine_params = [(p.name, p.kind, p.default) for p in inspect.signature(mine).parameters.values()]
            ref_params = [(p.name, p.kind, p.default) for p in inspect.signature(ref).parameters.values()]
            assert mine_params == ref_params, name
        elif kind(ref) == "data" and mine is not None:
            # A placeholder keeps the container type the learner will fill in.
            assert type(mine) is type(ref), name


@pytest.mark.parametrize("name", sorted(FUNCTION_STEP))
def test_every_function_raises_not_implemented_naming_its_step(starter, name):
    fn = getattr(starter, name)
    step = FUNCTION_STEP[name]
    with pytest.raises(NotImplementedError, match=rf"^step {step}: "):
        dummy_call(fn)
    doc = inspect.getdoc(fn) or ""
    assert f"step {step}" in doc.lower(), f"{name}'s docstring should say it belongs to step {step}"


def test_placeholders_earn_nothing(starter, solution):
    # Every constant and table differs from the right answer, so no check can pass on it.
    # CACHE is the exception: empty is its right starting value, and it earns
    # nothing while call_tool raises.
    for name in sorted(defined_names(SOLUTION) - {"CACHE"}):
        ref = getattr(solution, name)
        if kind(ref) == "data":
            assert getattr(starter, name) != ref, name
    assert starter.STOCK == [] and starter.TOOLS == {} and starter.REPAIRS == {}
    assert typing.get_type_hints(starter.State) == {}


def test_starter_names_the_notebook_of_each_step():
    text = STARTER.read_text(encoding="utf-8")
    # Steps 1-11: 01_... to 11_... (the capstone, 12_, is no step and has no starter names).
    named = sorted(set(re.findall(r"labs/((?:0[1-9]|1[01])_\w+\.ipynb)", text)))
    assert [n[:2] for n in named] == [f"{step:02d}" for step in STEPS]
    present = {p.name for p in (ROOT / "labs").glob("[01][0-9]_*.ipynb")}
    if not present:
        pytest.skip("labs/ has no step notebooks yet")
    assert set(named) <= present, sorted(set(named) - present)


def _git_blob(spec: str) -> bytes:
    """``git cat-file blob SPEC`` in the checkout; skips the test outside a git checkout."""
    import subprocess

    done = subprocess.run(["git", "-C", str(ROOT), "cat-file", "blob", spec], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"no git object {spec} here (not a git checkout?)")
    return done.stdout


def test_the_starter_fingerprint_matches_the_committed_starter_and_the_lab_s_committed_file():
    """grader.outputs.starter knows the starter by its bytes; the lab's agtool/tools.py is committed as that starter."""
    import hashlib

    from grader.outputs import starter as starter_module

    data = STARTER.read_bytes()
    assert hashlib.sha256(data).hexdigest() == starter_module.STARTER_SHA256
    assert starter_module.starter_bytes() == data
    # A fresh clone hands the learner the starter: git's copy of agtool/tools.py, whatever the work tree holds now.
    assert _git_blob("HEAD:agtool/tools.py") == data
    assert _git_blob("HEAD:starter/tools.py") == data


def test_an_edited_starter_is_never_taken_for_the_starter(monkeypatch, tmp_path):
    """Whichever copy is found (the package, the checkout's starter/), its bytes must be the starter's."""
    from importlib import resources

    from grader.outputs import starter as starter_module

    edited = tmp_path / "tools.py"
    edited.write_text("def validate_args(name, args):\n    return ''\n", encoding="utf-8")
    monkeypatch.setattr(resources, "files", lambda package: tmp_path)  # the package holds an edited file
    monkeypatch.setattr(starter_module, "CHECKOUT_STARTER", STARTER)
    assert starter_module.starter_text() == STARTER.read_text(encoding="utf-8")  # the checkout's copy, by hash
    monkeypatch.setattr(starter_module, "CHECKOUT_STARTER", edited)
    with pytest.raises(FileNotFoundError, match="git checkout -- starter/tools.py"):
        starter_module.starter_text()


def test_nothing_but_the_learner_reads_the_lab_s_agtool_tools_py():
    """The grader's starter, the dashboard's demo and the hub's template name the committed starter, not agtool/."""
    from grader.outputs import starter as starter_module

    assert starter_module.CHECKOUT_STARTER == STARTER
    import json

    cells = json.loads((ROOT / "labs" / "instructor_dashboard.ipynb").read_text(encoding="utf-8"))["cells"]
    dashboard = "\n".join("".join(cell["source"]) for cell in cells)
    recipe = (ROOT / "deploy" / "jupyterhub" / "setup_hub.sh").read_text(encoding="utf-8")
    assert 'ROOT / "agtool"' not in dashboard and 'cp "$SRC/agtool/tools.py"' not in recipe
    assert "starter_bytes()" in recipe
    assert "starter_text()" in dashboard
