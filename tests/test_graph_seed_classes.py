"""Steps 6-7: the classes of cases a check sends do not depend on the seed.

A fast in-process companion of ``tests/test_stability.py`` for the modules whose
step-6/7 verdicts once moved with the seed: which tool a run's order names
(``step6/naive_default_tool``), which side of the range a drawn limit is on and
which family a drawn bad region comes from (the repair checks and the attempt
limit), which reasons of a class can_repair meets (``step7/can_repair_table``).
Each is graded on seeds that once gave different outcomes; every seed must
fail the same checks, the module's own among them.
"""

from __future__ import annotations

import pytest
from defects.harness import grade_in_process
from mutation.stability import corpus, expected_failure

# Seeds that, before the fix, gave each module below at least two different outcomes.
SEEDS = (1, 3, 5, 8, 15)
NAMES = (
    "defect/step6/naive_default_tool",
    "defect/step7/repair_limit",
    "defect/step7/repair_region",
    "mistake/can_repair_indexes_the_table",
    "mistake/fallback_to_the_region_tidied",
    "mistake/clamp_only_the_low_side",
)
MODULES = corpus()


def _failed(path, seed: int) -> tuple:
    verdicts = grade_in_process(path, steps=[6, 7], seed=seed)
    return tuple(sorted(check for check, verdict in verdicts.items() if not verdict.passed))


@pytest.mark.parametrize("name", NAMES)
def test_same_checks_fail_on_every_seed(name, tmp_path):
    path = tmp_path / "tools.py"
    path.write_bytes(MODULES[name])
    outcomes = {seed: _failed(path, seed) for seed in SEEDS}
    assert len(set(outcomes.values())) == 1, outcomes
    assert expected_failure(name) in outcomes[SEEDS[0]]
