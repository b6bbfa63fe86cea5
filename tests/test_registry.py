"""The registry's own guarantees: expectations stay in the parent."""
from __future__ import annotations

import json

import pytest

from grader.checks.registry import Probe, check_rng, checks_for, is_judge_only


def _keys(value):
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)


def test_child_view_drops_expectations_at_any_depth():
    probe = Probe("calls", {"operations": [{"op": "call", "expect": "", "runs": {"a": 1}}], "expect_handle": {"ok": True}})
    assert probe.to_json() == {"kind": "calls", "params": {"operations": [{"op": "call"}]}}
    assert probe.params["expect_handle"] == {"ok": True}  # the judge still sees it


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_registered_probe_sends_an_expected_answer_to_the_child(seed):
    for check in checks_for(None):
        for probe in check.probes(check_rng(seed, check.id)):
            sent = probe.to_json()
            json.dumps(sent)  # must travel as JSON
            leaked = sorted({k for k in _keys(sent["params"]) if is_judge_only(k)})
            assert not leaked, f"{check.id} sends {leaked} to the child"
