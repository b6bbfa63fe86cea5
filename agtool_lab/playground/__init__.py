"""Playgrounds for the lab notebooks: try your own ``agtool/tools.py`` with widgets.

Unlike the Check cell, these run the learner's code *in the kernel*, through
:func:`agtool_lab.load.load_module`. The module is imported again whenever the
file changes on disk (and on "Fresh import"), so edits are seen without a
kernel restart, while counters such as ``CALLS`` and ``CACHE`` keep moving
between clicks. Nothing here judges: a playground shows what the learner's
functions return; the grade comes from ``check``.

Every playground is a function returning an ipywidgets box, e.g.::

    from agtool_lab.playground import args_playground
    args_playground()

A function that still raises ``NotImplementedError`` shows "not written yet"
instead of a traceback.
"""

from __future__ import annotations

from agtool_lab.playground._live import LiveModule, friendly_error
from agtool_lab.playground.args import ArgsBuilder, args_playground, cache_playground, call_playground
from agtool_lab.playground.data import contract_playground, result_playground
from agtool_lab.playground.part_two import coercion_playground, identity_playground, suggestion_playground
from agtool_lab.playground.path import draw_path, order_path, path_playground
from agtool_lab.playground.report import report_playground

__all__ = [
    "ArgsBuilder",
    "LiveModule",
    "args_playground",
    "cache_playground",
    "call_playground",
    "coercion_playground",
    "contract_playground",
    "draw_path",
    "friendly_error",
    "identity_playground",
    "order_path",
    "path_playground",
    "report_playground",
    "result_playground",
    "suggestion_playground",
]
