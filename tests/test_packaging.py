"""What a wheel installs, and that the core grades without the extras' packages.

The core install (``pip install .``) is what the Gradescope image and a
grading worker get: ``agtool-grade check`` must give full marks without
JupyterLab, ipywidgets, pandas, matplotlib or tqdm, and the wheel must not
install a package named ``agtool`` (a learner's ``import agtool.tools`` must
find their own file, never a starter in site-packages).
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from helpers import full_marks

REPO = Path(__file__).resolve().parents[1]
EXTRAS_ONLY = ("jupyterlab", "ipywidgets", "ipykernel", "nbformat", "nbclient", "pandas", "matplotlib", "tqdm")

# Run in a child: any import of an extra's package fails, as on a core install.
BLOCKED_RUN = """
import sys
BLOCKED = {blocked!r}

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked: not in the core install)", name=name)
        return None

sys.meta_path.insert(0, Blocker())
from grader.cli import main
sys.exit(main({argv!r}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return next(out.glob("agtool_lab-*.whl"))


def test_the_wheel_installs_no_package_named_agtool(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert "agtool" not in top
    assert {"grader", "agtool_lab"} <= top
    assert "grader/engine/child.py" in names and "agtool_lab/noisy/model.py" in names


def test_the_wheel_ships_every_package_of_the_checkout_and_the_starter_but_never_the_solution(wheel):
    # pyproject.toml lists the packages: a new folder must be listed too, or a normal install lacks it.
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = sorted(
        str(p.parent.relative_to(REPO))
        for root in ("grader", "agtool_lab")
        for p in (REPO / root).rglob("__init__.py")
        if "__pycache__" not in p.parts
    )
    assert [p for p in packages if f"{p}/__init__.py" not in names] == []
    data = sorted(
        str(p.relative_to(REPO))
        for root in ("grader", "agtool_lab")
        for p in (REPO / root).rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    )
    assert [f for f in data if f not in names] == []  # the service's templates...: package-data
    # The starter ships as grader.starter, byte for byte the committed starter/ (mapped), never agtool/.
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read("grader/starter/tools.py") == (REPO / "starter" / "tools.py").read_bytes()
        import hashlib

        from grader.outputs.starter import STARTER_SHA256

        assert hashlib.sha256(zf.read("grader/starter/tools.py")).hexdigest() == STARTER_SHA256  # by its hash
    solution = (REPO / "solutions" / "tools.py").read_bytes()
    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in names if n.startswith("solutions/") or zf.read(n) == solution]


def test_the_core_requires_none_of_the_extras_packages(wheel):
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        requires = Parser().parsestr(zf.read(meta).decode()).get_all("Requires-Dist")
    core = [r for r in requires if "extra ==" not in r]
    # LangGraph, and the step child's syscall filter (pyseccomp: a small ctypes binding to the system's libseccomp).
    assert [r.split(">")[0].split("[")[0].strip() for r in core] == ["langgraph", "pyseccomp"]
    assert not [r for r in core if r.split(">")[0].strip() in EXTRAS_ONLY]


def test_check_gives_full_marks_with_the_extras_packages_blocked(tmp_path):
    out = tmp_path / "report.json"
    code = BLOCKED_RUN.format(
        blocked=EXTRAS_ONLY,
        argv=["check", str(REPO / "solutions" / "tools.py"), "--seed", "5", "--format", "json", "--out", str(out)],
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["score"] == report["max_score"] == full_marks()


def test_batch_without_its_extra_says_which_extra_to_install(tmp_path):
    code = BLOCKED_RUN.format(blocked=EXTRAS_ONLY, argv=["batch", str(tmp_path), "--out", str(tmp_path / "out")])
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "pip install 'agtool-lab[batch]'" in done.stderr


# --------------------------------------------------------------------------- a normal (non-editable) install

# Run by the fresh venv's interpreter: the service (grader.service.app, from the wheel) behind the stand-in
# hub of tests/service_stand_ins.py, two learners' graded attempts, the instructor's similarity pages.
SERVICE_RUN = """
import json, sys
sys.path.insert(0, {tests!r})
import grader
from grader.report import Report
from grader.service.db import GRADED, Store
from service_stand_ins import FakeHub, Service

store = Store({db!r})
for learner, source in {sources!r}.items():
    attempt = store.add_attempt(learner, source.encode(), seed=1)
    store.claim(attempt)
    store.finish(attempt, GRADED, Report(seed=1, path="tools.py").to_dict())
hub = FakeHub()
service = Service(store, hub)
try:
    pages = {{name: service.request("GET", name, "tok-teacher") for name in ("similarity.html", "similarity.csv")}}
finally:
    service.stop()
    hub.stop()
print(json.dumps({{"grader": grader.__file__, **{{name: [code, body.decode()] for name, (code, _h, body) in pages.items()}}}}))
"""


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed (not editable); the extras' packages come from this venv's
    site-packages by a path line that adds them after its own (no checkout on the path, no editable finder)."""
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    theirs = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (Path(own) / "zz_test_dependencies.pth").write_text("\n".join(theirs) + "\n", encoding="utf-8")
    return venv


def _class_folder(root: Path) -> Path:
    from helpers import disguised

    starter = (REPO / "starter" / "tools.py").read_text(encoding="utf-8")
    solution = (REPO / "solutions" / "tools.py").read_text(encoding="utf-8")
    for learner, text in {"ana": starter, "ben": starter, "cleo": solution, "dan": disguised(solution)}.items():
        (root / learner / "agtool").mkdir(parents=True)
        (root / learner / "agtool" / "tools.py").write_text(text, encoding="utf-8")
    return root


def _pairs(table: str) -> dict:
    rows = list(csv.DictReader(io.StringIO(table)))
    return {frozenset((r["a"], r["b"])): r for r in rows}


def test_batch_similarity_runs_on_a_normal_install_and_discounts_the_starter(installed, tmp_path):
    # Before: FileNotFoundError .../site-packages/agtool/tools.py (the starter was not packaged).
    folder, out = _class_folder(tmp_path / "class"), tmp_path / "out"
    done = subprocess.run(
        [
            str(installed / "bin" / "agtool-grade"),
            "batch",
            str(folder),
            "--out",
            str(out),
            "--similarity",
            "--steps",
            "1",
            "--jobs",
            "1",
            "--sandbox",
            "none",
            "--no-progress",
            "--seed",
            "3",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    pairs = _pairs((out / "similarity.csv").read_text(encoding="utf-8"))
    # Two untouched starters share nothing once the starter is discounted; two copies of one solution do.
    assert float(pairs[frozenset(("ana", "ben"))]["similarity_a"]) == 0.0
    assert pairs[frozenset(("cleo", "dan"))]["flagged"] == "yes"
    assert "<h1>Similarity</h1>" in (out / "similarity.html").read_text(encoding="utf-8")


def test_the_service_similarity_pages_answer_on_a_normal_install(installed, tmp_path):
    # Before: similarity.html and similarity.csv answered 500 on a normal install.
    starter = (REPO / "starter" / "tools.py").read_text(encoding="utf-8")
    code = SERVICE_RUN.format(
        tests=str(REPO / "tests"), db=f"sqlite:///{tmp_path / 'service.db'}", sources={"ana": starter, "ben": starter}
    )
    done = subprocess.run(
        [str(installed / "bin" / "python"), "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(got["grader"]).is_relative_to(installed), got["grader"]  # the wheel's grader, not the checkout's
    assert got["similarity.html"][0] == 200 and "<h1>Similarity</h1>" in got["similarity.html"][1]
    assert got["similarity.csv"][0] == 200
    assert float(_pairs(got["similarity.csv"][1])[frozenset(("ana", "ben"))]["similarity_a"]) == 0.0
