"""A tiny probe function used only by the engine's own tests (tests/test_engine_client.py).

The real probes live in ``grader.engine.probes``; these let the engine's tests drive a
step child with learner functions of their choosing, independently of the checks.
Probe ``{"kind": "call", "params": {"fn": "name", "args": [...]}}`` calls
``module.name(*args)`` and observes the returned value (JSON data only) or the
exception type.
"""

from __future__ import annotations

# What tests pass as grade(..., probe_function=...): this module, importable in the fork server.
ENGINE_PROBES = "engine_probes:run_probe"


def run_probe(module, probe: dict, ctx) -> dict:
    params = probe["params"]
    if probe["kind"] == "fresh":  # re-import: the observation is a module-level value of the new copy
        return {"value": getattr(ctx.fresh_module(), params["name"])}
    try:
        return {"value": getattr(module, params["fn"])(*params.get("args", []))}
    except Exception as exc:
        return {"raised": type(exc).__name__}
