"""What each package may import: the one table, as data.

``tests/test_layout.py`` enforces every row on the source (imports inside
functions count), and the documentation's "Allowed imports" page is
generated from it (:func:`imports_markdown`). A row names its packages or
modules, where their code runs, which grader modules they may import
besides their own package, and the third-party libraries they use. Rows go
from the foundation up: a row may import only rows listed before it, so no
arrow points back up (the layout test holds the table to that too).

Example::

    >>> owner("grader.engine.child").packages
    ('grader.engine',)
    >>> may_import("grader.batch.run", "grader.cli")
    False
    >>> may_import("grader.render", "grader.escape")
    True
"""

from __future__ import annotations

from dataclasses import dataclass

ROOT = "grader"  # the lazy package face: matched exactly, never as a prefix of every module
EVERY_GRADER_MODULE = "grader.*"  # in ``may_import``: any module of the grader (the command line's row)


@dataclass(frozen=True)
class Layer:
    """One row of the table: ``packages`` run in ``runs_in`` and may import ``may_import`` (and themselves)."""

    packages: tuple[str, ...]
    runs_in: str
    may_import: tuple[str, ...]
    third_party: str = ""

    def holds(self, module: str) -> bool:
        """Whether ``module`` belongs to this row (``grader.engine.child`` to ``grader.engine``)."""
        return any(_within(module, package) for package in self.packages)


# Every row may import the package face and its lazy loader (``from grader import spec`` names ``grader``).
EVERYONE = (ROOT, "grader.lazy")
FOUNDATION = ("grader.spec", "grader.settings", "grader.escape", "grader.lazy", "grader.seeds", "grader.locate")

LAYERS: tuple[Layer, ...] = (
    Layer(("grader.limits",), "anywhere, the step child included", (), "the standard library only"),
    Layer((ROOT,) + FOUNDATION, "anywhere, the step child included", ("grader.limits",), "the standard library only"),
    Layer(
        ("grader.report",),
        "anywhere",
        ("grader.escape",),
        "the standard library only (`import grader.report` loads neither the engine nor LangGraph)",
    ),
    Layer(
        ("grader.messages",), "anywhere", ("grader.spec", "grader.escape", "grader.report"), "the standard library only"
    ),
    Layer(
        ("grader.render",),
        "anywhere",
        ("grader.report", "grader.escape", "grader.messages", "grader.spec"),
        "the standard library only",
    ),
    Layer(("grader.layers",), "the tests and the documentation build", (), "the standard library only"),
    Layer(
        ("grader.engine",),
        "the grading process (client), the fork server and the step child (the rest)",
        ("grader.spec", "grader.settings", "grader.limits"),
        "LangGraph (preloaded by the fork server); never judging, batch, CLI or kernel-side code",
    ),
    Layer(
        ("grader.shared_options",),
        "the command line and the service's start (`check`, `batch`, `serve`)",
        ("grader.engine.sandbox", "grader.settings"),
        "the standard library only (argparse)",
    ),
    Layer(
        ("grader.checks",),
        "the grading process",
        ("grader.spec", "grader.engine.encode", "grader.engine.wire", "grader.report"),
        "none (judging reads the spec and the observations)",
    ),
    Layer(
        ("grader.grading",),
        "the grading process",
        (
            "grader.engine",
            "grader.checks",
            "grader.report",
            "grader.locate",
            "grader.messages",
            "grader.settings",
            "grader.escape",
            "grader.spec",
            "grader.seeds",
        ),
        "none",
    ),
    Layer(
        ("grader.course",),
        "the instructor's process and the service",
        ("grader.report", "grader.escape", "grader.checks.registry", "grader.settings", "grader.spec"),
        "tomli before Python 3.11",
    ),
    Layer(
        ("grader.outputs",),
        "the instructor's process and the service",
        (
            "grader.course",
            "grader.report",
            "grader.render",
            "grader.escape",
            "grader.checks.registry",
            "grader.settings",
            "grader.limits",
            "grader.spec",
            "grader.messages",
        ),
        "pandas, matplotlib, copydetect (extra `batch`)",
    ),
    Layer(
        ("grader.batch",),
        "the instructor's process and batch workers",
        ("grader.grading", "grader.outputs", "grader.course", "grader.limits")
        + FOUNDATION
        + ("grader.engine", "grader.checks", "grader.report", "grader.render", "grader.messages"),
        "tqdm, pandas, matplotlib (extra `batch`), dask (extra `dask`)",
    ),
    Layer(
        ("grader.service.lti",),
        "the service's process; `hub_auth` in the hub's",
        ("grader.limits",),
        "pylti1p3 (from pylti1p3next), PyJWT, cryptography, jsonschema, requests, SQLAlchemy, "
        "jupyterhub-ltiauthenticator (extra `lti`)",
    ),
    Layer(
        ("grader.service",),
        "the service's process (learner code never runs there)",
        (
            "grader.batch",
            "grader.outputs",
            "grader.course",
            "grader.report",
            "grader.render",
            "grader.engine.sandbox",
            "grader.settings",
            "grader.limits",
            "grader.seeds",
            "grader.shared_options",
            "grader.escape",
            "grader.spec",
            "grader.messages",
            "grader.service.lti",
        ),
        "tornado, SQLAlchemy, Alembic, JupyterHub, Jinja (extra `service`)",
    ),
    Layer(
        ("grader.service.handlers",),
        "the service's process: its HTML pages (templates render them)",
        ("grader.service", "grader.outputs", "grader.report", "grader.settings"),
        "tornado, JupyterHub (extra `service`)",
    ),
    Layer(
        ("grader.service.api",),
        "the service's process: its REST API (JSON and the class's downloads)",
        ("grader.service", "grader.outputs", "grader.report"),
        "tornado, JupyterHub (extra `service`)",
    ),
    Layer(
        ("grader.service.app",),
        "the service's process: its routes, each to an API or a page handler",
        (
            "grader.service",
            "grader.service.handlers",
            "grader.service.api",
            "grader.service.lti",
            "grader.outputs.plots",
        ),
        "tornado, JupyterHub (extra `service`)",
    ),
    Layer(
        ("grader.service.serve",),
        "the service's process: the server, its database, queue and application",
        (
            "grader.service.app",
            "grader.service",
            "grader.service.lti",
            "grader.engine.sandbox",
            "grader.settings",
            "grader.limits",
            "grader.seeds",
        ),
        "tornado (extra `service`)",
    ),
    Layer(
        ("grader.service.command",),
        "the command line (`agtool-grade serve`): options, then the server",
        (
            "grader.service.serve",
            "grader.service",
            "grader.service.lti",
            "grader.course",
            "grader.outputs",
            "grader.engine.sandbox",
            "grader.settings",
            "grader.limits",
            "grader.seeds",
            "grader.shared_options",
            "grader.spec",
        ),
        "the standard library only",
    ),
    Layer(
        ("grader.service.__main__",),
        "`python -m grader.service`",
        ("grader.service.command",),
        "the standard library only",
    ),
    Layer(
        ("grader.cli", "grader.__main__"),
        "the command line (`agtool-grade`)",
        (EVERY_GRADER_MODULE,),
        "whatever the command it runs needs",
    ),
    Layer(
        ("agtool_lab",),
        "the learner's Jupyter kernel",
        (
            "grader.grading",
            "grader.report",
            "grader.render",
            "grader.spec",
            "grader.locate",
            "grader.escape",
            "grader.settings",
            "grader.limits",
            "grader.messages",
        ),
        "ipywidgets, pandas, matplotlib, httpx (extra `lab`)",
    ),
)


