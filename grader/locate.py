"""Find the learner's module file, and load it for playgrounds.

The grader, the notebooks and the batch grader all accept the same kinds of
path: a ``tools.py`` file, a folder holding ``tools.py``, or a folder holding
``agtool/tools.py``. The notebooks grade ``agtool/tools.py`` of this
checkout unless the environment variable ``AGTOOL_MODULE`` names another file.

Example::

    >>> resolve_submission("solutions").name
    'tools.py'
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from pathlib import Path
from types import ModuleType

ENV_VAR = "AGTOOL_MODULE"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODULE = REPO_ROOT / "agtool" / "tools.py"

_counter = itertools.count()


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
        for candidate in (p / "tools.py", p / "agtool" / "tools.py"):
            if candidate.is_file():
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


def learner_path(path: "str | os.PathLike[str] | None" = None) -> Path:
    """The module the labs work on.

    ``path`` if given, else ``$AGTOOL_MODULE``, else the ``agtool/tools.py``
    found from the working folder (a notebook's folder: the learner's copy of
    the lab, e.g. ``~/labs`` beside ``~/agtool`` on a hub), else this
    checkout's ``agtool/tools.py``.
    """
    chosen = path or os.environ.get(ENV_VAR) or _nearby_module() or DEFAULT_MODULE
    return resolve_submission(chosen)


def _nearby_module() -> "Path | None":
    here = Path.cwd()
    for folder in (here, here.parent):
        candidate = folder / "agtool" / "tools.py"
        if candidate.is_file():
            return candidate
    return None


def load_module(path: "str | os.PathLike[str] | None" = None) -> ModuleType:
    """Import the learner module afresh, under a new name, so edits on disk are seen.

    For playgrounds only: this runs learner code in the calling process. The
    grader never does this; it imports learner code in a child process.
    """
    file = learner_path(path)
    name = f"agtool_learner_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    # Registered because typing.get_type_hints (used by LangGraph on State)
    # resolves string annotations through sys.modules[State.__module__].
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
