"""Loading the learner module in the kernel, and showing what its code did without raising."""

from __future__ import annotations

import asyncio
import html
import io
import pprint
import traceback
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ipywidgets as widgets
from matplotlib.figure import Figure

from agtool_lab.load import learner_path, load_module
from agtool_lab.view import NOTEBOOKS

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
        _LIVE.add(self)  # a playground showing an error waits for this file to change (refresh_after_fix)

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
    """Set ``target`` to ``render()``, or to a friendly message if learner code raised.

    A message stays only while the learner's file is as it was: once the file
    changes on disk (the fix saved), the playground draws again by itself,
    with no control touched (:func:`refresh_after_fix`).
    """
    try:
        shown = render()
        _STALE.pop(id(target), None)
    except Exception as exc:  # learner code: anything can happen, the notebook must go on
        shown = friendly_error(exc)
        _STALE[id(target)] = (target, render, _stamps())
        _keep_watching()
    # ipywidgets' HTML inherits a 28px line height, too airy for tables and dicts.
    target.value = f'<div style="line-height:1.45">{shown}</div>'


# The playgrounds showing an error, by widget: (widget, how to draw it, the learner files' stamps then).
_STALE: dict[int, tuple[widgets.HTML, Callable[[], str], dict[str, tuple | None]]] = {}
_LIVE: weakref.WeakSet[LiveModule] = weakref.WeakSet()
WATCH_SECONDS = 1.0  # how often a playground showing an error looks at the learner's file
_watching: list[tuple[asyncio.AbstractEventLoop, asyncio.TimerHandle]] = []  # at most one: (loop, next look)


def _stamps() -> dict[str, tuple | None]:
    """The (mtime, size) of every learner file a playground of this kernel reads (``None``: not there)."""
    stamps: dict[str, tuple | None] = {}
    for live in list(_LIVE):
        try:
            stamps[str(learner_path(live.path))] = live._file_stamp()
        except (OSError, ValueError):
            stamps[str(live.path)] = None
    return stamps


def refresh_after_fix() -> int:
    """Draw again every playground that shows an error and whose learner file changed since; how many.

    The kernel's event loop calls this every :data:`WATCH_SECONDS` while a
    playground shows an error: a ``SyntaxError`` fixed and saved in the
    editor leaves the playground at once, not when a control is next touched.

    >>> refresh_after_fix()  # nothing waiting
    0
    """
    now = _stamps()
    redrawn = 0
    for key, (target, render, then) in list(_STALE.items()):
        if any(now.get(path, stamp) != stamp for path, stamp in then.items()):
            _STALE.pop(key, None)
            guard(target, render)  # waits again if it still fails
            redrawn += 1
    return redrawn


def _keep_watching() -> None:
    """Call :func:`refresh_after_fix` on the kernel's event loop until no playground shows an error."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no event loop (a plain script, a test): refresh_after_fix() is called by hand
        return
    if _watching and _watching[0][0] is loop and not _watching[0][1].cancelled():
        return  # already watching on this loop

    def tick() -> None:
        _watching.clear()
        refresh_after_fix()
        if _STALE:
            _watching.append((loop, loop.call_later(WATCH_SECONDS, tick)))

    _watching.clear()
    _watching.append((loop, loop.call_later(WATCH_SECONDS, tick)))


def png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return buffer.getvalue()


def chart_image() -> widgets.Image:
    """An image for a playground's chart, hidden until :func:`show_chart` draws in it.

    >>> chart_image().layout.display
    'none'
    """
    return widgets.Image(format="png", layout=widgets.Layout(display="none"))


def show_chart(chart: widgets.Image, fig: Figure | None) -> None:
    """Draw ``fig`` in ``chart``; with ``None`` hide it: an Image without a picture shows as a broken one.

    >>> chart = chart_image(); show_chart(chart, None); chart.layout.display, bytes(chart.value)
    ('none', b'')
    """
    chart.value = png(fig) if fig is not None else b""
    chart.layout.display = None if fig is not None else "none"


# The module-level data a playground draws from: the step whose notebook gives it, and how.
DATA_STEPS = {
    "STOCK": (1, "paste the STOCK block of {notebook} into your tools.py"),
    "REGIONS": (1, "set it to the five regions {notebook} lists"),
}


def missing_data(tools, names) -> str:
    """A sentence for the first of ``names`` that ``tools`` lacks or leaves empty, and the step that builds
    it; ``""`` when all are there. A playground says this instead of drawing from nothing.

    >>> class Starter: REGIONS = ["north"]; STOCK = []
    >>> print(missing_data(Starter, ["REGIONS", "STOCK"]))
    STOCK is empty: step 1 builds it (paste the STOCK block of 01_contract_table.ipynb into your tools.py).
    >>> missing_data(Starter, ["REGIONS"])
    ''
    """
    for name in names:
        value = getattr(tools, name, None)
        state = "is not in your module" if not hasattr(tools, name) else "is empty" if not value else ""
        if state:
            step, how = DATA_STEPS[name]
            return f"{name} {state}: step {step} builds it ({how.format(notebook=NOTEBOOKS[step])})."
    return ""


def missing_html(sentence: str) -> str:
    """:func:`missing_data`'s sentence as the playground shows it, escaped.

    >>> missing_html("STOCK is empty <now>")
    '<span class="agtool-missing" style="color:#9a6700"><b>Nothing to show yet.</b> STOCK is empty &lt;now&gt;</span>'
    """
    return f'<span class="agtool-missing" style="color:#9a6700"><b>Nothing to show yet.</b> {esc(sentence)}</span>'
