"""The documentation says what the code does, and the README stays a five-minute read.

* the generated pages (``docs/checks.md``, ``docs/settings.md``,
  ``docs/imports.md``) are what ``docs/hooks.py`` generates from the code;
* the README is at most 250 lines, opens with the two commands, and every
  ``make`` target the README and the pages name exists;
* every page is in the site's navigation, and the glossary defines each word once;
* where MkDocs is installed (``make docs``), the site builds with warnings as errors.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader import layers, settings

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


def load_hooks():
    """``docs/hooks.py`` as a module (it is MkDocs' hook file, not an installed module)."""
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOKS = load_hooks()


@pytest.mark.parametrize("name", sorted(HOOKS.GENERATED))
def test_a_generated_page_is_what_the_code_generates(name):
    assert (DOCS / name).read_text(encoding="utf-8") == HOOKS.GENERATED[name](), (
        f"docs/{name} is stale: run .venv/bin/python docs/hooks.py"
    )


def test_the_settings_page_lists_every_setting():
    page = (DOCS / "settings.md").read_text(encoding="utf-8")
    for field in settings.SETTINGS:
        assert f"`{settings.env_name(field.name)}`" in page


def test_the_imports_page_has_every_row_of_the_table():
    page = (DOCS / "imports.md").read_text(encoding="utf-8")
    for layer in layers.LAYERS:
        assert f"| `{layer.packages[0]}`" in page


def test_the_readme_is_a_five_minute_read():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250
    assert lines[2].split("#")[0].strip() == "make lab" and lines[3].split("#")[0].strip() == "make test"


def make_targets() -> set[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([\w-]+):", text, flags=re.MULTILINE))


MAKE_COMMAND = re.compile(r"`make ([\w-]+)`|^\s+make ([\w-]+)", flags=re.MULTILINE)


def test_every_make_target_the_docs_name_exists():
    named = {
        inline or shown
        for path in [REPO / "README.md", *DOCS.glob("*.md")]
        for inline, shown in MAKE_COMMAND.findall(path.read_text(encoding="utf-8"))
    }
    assert {"lab", "test", "docs"} <= named
    assert named - make_targets() == set()


def test_every_page_is_in_the_navigation():
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    in_nav = set(re.findall(r":\s+([\w-]+\.md)\s*$", config, flags=re.MULTILINE))
    assert {path.name for path in DOCS.glob("*.md")} == in_nav


def glossary_words() -> list[str]:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8").split("## Glossary", 1)[1]
    return [match.lower() for match in re.findall(r"^\| \*\*([^*]+)\*\*", text, flags=re.MULTILINE)]


def test_the_glossary_defines_each_word_once():
    words = glossary_words()
    assert len(words) == len(set(words))
    for word in (
        "step",
        "operation",
        "probe",
        "engine client",
        "fork server",
        "step child",
        "batch worker",
        "report",
        "the learner's report files",
    ):
        assert any(entry == word or entry.startswith(word + " ") for entry in words), word


SHOWN_IMPORT = re.compile(
    r"^\s*((?:from (?:grader|agtool_lab)[\w.]* import [\w, ]+|import (?:grader|agtool_lab)[\w.]*))"
    r"(?:;|\s*#|$)",
    flags=re.MULTILINE,
)


def test_every_import_the_pages_show_works():
    shown = {
        line
        for path in [REPO / "README.md", *DOCS.glob("*.md")]
        for line in SHOWN_IMPORT.findall(path.read_text(encoding="utf-8"))
    }
    assert "from grader.outputs import gradebook" in shown
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(sorted(shown))], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_sphinx_roles_are_shown_as_code_and_brackets_are_no_links():
    html = "grade a :class:<code>~grader.report.Report</code> with :func:<code>grade</code>"
    assert HOOKS.on_page_content(html) == "grade a <code>grader.report.Report</code> with <code>grade</code>"
    assert HOOKS.literal_brackets("| calls TOOLS[name]['fn'] `a[b]` |\n[x](y)\n") == (
        "| calls TOOLS\\[name]\\['fn'] `a[b]` |\n[x](y)\n"
    )


def test_docstrings_read_as_markdown_in_the_api_reference():
    spec = importlib.util.spec_from_file_location("griffe_doctests", DOCS / "griffe_doctests.py")
    pytest.importorskip("griffe", reason="the docs extra is not installed: `make docs` installs it")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = "Sum::\n\n    >>> 1 + 1\n    2\n\nThen\n>>> d['k']\n1\n\nEnd"
    assert module.markdown_docstring(text) == (
        "Sum:\n\n    >>> 1 + 1\n    2\n\nThen\n\n```pycon\n>>> d['k']\n1\n```\n\nEnd"
    )


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed: `make docs` installs and builds it")
    pytest.importorskip("mkdocstrings", reason="the docs extra is not installed: `make docs` installs it")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "instructor" / "index.html").is_file()


def _registry_counts() -> tuple[int, int, int]:
    from grader.checks.registry import checks_for

    checks = checks_for()
    part_one = sum(c.points for c in checks if c.step <= 8)
    return len(checks), part_one, sum(c.points for c in checks)


def stated_counts(text: str) -> list[tuple[int, int, int]]:
    """Every "the N checks (P points for steps 1-8, T for all eleven steps)" of a page.

    >>> stated_counts("the 9 checks (3 points for steps 1-8, 5 for all eleven steps)")
    [(9, 3, 5)]
    """
    found = re.findall(r"the (\d+) checks \((\d+) points for steps 1-8,\s+(\d+) for all eleven steps\)", text)
    return [tuple(map(int, numbers)) for numbers in found]


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_numbers_of_checks_and_points_a_page_states_are_the_registry_s(page):
    stated = stated_counts((REPO / page).read_text(encoding="utf-8"))
    assert stated, f"{page} no longer states the numbers of checks and points"
    assert set(stated) == {_registry_counts()}, f"{page}: {stated} but the registry has {_registry_counts()}"


def test_the_learner_guide_s_count_of_part_one_checks_is_the_registry_s():
    """docs/learner.md gives steps 1-8 in checks and points (it said 80 checks when the registry had 82)."""
    from grader.checks.registry import checks_for

    part_one = checks_for(list(range(1, 9)))
    text = (REPO / "docs" / "learner.md").read_text(encoding="utf-8")
    stated = re.findall(r"The (\d+) checks of steps 1-8 \((\d+) points\)", text)
    assert stated == [(str(len(part_one)), str(sum(c.points for c in part_one)))], stated
