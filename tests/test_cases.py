"""Random cases: reproducible per seed, varied across seeds, and saying what the spec says.

The reference solution is used here as an oracle for the case generators
(the grader itself never imports it).
"""

from __future__ import annotations

import json
import random

import pytest

from agtool_lab.load import load_module
from grader import spec
from grader.checks import cases
from grader.checks.registry import CHECKS, check_rng, checks_for
from grader.engine.encode import decode

checks_for()


@pytest.fixture(scope="module")
def reference():
    return load_module("solutions/tools.py")


def _probes_json(seed: int) -> str:
    return json.dumps(
        {cid: [p.to_json() for p in check.probes(check_rng(seed, cid))] for cid, check in CHECKS.items()},
        sort_keys=True,
    )


def test_same_seed_gives_the_same_probes():
    assert _probes_json(17) == _probes_json(17)


def test_different_seeds_give_different_values():
    assert _probes_json(17) != _probes_json(18)
    varied = [
        cid
        for cid, check in CHECKS.items()
        if json.dumps([p.to_json() for p in check.probes(check_rng(1, cid))])
        != json.dumps([p.to_json() for p in check.probes(check_rng(2, cid))])
    ]
    # Checks of fixed facts (names, table, structure) have nothing to vary; most others must.
    assert len(varied) >= len(CHECKS) * 2 // 3


def test_probes_are_plain_json():
    for seed in (0, 1):
        json.loads(_probes_json(seed))


def test_the_spec_table_and_its_facts():
    assert len(spec.STOCK) == 19
    assert len(spec.rows_for("SKU-3300", "north")) == 7 > spec.MAX_ROWS
    assert spec.rows_for("SKU-5000", "central") == [] and spec.rows_for(spec.UNKNOWN_SKU, "north") == []
    assert spec.rows_for("SKU-2040", "west") == [{"bin": "W-01", "count": 0}]


def test_the_table_matches_the_reference(reference):
    assert spec.STOCK == reference.STOCK


@pytest.mark.parametrize("kind", cases.DEFECT_KINDS + ("type_wrong_sku", "type_wrong_limit", "type_none"))
def test_single_defect_cases_give_their_reason(reference, kind):
    for seed in range(40):
        tool, args, reason = cases.single_defect(random.Random(seed), kind)
        assert reference.validate_args(tool, args) == reason, (tool, args)


def test_random_valid_arguments_are_valid(reference):
    rng = random.Random(3)
    for _ in range(100):
        args = cases.random_valid_args(rng, stocked=rng.random() < 0.5)
        assert reference.validate_args(rng.choice(spec.TOOL_NAMES), cases.shuffled(rng, args)) == ""


@pytest.mark.parametrize("kind", cases.BAD_RESULT_KINDS)
def test_bad_results_give_their_reason(reference, kind):
    for seed in range(40):
        value, reason = cases.bad_result(random.Random(seed), kind)
        assert reference.validate_result("stock_lookup", value) == reason, value


def test_valid_results_pass(reference):
    rng = random.Random(5)
    for _ in range(50):
        assert reference.validate_result("legacy_stock", cases.random_valid_result(rng)) == ""


def test_repairable_orders_have_stock_in_the_fallback_region(reference):
    rng = random.Random(9)
    for _ in range(30):
        order = cases.repairable_region_order(rng)
        result = reference.handle(order)
        assert result["ok"] and result["attempts"] == 2, order


def test_bad_values_cover_what_the_brief_lists():
    rng = random.Random(0)
    seen = {repr(cases.single_defect(rng, kind)[1].get("limit")) for kind in cases.DEFECT_KINDS for _ in range(50)}
    for value in ("True", "False", "0", "2.0", "'3'"):
        assert value in seen
    assert {"North", "nrth", "mars"} <= set(cases.BAD_REGIONS)


def test_case_values_round_trip_through_the_encoding():
    from grader.engine.encode import encode

    rng = random.Random(4)
    for kind in cases.BAD_RESULT_KINDS:
        value, _ = cases.bad_result(rng, kind)
        assert decode(json.loads(json.dumps(encode(value)))) == value
