"""Plausible mistakes by step (``stepN.py``, each a ``MISTAKES`` dict); merged into ``catalog.MORE_DEFECTS``.

Each entry: ``name -> (check_id, Defect)``. The check named must fail, and its
hint must name the cause; no step outside the defect's own and its ``affects``
may lose points.
"""
