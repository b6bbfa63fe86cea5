"""Every link and every repository path that a reader is pointed to resolves.

Followed, without the network:

* Markdown links ``[text](target)`` in the README, SECURITY.md, the docs
  pages, the labs' and deploy recipes' READMEs and the notebooks' cells: a
  relative target must be a file of the repository, and its ``#anchor`` a
  heading of that Markdown file; an ``http(s)`` link is checked for shape only;
* repository paths named in those texts and in the messages and comments of
  the code (``docs/instructor.md``, ``deploy/jupyterhub/README.md``...);
* section references such as ``(README, "Course policy")`` or
  ``docs/classroom.md, "Course policy"``: the file must have that heading;
* the code names the README and the pages give in backticks
  (``grader.limits.SUBMISSION_TIMEOUT``, ``child.REIMPORT_SECONDS``):
  the module has that name.

Each finder also runs on a made-up example of the mistake it catches.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import re
import sys
import urllib.parse
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

TOP_DIRS = ("docs", "labs", "deploy", "grader", "agtool_lab", "tests", "benchmarks", "solutions", "agtool", ".ci")
TOP_FILES = ("README.md", "SECURITY.md", "Makefile", "pyproject.toml", "mkdocs.yml")
# Named in prose as a pattern, or written by a run (git ignores them), not files of the repository.
PLACEHOLDERS = {
    "grader/checks/stepN.py",
    "labs/NN_slug.ipynb",
    "tests/defects/planted/stepN.py",
    "benchmarks/results/bench.md",
    "benchmarks/results/bench.png",
}

MARKDOWN_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
REPO_PATH = re.compile(
    r"(?<![\w/.~<$-])((?:" + "|".join(re.escape(name) for name in TOP_DIRS) + r")/[\w./-]*[\w-]"
    r"|(?:" + "|".join(re.escape(name) for name in TOP_FILES) + r")(?![\w.]))"
)
SECTION_REFERENCE = re.compile(
    r"\b(README(?:\.md)?|(?:[\w-]+/)*[\w-]+\.md)\\?[\"']?,? \\?[\"']([A-Z][^\"'\\\n]{1,60})\\?[\"']"
)


def markdown_files() -> list[Path]:
    found = [REPO / "README.md", REPO / "SECURITY.md", REPO / "labs" / "README.md"]
    found += sorted((REPO / "docs").glob("*.md")) + sorted((REPO / "deploy").rglob("README.md"))
    return found


def notebook_texts() -> list[tuple[Path, str]]:
    """``(notebook, text of its markdown and code cells)`` for every notebook of ``labs/``."""
    texts = []
    for path in sorted((REPO / "labs").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        texts.append(
            (path, "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] in ("markdown", "code")))
        )
    return texts


def code_files() -> list[Path]:
    """The code whose messages, comments and docstrings may point a reader somewhere."""
    found = [path for root in ("grader", "agtool_lab", "benchmarks") for path in (REPO / root).rglob("*.py")]
    found += [path for path in (REPO / "deploy").rglob("*") if path.suffix in (".py", ".sh", "") and path.is_file()]
    return sorted(found + [REPO / "labs" / "_build_notebooks.py", REPO / "Makefile", REPO / ".ci" / "run"])


def headings(path: Path) -> list[str]:
    """The headings of a Markdown file, outside fenced and indented code."""
    found, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            found.append(line.lstrip("#").strip())
    return found


def slug(heading: str) -> str:
    """The anchor MkDocs and GitHub give a heading (``## What is written under OUT`` -> ``what-is-written-under-out``)."""
    text = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower())
    return re.sub(r" ", "-", text)