def _within(module: str, package: str) -> bool:
    """``module`` is ``package`` or inside it; the root face ``grader`` holds only itself."""
    return module == package or (package != ROOT and module.startswith(package + "."))


def owner(module: str) -> Layer | None:
    """The row that holds ``module`` (the most specific package wins), or ``None``.

    Example::

        >>> owner("grader.checks.registry").runs_in
        'the grading process'
        >>> owner("json") is None
        True
    """
    best: tuple[int, Layer] | None = None
    for layer in LAYERS:
        for package in layer.packages:
            if _within(module, package) and (best is None or len(package) > best[0]):
                best = (len(package), layer)
    return best[1] if best else None


def may_import(importer: str, imported: str) -> bool:
    """Whether module ``importer`` may import module ``imported`` (both of this project).

    A module may import its own row's packages, the package face, and the
    row's ``may_import`` (a package there allows its submodules, but not
    those of a more specific row: ``grader.service`` does not allow
    ``grader.service.api``; ``grader.*`` allows every grader module).

    Example::

        >>> may_import("grader.engine.client", "grader.checks.registry")
        False
        >>> may_import("grader.checks.step1", "grader.engine.encode")
        True
        >>> may_import("grader.cli", "grader.service.app")
        True
        >>> may_import("grader.service.db", "grader.service.api.base"), may_import("grader.service.app", "grader.service.api")
        (False, True)
    """
    layer = owner(importer)
    if layer is None:
        return True  # not this project's module: nothing to enforce
    own = tuple(package for package in layer.packages if _within(importer, package))
    if EVERY_GRADER_MODULE in layer.may_import and (imported == ROOT or imported.startswith(ROOT + ".")):
        return True
    # A name allows the modules of its own row: "grader.service" is not "grader.service.api", a row above it.
    target = owner(imported)
    return any(_within(imported, name) and owner(name) is target for name in own + EVERYONE + layer.may_import)


def imports_markdown() -> str:
    """The table of allowed imports in Markdown, one line per row (the docs page's body).

    Example::

        >>> imports_markdown().splitlines()[0]
        '| package | runs in | may import | third-party |'
    """
    lines = ["| package | runs in | may import | third-party |", "|---|---|---|---|"]
    for layer in LAYERS:
        packages = ", ".join(f"`{name}`" for name in layer.packages)
        allowed = ", ".join(f"`{name}`" for name in layer.may_import) or "nothing of the project"
        lines.append(f"| {packages} | {layer.runs_in} | {allowed} | {layer.third_party} |")
    return "\n".join(lines) + "\n"
