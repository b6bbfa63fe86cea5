"""The refactoring gate: behaviour-preserving rewrites of correct modules, each graded with the real grader.

The twin of the mutation gate (``tests/mutation``): that one proves wrong code
is caught, this one proves right code is kept. ``rewrites.py`` turns each
correct module (``bases.py``: the solution, ``tests/alt_styles``, the composed
part-two modules) into many rewrites that keep its behaviour as LAB_SPEC sees
it (functions held in tables, closures, partials, bound methods, names bound
again, extra State keys, its own counters, helpers moved, private exceptions,
loops and comprehensions, free orders); ``behaviour.py`` checks that they do;
``python -m tests.refactoring --gate`` (``make refactoring``) grades every
rewrite on three seeds and fails on any rewrite that loses a point.
"""

from .rewrites import KINDS, Rewrite, generate

__all__ = ["KINDS", "Rewrite", "generate"]
