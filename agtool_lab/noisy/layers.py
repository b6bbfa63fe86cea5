"""The capstone's second half: what steps 9-11 buy, measured on the learner's own module.

The simulated model now asks by product, the way a person does, and errs the
ways the chapters list for that: a product *name* instead of its sku, a word
that two products share ("bolt"), a limit written ``" 3 "`` or ``"３"``, a
region written ``"North"`` or one edit off (``"nrth"``), a limit out of range.
Each order goes through five routes, each one layer more than the last:

========  =================================================================
direct    (a) the tool called with what the model wrote, exceptions swallowed
checked   (b) ``call_tool``: validation only (steps 2-5)
resolved  (c) + ``resolve_sku`` first (step 11): a name becomes a sku, or a question
coerced   (d) + ``coerce`` (step 9): the allowlist repairs the format slips
retried   (e) + ``retry_with_suggestion`` (step 10): one retry with the suggestion
========  =================================================================

Outcomes: ``right``, ``wrong`` (other rows, silently), ``refused`` (a reason,
no answer), ``asked`` (a question back: several products matched), ``crashed``.

First-retry success compares two ways of retrying the first refused call of
route (d): a model that sees only the bare reason guesses a new value among
those the contract accepts; a model that sees ``explain`` takes the suggestion
when there is one, and guesses like the other when there is none.

Example::

    >>> from agtool_lab.noisy.model import LabData
    >>> data = LabData(regions=("north", "south"), max_rows=5,
    ...                stock=({"sku": "S-1", "region": "north", "bin": "B", "count": 1},))
    >>> [o["sku"] for o in draw_named_orders(data, {"S-1": "Steel bolt"}, 2, seed=0)]
    ['S-1', 'S-1']
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from types import ModuleType

import pandas as pd

from agtool_lab.noisy.model import LabData, right_rows

__all__ = [
    "LAYER_LABELS",
    "NAMED_MISTAKES",
    "check_layers_ready",
    "draw_named_orders",
    "layer_table",
    "model_writes",
    "plot_layers",
    "retry_table",
    "run_layers",
]

LAYER_LABELS = {
    "direct": "(a) tool called directly",
    "checked": "(b) call_tool",
    "resolved": "(c) + resolve_sku",
    "coerced": "(d) + coerce",
    "retried": "(e) + retry_with_suggestion",
}
OUTCOME_LABELS = {
    "right": "right",
    "wrong": "wrong (silent)",
    "refused": "refused (honest)",
    "asked": "asked back",
    "crashed": "crashed",
}
# Names the second half needs, with the step that adds each.
_NEEDED = {
    "PRODUCTS": 11,
    "resolve_sku": 11,
    "coerce": 9,
    "call_coerced": 9,
    "explain": 10,
    "retry_with_suggestion": 10,
    "call_tool": 3,
}
_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


def check_layers_ready(module: ModuleType) -> str:
    """``""`` when steps 9-11 can run; else one sentence naming the first missing step.

    >>> from agtool_lab.load import load_module
    >>> check_layers_ready(load_module("solutions/tools.py"))
    ''
    """
    for name, step in _NEEDED.items():
        if not hasattr(module, name):
            return f"Step {step}: `{name}` is not in your module yet."
    try:
        module.resolve_sku("a query no product has")
        module.coerce("stock_lookup", {"limit": " 1 "})
        module.explain("stock_lookup", {})
    except NotImplementedError as exc:
        return f"Not written yet: {exc}"
    except Exception as exc:  # learner code: anything can happen, the notebook must go on
        return f"Calling your step 9-11 functions raised {type(exc).__name__}: {exc}"
    return ""


def draw_named_orders(data: LabData, products: Mapping[str, str], n: int, *, seed: int = 0) -> list[dict]:
    """``n`` orders for skus that have both stock and a product name; same seed, same orders."""
    rows = [row for row in data.stock if row["sku"] in products]
    if not rows:
        raise ValueError("no STOCK row has a sku in PRODUCTS: write steps 1 and 11 first.")
    rng = random.Random(f"named-orders:{seed}")
    orders = []
    for _ in range(n):
        row = rng.choice(rows)
        orders.append({"sku": row["sku"], "region": row["region"], "limit": rng.randint(1, data.max_rows)})
    return orders


def _shared_word(products: Mapping[str, str], sku: str) -> str | None:
    # A word of this product's name that another product's name also has: "bolt", "wire".
    others = [name.casefold() for other, name in products.items() if other != sku]
    return next((w for w in products[sku].split() if any(w.casefold() in o for o in others)), None)


def _typo(region: str, regions) -> str:
    options = [region[:i] + region[i + 1 :] for i in range(1, len(region))]
    return next((t for t in options if t not in regions), region + "x")


NAMED_MISTAKES = {
    "product name": lambda c, o, p, d: {**c, "product": p[o["sku"]]},
    "two products match": lambda c, o, p, d: {**c, "product": w} if (w := _shared_word(p, o["sku"])) else None,
    "limit ' 3 '": lambda c, o, p, d: {**c, "limit": f" {o['limit']} "},
    "limit '３'": lambda c, o, p, d: {**c, "limit": str(o["limit"]).translate(_FULLWIDTH)},
    "region 'North'": lambda c, o, p, d: {**c, "region": o["region"].capitalize()},
    "region typo": lambda c, o, p, d: {**c, "region": _typo(o["region"], d.regions)},
    "limit out of range": lambda c, o, p, d: {**c, "limit": o["limit"] * 10 + d.max_rows},
}


def model_writes(
    order: dict, products: Mapping[str, str], data: LabData, *, error_rate: float, seed: int, index: int
) -> tuple[dict, str | None]:
    """The call the model writes for ``order`` (``product`` instead of ``sku``), and its mistake or None.

    >>> data = LabData(regions=("north",), max_rows=5, stock=())
    >>> model_writes({"sku": "S-1", "region": "north", "limit": 2}, {"S-1": "Bolt"}, data,
    ...              error_rate=0.0, seed=0, index=0)
    ({'product': 'S-1', 'region': 'north', 'limit': 2}, None)
    """
    call = {"product": order["sku"], "region": order["region"], "limit": order["limit"]}
    rng = random.Random(f"named-model:{seed}:{index}")
    goes_wrong = rng.random() < error_rate
    names = list(NAMED_MISTAKES)
    rng.shuffle(names)  # drawn every time, so a higher rate only adds mistakes
    if not goes_wrong:
        return call, None
    for name in names:
        made = NAMED_MISTAKES[name](call, order, products, data)
        if made is not None:
            return made, name
    return call, None


# --------------------------------------------------------------------------
# The five routes
# --------------------------------------------------------------------------

_TOOL = "stock_lookup"


def _rows_outcome(result: Mapping, truth: list) -> str:
    if not result.get("ok"):
        return "refused"
    rows = (result.get("value") or {}).get("rows")
    return "right" if rows == truth else "wrong"


def _direct(module, call: dict, truth: list) -> str:
    fn = module.TOOLS[_TOOL]["fn"]
    try:
        rows = fn(sku=call["product"], region=call["region"], limit=call["limit"])["rows"]
    except Exception:  # the naive agent swallows it and answers "no stock"
        rows = []
    return "right" if rows == truth else "wrong"


def _as_args(call: dict, sku: str) -> dict:
    return {"sku": sku, "region": call["region"], "limit": call["limit"]}


def _layered(module, route: str, call: dict, truth: list) -> str:
    if route == "checked":
        return _rows_outcome(module.call_tool(_TOOL, _as_args(call, call["product"])), truth)
    found = module.resolve_sku(call["product"])
    if found.get("kind") != "resolved":
        return "asked" if found.get("kind") == "ambiguous" else "refused"
    args = _as_args(call, found["sku"])
    if route == "resolved":
        return _rows_outcome(module.call_tool(_TOOL, args), truth)
    if route == "coerced":
        return _rows_outcome(module.call_coerced(_TOOL, args), truth)
    coerced, _ledger = module.coerce(_TOOL, args)
    return _rows_outcome(module.retry_with_suggestion(_TOOL, coerced), truth)


def _runs(module) -> int:
    return sum(module.CALLS.values())


def _one(module, route: str, call: dict, truth: list) -> tuple[str, int]:
    cache = getattr(module, "CACHE", None)
    if isinstance(cache, dict):
        cache.clear()  # a remembered answer must not hide a call
    before = _runs(module)
    try:
        outcome = _direct(module, call, truth) if route == "direct" else _layered(module, route, call, truth)
    except Exception:  # learner code: counted, never raised into the notebook
        outcome = "crashed"
    return outcome, _runs(module) - before


def run_layers(module: ModuleType, n: int, *, error_rate: float, seed: int = 0) -> pd.DataFrame:
    """One row per order and route: the mistake made (or None), the outcome, the tool body runs.

    >>> from agtool_lab.load import load_module
    >>> runs = run_layers(load_module("solutions/tools.py"), 20, error_rate=0.5)
    >>> list(runs["route"].unique()) == list(LAYER_LABELS)
    True
    """
    data = LabData.from_module(module)
    products = dict(module.PRODUCTS)
    rows = []
    for index, order in enumerate(draw_named_orders(data, products, n, seed=seed)):
        call, mistake = model_writes(order, products, data, error_rate=error_rate, seed=seed, index=index)
        truth = right_rows(data, order)
        for route in LAYER_LABELS:
            outcome, runs = _one(module, route, call, truth)
            rows.append(
                {"index": index, "mistake": mistake or "none", "route": route, "outcome": outcome, "tool_runs": runs}
            )
    return pd.DataFrame(rows)


def layer_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Shares of each outcome per route, plus the tool body runs per order.

    >>> from agtool_lab.load import load_module
    >>> table = layer_table(run_layers(load_module("solutions/tools.py"), 20, error_rate=0.5))
    >>> float(table.loc["(e) + retry_with_suggestion", "wrong (silent)"])
    0.0
    """
    shares = pd.crosstab(runs["route"], runs["outcome"], normalize="index")
    shares = shares.reindex(index=list(LAYER_LABELS), columns=list(OUTCOME_LABELS), fill_value=0.0)
    shares["tool body runs per order"] = runs.groupby("route")["tool_runs"].mean().reindex(list(LAYER_LABELS))
    shares.index = [LAYER_LABELS[r] for r in shares.index]
    return shares.rename(columns=OUTCOME_LABELS)