def dead_links(text: str, source: Path) -> list[str]:
    """The Markdown links of ``text`` (the text of file ``source``) that lead nowhere (code spans hold none)."""
    dead = []
    for target in MARKDOWN_LINK.findall(re.sub(r"`[^`\n]*`", "", text)):
        parsed = urllib.parse.urlparse(target)
        if parsed.scheme in ("http", "https"):
            if not parsed.netloc or " " in target:
                dead.append(target)
            continue
        if parsed.scheme:  # mailto: and the like
            continue
        path = (source.parent / urllib.parse.unquote(parsed.path)).resolve() if parsed.path else source
        if not path.exists() or not path.is_relative_to(REPO):  # a clone holds nothing outside itself
            dead.append(target)
        elif parsed.fragment and path.suffix == ".md":
            if parsed.fragment not in {slug(heading) for heading in headings(path)}:
                dead.append(target)
    return dead


def missing_paths(text: str) -> list[str]:
    """Repository paths named in ``text`` that are not in the repository.

    A notebook may be named without ``.ipynb`` (``labs/01_contract_table``);
    a glob (``tests/test_spec_*.py``) and a doctest example that never runs
    (``# doctest: +SKIP``) name no file.
    """
    missing = []
    text = "\n".join(line for line in text.splitlines() if "doctest: +SKIP" not in line)
    for match in REPO_PATH.finditer(text):
        name = match.group(1).rstrip(".")
        if text[match.end() : match.end() + 1] == "*" or name in PLACEHOLDERS:
            continue
        if not (REPO / name).exists() and not (REPO / f"{name}.ipynb").exists():
            missing.append(name)
    return sorted(set(missing))


def missing_sections(text: str, base: Path = REPO) -> list[str]:
    """Section references (``README, "Course policy"``) whose file lacks that heading."""
    missing = []
    for name, section in SECTION_REFERENCE.findall(text):
        path = REPO / "README.md" if name == "README" else (REPO / name if (REPO / name).exists() else base / name)
        if not path.exists() or section.lower() not in {heading.lower() for heading in headings(path)}:
            missing.append(f'{name}, "{section}"')
    return missing


CODE_NAME = re.compile(r"`((?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*)(?:\([\w=]*\))?`")
FILE_SUFFIXES = {"md", "py", "html", "zip", "csv", "json", "png", "svg", "toml", "txt", "sh", "ipynb", "yml"}


def project_modules() -> dict[str, list[str]]:
    """``{last part of a module's name, or a class's name: [full names]}`` for the grader and the kernel side."""
    found: dict[str, list[str]] = {}
    for root in ("grader", "agtool_lab"):
        for path in (REPO / root).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if parts[-1] == "__main__":  # importing it would run a command
                continue
            found.setdefault(parts[-1], []).append(".".join(parts))
            for node in ast.parse(path.read_text(encoding="utf-8")).body:  # a class is named like a module
                if isinstance(node, ast.ClassDef):
                    found.setdefault(node.name, []).append(".".join(parts + [node.name]))
    return found


