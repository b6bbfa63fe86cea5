"""The capstone's task set, written as people write, and the seeded chat model that reads it.

Each task is an order from the learner's ``STOCK`` put into one sentence a
person would type. Every task carries one *trap* of a category of the
background chapters (drawn with their shares, :data:`CHAPTER_MIX`): the
sentence says one entity the way people say it, and a model that copies it
literally makes that category's mistake.

==================  =============================================  ===========================
category            how the sentence says it                        the call of a model that slips
==================  =============================================  ===========================
identity            the region as a town (``the Northbrook depot``)  ``region="Northbrook"``
                    or ``North`` or with a typo (``nrth``); the     ``region="nrth"``; a
                    product by its name (``copper wire 4 mm``)       neighbour's sku (wrong entity)
missing optional    the count in a sentence of its own               no ``limit``
format              the sku without its prefix (``part 4411``), the  ``sku="4411"``,
                    count in words (``three``) or as digits          ``limit="three"``/``"3"``
invented value      "from the main warehouse"; a sku it half knows   ``warehouse="main"``; an absent sku
wrong unit          "boxes of ten"; for a region with many bins,     ``limit=30``; ``legacy_stock``
                    "from the full stock list"
==================  =============================================  ===========================

:class:`SeededChat` is the stand-in for a chat model with tool calling: it
reads a conversation (the task's sentence, then any tool results) and writes
one tool call. On the first call it falls for the trap with probability
``error_rate``; on a retry it takes a ``suggestion`` when the tool result
carries one, and otherwise re-reads the request and gets it right with the
chapters' first-retry rate without a correction (0.58), else slips again.
Every draw is made from ``(seed, task, trial, attempt)`` whether it is used
or not, so the same seed gives the same calls and a higher error rate only
adds slips. The loopback server (:mod:`agtool_lab.noisy.stand_in_server`)
answers with this same function, so the in-process stand-in and the
endpoint path give the same table.

Example::

    >>> from agtool_lab.load import load_module
    >>> tools = load_module("solutions/tools.py")
    >>> tasks = draw_tasks(tools, 3, seed=1)
    >>> len(tasks), tasks[0].text == draw_tasks(tools, 3, seed=1)[0].text
    (3, True)
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType

from agtool_lab.noisy.model import CHAPTER_MIX, LabData, _as_data

__all__ = [
    "REREAD_RATE",
    "TRAPS",
    "SeededChat",
    "Task",
    "ToolCall",
    "draw_tasks",
]

# The chapters: a retry without a correction in the error succeeded 0.58 of the time.
REREAD_RATE = 0.58

# Concrete traps of each chapter category; each task's trap is one of its category's.
TRAPS: dict[str, tuple[str, ...]] = {
    "identity": ("region_town", "region_typo", "region_capitalised", "product_name"),
    "missing_optional": ("limit_apart",),
    "format": ("sku_without_prefix", "count_in_words", "count_as_text"),
    "invented_value": ("extra_warehouse", "sku_invented"),
    "wrong_unit": ("limit_in_boxes", "legacy_list"),
}

# Within identity, the chapters' typical case is a thing named as a person names it (two Henderson accounts):
# the product by its name is half of the category, a region said some other way the other half.
_TRAP_WEIGHTS = {"product_name": 3.0}

_TOWNS = {"north": "Northbrook", "south": "Southport", "east": "Eastleigh", "west": "Westbury", "central": "Midtown"}
_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")

# (with the count in the sentence, with the count left for a sentence of its own)
_PHRASINGS = (
    ("How much {product} is there in {region}? Show me {limit} {bins} at most.", "How much {product} is in {region}?"),
    ("Check the stock of {product} in {region}, up to {limit} {bins}.", "Check the stock of {product} in {region}."),
    (
        "Could you look up {product} for {region}? I need no more than {limit} {bins}.",
        "Could you look up {product} for {region}?",
    ),
    ("{region}: list the bins holding {product}, {limit} at most.", "{region}: list the bins holding {product}."),
)


@dataclass(frozen=True)
class Task:
    """One order and the sentence that asks for it.

    ``order`` is the right call (``sku``, ``region``, ``limit``); ``slip`` is
    the call of a model that falls for the trap, as ``(tool, args)`` with the
    product named by ``sku``; ``product_said`` is the product as the sentence
    names it (what a model passes to a ``product`` parameter).
    """

    id: int
    order: dict
    text: str
    category: str
    trap: str
    slip_tool: str
    slip_args: dict
    product_said: str


@dataclass(frozen=True)
class ToolCall:
    """One tool call a model wrote: ``arguments`` is ``None`` when they were not a JSON object.

    >>> ToolCall("stock_lookup", None, "{'sku': 'SKU-1001'").arguments is None
    True
    """

    name: str
    arguments: dict | None
    raw: str = ""


def _number(n: int) -> str:
    return _WORDS[n] if 0 <= n < len(_WORDS) else str(n)


def _typo(region: str, regions: Sequence[str]) -> str:
    options = [region[:i] + region[i + 1 :] for i in range(1, len(region))]
    return next((t for t in options if t not in regions and t), region + "x")


def _neighbour_sku(data: LabData, sku: str, region: str, products: Mapping[str, str]) -> str:
    # The product a model confuses this one with: one that shares a word of its name, stocked in the region.
    words = {w.casefold() for w in products.get(sku, "").split()}
    stocked = [s for s in dict.fromkeys(r["sku"] for r in data.stock) if s != sku]
    near = [s for s in stocked if words & {w.casefold() for w in products.get(s, "").split()}]
    here = [s for s in near or stocked if data.bins(s, region)]
    return (here or near or stocked or [sku + "-X"])[0]


def _absent_sku(data: LabData, sku: str) -> str:
    prefix, _, number = sku.rpartition("-")
    if number.isdigit():
        for step in (1, -1, 10, 2):
            candidate = f"{prefix}-{int(number) + step:0{len(number)}d}"
            if candidate not in data.skus:
                return candidate
    return sku + "0"


def draw_tasks(source: ModuleType, n: int, *, seed: int = 0, mix: Mapping[str, float] | None = None) -> list[Task]:
    """``n`` tasks from the module's ``STOCK`` and ``PRODUCTS``, each with one trap; same seed, same tasks.

    >>> from agtool_lab.load import load_module
    >>> task = draw_tasks(load_module("solutions/tools.py"), 1, seed=0)[0]
    >>> task.category in TRAPS and task.trap in TRAPS[task.category]
    True
    """
    data = _as_data(source)
    if not data.stock or data.max_rows < 1:
        raise ValueError("STOCK is empty or MAX_ROWS is below 1: write step 1 first.")
    products = dict(getattr(source, "PRODUCTS", {}) or {})
    shares = dict(mix or CHAPTER_MIX)
    rng = random.Random(f"tasks:{seed}")
    tasks = []
    for index in range(n):
        row = rng.choice(data.stock)
        sku, region, limit = row["sku"], row["region"], rng.randint(1, data.max_rows)
        category = rng.choices(list(shares), weights=list(shares.values()))[0]
        traps = [t for t in TRAPS[category] if _applies(t, sku, region, data, products)]
        trap = rng.choices(traps, weights=[_TRAP_WEIGHTS.get(t, 1.0) for t in traps])[0]
        phrasing = rng.choice(_PHRASINGS)
        tasks.append(
            _task(index, {"sku": sku, "region": region, "limit": limit}, category, trap, phrasing, data, products)
        )
    return tasks


def _applies(trap: str, sku: str, region: str, data: LabData, products: Mapping[str, str]) -> bool:
    if trap == "product_name":
        return sku in products
    if trap == "sku_without_prefix":
        return "-" in sku
    if trap == "legacy_list":
        return data.bins(sku, region) > data.max_rows
    return True


def _task(index, order, category, trap, phrasing, data: LabData, products) -> Task:
    sku, region, limit = order["sku"], order["region"], order["limit"]
    product_text, region_text, limit_text, tail = sku, f"the {region} region", str(limit), ""
    slip_tool, slip = "stock_lookup", dict(order)
    product_said = sku
    if trap == "region_town":
        town = _TOWNS.get(region, region.title() + "ville")
        region_text, slip["region"] = f"the {town} depot", town
    elif trap == "region_typo":
        typo = _typo(region, data.regions)
        region_text, slip["region"] = typo, typo
    elif trap == "region_capitalised":
        region_text, slip["region"] = region.capitalize(), region.capitalize()
    elif trap == "product_name":
        product_text = product_said = products[sku].lower()
        slip["sku"] = _neighbour_sku(data, sku, region, products)
    elif trap == "limit_apart":
        del slip["limit"]
    elif trap == "sku_without_prefix":
        bare = sku.rpartition("-")[2]
        product_text, slip["sku"] = f"part {bare}", bare
    elif trap == "count_in_words":
        limit_text = slip["limit"] = _number(limit)
    elif trap == "count_as_text":
        slip["limit"] = str(limit)
    elif trap == "extra_warehouse":
        slip["warehouse"] = "main"
        tail = " Take it from the main warehouse."
    elif trap == "sku_invented":
        slip["sku"] = _absent_sku(data, sku)
    elif trap == "limit_in_boxes":
        slip["limit"] = limit * 10
        tail = " We count in boxes of ten."
    elif trap == "legacy_list":
        slip_tool = "legacy_stock"
        tail = " The full stock list is fine."
    with_limit, without_limit = phrasing
    if trap == "limit_apart":
        text = without_limit.format(product=product_text, region=region_text)
        text += f" {_number(limit).capitalize()} {'bin' if limit == 1 else 'bins'} will do."
    else:
        text = with_limit.format(
            product=product_text, region=region_text, limit=limit_text, bins="bin" if limit == 1 else "bins"
        )
    text = text[0].upper() + text[1:] + tail
    return Task(index, order, text, category, trap, slip_tool, slip, product_said)


# --------------------------------------------------------------------------
# The seeded chat model
# --------------------------------------------------------------------------


def _last_tool_result(messages: Sequence[Mapping]) -> dict | None:
    for message in reversed(messages):
        if message.get("role") == "tool":
            try:
                content = json.loads(message.get("content") or "")
            except (TypeError, ValueError):
                return {}
            return content if isinstance(content, dict) else {}
    return None


@dataclass
class SeededChat:
    """A chat model with tool calling, seeded: it answers a conversation about one of ``tasks``.

    ``reply(messages, tools, seed=...)`` finds the task by the user's sentence,
    reads the tool schemas it is offered (a ``product`` parameter means the
    harness resolves names) and any tool result, and returns a
    :class:`ToolCall`, or a string (prose) for a sentence it does not know.

    >>> from agtool_lab.load import load_module
    >>> tools = load_module("solutions/tools.py")
    >>> task = draw_tasks(tools, 1)[0]
    >>> chat = SeededChat([task], error_rate=0.0)
    >>> call = chat.reply([{"role": "user", "content": task.text}], [], seed=0)
    >>> call.arguments == {k: task.order[k] for k in ("sku", "region", "limit")}
    True
    """

    tasks: Sequence[Task]
    error_rate: float = 0.09
    reread_rate: float = REREAD_RATE
    _by_text: dict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.error_rate <= 1.0:
            raise ValueError(f"error_rate must be within 0..1, got {self.error_rate}")
        self._by_text = {task.text: task for task in self.tasks}

    def task_of(self, messages: Sequence[Mapping]) -> Task | None:
        """The task whose sentence is the conversation's first user message."""
        user = next((m.get("content") for m in messages if m.get("role") == "user"), None)
        return self._by_text.get(user) if isinstance(user, str) else None

    def reply(self, messages: Sequence[Mapping], tools: Sequence[Mapping], *, seed: int) -> ToolCall | str:
        task = self.task_of(messages)
        if task is None:
            return "I can only look up stock for the orders I was given."
        by_product = any(
            "product" in ((t.get("function") or {}).get("parameters") or {}).get("properties", {}) for t in tools
        )
        attempt = sum(1 for m in messages if m.get("role") == "assistant")
        rng = random.Random(f"chat:{seed}:{task.id}")
        slips = rng.random() < self.error_rate
        rereads = [rng.random() < self.reread_rate for _ in range(max(attempt, 1))]
        if attempt == 0:
            return self._slip(task, by_product) if slips else self._faithful(task, by_product)
        result = _last_tool_result(messages) or {}
        suggestion = result.get("suggestion")
        if isinstance(suggestion, dict) and suggestion:
            args = dict(suggestion)
            if by_product and "sku" in args:
                args = {"product": args.pop("sku"), **args}
            return ToolCall(str(result.get("tool") or task.slip_tool), args)
        return self._faithful(task, by_product) if rereads[attempt - 1] else self._slip(task, by_product)

    def _faithful(self, task: Task, by_product: bool) -> ToolCall:
        order = task.order
        product = task.product_said if task.trap == "product_name" else order["sku"]
        first = {"product": product} if by_product else {"sku": order["sku"]}
        return ToolCall(
            order.get("tool", "stock_lookup"), {**first, "region": order["region"], "limit": order["limit"]}
        )

    def _slip(self, task: Task, by_product: bool) -> ToolCall:
        args = dict(task.slip_args)
        if by_product:
            # With a product parameter the model passes the name as said: the harness resolves it.
            sku = args.pop("sku")
            args = {"product": task.product_said if task.trap == "product_name" else sku, **args}
        return ToolCall(task.slip_tool, args)
