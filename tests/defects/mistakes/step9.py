"""Plausible step-9 mistakes: each must fail the check it names, and no other step."""
from __future__ import annotations

from ..catalog import d  # noqa: F401 - used by the entries

MISTAKES: dict = {}
