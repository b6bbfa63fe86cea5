"""Step 9 checks: a strict coercion allowlist (``COERCIONS``, ``coerce``, ``call_coerced``; LAB_SPEC part two)."""
from __future__ import annotations
