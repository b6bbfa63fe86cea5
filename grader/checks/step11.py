"""Step 11 checks: identity resolution (``PRODUCTS``, ``resolve_sku``, ``handle_named``; LAB_SPEC part two)."""
from __future__ import annotations
