"""The packages' layout holds: what may import what, read from the source with ``ast``.

* the engine (``grader/engine/``) runs beside learner code and judges
  nothing: it imports none of the judging, batch, CLI or kernel-side code;
* the grader's modules import each other without a cycle (imports inside
  functions count: a cycle that only bites at call time is still one);
* the package faces are lazy: ``import grader`` starts no engine, and
  ``import grader.report`` (what a gradebook reader needs) loads neither the
  engine nor LangGraph;
* every row of the table of allowed imports (``grader/layers.py``) holds for
  every module of ``grader/`` and ``agtool_lab/``, the table itself points
  no arrow back up, and no package imports another that imports it back.

Each rule is checked by a function that also runs on a made-up example of
the mistake it catches, so that a rule which could never fail is noticed.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader import layers

REPO = Path(__file__).resolve().parent.parent
GRADER = REPO / "grader"
ENGINE_MAY_NOT_IMPORT = ("grader.checks", "grader.grading", "grader.batch", "grader.cli", "agtool_lab")


def module_name(path: Path) -> str:
    """``grader/engine/client.py`` -> ``grader.engine.client``; a package's ``__init__`` is the package."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module name an import statement anywhere in ``source`` names (``from a import b``: ``a`` and ``a.b``).

    ``b`` may be a submodule or a name defined in ``a``; both are listed,
    and :func:`import_graph` keeps those that are modules. Relative imports
    are resolved against ``module``. A literal ``importlib.import_module("x")``
    counts as an import of ``x``.
    """
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def forbidden_imports(source: str, module: str) -> list[str]:
    """The names among ``source``'s imports that the engine must not import."""
    return sorted(
        name
        for name in imported_names(source, module)
        if any(name == bad or name.startswith(bad + ".") for bad in ENGINE_MAY_NOT_IMPORT)
    )


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """``{module: modules of the same set it imports}`` from ``{module: (source, is_package)}``."""
    return {
        module: {name for name in imported_names(source, module, is_package) if name in sources} - {module}
        for module, (source, is_package) in sources.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` as ``[a, b, ..., a]``, or ``[]``."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once fully explored
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = "open"
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node] = "done"
        path.pop()
        return []

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return []


def grader_sources() -> dict[str, tuple[str, bool]]:
    return {
        module_name(path): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
        for path in sorted(GRADER.rglob("*.py"))
    }


def project_sources() -> dict[str, tuple[str, bool]]:
    """The grader's modules and the kernel side's (``agtool_lab``), as :func:`grader_sources` gives them."""
    return {
        module_name(path): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
        for root in (GRADER, REPO / "agtool_lab")
        for path in sorted(root.rglob("*.py"))
    }


def modules_loaded_by(statement: str) -> list[str]:
    """The modules a fresh interpreter has loaded after running ``statement``."""
    code = f"{statement}; import json, sys; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def engine_modules(loaded: list[str]) -> list[str]:
    return [name for name in loaded if name == "grader.engine" or name.startswith("grader.engine.")]


# -- (a) the engine imports nothing that judges or runs batches

ENGINE_FILES = sorted((GRADER / "engine").glob("*.py"))


def test_the_engine_has_files_to_check():
    assert {"client.py", "forkserver.py", "child.py", "protocol.py"} <= {path.name for path in ENGINE_FILES}


@pytest.mark.parametrize("path", ENGINE_FILES, ids=lambda path: path.name)
def test_the_engine_imports_no_judging_batch_cli_or_kernel_code(path):
    assert forbidden_imports(path.read_text(encoding="utf-8"), module_name(path)) == []


def test_the_fork_server_preloads_nothing_the_engine_may_not_import():
    from grader.engine.forkserver import PRELOAD

    assert forbidden_imports("\n".join(f"import {name}" for name in PRELOAD), "grader.engine.forkserver") == []


@pytest.mark.parametrize(
    "source",
    [
        "def later():\n    from grader.checks.registry import Check\n",
        "from grader import grading\n",
        "from ..batch import pool\n",
        "import agtool_lab.widget\n",
        "import importlib\nimportlib.import_module('grader.cli')\n",
    ],
)
def test_a_forbidden_import_in_the_engine_is_seen(source):
    assert forbidden_imports(source, "grader.engine.client")


# -- (b) no import cycle among the grader's modules


def test_the_grader_s_modules_import_each_other_without_a_cycle():
    graph = import_graph(grader_sources())
    assert "grader.engine.protocol" in graph["grader.grading"]  # the graph sees the imports
    assert find_cycle(graph) == []


def test_a_cycle_through_a_function_level_import_is_seen():
    sources = {
        "grader": ("", True),
        "grader.report": ("def load():\n    from grader.grading import grade\n", False),
        "grader.grading": ("from grader import report\n", False),
    }
    assert find_cycle(import_graph(sources)) == ["grader.grading", "grader.report", "grader.grading"]


# -- (c) the package faces load nothing they do not need


def test_importing_grader_starts_no_engine():
    assert engine_modules(modules_loaded_by("import grader, sys")) == []


def test_importing_the_report_loads_neither_the_engine_nor_langgraph():
    loaded = modules_loaded_by("import grader.report")
    assert engine_modules(loaded) == []
    assert [name for name in loaded if name.split(".")[0] == "langgraph"] == []


def test_a_module_that_loads_the_engine_is_seen():
    loaded = modules_loaded_by("import grader.engine.client")
    assert "grader.engine.protocol" in engine_modules(loaded)


# -- (d) every row of the table of allowed imports (grader/layers.py) holds


def table_violations(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """``importer -> imported`` for every import of a project module that the importer's row does not allow."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in import_graph(sources).items()
        for target in targets
        if not layers.may_import(module, target)
    )


def package_of(module: str) -> str:
    """The unit a package loop is counted in: ``grader.batch.run`` -> ``grader.batch``; ``grader.cli`` stays."""
    parts = module.split(".")
    return "agtool_lab" if parts[0] == "agtool_lab" else ".".join(parts[:2])


def package_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """``{package: other packages it imports}`` (imports inside functions count)."""
    graph: dict[str, set[str]] = {}
    for module, targets in import_graph(sources).items():
        graph.setdefault(package_of(module), set()).update(package_of(target) for target in targets)
    return {package: targets - {package} for package, targets in graph.items()}


def test_every_module_has_a_row_in_the_table():
    assert [module for module in project_sources() if layers.owner(module) is None] == []


@pytest.mark.parametrize("layer", layers.LAYERS, ids=lambda layer: layer.packages[-1])
def test_every_row_of_the_import_table_holds(layer):
    sources = project_sources()
    mine = [module for module in sources if layers.owner(module) is layer]
    assert mine, f"no module belongs to the row of {layer.packages}: rename the row to the tree"
    assert [line for line in table_violations(sources) if line.split(" -> ")[0] in mine] == []


def test_the_table_points_no_arrow_back_up():
    for index, layer in enumerate(layers.LAYERS):
        for name in layer.may_import:
            if name != layers.EVERY_GRADER_MODULE:
                above = layers.owner(name)
                assert above is not None and layers.LAYERS.index(above) < index, (layer.packages, name)


@pytest.mark.parametrize(
    "module, source",
    [
        ("grader.batch.run", "def later():\n    from grader.cli import main\n"),
        ("grader.course.policy", "from grader.batch import discovery\n"),
        ("grader.render", "from grader import grading\n"),
        ("grader.report", "import grader.engine.client\n"),
        ("grader.checks.step1", "from grader.batch import pool\n"),
        ("grader.service.app", "import grader.cli\n"),
        ("agtool_lab.widget", "from grader.batch import run\n"),
        ("grader.spec", "from grader import escape\n"),
    ],
)
def test_an_import_the_table_forbids_is_seen(module, source):
    names = (
        "grader",
        "grader.batch",
        "grader.batch.discovery",
        "grader.batch.pool",
        "grader.batch.run",
        "grader.cli",
        "grader.grading",
        "grader.engine",
        "grader.engine.client",
        "grader.escape",
    )
    sources = {name: ("", name in ("grader", "grader.batch", "grader.engine")) for name in names}
    sources[module] = (source, False)
    assert [line for line in table_violations(sources) if line.startswith(module + " ")]


def test_no_package_imports_another_that_imports_it_back():
    graph = package_graph(project_sources())
    assert "grader.grading" in graph["grader.batch"]  # the graph sees the imports
    assert find_cycle(graph) == []


def test_a_package_loop_through_a_function_level_import_is_seen():
    sources = {
        "grader.batch": ("", True),
        "grader.batch.run": ("def later():\n    from grader.cli import main\n", False),
        "grader.cli": ("from grader.batch import run\n", False),
    }
    assert find_cycle(package_graph(sources)) == ["grader.batch", "grader.cli", "grader.batch"]


def environment_readers(source: str) -> bool:
    """Whether ``source`` touches ``os.environ`` or calls ``os.getenv`` (names, not words in strings)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb"):
            if isinstance(node.value, ast.Name) and node.value.id == "os":
                return True
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            if any(alias.name in ("environ", "getenv", "environb") for alias in node.names):
                return True
    return False


def test_the_environment_is_read_only_where_the_architecture_page_says():
    assert environment_readers("import os\nx = os.environ.get('A')\n")  # the rule can fail
    assert environment_readers("from os import getenv\n")
    assert not environment_readers("text = 'os.environ'\n")
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Where the environment is read", 1)[1].split("\n## ", 1)[0]
    listed = {line.split("`")[1] for line in section.splitlines() if line.startswith("| `")}
    found = {
        path.relative_to(REPO).as_posix()
        for folder in ("grader", "agtool_lab")
        for path in (REPO / folder).rglob("*.py")
        if environment_readers(path.read_text(encoding="utf-8"))
    }
    assert found == listed, (
        f"reading os.environ outside docs/architecture.md's list: {sorted(found - listed)}; "
        f"listed but no longer reading it: {sorted(listed - found)}"
    )
