"""Write a corpus case to disk as a submission folder, ready to grade.

Most cases are the reference solution (or the placeholder stub) with a small
payload spliced in, so the corpus holds only the hostile part of each case.
Tokens ``@@MARKER@@`` (unique per run and case: every process a case starts
carries it) and ``@@OUTSIDE@@`` (a folder outside the submission where a
case may leave evidence) are filled in here.

Example::

    >>> path = materialise(CASES_BY_NAME["os_exit_import"], Path("/tmp/corpus"),
    ...                    marker="m1", outside=Path("/tmp/out"))   # doctest: +SKIP
    >>> path.name                                                  # doctest: +SKIP
    'os_exit_import'
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

from .manifest import HONEST, Case

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SOLUTION = REPO / "solutions" / "tools.py"
BASES = {"solution": SOLUTION, "stub": HERE / "bases" / "stub.py"}
PAYLOAD = "payload.py"


def materialise(case: Case, root: Path, *, marker: str, outside: Path) -> Path:
    """Write ``case`` under ``root/<name>`` and return the path to grade (a folder)."""
    dest = root / case.name
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    outside.mkdir(parents=True, exist_ok=True)
    tokens = {"@@MARKER@@": marker, "@@OUTSIDE@@": str(outside)}
    if case.base == "generated":
        return GENERATORS[case.name](dest, outside)
    folder = HERE / "cases" / case.folder_name
    if case.base == "file":
        source = (folder / "tools.py").read_text(encoding="utf-8")
    else:
        source = splice(case, BASES[case.base].read_text(encoding="utf-8"), folder)
    (dest / "tools.py").write_text(_fill(source, tokens), encoding="utf-8")
    _copy_beside(folder, dest, tokens)
    return dest


def splice(case: Case, base: str, folder: Path) -> str:
    """The base text with the case's replacements, helper snippets and payload."""
    for old, new in case.replace:
        count = base.count(old)
        if count != 1:
            raise ValueError(f"{case.name}: replacement anchor found {count} times, expected once: {old!r}")
        base = base.replace(old, new)
    helpers = [(HERE / "snippets" / f"{name}.py").read_text(encoding="utf-8") for name in case.include]
    if case.outside_only:
        helpers.append((HERE / "snippets" / "outside.py").read_text(encoding="utf-8"))
    payload_file = folder / PAYLOAD
    payload = payload_file.read_text(encoding="utf-8") if payload_file.exists() else ""
    if case.at == "import":
        return "\n\n".join([base.rstrip(), *helpers, payload])
    module = "\n\n".join([base.rstrip(), *helpers]) + "\n"
    if case.at:
        module = _inject(module, case.at, payload, guarded=case.outside_only)
    return module


def _inject(module: str, function: str, payload: str, *, guarded: bool) -> str:
    """Put ``payload`` on the first lines of ``function``'s body (before its docstring)."""
    pattern = re.compile(rf"^def {re.escape(function)}\(.*\).*:\n", re.MULTILINE)
    matches = pattern.findall(module)
    if len(matches) != 1:
        raise ValueError(f"def {function}(...) found {len(matches)} times, expected once")
    body = textwrap.dedent(payload).strip("\n") + "\n"
    if guarded:
        body = "if _called_from_outside():\n" + textwrap.indent(body, "    ")
    return pattern.sub(lambda m: m.group(0) + textwrap.indent(body, "    "), module, count=1)


def _fill(text: str, tokens: dict[str, str]) -> str:
    for token, value in tokens.items():
        text = text.replace(token, value)
    return text


def _copy_beside(folder: Path, dest: Path, tokens: dict[str, str]) -> None:
    """Copy the case's other files (e.g. a json.py meant to shadow the stdlib) next to tools.py."""
    if not folder.is_dir():
        return
    for src in sorted(folder.rglob("*")):
        rel = src.relative_to(folder)
        is_case_source = str(rel) in (PAYLOAD, "tools.py")  # spliced or copied above
        if src.is_dir() or is_case_source or "__pycache__" in rel.parts:
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_fill(src.read_text(encoding="utf-8"), tokens), encoding="utf-8")


