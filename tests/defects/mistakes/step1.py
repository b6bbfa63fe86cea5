"""Plausible step-1 mistakes in the contract table: step 1 must fail, and step 2 must keep its marks.

Step 2 judges ``validate_args`` on the spec's contract, which the grader puts in
``TOOLS[tool]['args']`` for each of its probes: a wrong table is step 1's fault
alone as far as step 2 goes. The later steps still meet the module's own table,
hence their ``affects``.
"""

from __future__ import annotations

from ..catalog import d

_REGION_RULE = '"region": {"type": str, "required": True, "allowed": REGIONS},'
_LIMIT_RULE = '"limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS},'
_LATER = (3, 4, 5, 6, 7, 8)

MISTAKES: dict = {
    "contract_region_left_out": (
        "step1/args_contract",
        d(
            (_REGION_RULE, '"region": {"type": str, "required": True, "allowed": REGIONS[:2] + REGIONS[3:]},'),
            affects=_LATER,
        ),
    ),
    "contract_limit_max_one_less": (
        "step1/args_contract",
        d((_LIMIT_RULE, '"limit": {"type": int, "required": True, "min": 1, "max": MAX_ROWS - 1},'), affects=_LATER),
    ),
    "contract_sku_optional": (
        "step1/args_contract",
        d(('"sku": {"type": str, "required": True},', '"sku": {"type": str, "required": False},'), affects=_LATER),
    ),
}
