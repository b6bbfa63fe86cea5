"""Playgrounds for the lab notebooks: try your own ``agtool/tools.py`` with widgets.

Unlike the Check cell, these run the learner's code *in the kernel*, through
:func:`grader.locate.load_module`. The module is imported again whenever the
file changes on disk (and on "Fresh import"), so edits are seen without a
kernel restart, while counters such as ``CALLS`` and ``CACHE`` keep moving
between clicks. Nothing here judges: a playground shows what the learner's
functions return; the grade comes from ``check``.

Every playground is a function returning an ipywidgets box, e.g.::

    from grader.playground import args_playground
    args_playground()

A function that still raises ``NotImplementedError`` shows "not written yet"
instead of a traceback.
"""
from __future__ import annotations

import ast
import io
import json
import pprint
import tempfile
import textwrap
import traceback
from pathlib import Path
from typing import Any, Callable

import ipywidgets as widgets
from matplotlib.figure import Figure

from grader.locate import learner_path, load_module

__all__ = [
    "args_playground",
    "cache_playground",
    "call_playground",
    "contract_playground",
    "draw_path",
    "order_path",
    "path_playground",
    "report_playground",
    "result_playground",
]

SKUS = ["SKU-1001", "SKU-2040", "SKU-3300", "SKU-4411", "SKU-5000", "SKU-9999"]
REGION_CHOICES = ["north", "south", "east", "west", "central", "mars", "North", ""]
TOOL_CHOICES = ["stock_lookup", "legacy_stock", "no_such_tool"]
_RED, _GREEN, _GREY = "#cf222e", "#1a7f37", "#6e7781"

# How the limit is written: the traps a model falls into, next to the honest int.
LIMIT_KINDS = {
    "int": lambda n: n,
    "bool True": lambda n: True,
    "bool False": lambda n: False,
    "numeric string": lambda n: str(n),
    "float": lambda n: float(n),
    "None": lambda n: None,
}


# --------------------------------------------------------------------------
# Loading and guarding learner code
# --------------------------------------------------------------------------


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
        return f'<span style="color:{_GREY}">Not written yet: {_esc(exc)}</span>'
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    learner_frames = [f for f in frames if f.filename.endswith("tools.py")]
    if learner_frames:
        last = learner_frames[-1]
        where = f" (line {last.lineno} of {Path(last.filename).name}: <code>{_esc(last.line)}</code>)"
    return f'<span style="color:{_RED}"><b>{type(exc).__name__}</b>: {_esc(exc)}{where}</span>'


def _esc(value: Any) -> str:
    import html

    return html.escape(str(value))


def _pre(value: Any) -> str:
    text = value if isinstance(value, str) else pprint.pformat(value, width=72, sort_dicts=False)
    return f'<pre style="margin:2px 0">{_esc(text)}</pre>'


def _guard(target: widgets.HTML, render: Callable[[], str]) -> None:
    """Set ``target`` to ``render()``, or to a friendly message if learner code raised."""
    try:
        shown = render()
    except Exception as exc:  # learner code: anything can happen, the notebook must go on
        shown = friendly_error(exc)
    # ipywidgets' HTML inherits a 28px line height, too airy for tables and dicts.
    target.value = f'<div style="line-height:1.45">{shown}</div>'


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return buffer.getvalue()


# --------------------------------------------------------------------------
# An argument builder shared by steps 2, 3 and 5
# --------------------------------------------------------------------------


