# --- hostile helper: fire only when the grader itself calls the function --------
# A payload guarded by this runs when a probe calls e.g. validate_args directly,
# not when call_tool (this module) does, so the damage stays in one step.
import sys as _hostile_sys


def _called_from_outside() -> bool:
    """True when the function that asks was called by code outside this module."""
    return _hostile_sys._getframe(2).f_globals is not globals()
