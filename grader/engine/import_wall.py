"""The grader's own packages refused at the import system, whatever spelling learner code uses.

A step child imported the grader (its probes, its spec's stand-ins) before
any learner code ran, and a submission built on those stand-ins would be
judged on them, not on itself. The module's own ``__import__`` is one
spelling of an import among many (``importlib.import_module``,
``builtins.__import__``, ``__import__`` saved before the step began,
``importlib.util.spec_from_file_location`` on the grader's files), so the
refusal sits where every spelling ends up:

* :class:`ImportWall`, first on ``sys.meta_path``: finding any module of
  :data:`FORBIDDEN` raises an ``ImportError`` that says why;
* the step child's audit hook (:mod:`grader.engine.audit`) refuses the
  ``import`` event of those names (a finder list the submission emptied)
  and opening any file under their folders (a loader built by hand, a copy
  read with ``open``), so a fresh copy of a grader module cannot be made;
* the grader's modules are gone from ``sys.modules`` before learner code
  runs (:func:`grader.engine.child._forget_grader_modules`), and the
  fork server's ``__main__`` holds no name of them (:func:`clear_main`).

This module imports nothing of the grader's: its objects (the finder on
``sys.meta_path``) lead to no grader namespace.

Example::

    >>> wall = ImportWall()
    >>> wall.find_spec("json") is None
    True
    >>> wall.find_spec("grader.engine.doubles")
    Traceback (most recent call last):
    ...
    ImportError: tools.py may not import 'grader.engine.doubles': it is the lab's grader, not part of your module; write the function yourself
"""

from __future__ import annotations

import sys
from typing import Any

# The packages a submission may not import: the grader that judges it, the lab's kernel side and the
# reference solution.
FORBIDDEN = ("grader", "agtool_lab", "solutions")


def refused_message(name: Any) -> str:
    """Why importing ``name`` is refused (the text every route of the wall raises).

    >>> refused_message("solutions.tools").startswith("tools.py may not import 'solutions.tools'")
    True
    """
    return (
        f"tools.py may not import {name!r}: it is the lab's grader, not part of your module; "
        "write the function yourself"
    )


def is_forbidden(name: Any) -> bool:
    """Whether the absolute module name ``name`` is in (or under) a :data:`FORBIDDEN` package.

    >>> is_forbidden("grader"), is_forbidden("grader.spec"), is_forbidden("graders"), is_forbidden(3)
    (True, True, False, False)
    """
    return type(name) is str and name.partition(".")[0] in FORBIDDEN


class ImportWall:
    """A meta-path finder that refuses the :data:`FORBIDDEN` packages and finds nothing else."""

    __slots__ = ()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if is_forbidden(name):
            raise ImportError(refused_message(name), name=name)
        return None

    def invalidate_caches(self) -> None:
        return None


def install() -> ImportWall:
    """(In the step child, before learner code.) Put an :class:`ImportWall` first on ``sys.meta_path``.

    Not run as a doctest: it changes the calling process.
    """
    wall = ImportWall()
    sys.meta_path.insert(0, wall)
    return wall


def clear_main() -> None:
    """(In the step child.) Drop the fork server's start-up names from ``__main__`` (they lead to its modules).

    Not run as a doctest: it empties the calling process's ``__main__``.
    """
    main = sys.modules.get("__main__")
    if main is None:
        return
    space = vars(main)
    for name in [n for n in space if not (n.startswith("__") and n.endswith("__"))]:
        del space[name]