class ArgsBuilder:
    """Dropdowns and text boxes that build ``(tool name, args dict)``, traps included.

    >>> ArgsBuilder().value()
    ('stock_lookup', {'sku': 'SKU-1001', 'region': 'north', 'limit': 2})
    """

    def __init__(self, tools: list[str] | None = None):
        self.tool = widgets.Dropdown(options=tools or TOOL_CHOICES, description="tool")
        self.sku = widgets.Combobox(value="SKU-1001", options=SKUS, description="sku")
        self.region = widgets.Combobox(value="north", options=REGION_CHOICES, description="region")
        self.limit_kind = widgets.Dropdown(options=list(LIMIT_KINDS), value="int", description="limit as")
        self.limit = widgets.IntSlider(value=2, min=-2, max=10, description="limit")
        self.leave_out = widgets.Dropdown(options=["nothing", "sku", "region", "limit"], description="leave out")
        self.extra = widgets.Checkbox(value=False, description="add color='red'", indent=False)
        self.controls = [self.tool, self.sku, self.region, self.limit_kind, self.limit, self.leave_out, self.extra]
        self.box = widgets.VBox([
            widgets.HBox([self.tool, self.sku]),
            widgets.HBox([self.region, self.leave_out]),
            widgets.HBox([self.limit_kind, self.limit]),
            self.extra,
        ])

    def value(self) -> tuple[str, dict]:
        args = {
            "sku": self.sku.value,
            "region": self.region.value,
            "limit": LIMIT_KINDS[self.limit_kind.value](self.limit.value),
        }
        args.pop(self.leave_out.value, None)
        if self.extra.value:
            args["color"] = "red"
        return self.tool.value, args

    def observe(self, callback: Callable[[], None]) -> None:
        for control in self.controls:
            control.observe(lambda _change: callback(), names="value")


def _call_text(fn: str, name: str, args: dict) -> str:
    return f"{fn}({name!r}, {args!r})"


# --------------------------------------------------------------------------
# Step 1: the data and the contract table
# --------------------------------------------------------------------------


def _stock_figure(stock: list[dict], sku: str, regions: list[str]) -> Figure:
    rows = [r for r in stock if r.get("sku") == sku]
    fig = Figure(figsize=(7, 2.6))
    ax = fig.add_subplot()
    colours = dict(zip(regions, ["#0969da", "#bf8700", "#8250df", "#1a7f37", "#cf222e"]))
    ax.bar([r["bin"] for r in rows], [r["count"] for r in rows],
           color=[colours.get(r["region"], _GREY) for r in rows])
    for i, r in enumerate(rows):
        ax.annotate(r["region"], (i, r["count"]), ha="center", va="bottom", fontsize=8)
    ax.set_title(f"{sku}: count per bin ({len(rows)} rows in STOCK)")
    ax.set_ylabel("count")
    return fig


def _contract_html(tools: dict) -> str:
    out = []
    for name, entry in tools.items():
        cells = "".join(
            f"<tr><td><code>{_esc(arg)}</code></td><td>{_esc(getattr(rule.get('type'), '__name__', rule.get('type')))}</td>"
            f"<td>{_esc(rule.get('required'))}</td><td>{_esc(rule.get('allowed', ''))}</td>"
            f"<td>{_esc(rule.get('min', ''))}</td><td>{_esc(rule.get('max', ''))}</td></tr>"
            for arg, rule in entry.get("args", {}).items()
        )
        out.append(
            f"<p><b>{_esc(name)}</b>: fn = <code>{_esc(getattr(entry.get('fn'), '__name__', entry.get('fn')))}</code>, "
            f"keys = <code>{_esc(sorted(entry))}</code></p><table><tr><th>arg</th><th>type</th>"
            f"<th>required</th><th>allowed</th><th>min</th><th>max</th></tr>{cells}</table>"
        )
    return "".join(out) or "<i>TOOLS is empty.</i>"


