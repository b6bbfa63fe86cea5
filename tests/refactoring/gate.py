"""The refactoring gate's verdict: a correct module rewritten without changing its behaviour keeps every point.

A run fails the gate when a rewrite loses a point on any seed (a check failed,
or grading failed), when a base (graded as the control) loses one, when the
grader crashed on a module, or when fewer than the minimum number of rewrites
were generated (a transform that silently stopped applying would shrink the
measure). There is no debt list: every lost point is printed, one line per
rewrite and check (the seeds it failed on and the check's message), grouped by
check id; a check the base also fails on that seed is marked ``(base too)``.

>>> rows = [{"id": "b:base:as_written", "kind": "base", "lost": [], "error": ""},
...         {"id": "b:table:f", "kind": "table", "error": "",
...          "lost": [{"seed": 11, "failure": "", "failed": [{"id": "step3/x", "message": "wrong"}]}]}]
>>> verdict = judge(rows, generated=300, minimum=300)
>>> verdict.passed, verdict.lines()[1:]
(False, ['  step3/x: 1 rewrite(s)', '    b:table:f (seeds 11): wrong'])
"""

from __future__ import annotations

from dataclasses import dataclass, field

MESSAGE_CHARS = 400  # a message is cut there on the terminal (summary.json keeps it whole)


@dataclass
class Verdict:
    """What a run found: the rewrites and bases that lost points, and whether enough rewrites were made."""

    generated: int
    minimum: int
    graded: int
    losing: list[dict] = field(default_factory=list)  # rows of rewrites that lost a point
    bases_losing: list[dict] = field(default_factory=list)
    base_failures: dict[tuple[str, int], set[str]] = field(default_factory=dict)  # (base, seed) -> check ids

    @property
    def too_few(self) -> bool:
        return self.generated < self.minimum

    @property
    def passed(self) -> bool:
        return not (self.losing or self.bases_losing or self.too_few)

    def failures(self) -> list[dict]:
        """One entry per (rewrite, seed, check): ``{"rewrite", "base", "kind", "seed", "check", "message",
        "base_too"}``; a grading that failed as a whole is the check ``failure:<kind>``, a crash ``error``."""
        found = []
        for row in [*self.bases_losing, *self.losing]:
            if row["error"]:
                found.append(self._entry(row, 0, "error", row["error"]))
            for lost in row["lost"]:
                if lost["failure"]:
                    found.append(self._entry(row, lost["seed"], f"failure:{lost['failure']}", ""))
                for check in lost["failed"]:
                    found.append(self._entry(row, lost["seed"], check["id"], check["message"]))
        return found

    def _entry(self, row: dict, seed: int, check: str, message: str) -> dict:
        base = row.get("base", row["id"].split(":")[0])
        base_too = row["kind"] != "base" and check in self.base_failures.get((base, seed), set())
        return {
            "rewrite": row["id"],
            "base": base,
            "kind": row["kind"],
            "seed": seed,
            "check": check,
            "message": message,
            "base_too": base_too,
        }

    def by_check(self) -> dict[str, list[dict]]:
        """:meth:`failures` grouped by check id (most rewrites first), each rewrite once per distinct message."""
        groups: dict[str, dict[tuple[str, str], dict]] = {}
        for entry in self.failures():
            key = (entry["rewrite"], entry["message"])
            line = groups.setdefault(entry["check"], {}).setdefault(key, {**entry, "seeds": []})
            line["seeds"].append(entry["seed"])
        ordered = sorted(groups.items(), key=lambda item: (-len({r for r, _ in item[1]}), item[0]))
        return {check: list(lines.values()) for check, lines in ordered}

    def summary(self) -> dict:
        """The counts, for ``summary.json``."""
        checks = self.by_check()
        return {
            "passed": self.passed,
            "losing": len(self.losing),
            "bases_losing": len(self.bases_losing),
            "too_few": self.too_few,
            "failing_checks": {c: len({e["rewrite"] for e in lines}) for c, lines in checks.items()},
            "losing_ids": [row["id"] for row in self.losing],
        }

    def lines(self) -> list[str]:
        """The verdict for a terminal: one line, then per check id each rewrite that failed it."""
        state = "passed" if self.passed else "FAILED"
        head = (
            f"refactoring gate {state}: {self.generated} rewrites generated (minimum {self.minimum}), "
            f"{self.graded} graded; {len(self.losing)} lost points; bases losing points: {len(self.bases_losing)}"
        )
        lines = [head]
        if self.too_few:
            lines.append(f"  too few rewrites: {self.generated} < {self.minimum} (a transform stopped applying?)")
        for check, entries in self.by_check().items():
            lines.append(f"  {check}: {len({e['rewrite'] for e in entries})} rewrite(s)")
            for e in entries:
                seeds = ",".join(str(s) for s in sorted(set(e["seeds"])))
                mark = " (base too)" if e["base_too"] else ""
                lines.append(f"    {e['rewrite']} (seeds {seeds}){mark}: {_one_line(e['message'])}")
        return lines


def judge(rows: list[dict], *, generated: int, minimum: int) -> Verdict:
    """The verdict on graded ``rows`` (bases are the rows of kind ``base``)."""
    losing = [row for row in rows if row["kind"] != "base" and (row["lost"] or row["error"])]
    bases_losing = [row for row in rows if row["kind"] == "base" and (row["lost"] or row["error"])]
    failures: dict[tuple[str, int], set[str]] = {}
    for row in bases_losing:
        for lost in row["lost"]:
            failures.setdefault((row["id"].split(":")[0], lost["seed"]), set()).update(c["id"] for c in lost["failed"])
    return Verdict(
        generated=generated,
        minimum=minimum,
        graded=sum(row["kind"] != "base" for row in rows),
        losing=losing,
        bases_losing=bases_losing,
        base_failures=failures,
    )


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."