def honest(name: str, root: Path) -> Path:
    """Write the honest submission ``name`` (the solution with HONEST[name] edits) to ``root/name``."""
    text = SOLUTION.read_text(encoding="utf-8")
    for old, new in HONEST[name]:
        if text.count(old) != 1:
            raise ValueError(f"{name}: anchor not found exactly once: {old!r}")
        text = text.replace(old, new)
    dest = root / name
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "tools.py").write_text(text, encoding="utf-8")
    return dest


# --------------------------------------------------------------------------- generated cases


def _non_utf8_source(dest: Path, outside: Path) -> Path:
    # A string in Latin-1 (é is 0xE9), no coding declaration: Python refuses the file.
    # (Invalid bytes in a comment slip through the tokenizer, so it is a literal.)
    (dest / "tools.py").write_bytes(b'TITLE = "Pr\xe9paration du module"\n' + SOLUTION.read_bytes())
    return dest


def _notebook_as_tools(dest: Path, outside: Path) -> Path:
    # What "Save as tools.py" gives from a notebook UI that keeps the .ipynb format.
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# My tools"),
        nbformat.v4.new_code_cell(SOLUTION.read_text(encoding="utf-8")),
    ]
    (dest / "tools.py").write_text(nbformat.writes(nb), encoding="utf-8")
    return dest


def _directory_without_module(dest: Path, outside: Path) -> Path:
    (dest / "README.md").write_text("my submission\n", encoding="utf-8")
    (dest / "tools_final_v2.py").write_text(SOLUTION.read_text(encoding="utf-8"), encoding="utf-8")
    (dest / "agtool").mkdir()
    (dest / "agtool" / "notes.txt").write_text("todo\n", encoding="utf-8")
    return dest


def _symlink_outside(dest: Path, outside: Path) -> Path:
    # Another learner's finished file, elsewhere on the disk.
    target = outside / "someone_else" / "tools.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SOLUTION, target)
    (dest / "tools.py").symlink_to(target)
    return dest


# Modules that take seconds to compile (identical code objects on
# many lines: CPython's compile is quadratic in them), each under 512 KiB: the step
# child compiles them under the step's limits, never the fork server outside them.
SLOW_COMPILE_COUNT = 25_000
SLOW_COMPILE_SHAPES = {
    "compile_slow_lambdas": "F = [\n" + "lambda:0,\n" * SLOW_COMPILE_COUNT + "]\n",  # 244 KiB
    "compile_slow_same_defs": "def _f():0\n" * SLOW_COMPILE_COUNT,
    "compile_slow_methods": "class _C:\n" + " def m(s):0\n" * SLOW_COMPILE_COUNT,
    "compile_slow_generators": "G = [\n" + "(x for x in ()),\n" * SLOW_COMPILE_COUNT + "]\n",
}


def _slow_compile(dest: Path, outside: Path) -> Path:
    # The reference solution with the slow shape after it: correct, once it is compiled.
    shape = SLOW_COMPILE_SHAPES[dest.name]
    (dest / "tools.py").write_text(SOLUTION.read_text(encoding="utf-8") + "\n\n" + shape, encoding="utf-8")
    return dest


GENERATORS = {
    **{name: _slow_compile for name in SLOW_COMPILE_SHAPES},
    "non_utf8_source": _non_utf8_source,
    "notebook_as_tools": _notebook_as_tools,
    "directory_without_module": _directory_without_module,
    "symlink_outside": _symlink_outside,
}


def describe(case: Case) -> dict:
    """A JSON-able summary of a case (for the corpus table in SECURITY.md and for debugging)."""
    return {
        "name": case.name,
        "threat": case.threat,
        "expect": case.expect.describe(),
        "bound_seconds": case.bound_seconds,
        "via": case.via,
    }


if __name__ == "__main__":  # python -m hostile.build (from tests/): print the corpus table
    from .manifest import CASES

    print(json.dumps([describe(c) for c in CASES], indent=1))