def plot_layers(table: pd.DataFrame):
    """A stacked bar per route: how the orders ended.

    >>> from agtool_lab.load import load_module
    >>> fig = plot_layers(layer_table(run_layers(load_module("solutions/tools.py"), 10, error_rate=0.5)))
    >>> len(fig.axes)
    1
    """
    import matplotlib.pyplot as plt

    colours = {
        "right": "#1a7f37",
        "wrong (silent)": "#cf222e",
        "refused (honest)": "#6e7781",
        "asked back": "#0969da",
        "crashed": "#000000",
    }
    fig, ax = plt.subplots(figsize=(8, 3.6))
    table[list(colours)].plot.barh(stacked=True, ax=ax, color=list(colours.values()), width=0.7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of orders")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=5, fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------
# First-retry success: a bare reason against explain's message and suggestion
# --------------------------------------------------------------------------


def _guess(module, reason: str, args: dict, rng: random.Random) -> dict | None:
    # What a model does with "args:allowed:region" alone: any value the contract accepts.
    arg = reason.split(":", 2)[-1]
    rule = module.TOOLS[_TOOL]["args"].get(arg, {})
    if "allowed" in rule:
        return {**args, arg: rng.choice(list(rule["allowed"]))}
    if rule.get("type") is int:
        return {**args, arg: rng.randint(rule.get("min", 1), rule.get("max", 1))}
    return None


def _first_retries(module, call: dict, truth: list, rng_seed: str) -> tuple[bool, bool] | None:
    found = module.resolve_sku(call["product"])
    if found.get("kind") != "resolved":
        return None
    args, _ledger = module.coerce(_TOOL, _as_args(call, found["sku"]))
    first = module.call_tool(_TOOL, args)
    if first.get("ok") or not str(first.get("error", "")).startswith("args:"):
        return None
    reason = first["error"][len("args:") :]
    bare = _guess(module, reason, args, random.Random(rng_seed))
    suggestion = module.explain(_TOOL, args).get("suggestion")
    helped = suggestion if suggestion is not None else _guess(module, reason, args, random.Random(rng_seed))
    return tuple(
        fix is not None and _rows_outcome(module.call_tool(_TOOL, fix), truth) == "right" for fix in (bare, helped)
    )


def retry_table(module: ModuleType, n: int, *, error_rate: float, seed: int = 0) -> pd.DataFrame:
    """First-retry success of the calls that (d) still refuses, with a bare reason and with ``explain``.

    >>> from agtool_lab.load import load_module
    >>> list(retry_table(load_module("solutions/tools.py"), 50, error_rate=0.5).index)
    ['bare reason', 'with explain (message + suggestion)']
    """
    data = LabData.from_module(module)
    products = dict(module.PRODUCTS)
    results = []
    for index, order in enumerate(draw_named_orders(data, products, n, seed=seed)):
        call, mistake = model_writes(order, products, data, error_rate=error_rate, seed=seed, index=index)
        if mistake is not None:
            outcome = _first_retries(module, call, right_rows(data, order), f"retry:{seed}:{index}")
            results += [outcome] if outcome else []
    retried = len(results)
    return pd.DataFrame(
        {
            "first retries": [retried, retried],
            "first-retry success": [
                sum(r[0] for r in results) / retried if retried else float("nan"),
                sum(r[1] for r in results) / retried if retried else float("nan"),
            ],
            "chapter": [0.58, 0.94],
        },
        index=["bare reason", "with explain (message + suggestion)"],
    )