def contract_playground(path=None) -> widgets.VBox:
    """Step 1: see your STOCK per SKU, run both tools with one limit, read back your TOOLS."""
    live = LiveModule(path)
    sku = widgets.Dropdown(options=SKUS, value="SKU-3300", description="sku")
    region = widgets.Dropdown(options=REGION_CHOICES[:5], value="north", description="region")
    limit = widgets.IntSlider(value=2, min=1, max=8, description="limit")
    chart, text, table = widgets.Image(format="png"), widgets.HTML(), widgets.HTML()

    def render() -> str:
        tools = live.get()
        if not tools.STOCK:
            chart.value = b""
            return "<i>STOCK is empty: paste the block from this notebook into agtool/tools.py.</i>"
        chart.value = _png(_stock_figure(tools.STOCK, sku.value, list(tools.REGIONS)))
        lines = []
        for name in ("stock_lookup", "legacy_stock"):
            try:
                result = getattr(tools, name)(sku.value, region.value, limit.value)
                call = _esc(f"({sku.value!r}, {region.value!r}, {limit.value})")
                lines.append(f"<b>{name}</b>{call} &rarr; {len(result.get('rows', []))} rows{_pre(result)}")
            except Exception as exc:
                lines.append(f"<b>{name}</b>: {friendly_error(exc)}")
        lines.append(f"CALLS is now <code>{_esc(tools.CALLS)}</code>")
        return "<br>".join(lines)

    def update(*_):
        _guard(text, render)
        _guard(table, lambda: _contract_html(live.get().TOOLS))

    for control in (sku, region, limit):
        control.observe(update, names="value")
    update()
    return widgets.VBox([widgets.HBox([sku, region, limit]), chart, text,
                         widgets.HTML("<b>Your TOOLS table, read back:</b>"), table])


# --------------------------------------------------------------------------
# Steps 2 and 3: validate_args and call_tool
# --------------------------------------------------------------------------


def args_playground(path=None) -> widgets.VBox:
    """Step 2: build arguments (bool-in-int and numeric-string traps included), see the reason live."""
    live = LiveModule(path)
    builder, shown = ArgsBuilder(), widgets.HTML()

    def render() -> str:
        name, args = builder.value()
        tools = live.get()
        runs_before = sum(tools.CALLS.values())
        reason = tools.validate_args(name, args)
        ran = sum(tools.CALLS.values()) - runs_before
        verdict = (f'<span style="color:{_GREEN}">"" (a valid call)</span>' if reason == ""
                   else f'<span style="color:{_RED}"><b>{_esc(repr(reason))}</b></span>')
        warn = (f'<br><span style="color:{_RED}">validate_args ran a tool body {ran} time(s): it must only read TOOLS.</span>'
                if ran else "")
        return f"<code>{_esc(_call_text('validate_args', name, args))}</code><br>returns {verdict}{warn}"

    builder.observe(lambda: _guard(shown, render))
    _guard(shown, render)
    return widgets.VBox([builder.box, shown])


def _raising_tool(**_kwargs):
    raise KeyError("the warehouse database is down")


def call_playground(path=None) -> widgets.VBox:
    """Step 3: call ``call_tool`` and watch the returned dict and whether ``CALLS`` moves."""
    live = LiveModule(path)
    builder = ArgsBuilder()
    breaks = widgets.Checkbox(value=False, description="swap the tool for one that raises KeyError", indent=False)
    button = widgets.Button(description="call_tool", button_style="primary")
    fresh = widgets.Button(description="Fresh import", tooltip="re-import tools.py: CALLS and CACHE start empty")
    shown = widgets.HTML()

    def render(fresh_import: bool = False) -> str:
        name, args = builder.value()
        tools = live.get(fresh=fresh_import)
        before = dict(tools.CALLS)
        entry = tools.TOOLS.get(name) if isinstance(tools.TOOLS, dict) else None
        original = entry.get("fn") if entry else None
        if breaks.value and entry:
            entry["fn"] = _raising_tool  # the grader swaps this entry for a spy the same way
        try:
            result = tools.call_tool(name, args)
        finally:
            if breaks.value and entry:
                entry["fn"] = original
        after = dict(tools.CALLS)
        moved = {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)}
        counter = (f'<span style="color:{_RED}">the tool body ran: CALLS moved by {_esc(moved)}</span>' if moved
                   else f'<span style="color:{_GREY}">the tool body did not run (CALLS unchanged)</span>')
        return (f"<code>{_esc(_call_text('call_tool', name, args))}</code> returned{_pre(result)}"
                f"{counter}<br>CALLS: <code>{_esc(before)}</code> &rarr; <code>{_esc(after)}</code>")

    button.on_click(lambda _b: _guard(shown, render))
    fresh.on_click(lambda _b: _guard(shown, lambda: render(fresh_import=True)))
    _guard(shown, render)
    return widgets.VBox([builder.box, breaks, widgets.HBox([button, fresh]), shown])


