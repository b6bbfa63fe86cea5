"""Steps 9, 10 and 11: the failure each step prevents, next to what your function does about it.

Each playground puts a tempting shortcut (Python's ``int()``, a "closest match"
from :mod:`difflib`, the first product whose name contains the query) beside
the learner's ``coerce``, ``explain`` and ``resolve_sku``. The shortcut is
computed here, in a few lines, only to show its failure; the learner's
functions are read from their module and never judged (the Check cell does
that). A name not written yet shows "Not written yet", never a traceback.
"""

from __future__ import annotations

import difflib
import unicodedata

import ipywidgets as widgets

from agtool_lab.playground._live import GREEN, GREY, RED, LiveModule, esc, guard, pre

__all__ = [
    "coercion_playground",
    "identity_playground",
    "shortcut_int",
    "suggestion_playground",
    "within_one_edit",
    "first_containing",
]


def _missing(tools, name: str) -> None:
    # A module that stops at an earlier step has no such name: say which step adds it.
    if not hasattr(tools, name):
        raise NotImplementedError(f"{name} is not in your module yet")


def shortcut_int(text: str) -> str:
    """What Python's ``int()`` makes of ``text``: the lenient reading step 9 must not copy.

    >>> shortcut_int("\\uff13")
    'int() gives 3 (non-ASCII digits: FULLWIDTH DIGIT THREE)'
    >>> shortcut_int("3 rows")
    'int() raises ValueError'
    """
    try:
        value = int(text)
    except (ValueError, TypeError):
        return "int() raises ValueError"
    foreign = [unicodedata.name(ch, "?") for ch in text.strip() if ch.isdigit() and ch not in "0123456789"]
    tail = f" (non-ASCII digits: {', '.join(dict.fromkeys(foreign))})" if foreign else ""
    return f"int() gives {value}{tail}"


def _coercion_view(tools, limit_text: str, region_text: str) -> str:
    _missing(tools, "coerce")
    raw = {"sku": "SKU-1001", "region": region_text, "limit": limit_text}
    before = sum(tools.CALLS.values())
    args, coercions = tools.coerce("stock_lookup", raw)
    ran = sum(tools.CALLS.values()) - before
    reason = tools.validate_args("stock_lookup", args)
    verdict = (
        f'<span style="color:{GREEN}">valid: the call may run</span>'
        if reason == ""
        else f'<span style="color:{RED}">refused: <b>{esc(repr(reason))}</b></span>'
    )
    warn = f'<br><span style="color:{RED}">coerce ran a tool body {ran} time(s).</span>' if ran else ""
    return (
        f"<b>The shortcut</b>: <code>int({esc(repr(limit_text))})</code>: {esc(shortcut_int(limit_text))}<br>"
        f"<b>Your</b> <code>coerce('stock_lookup', {esc(repr(raw))})</code> returned<br>args{pre(args)}"
        f"coercions (the ledger){pre(coercions)}then <code>validate_args</code>: {verdict}{warn}"
    )


def coercion_playground(path=None) -> widgets.VBox:
    """Step 9: type a limit and a region as a model might write them; see ``coerce`` and ``int()``.

    >>> "int() gives 3" in coercion_playground("solutions/tools.py").children[-1].value
    True
    """
    live = LiveModule(path)
    limit = widgets.Combobox(
        value="\uff13", options=["\uff13", " 3 ", "3", "+3", "1,299", "3.0", "\u00b2", ""], description="limit"
    )
    region = widgets.Combobox(
        value=" North ", options=[" North ", "north", "NORTH", "nrth", "mars"], description="region"
    )
    shown = widgets.HTML()

    def render() -> str:
        return _coercion_view(live.get(), limit.value, region.value)

    for control in (limit, region):
        control.observe(lambda _change: guard(shown, render), names="value")
    guard(shown, render)
    return widgets.VBox([widgets.HBox([limit, region]), shown])


