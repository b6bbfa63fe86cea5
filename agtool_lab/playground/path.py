"""Steps 6 and 7: run an order through the learner's graph and draw the path it took."""

from __future__ import annotations

import ast
import textwrap

import ipywidgets as widgets
from matplotlib.figure import Figure

from agtool_lab.playground._live import GREEN, GREY, RED, LiveModule, chart_image, guard, pre, show_chart
from grader import spec


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


NODE_COLOURS = {"pick": "#0969da", "fetch": "#8250df", "repair": "#bf8700", "reply": GREEN, "giveup": RED}


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
        ax.annotate(
            node,
            (x, 0.6),
            ha="center",
            va="center",
            color="white",
            fontsize=11,
            fontweight="bold",
            bbox={"boxstyle": "round,pad=0.4", "fc": NODE_COLOURS.get(node, GREY), "ec": "none"},
        )
        if label:
            ax.annotate(_wrap(label), (x, 0.3), ha="center", va="top", fontsize=7)
        if i < len(path) - 1:
            ax.annotate(
                "", xy=(x + 1.3, 0.6), xytext=(x + 0.6, 0.6), arrowprops={"arrowstyle": "->", "color": "#24292f"}
            )
        x += 1.9
    for node in unvisited:
        x += 0.2
        ax.annotate(
            node,
            (x, 0.6),
            ha="center",
            va="center",
            color="#8c959f",
            fontsize=10,
            bbox={"boxstyle": "round,pad=0.4", "fc": "white", "ec": "#d0d7de", "ls": "--"},
        )
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
    "a region that does not exist": spec.REPAIR_EXAMPLE,
    "a SKU nobody stocks": spec.EMPTY_EXAMPLE,
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
    attempts = widgets.IntSlider(
        value=spec.MAX_ATTEMPTS, min=1, max=5, description="MAX_ATTEMPTS", style={"description_width": "initial"}
    )
    button = widgets.Button(description="run_naive" if step == 6 else "handle", button_style="primary")
    chart, shown = chart_image(), widgets.HTML()

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
        show_chart(chart, draw_path(nodes, _path_labels(nodes, result)))
        return pre({key: result.get(key) for key in result})

    def run(*_):
        show_chart(chart, None)  # no picture until this run draws one (learner code may raise first)
        guard(shown, render)

    preset.observe(lambda _c: (set_preset(), run()), names="value")
    button.on_click(run)
    set_preset()
    run()
    rows = [widgets.HBox([preset, button]), editor]
    if step != 6:
        rows.append(attempts)
    return widgets.VBox(rows + [chart, shown])
