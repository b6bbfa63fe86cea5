"""Planted defects of step 10: one per check, each rejected by its check and by no other step."""
from __future__ import annotations

from ..catalog import d  # noqa: F401 - used by the entries

DEFECTS: dict = {}
