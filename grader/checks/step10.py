"""Step 10 checks: errors as prompts (``explain``, ``retry_with_suggestion``; LAB_SPEC part two)."""
from __future__ import annotations
