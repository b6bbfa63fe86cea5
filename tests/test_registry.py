"""The registry's own guarantees: expectations stay in the parent."""

from __future__ import annotations

import json

import jsonschema
import pytest

from grader.checks.registry import Probe, check_rng, checks_for
from grader.engine.wire import PROBE_SCHEMA


def test_an_undeclared_field_does_not_validate():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"kind": "calls", "params": {"operations": [{"op": "call", "case": {}}]}}, PROBE_SCHEMA)


def test_child_view_drops_expectations_at_any_depth():
    probe = Probe(
        "calls", {"operations": [{"op": "call", "expect": "", "runs": {"a": 1}}], "expect_handle": {"ok": True}}
    )
    assert probe.to_json() == {"kind": "calls", "params": {"operations": [{"op": "call"}]}}
    assert probe.params["expect_handle"] == {"ok": True}  # the judge still sees it


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_registered_probe_sends_an_expected_answer_to_the_child(seed):
    for check in checks_for(None):
        for probe in check.probes(check_rng(seed, check.id)):
            sent = probe.to_json()
            json.dumps(sent)  # must travel as JSON
            jsonschema.validate(sent, PROBE_SCHEMA)  # only declared fields travel
            for operation in sent["params"].get("operations", []):
                leaked = sorted(
                    k for k in operation if k in ("expect", "runs", "case", "label") or k.startswith("expect")
                )
                assert not leaked, f"{check.id} sends {leaked} to the child"
