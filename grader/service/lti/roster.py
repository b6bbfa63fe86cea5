"""The LMS's roster (NRPS) against the hub's learners: who is where, matched by the ``sub`` of launches only.

Example::

    >>> members = [{"user_id": "u1", "name": "Ana", "roles": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"],
    ...             "status": "Active"},
    ...            {"user_id": "u2", "name": "Bo", "roles": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"]}]
    >>> out = compare(members, launches=[{"learner": "ana", "sub": "u1"}], hub_learners={"ana", "zed"})
    >>> out["matched"], [m["user_id"] for m in out["lms_only"]], out["hub_only"]
    ([('ana', 'u1')], ['u2'], ['zed'])
"""

from __future__ import annotations

LEARNER_ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"


def compare(members: list[dict], *, launches: list[dict], hub_learners: set[str]) -> dict:
    """``matched`` (hub name, sub), ``lms_only`` (LMS learners with no launch yet), ``hub_only`` (hub learners the
    LMS does not list as learners, or who never launched). Names are shown, never used to match."""
    by_sub = {launch["sub"]: launch["learner"] for launch in launches}
    learners = [m for m in members if not m.get("roles") or any(r.endswith("#Learner") for r in m["roles"])]
    matched = sorted((by_sub[m["user_id"]], m["user_id"]) for m in learners if m.get("user_id") in by_sub)
    lms_only = [
        {"user_id": m.get("user_id"), "name": m.get("name", ""), "status": m.get("status", "")}
        for m in learners
        if m.get("user_id") not in by_sub
    ]
    seen = {name for name, _sub in matched}
    return {"matched": matched, "lms_only": lms_only, "hub_only": sorted(set(hub_learners) - seen)}
