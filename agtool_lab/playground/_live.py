"""Loading the learner module in the kernel, and showing what its code did without raising."""
from __future__ import annotations

import html
import io
import pprint
import traceback
from pathlib import Path
from typing import Any, Callable

import ipywidgets as widgets
from matplotlib.figure import Figure

from agtool_lab.load import learner_path, load_module

RED, GREEN, GREY = "#cf222e", "#1a7f37", "#6e7781"


class LiveModule:
    """The learner module, imported again whenever its file changes on disk.

    >>> live = LiveModule("solutions/tools.py")
    >>> live.get().MAX_ROWS
    5
    """

    def __init__(self, path=None):
        self.path = path
        self._module = None
        self._stamp: tuple | None = None

    def _file_stamp(self) -> tuple:
        stat = learner_path(self.path).stat()
        return (stat.st_mtime_ns, stat.st_size)

    def get(self, *, fresh: bool = False):
        """The module; re-imported if ``fresh`` or if the file changed since the last import."""
        stamp = self._file_stamp()
        if fresh or self._module is None or stamp != self._stamp:
            self._module = None  # a failed import must not leave the old module in use
            self._module = load_module(self.path)
            self._stamp = stamp
        return self._module


def friendly_error(exc: BaseException) -> str:
    """An exception from learner code as one short line of HTML.

    >>> friendly_error(NotImplementedError("step 2: write validate_args"))
    '<span style="color:#6e7781">Not written yet: step 2: write validate_args</span>'
    """
    if isinstance(exc, NotImplementedError):
        return f'<span style="color:{GREY}">Not written yet: {esc(exc)}</span>'
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    learner_frames = [f for f in frames if f.filename.endswith("tools.py")]
    if learner_frames:
        last = learner_frames[-1]
        where = f" (line {last.lineno} of {Path(last.filename).name}: <code>{esc(last.line)}</code>)"
    return f'<span style="color:{RED}"><b>{type(exc).__name__}</b>: {esc(exc)}{where}</span>'


def esc(value: Any) -> str:
    return html.escape(str(value))


def pre(value: Any) -> str:
    text = value if isinstance(value, str) else pprint.pformat(value, width=72, sort_dicts=False)
    return f'<pre style="margin:2px 0">{esc(text)}</pre>'


def guard(target: widgets.HTML, render: Callable[[], str]) -> None:
    """Set ``target`` to ``render()``, or to a friendly message if learner code raised."""
    try:
        shown = render()
    except Exception as exc:  # learner code: anything can happen, the notebook must go on
        shown = friendly_error(exc)
    # ipywidgets' HTML inherits a 28px line height, too airy for tables and dicts.
    target.value = f'<div style="line-height:1.45">{shown}</div>'


def png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return buffer.getvalue()
