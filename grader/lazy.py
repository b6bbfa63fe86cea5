"""A package face that loads a module only when one of its names is asked for (PEP 562).

A package's *face* is its ``__init__``: the names it offers and where each lives.

``import grader`` must not start the engine, and ``grader.batch`` must be
importable on a core install without pandas: their ``__init__`` names what
they offer and where it lives, and nothing is imported until it is used.

Example::

    >>> __getattr__, names = lazy_face("pkg", {"dumps": "json"})
    >>> __getattr__("dumps").__module__, names
    ('json', ['dumps'])
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_face(package: str, names: dict[str, str]) -> tuple[Callable[[str], object], list[str]]:
    """A module ``__getattr__`` for ``package`` and its ``__all__``, from ``{name: module that defines it}``."""

    def __getattr__(name: str) -> object:
        if name in names:
            return getattr(importlib.import_module(names[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__, sorted(names)