# --------------------------------------------------------------------------
# Step 4: validate_result
# --------------------------------------------------------------------------

SAMPLE_RESULTS = {
    "a good result": {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": 12}]},
    "an empty bin (count 0)": {"sku": "SKU-2040", "region": "west", "rows": [{"bin": "W-01", "count": 0}]},
    "no rows at all": {"sku": "SKU-9999", "region": "north", "rows": []},
    "seven rows": {"sku": "SKU-3300", "region": "north",
                   "rows": [{"bin": f"N-1{i}", "count": i} for i in range(1, 8)]},
    "a negative count": {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": -4}]},
    "count as a string": {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": "12"}]},
    "count as True": {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": True}]},
    "rows missing": {"sku": "SKU-1001", "region": "north"},
    "a row that is a list": {"sku": "SKU-1001", "region": "north", "rows": [["N-01", 12]]},
    "not a dict": ["N-01", 12],
    "None": None,
}


def result_playground(path=None) -> widgets.VBox:
    """Step 4: feed results (samples, your own edits, or a real ``legacy_stock`` call) to ``validate_result``."""
    live = LiveModule(path)
    sample = widgets.Dropdown(options=list(SAMPLE_RESULTS), description="sample")
    editor = widgets.Textarea(layout=widgets.Layout(width="95%", height="90px"))
    real = widgets.Button(description="legacy_stock('SKU-3300', 'north', 2)")
    shown = widgets.HTML()

    def set_sample(*_):
        editor.value = pprint.pformat(SAMPLE_RESULTS[sample.value], width=90, sort_dicts=False)

    def render() -> str:
        try:
            value = ast.literal_eval(editor.value)
        except (ValueError, SyntaxError) as exc:
            return f'<span style="color:{_RED}">Not a Python literal: {_esc(exc)}</span>'
        reason = live.get().validate_result("stock_lookup", value)
        colour = _GREEN if reason == "" else _RED
        return f'validate_result("stock_lookup", ...) returns <b style="color:{colour}">{_esc(repr(reason))}</b>'

    def use_real(_button):
        try:
            value = live.get().legacy_stock("SKU-3300", "north", 2)
        except Exception as exc:
            _guard(shown, lambda: friendly_error(exc))
            return
        editor.value = pprint.pformat(value, width=90, sort_dicts=False)  # re-renders through observe

    sample.observe(set_sample, names="value")
    editor.observe(lambda _c: _guard(shown, render), names="value")
    real.on_click(use_real)
    set_sample()
    _guard(shown, render)
    return widgets.VBox([widgets.HBox([sample, real]), editor, shown])


# --------------------------------------------------------------------------
# Step 5: the cache
# --------------------------------------------------------------------------


def _cache_figure(history: list[dict]) -> Figure:
    fig = Figure(figsize=(6, 2.4))
    ax = fig.add_subplot()
    xs = list(range(1, len(history) + 1))
    calls, runs = 0, 0
    ys_calls, ys_runs = [], []
    for entry in history:
        calls += 1
        runs += entry["ran"]
        ys_calls.append(calls)
        ys_runs.append(runs)
    ax.step(xs, ys_calls, where="post", label="call_tool calls", color="#0969da")
    ax.step(xs, ys_runs, where="post", label="tool body runs", color=_RED)
    ax.set_xlabel("click")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title("A cache hit is a call that does not reach the body")
    return fig


def cache_playground(path=None) -> widgets.VBox:
    """Step 5: call the same arguments again (in any key order) and watch hits, misses and CACHE."""
    live = LiveModule(path)
    builder = ArgsBuilder(tools=TOOL_CHOICES[:2])
    shuffle = widgets.Checkbox(value=False, description="write the keys in reverse order", indent=False)
    button = widgets.Button(description="call_tool", button_style="primary")
    fresh = widgets.Button(description="Fresh import (empty CACHE)")
    chart, shown = widgets.Image(format="png"), widgets.HTML()
    history: list[dict] = []

    def render(fresh_import: bool = False) -> str:
        tools = live.get(fresh=fresh_import)
        if fresh_import:
            history.clear()
        name, args = builder.value()
        if shuffle.value:
            args = dict(reversed(list(args.items())))
        before = sum(tools.CALLS.values())
        result = tools.call_tool(name, args)
        ran = sum(tools.CALLS.values()) - before
        history.append({"args": args, "ran": ran, "ok": result.get("ok")})
        chart.value = _png(_cache_figure(history))
        verdict = (f'<b style="color:{_RED}">miss: the body ran</b>' if ran
                   else f'<b style="color:{_GREEN}">no body run (a cache hit, or refused before the call)</b>')
        return (f"<code>{_esc(_call_text('call_tool', name, args))}</code> &rarr; ok={_esc(result.get('ok'))}, "
                f"error={_esc(repr(result.get('error')))}; {verdict}<br>"
                f"key: <code>{_esc(tools.cache_key(name, args))}</code><br>"
                f"CACHE holds {len(tools.CACHE)} entr{'y' if len(tools.CACHE) == 1 else 'ies'}; CALLS = "
                f"<code>{_esc(tools.CALLS)}</code>")

    button.on_click(lambda _b: _guard(shown, render))
    fresh.on_click(lambda _b: _guard(shown, lambda: render(fresh_import=True)))
    shown.value = "<i>Press call_tool twice with the same arguments: the second press should not reach the body.</i>"
    return widgets.VBox([builder.box, shuffle, widgets.HBox([button, fresh]), shown, chart])


# --------------------------------------------------------------------------
# Steps 6 and 7: the path an order took through the graph
# --------------------------------------------------------------------------


def order_path(result: dict) -> list[str]:
    """The nodes an order visited, derived from ``calls``, ``fixes`` and ``ok`` of its result.

    One ``fetch`` per entry of ``calls``; a ``repair`` between fetches for each
    entry of ``fixes``; ``reply`` when the run ended ok, else ``giveup``.

    >>> order_path({"ok": True, "calls": [{}, {}], "fixes": ["region"], "errors": ["args:allowed:region"]})
    ['pick', 'fetch', 'repair', 'fetch', 'reply']
    """
    fetches = len(result.get("calls") or [])
    repairs = len(result.get("fixes") or [])
    path = ["pick"]
    for i in range(fetches):
        path.append("fetch")
        if i < repairs and i < fetches - 1:
            path.append("repair")
    path.append("reply" if result.get("ok") else "giveup")
    return path


NODE_COLOURS = {"pick": "#0969da", "fetch": "#8250df", "repair": "#bf8700", "reply": _GREEN, "giveup": _RED}


def draw_path(path: list[str], labels: list[str] | None = None, *, all_nodes: bool = True) -> Figure:
    """Draw the visited nodes as a chain of boxes, and the nodes this run never reached in grey.

    >>> draw_path(["pick", "fetch", "reply"]).axes[0].get_title()
    'pick -> fetch -> reply'
    """
    labels = labels or [""] * len(path)
    unvisited = [n for n in NODE_COLOURS if n not in path] if all_nodes else []
    fig = Figure(figsize=(max(6, 1.9 * len(path) + 1.2 * len(unvisited)), 2.2))
    ax = fig.add_subplot()
    ax.set_axis_off()
    x = 0.0
    for i, (node, label) in enumerate(zip(path, labels)):
        ax.annotate(node, (x, 0.6), ha="center", va="center", color="white", fontsize=11, fontweight="bold",
                    bbox={"boxstyle": "round,pad=0.4", "fc": NODE_COLOURS.get(node, _GREY), "ec": "none"})
        if label:
            ax.annotate(_wrap(label), (x, 0.3), ha="center", va="top", fontsize=7)
        if i < len(path) - 1:
            ax.annotate("", xy=(x + 1.3, 0.6), xytext=(x + 0.6, 0.6),
                        arrowprops={"arrowstyle": "->", "color": "#24292f"})
        x += 1.9
    for node in unvisited:
        x += 0.2
        ax.annotate(node, (x, 0.6), ha="center", va="center", color="#8c959f", fontsize=10,
                    bbox={"boxstyle": "round,pad=0.4", "fc": "white", "ec": "#d0d7de", "ls": "--"})
        x += 1.2
    ax.set_xlim(-0.8, max(x - 0.6, 1))
    ax.set_ylim(-0.3, 1.0)
    ax.set_title(" -> ".join(path))
    return fig


def _path_labels(path: list[str], result: dict) -> list[str]:
    calls = list(result.get("calls") or [])
    errors = list(result.get("errors") or [])
    fixes = list(result.get("fixes") or [])
    labels, fetch_no, repair_no, error_no = [], 0, 0, 0
    for node in path:
        if node == "fetch":
            call = calls[fetch_no] if fetch_no < len(calls) and isinstance(calls[fetch_no], dict) else {}
            failed = call.get("error") if "error" in call else (fetch_no < len(calls) - 1 or not result.get("ok"))
            if failed and error_no < len(errors):
                labels.append(str(errors[error_no]))
                error_no += 1
            else:
                labels.append("ok")
            fetch_no += 1
        elif node == "repair":
            labels.append(str(fixes[repair_no]) if repair_no < len(fixes) else "")
            repair_no += 1
        else:
            labels.append("")
    return labels


def _wrap(text: str, width: int = 20, lines: int = 3) -> str:
    wrapped = textwrap.wrap(text, width) or [""]
    if len(wrapped) > lines:
        wrapped = wrapped[:lines]
        wrapped[-1] = wrapped[-1][: width - 1] + "\u2026"
    return "\n".join(wrapped)


ORDER_PRESETS = {
    "a good order": {"sku": "SKU-1001", "region": "north", "limit": 2},
    "a region that does not exist": {"sku": "SKU-1001", "region": "mars", "limit": 2},
    "a SKU nobody stocks": {"sku": "SKU-9999", "region": "north", "limit": 2},
    "limit 99": {"sku": "SKU-4411", "region": "south", "limit": 99},
    "legacy tool, 7 bins": {"sku": "SKU-3300", "region": "north", "limit": 3, "tool": "legacy_stock"},
    "wrong region and no central stock": {"sku": "SKU-5000", "region": "mars", "limit": 2},
    "limit True": {"sku": "SKU-1001", "region": "north", "limit": True},
}


def path_playground(step: int = 7, path=None) -> widgets.VBox:
    """Steps 6-7: run an order through ``run_naive`` (step 6) or ``handle`` (step 7) and draw its path."""
    live = LiveModule(path)
    preset = widgets.Dropdown(options=list(ORDER_PRESETS), description="order")
    editor = widgets.Text(layout=widgets.Layout(width="95%"), description="as dict")
    attempts = widgets.IntSlider(value=3, min=1, max=5, description="MAX_ATTEMPTS",
                                 style={"description_width": "initial"})
    button = widgets.Button(description="run_naive" if step == 6 else "handle", button_style="primary")
    chart, shown = widgets.Image(format="png"), widgets.HTML()

    def set_preset(*_):
        editor.value = repr(ORDER_PRESETS[preset.value])

    def render() -> str:
        order = ast.literal_eval(editor.value)
        tools = live.get()
        if step == 6:
            result = tools.run_naive(order)
        else:
            tools.MAX_ATTEMPTS = attempts.value  # read when the graph runs, so this must count
            result = tools.handle(order)
        nodes = order_path(result)
        chart.value = _png(draw_path(nodes, _path_labels(nodes, result)))
        return _pre({key: result.get(key) for key in result})

    def run(*_):
        chart.value = b""
        _guard(shown, render)

    preset.observe(lambda _c: (set_preset(), run()), names="value")
    button.on_click(run)
    set_preset()
    run()
    rows = [widgets.HBox([preset, button]), editor]
    if step != 6:
        rows.append(attempts)
    return widgets.VBox(rows + [chart, shown])


# --------------------------------------------------------------------------
# Step 8: the two report files
# --------------------------------------------------------------------------

REPORT_EXPECTED = {
    "tools": ["legacy_stock", "stock_lookup"],
    "blocked_before_call": 0,
    "bad_result_reasons": ["empty", "range", "shape", "too_big"],
    "memo_second_call_runs": 0,
    "repaired": True,
    "attempts": 2,
    "gave_up": True,
}
REPORT_HEADINGS = (
    ("## 도구 계약을 어디에 적었나", "## 부르기 전에 무엇을 막았나",
     "## 돌려준 결과를 어떻게 믿지 않았나", "## 실패를 어떤 경로로 다뤘나"),
    ("## Where the tool contract is written", "## What was blocked before calling",
     "## How returned results were not trusted", "## How failure was handled as a path"),
)


def _markdown_html(text: str) -> str:
    try:
        import mistune  # comes with nbconvert, which JupyterLab installs

        return mistune.html(text)
    except Exception:
        return _pre(text)


def _report_table(report: dict) -> str:
    rows = []
    for key, expected in REPORT_EXPECTED.items():
        got = report.get(key, "(missing)") if isinstance(report, dict) else "(not a dict)"
        mark = (f'<span style="color:{_GREEN}">\u2714</span>' if got == expected and type(got) is type(expected)
                else f'<span style="color:{_RED}">\u2718</span>')
        rows.append(f"<tr><td>{mark}</td><td><code>{key}</code></td><td><code>{_esc(repr(got))}</code></td>"
                    f"<td><code>{_esc(repr(expected))}</code></td></tr>")
    return ("<table><tr><th></th><th>key</th><th>your value</th><th>a correct module</th></tr>"
            + "".join(rows) + "</table>")


def _headings_note(markdown: str) -> str:
    for headings in REPORT_HEADINGS:
        found = [h for h in headings if h in markdown]
        if found:
            missing = [h for h in headings if h not in markdown]
            if missing:
                return f'<span style="color:{_RED}">missing sections: {_esc(", ".join(missing))}</span>'
            return f'<span style="color:{_GREEN}">all four sections present</span>'
    return f'<span style="color:{_RED}">none of the four ## sections found</span>'


def report_playground(path=None, folder=None) -> widgets.VBox:
    """Step 8: run ``write_report`` into a scratch folder and render both files it wrote."""
    live = LiveModule(path)
    attempts = widgets.IntSlider(value=3, min=1, max=5, description="MAX_ATTEMPTS",
                                 style={"description_width": "initial"})
    button = widgets.Button(description="write_report(scratch folder)", button_style="primary",
                            layout=widgets.Layout(width="auto"))
    shown = widgets.HTML()
    # A folder that lives as long as the playground: removed when the widget is collected.
    scratch_dir = None if folder else tempfile.TemporaryDirectory(prefix="agtool_report_")
    scratch = Path(folder) if folder else Path(scratch_dir.name)

    def render() -> str:
        tools = live.get(fresh=True)  # a clean CALLS and CACHE, as the grader does
        tools.MAX_ATTEMPTS = attempts.value
        returned = tools.write_report(str(scratch))
        json_file, md_file = scratch / "tool_report.json", scratch / "tool_report.md"
        if not json_file.exists() or not md_file.exists():
            return f'<span style="color:{_RED}">write_report did not write both files into {_esc(scratch)}</span>'
        data = json.loads(json_file.read_text(encoding="utf-8"))
        markdown = md_file.read_text(encoding="utf-8")
        limit_note = (f"MAX_ATTEMPTS ({attempts.value}) appears in the Markdown"
                      if str(attempts.value) in markdown.split("##")[-1]
                      else f'<span style="color:{_RED}">the last section does not state {attempts.value}</span>')
        same = "" if returned == data else f'<br><span style="color:{_RED}">the returned dict differs from the JSON file</span>'
        return (f"<b>tool_report.json</b> ({_esc(json_file)}){_report_table(data)}{same}"
                f"<b>tool_report.md</b>: {_headings_note(markdown)}; {limit_note}"
                f'<div style="border:1px solid #d0d7de;padding:4px 10px;margin-top:4px">{_markdown_html(markdown)}</div>')

    button.on_click(lambda _b: _guard(shown, render))
    _guard(shown, render)
    box = widgets.VBox([widgets.HBox([button, attempts]), shown])
    box.scratch_dir = scratch_dir
    return box
