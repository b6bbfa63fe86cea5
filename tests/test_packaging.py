"""What a wheel installs, and that the core grades without the extras' packages.

The core install (``pip install .``) is what the Gradescope image and a
grading worker get: ``agtool-grade check`` must give full marks without
JupyterLab, ipywidgets, pandas, matplotlib or tqdm, and the wheel must not
install a package named ``agtool`` (a learner's ``import agtool.tools`` must
find their own file, never a starter in site-packages).
"""
from __future__ import annotations

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
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                    "-w", str(out), str(REPO)], check=True, capture_output=True, timeout=300)
    return next(out.glob("agtool_lab-*.whl"))


def test_the_wheel_installs_no_package_named_agtool(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert "agtool" not in top
    assert {"grader", "agtool_lab"} <= top
    assert "grader/engine/child.py" in names and "agtool_lab/noisy/model.py" in names


def test_the_core_requires_none_of_the_extras_packages(wheel):
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        requires = Parser().parsestr(zf.read(meta).decode()).get_all("Requires-Dist")
    core = [r for r in requires if "extra ==" not in r]
    assert [r.split(">")[0].split("[")[0].strip() for r in core] == ["langgraph"]
    assert not [r for r in core if r.split(">")[0].strip() in EXTRAS_ONLY]


def test_check_gives_full_marks_with_the_extras_packages_blocked(tmp_path):
    out = tmp_path / "report.json"
    code = BLOCKED_RUN.format(blocked=EXTRAS_ONLY, argv=["check", str(REPO / "solutions" / "tools.py"),
                                                        "--seed", "5", "--format", "json", "--out", str(out)])
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["score"] == report["max_score"] == full_marks()


def test_batch_without_its_extra_says_which_extra_to_install(tmp_path):
    code = BLOCKED_RUN.format(blocked=EXTRAS_ONLY, argv=["batch", str(tmp_path), "--out", str(tmp_path / "out")])
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "pip install 'agtool-lab[batch]'" in done.stderr
