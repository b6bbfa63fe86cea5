"""Steps 1-2 send every class of input on every run; the seed only picks the values inside each class.

The reference solution is the oracle for what the case generators claim (as in
``test_cases.py``); the grader itself never imports it.
"""

from __future__ import annotations

import json
import random

import pytest

from agtool_lab.load import load_module
from grader import spec
from grader.checks import cases
from grader.checks.registry import CHECKS, check_rng, checks_for

checks_for()
SEEDS = range(12)


@pytest.fixture(scope="module")
def reference():
    return load_module("solutions/tools.py")


@pytest.mark.parametrize(
    "kind, classes",
    [
        ("allowed_lookalike", len(cases.region_lookalikes("north"))),
        ("extra_lookalike", 3),
        ("unknown_tool", len(cases.UNKNOWN_TOOLS) + len(cases.TOOL_LOOKALIKES)),
    ],
)
def test_each_class_of_the_new_kinds_gives_its_reason(reference, kind, classes):
    for seed in SEEDS:
        for variant in range(classes):
            tool, args, reason = cases.single_defect(random.Random(seed), kind, variant, inner=True)
            assert reference.validate_args(tool, args) == reason, (tool, args)
            assert 1 < args.get("limit", 2) < spec.MAX_ROWS


def test_region_lookalikes_are_never_allowed_and_each_class_differs():
    for region in spec.REGIONS:
        values = [value for _, value in cases.region_lookalikes(region)]
        assert len(set(values)) == len(values) and not set(values) & set(spec.REGIONS)


def test_every_class_of_str_is_a_valid_sku(reference):
    for seed in SEEDS:
        for name, sku in cases.any_str_values(random.Random(seed)):
            args = {**cases.random_valid_args(random.Random(seed)), "sku": sku}
            assert reference.validate_args("stock_lookup", args) == "", name


@pytest.mark.parametrize("type_name", sorted(cases.DECLARED_TYPES))
def test_typed_values_are_valid_or_wrong_for_their_declared_type(reference, type_name):
    name = cases.TYPED_ARG_NAMES[type_name][0]
    contract = reference.TOOLS["legacy_stock"]["args"]
    contract[name] = {"type": cases.DECLARED_TYPES[type_name], "required": True}
    try:
        for seed in SEEDS:
            valid, invalid = cases.typed_values(random.Random(seed), type_name)
            base = cases.random_valid_args(random.Random(seed), inner=True)
            for kind, value in valid:
                assert reference.validate_args("legacy_stock", {**base, name: value}) == "", kind
            for kind, value in invalid:
                assert reference.validate_args("legacy_stock", {**base, name: value}) == f"type:{name}", kind
    finally:
        del contract[name]


def _expected_reasons(check_id: str, seed: int) -> str:
    """What a check expects, call by call, with the argument names the seed picks blanked."""
    probes = CHECKS[check_id].probes(check_rng(seed, check_id))
    expected = [op.get("expect", "-") for p in probes for op in p.params["operations"] if op.get("op") == "call"]
    # A name other than the spec's three is a value the seed picks (extra:color, type:fresh): the
    # class is its kind.
    return json.dumps(
        [
            e.split(":")[0] + ":<other>"
            if isinstance(e, str) and ":" in e and e.split(":", 1)[1] not in spec.ARG_NAMES
            else e
            for e in expected
        ]
    )


@pytest.mark.parametrize("check_id", sorted(c.id for c in checks_for([2])))
def test_the_seed_changes_values_never_which_classes_are_sent(check_id):
    """The same calls expect the same reasons on every seed (a class drawn by chance would vary them)."""
    assert len({_expected_reasons(check_id, seed) for seed in SEEDS}) == 1


@pytest.mark.parametrize("check_id", ["step1/lookup_rows", "step1/legacy_ignores_limit"])
def test_the_tools_meet_every_pair_of_sku_and_region_on_every_seed(check_id):
    pairs = {(s, r) for s in spec.SKUS + [spec.UNKNOWN_SKU] for r in spec.REGIONS}
    for seed in SEEDS:
        ops = CHECKS[check_id].probes(check_rng(seed, check_id))[0].params["operations"]
        assert {tuple(op["args"][:2]) for op in ops} == pairs


def test_step_2_probes_run_on_the_spec_contract_not_the_module_table():
    for check in checks_for([2]):
        for probe in check.probes(check_rng(1, check.id)):
            setup = probe.params["operations"][: len(spec.TOOL_NAMES)]
            assert [op["path"] for op in setup] == [[tool, "args"] for tool in spec.TOOL_NAMES], check.id