def resolves(name: str) -> bool:
    """Whether ``grader.a.b.NAME`` is a module, or a module's attribute (the longest module prefix is imported)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        if importlib.util.find_spec(module_name.split(".")[0]) is None:
            return False
        try:
            value = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name and not error.name.startswith(("grader", "agtool_lab")):
                return True  # an extra that is not installed here: nothing to check
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def unknown_code_names(text: str, modules: dict[str, list[str]]) -> list[str]:
    """The ``grader.x.NAME`` / ``module.NAME`` names of ``text`` that the code does not have."""
    unknown = []
    for name in sorted(set(CODE_NAME.findall(text))):
        first, last = name.split(".")[0], name.rsplit(".", 1)[1]
        if last in FILE_SUFFIXES or "__main__" in name:  # a file name; a module that runs a command
            continue
        if first in ("grader", "agtool_lab"):
            full = name
        elif len(modules.get(first, ())) == 1:
            full = modules[first][0] + name[len(first) :]
        else:
            continue  # not a module of this project (`Store.version()`, `os.write`)
        if not resolves(full):
            unknown.append(name)
    return unknown


# -- the documents


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: str(path.relative_to(REPO)))
def test_every_link_of_a_markdown_file_resolves(path):
    text = path.read_text(encoding="utf-8")
    assert dead_links(text, path) == []
    assert missing_paths(text) == []
    assert missing_sections(text, path.parent) == []


@pytest.mark.parametrize(
    "path", markdown_files()[:2] + sorted((REPO / "docs").glob("*.md")), ids=lambda path: str(path.relative_to(REPO))
)
def test_every_code_name_a_page_gives_exists(path):
    assert unknown_code_names(path.read_text(encoding="utf-8"), project_modules()) == []


@pytest.mark.parametrize("path, text", notebook_texts(), ids=lambda value: getattr(value, "name", ""))
def test_every_link_of_a_notebook_resolves(path, text):
    assert dead_links(text, path) == []
    assert missing_paths(text) == []
    assert missing_sections(text) == []


def test_every_path_the_code_names_exists():
    problems = {}
    for path in code_files():
        text = path.read_text(encoding="utf-8")
        if found := missing_paths(text) + missing_sections(text):
            problems[str(path.relative_to(REPO))] = found
    assert problems == {}


def test_the_dashboard_s_instructor_page_exists():
    dashboard = dict(notebook_texts())[REPO / "labs" / "instructor_dashboard.ipynb"]
    assert "docs/instructor.md" in dashboard and (REPO / "docs" / "instructor.md").is_file()


# -- each finder catches the mistake it is for


def test_a_link_out_of_the_repository_is_seen():
    assert dead_links("[design](../shared/DESIGN.md) [ok](docs/index.md)", REPO / "README.md") == [
        "../shared/DESIGN.md"
    ]


def test_a_dead_link_is_seen(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    (tmp_path / "here.md").write_text("# Title\n\n## A section\n", encoding="utf-8")
    text = (
        "[ok](here.md) [ok](here.md#a-section) [ok](https://example.org/x) [ok](#title)\n"
        "[gone](nowhere.md) [bad anchor](here.md#no-such) [bad url](https://) [outside](../../no/such.md)"
    )
    (tmp_path / "page.md").write_text("# Title\n", encoding="utf-8")
    dead = dead_links(text + " [gone](#no-such-heading)", tmp_path / "page.md")
    assert dead == ["nowhere.md", "here.md#no-such", "https://", "../../no/such.md", "#no-such-heading"]


def test_a_missing_repository_path_is_seen():
    text = (
        "see docs/instructor.md, `deploy/jupyterhub/README.md`, grader/checks/stepN.py and SECURITY.md;\n"
        "labs/01_contract_table, tests/test_spec_*.py; OUT/feedback/<learner>.md is no repository path;\n"
        ">>> discover('tests/no/such/class')   # doctest: +SKIP\n"
        "not docs/instructors.md nor grader/engine/no_such.py"
    )
    assert missing_paths(text) == ["docs/instructors.md", "grader/engine/no_such.py"]


def test_a_missing_section_is_seen():
    text = (
        'a course file (docs/classroom.md, "Course policy"); '
        "(deploy/jupyterhub/README.md, 'Classroom grading service'); "
        '(README, "No such section") and (docs/classroom.md, "Nothing here")'
    )
    assert missing_sections(text) == ['README, "No such section"', 'docs/classroom.md, "Nothing here"']


def test_an_unknown_code_name_is_seen():
    text = (
        "`grader.grading.grade`, `child.REIMPORT_SECONDS`, `grader.report.Report.to_dict()`, `summary.md`,\n"
        "`os.write`, `Report.to_dict()`, but `grader.grading.no_such_name`, `child.NO_SUCH_CONSTANT`\n"
        "and `Report.no_such_method()`"
    )
    assert unknown_code_names(text, project_modules()) == [
        "Report.no_such_method",
        "child.NO_SUCH_CONSTANT",
        "grader.grading.no_such_name",
    ]


def test_headings_become_the_anchors_the_site_gives_them():
    assert slug("What is written under OUT") == "what-is-written-under-out"
    assert slug("The five figures (`benchmarks/bench.py`)") == "the-five-figures-benchmarksbenchpy"
