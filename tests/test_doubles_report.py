"""Step 8's doubles (``grader.engine.doubles_report``) and how step 8 reads their records.

The door's ways of being wrong on purpose must do what the checks assume
(a wrong value runs the body only with ``leak``; nothing is cached without
``store``), the kinds of order must be the spec's, and the runs the judge
reads off the door's records must equal what the spies counted in the same
report, in each of the three reports and for a module that measures badly.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from defects.catalog import materialise_more
from defects.harness import Context

from grader import spec
from grader.checks import step8
from grader.checks.registry import check_rng
from grader.engine.doubles_report import order_kind, report_door, report_handle
from grader.engine.probes import run_probe
from grader.engine.report_files import resolve_report_files

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "tools.py"
GOOD = {"sku": "SKU-1001", "region": "north", "limit": 2}


class _Module:
    """A module with one counting tool under the spec's contract."""

    def __init__(self) -> None:
        self.runs = 0
        contract = {
            "sku": {"type": str, "required": True},
            "region": {"type": str, "required": True, "allowed": list(spec.REGIONS)},
            "limit": {"type": int, "required": True, "min": 1, "max": spec.MAX_ROWS},
        }
        returns = {
            "keys": {"sku": str, "region": str, "rows": list},
            "rows": {"max_len": spec.MAX_ROWS, "item": {"bin": {"type": str}, "count": {"type": int}}},
        }
        self.TOOLS = {"stock_lookup": {"fn": self.tool, "args": contract, "returns": returns}}

    def tool(self, sku, region, limit):
        self.runs += 1
        return spec.lookup_result(sku, region, limit)


@pytest.mark.parametrize(
    "args, leak_runs",
    [
        ({**GOOD, "limit": True}, 1),
        ({**GOOD, "region": "mars"}, 1),
        ({**GOOD, "limit": 99}, 1),
        ({**GOOD, "sku": 7}, 1),
        ({"sku": "SKU-1001", "region": "north"}, 0),
        ({**GOOD, "color": "red"}, 0),
        ({"sku": "SKU-1001", "region": "mars"}, 0),  # a wrong value, but Python's call fails first (no limit)
    ],
)
def test_the_door_refuses_every_wrong_call_and_runs_the_body_first_only_with_leak(args, leak_runs):
    for leak in (False, True):
        module = _Module()
        result = report_door(module, {"leak": leak})("stock_lookup", args)
        assert result["ok"] is False and result["error"].startswith(spec.ARGS_PREFIX)
        assert module.runs == (leak_runs if leak else 0)


def test_the_door_caches_successes_only_with_store():
    for store, runs in ((True, 1), (False, 3)):
        module = _Module()
        door = report_door(module, {"store": store})
        results = [door("stock_lookup", dict(GOOD)) for _ in range(3)]
        assert all(r["ok"] for r in results) and module.runs == runs
    module = _Module()
    door = report_door(module, {})
    empty = {**GOOD, "sku": spec.UNKNOWN_SKU}
    assert [door("stock_lookup", empty)["error"] for _ in range(2)] == ["result:empty"] * 2 and module.runs == 2


@pytest.mark.parametrize(
    "order, kind",
    [
        (spec.REPAIR_EXAMPLE, "repaired"),
        (spec.EMPTY_EXAMPLE, "empty"),
        ({"sku": "SKU-3300", "region": "Central", "limit": 4}, "repaired"),
        ({"sku": "SKU-2040", "region": "south", "limit": 1}, "empty"),
        ({"sku": "SKU-2040", "region": "nowhere", "limit": 2, "tool": "legacy_stock"}, "repaired"),
        ({"sku": "SKU-5000", "region": "mars", "limit": 2}, "empty"),  # no stock in the fallback region either
        ({"sku": "SKU-1001", "region": "mars", "limit": 0}, "other"),  # a second fault: two fixes
        ({"sku": spec.UNKNOWN_SKU, "region": "mars", "limit": 2}, "empty"),  # fixed, then empty
        ({"sku": "SKU-3300", "region": "north", "limit": 2, "tool": "legacy_stock"}, "other"),  # fixed: too_big
        ({"sku": spec.UNKNOWN_SKU, "region": "north", "limit": 9}, "empty"),  # limit clamped, then empty
        ({"sku": "SKU-1001", "region": "north", "limit": 2}, "other"),  # finds rows at once
        ({"sku": "SKU-1001", "region": "north"}, "other"),
        (None, "other"),
        ({**spec.EMPTY_EXAMPLE, "tool": ["stock_lookup"]}, "other"),
    ],
)
def test_the_kind_of_an_order_is_what_a_correct_handle_does_with_it(order, kind):
    assert order_kind(order) == kind
    results = {"repaired": 1, "empty": 2, "other": 3}
    assert report_handle(None, results)(order) == results[kind]


def _observe(path: Path, probe, tmp_path: Path) -> dict:
    target = tmp_path / "agtool" / "tools.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    ctx = Context(tmp_path, target)
    return resolve_report_files(run_probe(ctx.fresh_module(), probe.to_json(), ctx), ctx.scratch)


def _spy_runs_during_report(probe, obs) -> int:
    records = obs["records"]
    i = next(i for i, o in enumerate(probe.params["operations"]) if o["op"] == "report")
    return sum(records[i]["spy_runs"].values()) - sum(records[i - 1]["spy_runs"].values())


# A correct module whose wrong calls each have two faults: a wrong value and a missing or extra argument.
_TWO_FAULTS = (
    "_WRONG_ARGS = [\n",
    '_WRONG_ARGS = [\n    ("stock_lookup", {"sku": "SKU-1001", "region": "mars"}),\n'
    '    ("stock_lookup", {"sku": 7, "region": "north", "limit": 2, "x": 1}),\n',
)


def _module(name: str, tmp_path: Path) -> Path:
    if name == "solution":
        return SOLUTION
    if name == "two_faults":
        target = tmp_path / "two_faults.py"
        target.write_text(SOLUTION.read_text(encoding="utf-8").replace(*_TWO_FAULTS), encoding="utf-8")
        return target
    return materialise_more(name, tmp_path / "planted")


@pytest.mark.parametrize("module", ["solution", "two_faults", "memo_counts_both_calls", "blocked_counts_refusals"])
@pytest.mark.parametrize(
    "probe_of", [step8.as_is_probe, step8.changed_probe, step8.no_cache_probe], ids=lambda f: f.__name__
)
def test_the_runs_read_off_the_door_equal_the_spies_count(module, probe_of, tmp_path):
    path = _module(module, tmp_path)
    probe = probe_of(check_rng(3, "step8/x"))
    obs = _observe(path, probe, tmp_path)
    calls = step8._door_calls(probe, obs)
    assert calls and sum(c["runs"] for c in calls) == _spy_runs_during_report(probe, obs)


def test_the_true_values_of_each_report_differ_from_the_spec_s_numbers_where_the_module_changed(tmp_path):
    seen = {}
    for probe_of in (step8.as_is_probe, step8.changed_probe, step8.no_cache_probe):
        probe = probe_of(random.Random(5))
        values, problems, _ = step8._truth(
            probe, _observe(SOLUTION, probe, tmp_path / probe_of.__name__), one_of_each=probe_of is step8.as_is_probe
        )
        assert problems == []
        seen[probe_of.__name__] = values
    assert seen["as_is_probe"] == dict(spec.REPORT_EXPECTED)
    for key in spec.REPORT_KEYS:  # every number takes two values or more across the three reports
        assert len({repr(values[key]) for values in seen.values()}) >= 2, key
