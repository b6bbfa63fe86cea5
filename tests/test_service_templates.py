"""Every page of the service comes from an autoescaped Jinja template: no HTML is built in Python.

The modules of ``grader/service/`` hand the templates plain data; the only
escaping function is the template filter (``grader.service.layout.esc``, the
environment's ``finalize``). Read from the source with ``ast``: no module
but ``layout`` calls or imports an escaping function or makes ``Markup``, and
no string in any module but its docstrings holds an HTML tag. Each rule also
runs on a made-up example of the mistake it catches.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SERVICE = Path(__file__).resolve().parent.parent / "grader" / "service"
FILTER_MODULE = SERVICE / "layout.py"  # the template filter, and the one place that marks our own files as markup
ESCAPERS = {"esc", "escape", "html_text", "xhtml_escape", "Markup", "xsrf_form_html"}
TAG = re.compile(r"</?[a-z][a-z0-9]*(?:[\s>]|/>)|&(?:middot|amp|lt|gt|quot|#x?[0-9a-f]+);", re.IGNORECASE)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and functions (their examples may show HTML)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def html_in_python(source: str) -> list[str]:
    """``line: what`` for each escaping call or import, and each string holding an HTML tag or entity."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name in ESCAPERS:
                problems.append(f"{node.lineno}: calls {name}()")
        elif isinstance(node, ast.ImportFrom):
            problems += [f"{node.lineno}: imports {alias.name}" for alias in node.names if alias.name in ESCAPERS]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docs
            and TAG.search(node.value)
        ):
            problems.append(f"{node.lineno}: HTML in a string: {node.value[:60]!r}")
    return problems


def service_modules() -> list[Path]:
    return sorted(path for path in SERVICE.rglob("*.py") if path != FILTER_MODULE)


def test_the_service_has_modules_and_templates_to_check():
    names = {path.relative_to(SERVICE).as_posix() for path in service_modules()}
    assert {"pages.py", "code_pages.py", "action_pages.py", "app.py", "api/base.py", "handlers/base.py"} <= names
    templates = {path.name for path in (SERVICE / "templates").glob("*.html")}
    assert {"base.html", "macros.html", "learner.html", "class.html"} <= templates


@pytest.mark.parametrize("path", service_modules(), ids=lambda path: path.relative_to(SERVICE).as_posix())
def test_no_module_of_the_service_builds_html_in_python(path):
    assert html_in_python(path.read_text(encoding="utf-8")) == []


def test_only_the_template_filter_escapes():
    """``grep -rn "esc(" grader/service/`` finds only the template filter."""
    hits = [
        f"{path.relative_to(SERVICE)}:{number}"
        for path in sorted(SERVICE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "esc(" in line
    ]
    assert hits and all(hit.startswith("layout.py:") for hit in hits), hits


@pytest.mark.parametrize(
    "source",
    [
        'def row(name):\n    return f"<td>{esc(name)}</td>"\n',
        "from grader.service.layout import esc\n",
        'BUTTON = "<button type=submit>Send</button>"\n',
        "def form(self):\n    return self.xsrf_form_html()\n",
        'def dot():\n    return " &middot; "\n',
        "from markupsafe import Markup\nx = Markup(1)\n",
    ],
)
def test_html_built_in_python_is_seen(source):
    assert html_in_python(source)


def test_a_docstring_s_example_is_not_html_built_in_python():
    assert html_in_python('"""A page.\n\n    >>> "<p>" in page()\n    True\n"""\nTITLE = "a < b"\n') == []


def test_the_environment_autoescapes_and_escapes_every_value():
    pytest.importorskip("jinja2")
    from grader.service import layout

    env = layout.environment()
    assert env.autoescape is True and env.finalize is layout.esc
    hostile = "</code><script>alert(1)</script>'\""
    out = env.from_string("<p title='{{ x }}'>{{ x }}</p>").render(x=hostile)
    assert "<script>" not in out and out.count("&#x27;") == 2 and out.count("&quot;") == 2
