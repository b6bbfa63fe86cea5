"""Run the simulated model's calls through three routes of a learner module and count (the capstone).

The three routes, each given the learner module as a parameter:

``direct``  (a) a naive agent: calls ``TOOLS[tool]["fn"](**args)`` with the
            model's arguments as they are, swallows any exception, and
            answers from whatever rows came back (none: "no stock").
``naive``   (b) the learner's ``run_naive``: validation, the call boundary,
            result checks, and giving up on the first failure.
``repair``  (c) the learner's ``handle``: the same, plus reading the reason,
            fixing the call and trying again.

For (b) and (c) the model sits where the lab says a real agent asks one: in
the ``pick`` node. For one run the module's ``pick`` is swapped for a node
that returns the model's call (the graphs are compiled inside ``run_naive``
and ``handle``, so they take the swap up), and the order handed to the graph
is the model's call as well, so a graph that does not see the swap still gets
the model's values through its own ``pick``.

Each order ends in one outcome:

``right``      the rows served are the order's right rows (:func:`right_rows`)
``changed``    other rows were served, and the run reported the change it made
               (``fixes``): a disclosed substitute, such as the fallback region
``wrong``      other rows were served and nothing said so: a silent wrong answer
``refused``    no answer, and a reason instead: an honest refusal
``crashed``    the learner's function raised

Example::

    >>> from agtool_lab.load import load_module
    >>> from agtool_lab.noisy.model import NoisyModel, draw_orders
    >>> tools = load_module("solutions/tools.py")
    >>> orders = draw_orders(tools, 20, seed=0)
    >>> calls = NoisyModel(tools, error_rate=0.3).calls_for(orders)
    >>> table = tally(run_routes(tools, orders, calls))
    >>> int(table.loc[ROUTE_LABELS["naive"], "wrong (silent)"])
    0
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType

import pandas as pd

from agtool_lab.noisy.model import (
    CHAPTER_ERROR_RATE,
    CHAPTER_MIX,
    LabData,
    ModelCall,
    NoisyModel,
    draw_orders,
    right_rows,
)

__all__ = [
    "OUTCOMES",
    "ROUTES",
    "ROUTE_LABELS",
    "SWEEP_RATES",
    "chapter_comparison",
    "check_ready",
    "plot_sweep",
    "reading",
    "run_routes",
    "sweep",
    "tally",
]

ROUTES = ("direct", "naive", "repair")
ROUTE_LABELS = {
    "direct": "(a) tool called directly",
    "naive": "(b) run_naive",
    "repair": "(c) handle",
}
OUTCOMES = ("right", "changed", "wrong", "refused", "crashed")
SWEEP_RATES = (0.0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30)

# Names the routes use, by the lab step that writes them.
_NEEDED = {
    1: ("REGIONS", "MAX_ROWS", "CALLS", "STOCK", "TOOLS", "stock_lookup", "legacy_stock"),
    3: ("call_tool",),
    6: ("pick", "run_naive"),
    7: ("handle",),
}


# --------------------------------------------------------------------------
# Is the module far enough along?
# --------------------------------------------------------------------------


def check_ready(module: ModuleType) -> str:
    """Return ``""`` when steps 1-7 are far enough along to run this lab, else what is missing.

    The message is meant for the learner: it names the step to finish, not a traceback.

    >>> from agtool_lab.load import load_module
    >>> check_ready(load_module("solutions/tools.py"))
    ''
    """
    for step, names in _NEEDED.items():
        missing = [name for name in names if not hasattr(module, name)]
        if missing:
            return f"Step {step}: your module has no {', '.join(missing)} yet."
    try:
        data = LabData.from_module(module)
        if not data.stock or not data.regions or data.max_rows < 1:
            return "Step 1: STOCK, REGIONS or MAX_ROWS is still empty. Fill in the data of step 1."
        first = draw_orders(data, 1, seed=0)[0]
        module.TOOLS[first.get("tool", "stock_lookup")]["fn"](**_args_of(first))
        for step, run in (
            (3, lambda: module.call_tool("stock_lookup", _args_of(first))),
            (6, lambda: module.run_naive(first)),
            (7, lambda: module.handle(first)),
        ):
            result = run()
            if not isinstance(result, dict):
                return f"Step {step}: expected a dict back, got {type(result).__name__}."
    except NotImplementedError as exc:
        return f"Not written yet: {exc}" if str(exc) else "A function still raises NotImplementedError."
    except Exception as exc:  # the learner's code: report it in one line
        return f"Your module raised {type(exc).__name__}: {exc}"
    finally:
        _clear_cache(module)
    return ""


# --------------------------------------------------------------------------
# One order through one route
# --------------------------------------------------------------------------


@dataclass
class Served:
    """What a route gave back for one order, before it is judged."""

    answered: bool
    rows: list = field(default_factory=list)
    fixes: list = field(default_factory=list)
    attempts: int | None = None
    error: str = ""
    crashed: bool = False
    first_args: dict | None = None  # the arguments of the first call_tool, if known


def _args_of(order: dict) -> dict:
    return {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}


def _call_directly(module: ModuleType, call: ModelCall) -> Served:
    entry = module.TOOLS.get(call.tool)
    fn = entry["fn"] if entry else getattr(module, call.tool)
    try:
        rows = list(fn(**call.args)["rows"])
        error = ""
    except Exception as exc:  # a naive agent carries on with nothing
        rows, error = [], f"raised:{type(exc).__name__}"
    # It always answers: with rows it quotes them, without rows it says "no stock".
    return Served(answered=True, rows=rows, error=error)


@contextmanager
def _model_in_pick(module: ModuleType, call: ModelCall) -> Iterator[None]:
    original = module.pick

    def pick(state):  # the simulated model, in the node where a real agent asks one
        return {"tool": call.tool, "args": dict(call.args)}

    module.pick = pick
    try:
        yield
    finally:
        module.pick = original


def _through_graph(module: ModuleType, call: ModelCall, runner_name: str) -> Served:
    order = {**call.args, "tool": call.tool}
    try:
        with _model_in_pick(module, call):
            result = getattr(module, runner_name)(order)
    except Exception as exc:
        return Served(answered=False, error=f"crashed:{type(exc).__name__}", crashed=True)
    if not isinstance(result, dict):
        return Served(answered=False, error=f"crashed:returned {type(result).__name__}", crashed=True)
    calls = result.get("calls") or []
    errors = result.get("errors") or []
    return Served(
        answered=bool(result.get("ok")),
        rows=list(result.get("rows") or []),
        fixes=list(result.get("fixes") or []),
        attempts=result.get("attempts"),
        error=errors[0] if errors else "",
        first_args=dict(calls[0].get("args", {})) if calls and isinstance(calls[0], dict) else None,
    )


def _serve(module: ModuleType, route: str, call: ModelCall) -> Served:
    if route == "direct":
        return _call_directly(module, call)
    return _through_graph(module, call, "run_naive" if route == "naive" else "handle")


def _row_key(rows: Iterable) -> list:
    return [(row.get("bin"), row.get("count")) if isinstance(row, dict) else row for row in rows]


def _outcome(served: Served, truth: list[dict]) -> str:
    if served.crashed:
        return "crashed"
    if not served.answered:
        return "refused"
    if _row_key(served.rows) == _row_key(truth):
        return "right"
    return "changed" if served.fixes else "wrong"


# --------------------------------------------------------------------------
# Many orders through the routes
# --------------------------------------------------------------------------


def _tool_runs(module: ModuleType) -> int:
    return sum(module.CALLS.values())


def _clear_cache(module: ModuleType) -> None:
    cache = getattr(module, "CACHE", None)
    if isinstance(cache, dict):
        cache.clear()


@contextmanager
def _spy_on_tools(module: ModuleType) -> Iterator[list]:
    """Record the arguments of every call that reaches a tool function in ``TOOLS``."""
    seen: list[tuple[str, dict]] = []
    originals = {name: entry["fn"] for name, entry in module.TOOLS.items()}

    def spy_for(name, fn):
        def spy(*args, **kwargs):
            seen.append((name, dict(kwargs)))
            return fn(*args, **kwargs)

        return spy

    for name, fn in originals.items():
        module.TOOLS[name]["fn"] = spy_for(name, fn)
    try:
        yield seen
    finally:
        for name, fn in originals.items():
            module.TOOLS[name]["fn"] = fn


def _memo_key(route: str, order: dict, call: ModelCall) -> str:
    return json.dumps([route, order, call.tool, call.args], sort_keys=True, default=repr)


def run_routes(
    module: ModuleType,
    orders: Sequence[dict],
    calls: Sequence[ModelCall],
    *,
    routes: Sequence[str] = ROUTES,
    memo: dict | None = None,
) -> pd.DataFrame:
    """Send each order's model call through each route; one row per (route, order).

    Columns: ``route``, ``index``, ``category``, ``mistake``, ``outcome``,
    ``tool_runs`` (how much ``CALLS`` grew), ``calls_reaching_tool`` and
    ``faithful_calls_reaching_tool`` (calls seen by a spy on ``TOOLS``, and
    how many of them carried exactly the order's tool and arguments),
    ``unknown_region_reached_tool``, ``attempts``, ``repaired`` (ended ok
    after a fix), ``first_retry_ok``, ``error`` (first reason), ``model_in_pick``.

    ``CACHE`` is emptied before every order: a remembered answer would hide
    a call from the counts, and this lab measures what reaches the tools, not
    what step 5's cache saves. With ``memo`` (a dict kept between calls),
    an (order, call) pair already judged is not run again: its outcome is
    reused and its counts are left empty. :func:`sweep` uses that, because
    across error rates most pairs repeat.

    >>> from agtool_lab.load import load_module
    >>> tools = load_module("solutions/tools.py")
    >>> order = {"sku": "SKU-1001", "region": "north", "limit": 1}
    >>> df = run_routes(tools, [order], [ModelCall("stock_lookup", {**order, "region": "North"}, "identity")])
    >>> list(df["outcome"])
    ['wrong', 'refused', 'changed']
    """
    if len(orders) != len(calls):
        raise ValueError("one model call per order")
    data = LabData.from_module(module)
    records = []
    for route in routes:
        for index, (order, call) in enumerate(zip(orders, calls)):
            truth = right_rows(data, order)
            key = _memo_key(route, order, call) if memo is not None else None
            if key is not None and key in memo:
                records.append({**memo[key], "index": index})
                continue
            record = _run_one(module, data, route, order, call, truth)
            record["index"] = index
            if key is not None:
                memo[key] = {k: record[k] for k in ("route", "category", "mistake", "outcome")}
            records.append(record)
    return pd.DataFrame.from_records(records)


def _run_one(module, data: LabData, route: str, order: dict, call: ModelCall, truth) -> dict:
    faithful = (order.get("tool", "stock_lookup"), _args_of(order))
    _clear_cache(module)
    before = _tool_runs(module)
    with _spy_on_tools(module) as seen:
        served = _serve(module, route, call)
    attempts = served.attempts
    return {
        "route": route,
        "category": call.category or "none",
        "mistake": call.mistake or "none",
        "outcome": _outcome(served, truth),
        "tool_runs": _tool_runs(module) - before,
        "calls_reaching_tool": len(seen),
        "faithful_calls_reaching_tool": sum(1 for name, args in seen if (name, args) == faithful),
        "unknown_region_reached_tool": any(args.get("region") not in data.regions for _, args in seen),
        "attempts": attempts,
        "repaired": bool(served.answered and served.fixes),
        "retried": isinstance(attempts, int) and attempts >= 2,
        "first_retry_ok": bool(served.answered and attempts == 2),
        "error": served.error,
        "model_in_pick": route == "direct" or served.first_args in (None, call.args),
    }


# --------------------------------------------------------------------------
# Tables and the plot
# --------------------------------------------------------------------------

_TALLY_COLUMNS = {
    "right": "right",
    "changed": "changed (disclosed)",
    "wrong": "wrong (silent)",
    "refused": "refused (honest)",
    "crashed": "crashed",
}


def tally(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Count per route: outcomes, tool body runs, repairs that succeeded, and two rates.

    ``outcomes`` is what :func:`run_routes` returned. The index is the route's
    label (:data:`ROUTE_LABELS`), in the order a, b, c.
    """
    counts = (
        pd.crosstab(outcomes["route"], outcomes["outcome"])
        .reindex(columns=list(OUTCOMES), fill_value=0)
        .rename(columns=_TALLY_COLUMNS)
    )
    grouped = outcomes.groupby("route")
    table = counts.assign(
        **{
            "tool body runs": grouped["tool_runs"].sum(),
            "repairs that succeeded": grouped["repaired"].sum(),
            "orders": grouped.size(),
        }
    )
    table["right rate"] = table["right"] / table["orders"]
    table["silent-wrong rate"] = table["wrong (silent)"] / table["orders"]
    routes = [route for route in ROUTES if route in table.index]
    table = table.loc[routes].rename(index=ROUTE_LABELS)
    table.index.name = "route"
    table.columns.name = None
    return table.astype({"tool body runs": int, "repairs that succeeded": int})


def sweep(
    module: ModuleType,
    *,
    n: int,
    seed: int = 0,
    rates: Sequence[float] = SWEEP_RATES,
    mix=None,
    routes: Sequence[str] = ROUTES,
) -> pd.DataFrame:
    """Right-answer and silent-wrong rates per route at each model error rate.

    The same ``n`` orders are used at every rate, and a higher rate only adds
    mistakes (see :mod:`agtool_lab.noisy.model`), so the curves compare like with like.
    Returns one row per (error rate, route) with ``right_rate``,
    ``silent_wrong_rate``, ``answered_rate`` and ``refused_rate``.

    >>> from agtool_lab.load import load_module
    >>> s = sweep(load_module("solutions/tools.py"), n=10, rates=[0.0])
    >>> s["right_rate"].tolist()
    [1.0, 1.0, 1.0]
    """
    orders = draw_orders(module, n, seed=seed)
    memo: dict = {}
    rows = []
    for rate in rates:
        model = NoisyModel(module, error_rate=rate, mix=mix or CHAPTER_MIX, seed=seed)
        outcomes = run_routes(module, orders, model.calls_for(orders), routes=routes, memo=memo)
        for route, group in outcomes.groupby("route", sort=False):
            share = group["outcome"].value_counts(normalize=True)
            rows.append(
                {
                    "error_rate": rate,
                    "route": route,
                    "right_rate": float(share.get("right", 0.0)),
                    "silent_wrong_rate": float(share.get("wrong", 0.0)),
                    "answered_rate": float(share.get("right", 0.0) + share.get("changed", 0.0)),
                    "refused_rate": float(share.get("refused", 0.0)),
                }
            )
    return pd.DataFrame(rows)


def plot_sweep(curves: pd.DataFrame, *, marked_rate: float | None = CHAPTER_ERROR_RATE):
    """Two panels: right-answer rate and silent-wrong rate against the model's error rate.

    ``marked_rate`` draws a dotted line at the chapters' measured error rate (9%).
    Returns the matplotlib ``Figure``.
    """
    import matplotlib.pyplot as plt

    fig, (right_ax, wrong_ax) = plt.subplots(1, 2, figsize=(11, 4), sharex=True)
    styles = {"direct": ("tab:red", "o"), "naive": ("tab:blue", "s"), "repair": ("tab:green", "^")}
    for route, group in curves.groupby("route", sort=False):
        colour, marker = styles.get(route, ("tab:gray", "."))
        x = group["error_rate"] * 100
        label = ROUTE_LABELS.get(route, route)
        right_ax.plot(x, group["right_rate"], color=colour, marker=marker, label=label)
        wrong_ax.plot(x, group["silent_wrong_rate"], color=colour, marker=marker, label=label)
    lowest = float(curves["right_rate"].min())
    right_ax.set(
        title="Right answers",
        xlabel="model error rate (%)",
        ylabel="share of orders",
        ylim=(min(0.5, lowest - 0.05), 1.01),
    )
    # (b) and (c) sit on top of each other at 0 when validation works; the markers tell them apart.
    wrong_ax.set(
        title="Wrong answers served silently",
        xlabel="model error rate (%)",
        ylim=(0, max(0.05, float(curves["silent_wrong_rate"].max()) * 1.15)),
    )
    for ax in (right_ax, wrong_ax):
        if marked_rate is not None:
            ax.axvline(marked_rate * 100, color="gray", linestyle=":", linewidth=1)
        ax.grid(alpha=0.3)
    right_ax.legend(loc="lower left")
    wrong_ax.legend(loc="upper left")
    fig.tight_layout()
    return fig


def chapter_comparison(outcomes: pd.DataFrame) -> pd.DataFrame:
    """The lab's measurements next to the chapters' before/after figures.

    Rows: argument accuracy at the tool (share of calls reaching a tool that
    carry exactly the order's tool and arguments), identity failures reaching
    execution (share of orders where a region outside ``REGIONS`` reached a
    tool), and first-retry success (share of retried orders whose second
    attempt succeeded). ``None`` where a route has nothing to measure.
    """
    grouped = outcomes.groupby("route")
    reaching = grouped["calls_reaching_tool"].sum()
    accuracy = grouped["faithful_calls_reaching_tool"].sum() / reaching.where(reaching > 0)
    identity = grouped["unknown_region_reached_tool"].mean()
    retried = grouped["retried"].sum()
    first_retry = grouped["first_retry_ok"].sum() / retried.where(retried > 0)
    rows = {
        "argument accuracy at the tool": (0.91, 0.98, accuracy),
        "identity failures reaching execution": (0.043, 0.0, identity),
        "first-retry success": (0.58, 0.94, first_retry),
    }
    table = pd.DataFrame(
        {
            name: {
                "chapter before": before,
                "chapter after": after,
                **{ROUTE_LABELS[r]: _value(series, r) for r in ROUTES if r in grouped.groups},
            }
            for name, (before, after, series) in rows.items()
        }
    ).T
    table.index.name = "measure"
    # "n/a" rather than NaN: a route without retries has no first-retry rate, not a missing one.
    return table.astype(object).where(table.notna(), "n/a")


def _value(series: pd.Series, route: str):
    value = series.get(route)
    return None if value is None or pd.isna(value) else round(float(value), 3)


def reading(table: pd.DataFrame, comparison: pd.DataFrame, *, error_rate: float) -> str:
    """A few Markdown lines that read the tally and the comparison, with the measured numbers.

    ``table`` comes from :func:`tally`, ``comparison`` from :func:`chapter_comparison`.
    Nothing in it is written by hand: every number is read from the two tables.
    """
    a, b, c = (ROUTE_LABELS[r] for r in ROUTES)
    rows = table.to_dict(orient="index")
    answered = {label: int(row["right"] + row["changed (disclosed)"]) for label, row in rows.items()}

    def cmp(measure: str, route: str, digits: str = ".3f") -> str:
        value = comparison.loc[measure].get(route)
        return "n/a" if value is None or isinstance(value, str) or pd.isna(value) else format(value, digits)

    lines = [
        f"With the model getting {error_rate:.0%} of its calls wrong (an argument accuracy of "
        f"about {1 - error_rate:.2f}):",
        "",
    ]
    if a in rows:
        lines.append(
            f"- **{a}** served {rows[a]['wrong (silent)']} wrong answers without a word "
            f"({rows[a]['silent-wrong rate']:.1%} of the orders) and ran a tool body "
            f"{rows[a]['tool body runs']} times."
        )
    if b in rows:
        lines.append(
            f"- **{b}** served {rows[b]['wrong (silent)']} silent wrong answers and refused "
            f"{rows[b]['refused (honest)']} orders with a reason; tool body runs: {rows[b]['tool body runs']}."
        )
    if c in rows:
        versus = f" against {answered[b]} for (b)" if b in rows else ""
        lines.append(
            f"- **{c}** answered {answered[c]} orders{versus} ({rows[c]['right']} right, "
            f"{rows[c]['changed (disclosed)']} with a change it reported), served "
            f"{rows[c]['wrong (silent)']} silent wrong answers, and {rows[c]['repairs that succeeded']} "
            "repairs succeeded."
        )
    identity = "identity failures reaching execution"
    lines += [
        "",
        f"- Identity failures reaching a tool: (a) {cmp(identity, a, '.1%')}, (b) {cmp(identity, b, '.1%')}, "
        f"(c) {cmp(identity, c, '.1%')}; the chapters measured 4.3% before their validation layers and 0 after.",
        f"- Argument accuracy at the tool: (a) {cmp('argument accuracy at the tool', a)}, "
        f"(b) {cmp('argument accuracy at the tool', b)}, (c) {cmp('argument accuracy at the tool', c)}; "
        "the chapters went from 0.91 to 0.98.",
        f"- First-retry success in (c): {cmp('first-retry success', c)}; the chapters saw 0.58 without "
        "a correction in the error and 0.94 with one.",
    ]
    return "\n".join(lines)
