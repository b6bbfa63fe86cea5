"""Planted defects of steps 9-11 (``stepN.py``, each a ``DEFECTS`` dict); merged into ``catalog.DEFECTS``.

Each entry: ``check_id -> Defect``, an edit of ``solutions/tools.py`` that the
check must reject while every other step keeps full marks.
"""
