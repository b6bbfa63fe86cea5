"""Which ``tools.py`` the lab works on, and loading it into the kernel for the playgrounds.

The notebooks grade and play with ``agtool/tools.py`` found from the working
folder (a notebook's folder: the learner's copy of the lab, e.g. ``~/labs``
beside ``~/agtool`` on a hub), unless ``$AGTOOL_MODULE`` names another file.
The learner's package is never installed: it is found on disk, so
``import agtool.tools`` can never pick up a copy in site-packages.

Example::

    >>> learner_path("solutions").name
    'tools.py'
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from pathlib import Path
from types import ModuleType

from grader.locate import PACKAGE_MODULE, resolve_submission
from grader.settings import Settings, current, env_name

ENV_VAR = env_name("module")
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODULE = REPO_ROOT / PACKAGE_MODULE

_counter = itertools.count()


def learner_path(path: str | os.PathLike[str] | None = None, *, settings: Settings | None = None) -> Path:
    """The module the labs work on.

    ``path`` if given, else ``$AGTOOL_MODULE`` (``settings.module``; the
    settings default to this kernel's environment, read now), else the
    ``agtool/tools.py`` found from the working folder (a notebook's folder:
    the learner's copy of the lab, e.g. ``~/labs`` beside ``~/agtool`` on a
    hub), else this checkout's ``agtool/tools.py``.

    >>> learner_path(settings=Settings(module="solutions/tools.py")).parent.name
    'solutions'
    """
    chosen = path or (settings or current()).module or _nearby_module() or DEFAULT_MODULE
    return resolve_submission(chosen)


def _nearby_module() -> Path | None:
    here = Path.cwd()
    for folder in (here, here.parent):
        candidate = folder / PACKAGE_MODULE
        if candidate.is_file():
            return candidate
    return None


def load_module(path: str | os.PathLike[str] | None = None) -> ModuleType:
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
