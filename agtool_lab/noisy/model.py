"""A seeded stand-in for the model that sits in the ``pick`` node (the capstone).

In the lab, ``pick`` is a rule that copies the order into the tool call, so
a learner can finish all eight steps without ever seeing a model get an
argument wrong. This module plays the model instead: it turns orders into
tool calls ``(tool, args)`` and, at a configurable rate, gets them wrong in
the ways the background chapters measured on real tool calls.

How the chapters' failure categories become concrete mistakes here (the
shares are the chapters' defaults, :data:`CHAPTER_MIX`; every share can be
changed):

==================  =====  ===========================================  ======================
category            share  what the simulated model writes               the contract says
==================  =====  ===========================================  ======================
identity            48%    the region as a person might say it:         ``allowed:region``
                           ``"North"``/``"NORTH"``, a typo (``"nrth"``),
                           or a town in that region (``"Northbrook"``)
missing_optional    19%    leaves ``limit`` out, as if it were optional  ``missing:limit``
format              14%    ``limit`` as a numeric string (``"3"``) or    ``type:limit``
                           as ``True``
invented_value      11%    a SKU that looks real but has no stock row    ``result:empty`` /
                           (``SKU-1002``), or an argument nobody asked   ``extra:<name>``
                           for (``warehouse="main"``)
wrong_unit          8%     ``limit`` on the wrong scale (ten times too   ``range:limit`` /
                           big, zero or negative), or, for a region      ``result:too_big``
                           with more bins than ``MAX_ROWS``, the legacy
                           tool that returns every bin
==================  =====  ===========================================  ======================

A wrong but *valid* region (north instead of south) is left out on purpose:
no validation can catch it, and the chapters' answer to it is an answer that
names what it acted on, not a check.

Randomness is drawn per order from ``(seed, index)``, and every draw is made
whether or not the order goes wrong. So the same seed gives the same calls,
and raising the error rate only adds mistakes: an order that goes wrong at
5% goes wrong the same way at 30%. That keeps a sweep over error rates
smooth.

Example::

    >>> from agtool_lab.load import load_module
    >>> tools = load_module("solutions/tools.py")
    >>> orders = draw_orders(tools, 3, seed=1)
    >>> calls = NoisyModel(tools, error_rate=0.3, seed=1).calls_for(orders)
    >>> len(calls), calls[0].tool
    (3, 'stock_lookup')
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType

__all__ = [
    "CATEGORIES",
    "CHAPTER_ERROR_RATE",
    "CHAPTER_MIX",
    "LabData",
    "ModelCall",
    "NoisyModel",
    "draw_orders",
    "right_rows",
]

# The chapters' split of failing calls by cause (they sum to 1).
CHAPTER_MIX: dict[str, float] = {
    "identity": 0.48,
    "missing_optional": 0.19,
    "format": 0.14,
    "invented_value": 0.11,
    "wrong_unit": 0.08,
}
CATEGORIES = tuple(CHAPTER_MIX)

# Argument accuracy measured before any validation layer was 0.91.
CHAPTER_ERROR_RATE = 0.09

DEFAULT_TOOL = "stock_lookup"
LEGACY_TOOL = "legacy_stock"

# Share of orders that name their tool explicitly (the key is optional).
_EXPLICIT_TOOL_SHARE = 0.25

# A town "in" each region: what a person may say instead of the region's name.
_TOWNS = {
    "north": "Northbrook",
    "south": "Southport",
    "east": "Eastleigh",
    "west": "Westbury",
    "central": "Midtown",
}
# Arguments the contract never lists, as a model may add them "to be helpful".
_EXTRA_ARGUMENTS = (("warehouse", "main"), ("unit", "boxes"))


@dataclass(frozen=True)
class LabData:
    """The parts of a learner module the simulator reads: regions, stock rows, row cap.

    >>> LabData(regions=("north",), stock=({"sku": "S", "region": "north", "bin": "B", "count": 1},),
    ...         max_rows=5).pairs
    (('S', 'north'),)
    """

    regions: tuple[str, ...]
    stock: tuple[dict, ...]
    max_rows: int

    @classmethod
    def from_module(cls, module: ModuleType) -> LabData:
        """Read ``REGIONS``, ``STOCK`` and ``MAX_ROWS`` from a learner module."""
        return cls(
            regions=tuple(module.REGIONS),
            stock=tuple(dict(row) for row in module.STOCK),
            max_rows=int(module.MAX_ROWS),
        )

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """Distinct ``(sku, region)`` pairs that have stock, in table order."""
        return tuple(dict.fromkeys((row["sku"], row["region"]) for row in self.stock))

    @property
    def skus(self) -> frozenset[str]:
        return frozenset(row["sku"] for row in self.stock)

    def bins(self, sku: str, region: str) -> int:
        """How many stock rows ``sku`` has in ``region``."""
        return sum(1 for row in self.stock if row["sku"] == sku and row["region"] == region)


def _as_data(source: ModuleType | LabData) -> LabData:
    return source if isinstance(source, LabData) else LabData.from_module(source)


def right_rows(source: ModuleType | LabData, order: Mapping) -> list[dict]:
    """The right answer to ``order``: its first ``limit`` bins, read from the module's ``STOCK``.

    >>> from agtool_lab.load import load_module
    >>> right_rows(load_module("solutions/tools.py"), {"sku": "SKU-1001", "region": "north", "limit": 1})
    [{'bin': 'N-01', 'count': 12}]
    """
    data = _as_data(source)
    rows = [
        {"bin": row["bin"], "count": row["count"]}
        for row in data.stock
        if row["sku"] == order["sku"] and row["region"] == order["region"]
    ]
    return rows[: order["limit"]]


def draw_orders(source: ModuleType | LabData, n: int, *, seed: int = 0) -> list[dict]:
    """Draw ``n`` orders that each have a right answer, from the module's own ``STOCK``.

    Each order picks a stock row at random (so a region with many bins is asked
    about more often, as a busy warehouse would be), asks for its sku and
    region with a ``limit`` between 1 and ``MAX_ROWS``, and now and then names
    its tool. Same seed, same orders.

    >>> from agtool_lab.load import load_module
    >>> draw_orders(load_module("solutions/tools.py"), 2, seed=3) == draw_orders(
    ...     load_module("solutions/tools.py"), 2, seed=3)
    True
    """
    data = _as_data(source)
    if not data.stock or data.max_rows < 1:
        raise ValueError("STOCK is empty or MAX_ROWS is below 1: write step 1 first.")
    rng = random.Random(f"orders:{seed}")
    orders = []
    for _ in range(n):
        row = rng.choice(data.stock)
        order = {"sku": row["sku"], "region": row["region"], "limit": rng.randint(1, data.max_rows)}
        if rng.random() < _EXPLICIT_TOOL_SHARE:
            order["tool"] = DEFAULT_TOOL
        orders.append(order)
    return orders


@dataclass(frozen=True)
class ModelCall:
    """One tool call as the simulated model wrote it.

    ``category`` and ``mistake`` are ``None`` when the call is faithful to the
    order; otherwise they say which chapter category and which concrete
    mistake was made (for example ``"identity"`` / ``"region_typo"``).
    """

    tool: str
    args: dict
    category: str | None = None
    mistake: str | None = None

    @property
    def faithful(self) -> bool:
        return self.category is None


# --------------------------------------------------------------------------
# The concrete mistakes. Each takes the faithful call and returns a wrong one,
# or None when it does not apply to this order (the legacy tool needs a large
# region). They get their own random generator so their draws are fixed per
# order.
# --------------------------------------------------------------------------

Mistake = Callable[[str, dict, LabData, random.Random], "tuple[str, dict] | None"]


def _region_capitalised(tool, args, data, rng):
    region = args["region"]
    return tool, {**args, "region": rng.choice([region.capitalize(), region.upper()])}


def _region_typo(tool, args, data, rng):
    region = args["region"]
    # Drop the first vowel after the first letter ("north" -> "nrth"); if that
    # is still a real region (or changes nothing), drop the last letter instead.
    typo = next(
        (region[:i] + region[i + 1 :] for i in range(1, len(region)) if region[i] in "aeiou"),
        region[:-1],
    )
    if typo == region or typo in data.regions:
        typo = region[:-1]
    return tool, {**args, "region": typo}


def _region_town(tool, args, data, rng):
    region = args["region"]
    return tool, {**args, "region": _TOWNS.get(region, region.title() + "ville")}


def _limit_left_out(tool, args, data, rng):
    return tool, {key: value for key, value in args.items() if key != "limit"}


def _limit_as_string(tool, args, data, rng):
    return tool, {**args, "limit": str(args["limit"])}


def _limit_as_true(tool, args, data, rng):
    # In Python True == 1 and it slices like 1, which is why it is a trap.
    return tool, {**args, "limit": True}


def _sku_invented(tool, args, data, rng):
    prefix, _, number = args["sku"].rpartition("-")
    if not number.isdigit():
        return tool, {**args, "sku": args["sku"] + "-X"}
    # A near neighbour of the real SKU: plausible, well formed, and absent.
    candidates = [
        f"{prefix}-{int(number) + step:0{len(number)}d}" for step in (1, -1, 10, -10, 2, -2) if int(number) + step >= 0
    ]
    absent = [sku for sku in candidates if sku not in data.skus][:2]
    return tool, {**args, "sku": rng.choice(absent) if absent else args["sku"] + "0"}


def _extra_argument(tool, args, data, rng):
    name, value = rng.choice(_EXTRA_ARGUMENTS)
    return tool, {**args, name: value}


def _limit_scaled_up(tool, args, data, rng):
    # A count read in the wrong unit: ten times too big, always above the cap.
    return tool, {**args, "limit": max(args["limit"] * 10, data.max_rows + 1)}


def _limit_not_positive(tool, args, data, rng):
    return tool, {**args, "limit": rng.choice([0, -args["limit"]])}


def _legacy_for_large_region(tool, args, data, rng):
    if data.bins(args["sku"], args["region"]) <= data.max_rows:
        return None
    return LEGACY_TOOL, dict(args)


MISTAKES: dict[str, dict[str, Mistake]] = {
    "identity": {
        "region_capitalised": _region_capitalised,
        "region_typo": _region_typo,
        "region_town": _region_town,
    },
    "missing_optional": {"limit_left_out": _limit_left_out},
    "format": {"limit_as_string": _limit_as_string, "limit_as_true": _limit_as_true},
    "invented_value": {"sku_invented": _sku_invented, "extra_argument": _extra_argument},
    "wrong_unit": {
        "limit_scaled_up": _limit_scaled_up,
        "limit_not_positive": _limit_not_positive,
        "legacy_for_large_region": _legacy_for_large_region,
    },
}


def _normalised_mix(mix: Mapping[str, float]) -> dict[str, float]:
    unknown = set(mix) - set(MISTAKES)
    if unknown:
        raise ValueError(f"unknown error categories {sorted(unknown)}; known: {list(MISTAKES)}")
    if any(share < 0 for share in mix.values()) or sum(mix.values()) <= 0:
        raise ValueError("error shares must be non-negative and not all zero")
    total = sum(mix.values())
    return {category: share / total for category, share in mix.items() if share > 0}


@dataclass
class NoisyModel:
    """Turns orders into tool calls, getting ``error_rate`` of them wrong.

    ``mix`` gives each chapter category's share of the wrong calls (it is
    normalised, so ``{"identity": 1}`` makes every mistake an identity one).

    >>> from agtool_lab.load import load_module
    >>> tools = load_module("solutions/tools.py")
    >>> order = {"sku": "SKU-1001", "region": "north", "limit": 2}
    >>> NoisyModel(tools, error_rate=0.0).call(order, 0).args
    {'sku': 'SKU-1001', 'region': 'north', 'limit': 2}
    >>> NoisyModel(tools, error_rate=1.0, mix={"format": 1}).call(order, 0).category
    'format'
    """

    source: ModuleType | LabData
    error_rate: float = CHAPTER_ERROR_RATE
    mix: Mapping[str, float] = field(default_factory=lambda: dict(CHAPTER_MIX))
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.error_rate <= 1.0:
            raise ValueError(f"error_rate must be within 0..1, got {self.error_rate}")
        self.data = _as_data(self.source)
        self._shares = _normalised_mix(self.mix)

    def call(self, order: Mapping, index: int) -> ModelCall:
        """The call the model writes for ``order``, the ``index``-th of its run."""
        tool = order.get("tool", DEFAULT_TOOL)
        args = {"sku": order["sku"], "region": order["region"], "limit": order["limit"]}
        rng = random.Random(f"model:{self.seed}:{index}")
        # All draws happen every time, so a higher error rate only adds mistakes.
        goes_wrong = rng.random() < self.error_rate
        category = rng.choices(list(self._shares), weights=list(self._shares.values()))[0]
        mistake_rng = random.Random(rng.random())
        if not goes_wrong:
            return ModelCall(tool, args)
        return self._mistake(category, tool, args, mistake_rng)

    def calls_for(self, orders: list[Mapping]) -> list[ModelCall]:
        """One call per order, in order."""
        return [self.call(order, index) for index, order in enumerate(orders)]

    def _mistake(self, category: str, tool: str, args: dict, rng: random.Random) -> ModelCall:
        options = list(MISTAKES[category].items())
        rng.shuffle(options)
        # The first mistake of the category that applies to this order; the
        # shuffle makes each applicable one equally likely.
        for name, make in options:
            made = make(tool, args, self.data, rng)
            if made is not None:
                return ModelCall(made[0], made[1], category, name)
        raise AssertionError(f"no {category} mistake applies")  # every category has a general one
