"""The kernel side of the lab: the Check cell's widget, the playgrounds, the noisy model.

Code here runs in the learner's Jupyter kernel. The Check cell
(:func:`agtool_lab.widget.check`) grades through :func:`grader.grade`, which
runs the learner's module in child processes; the playgrounds
(:mod:`agtool_lab.playground`) and the capstone's noisy model
(:mod:`agtool_lab.noisy`) load it into the kernel itself, through
:mod:`agtool_lab.load`. Nothing here judges.

``from agtool_lab import check`` loads the widget only when asked (PEP 562).

Example::

    >>> import agtool_lab
    >>> agtool_lab.check.__module__
    'agtool_lab.widget'
"""

from __future__ import annotations

from grader.lazy import lazy_face

__getattr__, __all__ = lazy_face(__name__, {"check": "agtool_lab.widget", "working_on": "agtool_lab.widget"})
