"""Steps 2, 3 and 5: build a call with widgets (traps included), see validate_args, call_tool and the cache."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets
from matplotlib.figure import Figure

from agtool_lab.playground._live import GREEN, GREY, RED, LiveModule, chart_image, esc, guard, pre, show_chart
from grader import spec

# The spec's values, then the traps: a sku with no rows, regions and a tool name the contract refuses.
SKUS = spec.SKUS + [spec.UNKNOWN_SKU]
REGION_CHOICES = spec.REGIONS + ["mars", "North", ""]
TOOL_CHOICES = spec.TOOL_NAMES + ["no_such_tool"]
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
        self.box = widgets.VBox(
            [
                widgets.HBox([self.tool, self.sku]),
                widgets.HBox([self.region, self.leave_out]),
                widgets.HBox([self.limit_kind, self.limit]),
                self.extra,
            ]
        )

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
        verdict = (
            f'<span style="color:{GREEN}">"" (a valid call)</span>'
            if reason == ""
            else f'<span style="color:{RED}"><b>{esc(repr(reason))}</b></span>'
        )
        warn = (
            f'<br><span style="color:{RED}">validate_args ran a tool body {ran} time(s): it must only read TOOLS.</span>'
            if ran
            else ""
        )
        return f"<code>{esc(_call_text('validate_args', name, args))}</code><br>returns {verdict}{warn}"

    builder.observe(lambda: guard(shown, render))
    guard(shown, render)
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
        counter = (
            f'<span style="color:{RED}">the tool body ran: CALLS moved by {esc(moved)}</span>'
            if moved
            else f'<span style="color:{GREY}">the tool body did not run (CALLS unchanged)</span>'
        )
        return (
            f"<code>{esc(_call_text('call_tool', name, args))}</code> returned{pre(result)}"
            f"{counter}<br>CALLS: <code>{esc(before)}</code> &rarr; <code>{esc(after)}</code>"
        )

    button.on_click(lambda _b: guard(shown, render))
    fresh.on_click(lambda _b: guard(shown, lambda: render(fresh_import=True)))
    guard(shown, render)
    return widgets.VBox([builder.box, breaks, widgets.HBox([button, fresh]), shown])


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
    ax.step(xs, ys_runs, where="post", label="tool body runs", color=RED)
    ax.set_xlabel("click")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title("A cache hit is a call that does not reach the body")
    return fig


def cache_playground(path=None) -> widgets.VBox:
    """Step 5: call the same arguments again (in any key order) and watch hits, misses and CACHE."""
    live = LiveModule(path)
    builder = ArgsBuilder(tools=spec.TOOL_NAMES)
    shuffle = widgets.Checkbox(value=False, description="write the keys in reverse order", indent=False)
    button = widgets.Button(description="call_tool", button_style="primary")
    fresh = widgets.Button(description="Fresh import (empty CACHE)")
    chart, shown = chart_image(), widgets.HTML()
    history: list[dict] = []

    def render(fresh_import: bool = False) -> str:
        tools = live.get(fresh=fresh_import)
        if fresh_import:
            history.clear()
            show_chart(chart, None)
        name, args = builder.value()
        if shuffle.value:
            args = dict(reversed(list(args.items())))
        before = sum(tools.CALLS.values())
        result = tools.call_tool(name, args)
        ran = sum(tools.CALLS.values()) - before
        history.append({"args": args, "ran": ran, "ok": result.get("ok")})
        show_chart(chart, _cache_figure(history))
        verdict = (
            f'<b style="color:{RED}">miss: the body ran</b>'
            if ran
            else f'<b style="color:{GREEN}">no body run (a cache hit, or refused before the call)</b>'
        )
        return (
            f"<code>{esc(_call_text('call_tool', name, args))}</code> &rarr; ok={esc(result.get('ok'))}, "
            f"error={esc(repr(result.get('error')))}; {verdict}<br>"
            f"key: <code>{esc(tools.cache_key(name, args))}</code><br>"
            f"CACHE holds {len(tools.CACHE)} entr{'y' if len(tools.CACHE) == 1 else 'ies'}; CALLS = "
            f"<code>{esc(tools.CALLS)}</code>"
        )

    button.on_click(lambda _b: guard(shown, render))
    fresh.on_click(lambda _b: guard(shown, lambda: render(fresh_import=True)))
    shown.value = "<i>Press call_tool twice with the same arguments: the second press should not reach the body.</i>"
    return widgets.VBox([builder.box, shuffle, widgets.HBox([button, fresh]), shown, chart])
