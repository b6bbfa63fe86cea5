"""Steps 1 and 4: the learner's STOCK, tools and TOOLS table; results fed to validate_result."""

from __future__ import annotations

import ast
import pprint

import ipywidgets as widgets
from matplotlib.figure import Figure

from agtool_lab.playground._live import (
    GREEN,
    GREY,
    RED,
    LiveModule,
    chart_image,
    esc,
    friendly_error,
    guard,
    missing_data,
    missing_html,
    pre,
    show_chart,
)
from agtool_lab.playground.args import SKUS
from grader import spec

# --------------------------------------------------------------------------
# Step 1: the data and the contract table
# --------------------------------------------------------------------------


def _stock_figure(stock: list[dict], sku: str, regions: list[str]) -> Figure:
    rows = [r for r in stock if r.get("sku") == sku]
    fig = Figure(figsize=(7, 2.6))
    ax = fig.add_subplot()
    colours = dict(zip(regions, ["#0969da", "#bf8700", "#8250df", "#1a7f37", "#cf222e"]))
    ax.bar([r["bin"] for r in rows], [r["count"] for r in rows], color=[colours.get(r["region"], GREY) for r in rows])
    for i, r in enumerate(rows):
        ax.annotate(r["region"], (i, r["count"]), ha="center", va="bottom", fontsize=8)
    ax.set_title(f"{sku}: count per bin ({len(rows)} rows in STOCK)")
    ax.set_ylabel("count")
    return fig


def _contract_html(tools: dict) -> str:
    out = []
    for name, entry in tools.items():
        cells = "".join(
            f"<tr><td><code>{esc(arg)}</code></td><td>{esc(getattr(rule.get('type'), '__name__', rule.get('type')))}</td>"
            f"<td>{esc(rule.get('required'))}</td><td>{esc(rule.get('allowed', ''))}</td>"
            f"<td>{esc(rule.get('min', ''))}</td><td>{esc(rule.get('max', ''))}</td></tr>"
            for arg, rule in entry.get("args", {}).items()
        )
        out.append(
            f"<p><b>{esc(name)}</b>: fn = <code>{esc(getattr(entry.get('fn'), '__name__', entry.get('fn')))}</code>, "
            f"keys = <code>{esc(sorted(entry))}</code></p><table><tr><th>arg</th><th>type</th>"
            f"<th>required</th><th>allowed</th><th>min</th><th>max</th></tr>{cells}</table>"
        )
    return "".join(out) or "<i>TOOLS is empty.</i>"


def contract_playground(path=None) -> widgets.VBox:
    """Step 1: see your STOCK per SKU, run both tools with one limit, read back your TOOLS."""
    live = LiveModule(path)
    sku = widgets.Dropdown(options=SKUS, value="SKU-3300", description="sku")
    region = widgets.Dropdown(options=spec.REGIONS, value="north", description="region")
    limit = widgets.IntSlider(value=2, min=1, max=8, description="limit")
    chart, text, table = chart_image(), widgets.HTML(), widgets.HTML()

    def render() -> str:
        show_chart(chart, None)  # until drawn: learner code below may raise
        tools = live.get()
        missing = missing_data(tools, ["STOCK"])
        if missing:
            return missing_html(missing)
        show_chart(chart, _stock_figure(tools.STOCK, sku.value, list(getattr(tools, "REGIONS", []) or [])))
        lines = []
        for name in ("stock_lookup", "legacy_stock"):
            try:
                result = getattr(tools, name)(sku.value, region.value, limit.value)
                call = esc(f"({sku.value!r}, {region.value!r}, {limit.value})")
                lines.append(f"<b>{name}</b>{call} &rarr; {len(result.get('rows', []))} rows{pre(result)}")
            except Exception as exc:
                lines.append(f"<b>{name}</b>: {friendly_error(exc)}")
        lines.append(f"CALLS is now <code>{esc(tools.CALLS)}</code>")
        return "<br>".join(lines)

    def update(*_):
        guard(text, render)
        guard(table, lambda: _contract_html(live.get().TOOLS))

    for control in (sku, region, limit):
        control.observe(update, names="value")
    update()
    return widgets.VBox(
        [widgets.HBox([sku, region, limit]), chart, text, widgets.HTML("<b>Your TOOLS table, read back:</b>"), table]
    )


# --------------------------------------------------------------------------
# Step 4: validate_result
# --------------------------------------------------------------------------

SAMPLE_RESULTS = {
    "a good result": {"sku": "SKU-1001", "region": "north", "rows": [{"bin": "N-01", "count": 12}]},
    "an empty bin (count 0)": {"sku": "SKU-2040", "region": "west", "rows": [{"bin": "W-01", "count": 0}]},
    "no rows at all": {"sku": "SKU-9999", "region": "north", "rows": []},
    "seven rows": {"sku": "SKU-3300", "region": "north", "rows": [{"bin": f"N-1{i}", "count": i} for i in range(1, 8)]},
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
            return f'<span style="color:{RED}">Not a Python literal: {esc(exc)}</span>'
        reason = live.get().validate_result("stock_lookup", value)
        colour = GREEN if reason == "" else RED
        return f'validate_result("stock_lookup", ...) returns <b style="color:{colour}">{esc(repr(reason))}</b>'

    def use_real(_button):
        try:
            value = live.get().legacy_stock("SKU-3300", "north", 2)
        except Exception as exc:
            guard(shown, lambda error=exc: friendly_error(error))
            return
        editor.value = pprint.pformat(value, width=90, sort_dicts=False)  # re-renders through observe

    sample.observe(set_sample, names="value")
    editor.observe(lambda _c: guard(shown, render), names="value")
    real.on_click(use_real)
    set_sample()
    guard(shown, render)
    return widgets.VBox([widgets.HBox([sample, real]), editor, shown])
