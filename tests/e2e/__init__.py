"""End-to-end tests (a real browser, JupyterLab, JupyterHub) and their helpers.

A package, so that the helpers import as ``e2e.lab``, ``e2e.hub``,
``e2e.processes`` and ``e2e.notebook_ui`` (``tests/`` is on ``sys.path``
through pytest's ``pythonpath`` option).
"""