def within_one_edit(a: str, b: str) -> bool:
    """True when ``b`` is one insertion, deletion or substitution away from ``a`` (and not equal).

    >>> within_one_edit("wast", "east"), within_one_edit("wast", "west"), within_one_edit("wast", "south")
    (True, True, False)
    """
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) == 1
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def _suggestion_view(tools, region_text: str) -> str:
    _missing(tools, "explain")
    regions = list(tools.REGIONS)
    typed = region_text.strip().lower()
    near = [r for r in regions if within_one_edit(typed, r)]
    closest = difflib.get_close_matches(typed, regions, n=1, cutoff=0.5)
    args = {"sku": "SKU-1001", "region": region_text, "limit": 2}
    before = sum(tools.CALLS.values())
    explained = tools.explain("stock_lookup", args)
    ran = sum(tools.CALLS.values()) - before
    coin = (
        f'<span style="color:{RED}">{len(near)} regions are one edit away: a guess would be a coin flip</span>'
        if len(near) > 1
        else f'<span style="color:{GREY}">regions one edit away: {esc(near)}</span>'
    )
    warn = f'<br><span style="color:{RED}">explain ran a tool body {ran} time(s).</span>' if ran else ""
    return (
        f"<b>The shortcut</b>: difflib's closest match picks <code>{esc(closest)}</code>; {coin}<br>"
        f"<b>Your</b> <code>explain('stock_lookup', {esc(repr(args))})</code> returned{pre(explained)}{warn}"
    )


def suggestion_playground(path=None) -> widgets.VBox:
    """Step 10: type a misspelt region; see the regions one edit away and your ``explain``.

    >>> "2 regions are one edit away" in suggestion_playground("solutions/tools.py").children[-1].value
    True
    """
    live = LiveModule(path)
    region = widgets.Combobox(
        value="wast", options=["wast", "nrth", "Sout", "centrl", "North", "mars"], description="region"
    )
    shown = widgets.HTML()
    region.observe(lambda _change: guard(shown, lambda: _suggestion_view(live.get(), region.value)), names="value")
    guard(shown, lambda: _suggestion_view(live.get(), region.value))
    return widgets.VBox([region, shown])


def first_containing(products: dict, query: str) -> str | None:
    """The shortcut step 11 must not take: the first sku whose name contains ``query``.

    >>> first_containing({"A-1": "Steel bolt M6", "A-2": "Steel bolt M8"}, "bolt")
    'A-1'
    """
    q = query.strip().casefold()
    return next((sku for sku, name in products.items() if q and q in name.casefold()), None)


def _identity_view(tools, query: str) -> str:
    _missing(tools, "PRODUCTS")
    products = dict(tools.PRODUCTS)
    guess = first_containing(products, query)
    matches = [sku for sku, name in products.items() if query.strip() and query.strip().casefold() in name.casefold()]
    risk = (
        f'<span style="color:{RED}">{len(matches)} products match: the pick depends on the order of PRODUCTS</span>'
        if len(matches) > 1
        else f'<span style="color:{GREY}">{len(matches)} product(s) match</span>'
    )
    _missing(tools, "resolve_sku")
    before = sum(tools.CALLS.values())
    resolved = tools.resolve_sku(query)
    order = {"product": query, "region": "north", "limit": 2}
    try:
        _missing(tools, "handle_named")
        answer = tools.handle_named(dict(order))
    except NotImplementedError as exc:  # resolve_sku may be written before handle_named
        answer = f"Not written yet: {exc}"
    ran = sum(tools.CALLS.values()) - before
    return (
        f"<b>The shortcut</b>: the first name containing {esc(repr(query))} is <code>{esc(guess)}</code>; {risk}<br>"
        f"<b>Your</b> <code>resolve_sku({esc(repr(query))})</code> returned{pre(resolved)}"
        f"<code>handle_named({esc(repr(order))})</code> returned{pre(answer)}"
        f'<span style="color:{GREY}">tool body runs for both: {ran}</span>'
    )


def identity_playground(path=None) -> widgets.VBox:
    """Step 11: type a product as a person would name it; see the shortcut and your ``resolve_sku``.

    >>> "2 products match" in identity_playground("solutions/tools.py").children[-1].value
    True
    """
    live = LiveModule(path)
    query = widgets.Combobox(
        value="bolt",
        options=["bolt", "Steel bolt M8", "  copper WIRE 4 mm ", "SKU-5000", "gasket", "wire", "widget", ""],
        description="product",
    )
    shown = widgets.HTML()
    query.observe(lambda _change: guard(shown, lambda: _identity_view(live.get(), query.value)), names="value")
    guard(shown, lambda: _identity_view(live.get(), query.value))
    return widgets.VBox([query, shown])
