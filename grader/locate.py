"""Find the ``tools.py`` a path designates: the one rule every grading entry point shares.

``agtool-grade check``, the notebooks, the batch and Gradescope all accept
the same kinds of path: a ``tools.py`` file, a folder holding ``tools.py``,
or a folder holding ``agtool/tools.py``. Which file a notebook works on is
the lab's business (:mod:`agtool_lab.load`).

Example::

    >>> resolve_submission("solutions").name
    'tools.py'
"""
from __future__ import annotations

import os
from pathlib import Path

MODULE_NAME = "tools.py"
PACKAGE_MODULE = Path("agtool") / MODULE_NAME  # the learner's package layout, agtool/tools.py

class SubmissionNotFound(ValueError):
    """The path given does not lead to a gradable ``tools.py``; the message says how to fix it."""


def resolve_submission(path: "str | os.PathLike[str]") -> Path:
    """Return the ``tools.py`` that ``path`` designates, or raise :class:`SubmissionNotFound`."""
    p = Path(path).expanduser()
    if not p.exists():
        raise SubmissionNotFound(
            f"{p} does not exist. Give the path of your tools.py, or of the folder that holds "
            "tools.py or agtool/tools.py."
        )
    if p.is_dir():
        candidate = module_in(p)
        if candidate:
            _refuse_link_outside(candidate, p)
            return candidate
        raise SubmissionNotFound(
            f"{p} is a folder without tools.py or agtool/tools.py. Point at the folder that holds "
            "your module, or at the file itself."
        )
    if not p.is_file():
        raise SubmissionNotFound(f"{p} is not a regular file. Give the path of your tools.py.")
    _refuse_link_outside(p, p.parent)
    return p


def module_in(folder: Path) -> "Path | None":
    """The module a folder holds: its ``tools.py``, else its ``agtool/tools.py``, else ``None``.

    >>> module_in(Path("solutions")).name, module_in(Path("labs"))
    ('tools.py', None)
    """
    for candidate in (folder / MODULE_NAME, folder / PACKAGE_MODULE):
        if candidate.is_file():
            return candidate
    return None


def _refuse_link_outside(file: Path, folder: Path) -> None:
    """Refuse a module that is, or lies under, a symbolic link leading out of ``folder``.

    A submission is graded for what it holds: a ``tools.py`` linked to a file
    elsewhere (another learner's, say) would be graded as this learner's work.
    Links that stay inside the folder are fine.
    """
    real, real_folder = file.resolve(), folder.resolve()
    if real_folder not in real.parents:
        raise SubmissionNotFound(
            f"{file} is a symbolic link to {real}, outside {folder}. The grader does not follow links "
            "out of a submission: copy the file into the folder instead of linking to it."
        )
