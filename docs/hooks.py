"""MkDocs hooks: the pages generated from the code, and their committed copies.

Three pages are generated: ``checks.md`` from the check registry,
``settings.md`` from ``grader/settings.py``, ``grader/shared_options.py``,
``grader/limits.py`` and the engine's ``Limits``, and ``imports.md`` from
the table of allowed imports (``grader/layers.py``). At build time the hook below
replaces each page's text with a fresh generation, so the site always says
what the code does; the copies committed in ``docs/`` (read on GitHub) are
held to the same text by ``tests/test_docs.py``. Refresh them with::

    .venv/bin/python docs/hooks.py
"""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parent

SETTINGS_INTRO = """# Settings

Every setting the grader reads from the environment, declared once in
`grader/settings.py` (the `Settings` dataclass: each field with its type,
default, environment variable and help text). The entry points read them
once (`Settings.from_environ()`) and pass them down; a command-line option,
where there is one, wins over its variable. This page is generated from that
declaration (`grader.settings.settings_markdown()`).

"For" says who sets it: *everyone* (any command or notebook), *lab* (the
learner's kernel), *hub* (set by JupyterHub for a server or a service),
*service* (the classroom grading service), *internal* (set by the grader for
its own child processes; never set it yourself).

"""

OPTIONS_INTRO = """
## Options shared by `check`, `batch` and `serve`

Declared once in `grader/shared_options.py` (type, default, the variable
that gives the default, help); both parsers add them from there, and this
table is generated from it (`grader.shared_options.options_markdown()`). A
command's own options are in its `--help`.

"""

LIMITS_INTRO = """
## Limits

Every limit above the engine, declared once with its reason in
`grader/limits.py` (`grader.limits.limits_markdown()`). "Changed by" names
the option that changes it, if any.

"""

STEP_LIMITS_INTRO = """
### Limits of one step

The bounds of one step's process, declared once in
`grader.engine.protocol.Limits` (its docstring says what each means; the
[architecture](architecture.md#limits-of-a-step-as-a-whole) says how they
are enforced).

"""

IMPORTS_INTRO = """# Allowed imports

What each package may import, and where its code runs. The table is data in
`grader/layers.py`; `tests/test_layout.py` enforces every row on the source
(imports inside functions count), checks that a row imports only rows above
it (no arrow back up), that no two packages import each other (a loop among
`batch`, `course`, `service` and `cli` included) and that the grader's
modules have no import cycle. This page is generated from the table
(`grader.layers.imports_markdown()`).

Every module may also import its own package, the package face `grader`
and its lazy loader `grader.lazy`; `grader.*` means any module of the
grader.

"""


def checks_page() -> str:
    """``docs/checks.md``: the checks and the spec rules they cover."""
    import grader.checks

    return grader.checks.rules_table_markdown()


def settings_page() -> str:
    """``docs/settings.md``: every setting of ``grader.settings.Settings``."""
    import grader.limits
    import grader.settings
    import grader.shared_options

    return (
        SETTINGS_INTRO
        + grader.settings.settings_markdown()
        + OPTIONS_INTRO
        + grader.shared_options.options_markdown()
        + LIMITS_INTRO
        + grader.limits.limits_markdown()
        + STEP_LIMITS_INTRO
        + step_limits_markdown()
    )


def step_limits_markdown() -> str:
    """The engine's limits of one step (``grader.engine.protocol.Limits``), with their defaults."""
    import dataclasses

    from grader.engine.protocol import Limits

    rows = ["| limit | default |", "|---|---|"]
    for f in dataclasses.fields(Limits):
        rows.append(f"| `{f.name}` | {'(see its docstring)' if f.default is None else f'`{f.default}`'} |")
    return "\n".join(rows) + "\n"


def imports_page() -> str:
    """``docs/imports.md``: the table of allowed imports."""
    import grader.layers

    return IMPORTS_INTRO + grader.layers.imports_markdown()


GENERATED = {"checks.md": checks_page, "settings.md": settings_page, "imports.md": imports_page}


def literal_brackets(markdown: str) -> str:
    """Table cells' brackets outside code spans as plain text (a check title such as
    ``TOOLS[name]['fn']`` is not a reference link)."""
    lines = []
    for line in markdown.splitlines(keepends=True):
        if line.startswith("|"):
            parts = line.split("`")
            line = "`".join(part.replace("[", "\\[") if index % 2 == 0 else part for index, part in enumerate(parts))
        lines.append(line)
    return "".join(lines)


def on_page_markdown(markdown: str, page, **_) -> str:
    """MkDocs hook: a generated page's text comes from the code, never from a stale copy."""
    make = GENERATED.get(page.file.src_uri)
    return literal_brackets(make()) if make else markdown


SPHINX_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj):<code>~?([^<]*)</code>")


def on_page_content(html: str, **_) -> str:
    """MkDocs hook: the docstrings' Sphinx roles (``:class:`~grader.report.Report```) shown as plain code."""
    return SPHINX_ROLE.sub(lambda match: f"<code>{match.group(1)}</code>", html)


def write_copies() -> list[str]:
    """Rewrite the committed copies that differ from the code; the names of those rewritten."""
    changed = []
    for name, make in GENERATED.items():
        path, text = DOCS / name, make()
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(name)
    return changed


if __name__ == "__main__":
    print("rewritten:", ", ".join(write_copies()) or "nothing (every copy is up to date)")
