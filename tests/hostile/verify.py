"""Judge one graded corpus case: its per-step outcome and the extra proofs its manifest entry asks for.

Each function returns a list of problems in words (empty: all held), so one
test can report everything that went wrong with a case at once.

Example::

    >>> step_outcome_problems(CASES_BY_NAME["stub_control"], Report(seed=1, path="x"))  # doctest: +SKIP
    ['step 1: not graded', ...]
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.checks.registry import checks_for
from grader.engine.client import EngineClient
from grader.grading import grade
from grader.report import Report

from .build import SOLUTION
from .manifest import STEP_TIMEOUT, Case

OUTPUT_CAP = 64 << 10  # the grader's default per-step capture
# Proofs that a case leaves in files outside its submission: a sandbox with a
# read-only file system keeps the case from writing them.
FILE_EVIDENCE = ("fill_bounded", "ticker_quiet", "nothing_shadowed", "no_secret")
READ_ONLY_MARK = "the rest read-only"  # in a report's limits line (grader.engine.confine)


@dataclass
class Run:
    """What grading one case gave."""

    case: Case
    path: Path
    outside: Path
    marker: str
    elapsed: float = 0.0
    report: Report | None = None
    refused: str = ""  # SubmissionNotFound message (API) or the CLI's stderr
    exit_code: int | None = None
    cli_output: str = ""
    crash: str = ""  # grade() raised something else: a grader bug
    leftovers: list = field(default_factory=list)
    rss_growth_kib: int = 0
    sandbox: str = ""  # "bwrap" when the child ran inside bubblewrap
    seed: int = 0
    skipped: str = ""  # why the case was not graded here (what it needs is missing)


def graded_steps() -> list[int]:
    """The steps that have checks registered (all eleven once every step's checks exist)."""
    return sorted({c.step for c in checks_for()})


def step_outcome_problems(case: Case, report: Report) -> list[str]:
    """Each way ``report`` differs from the case's expected per-step outcome (empty: as expected)."""
    problems = []
    for step in graded_steps():
        got = report.steps.get(step)
        if got is None:
            problems.append(f"step {step}: not graded")
            continue
        score, top = got["score"], got["max_score"]
        want = case.expect.outcome(step)
        ok = {
            "full": score == top,
            "zero": score == 0,
            "lost": score < top,
            "any": True,
            "mostly_fail": score * 3 <= top,
        }[want]
        if not ok:
            failed = [c.id for c in report.checks if c.step == step and not c.passed]
            problems.append(f"step {step}: expected {want}, got {score}/{top} (failed: {', '.join(failed) or 'none'})")
    return problems


def unmet_need(case: Case, sandbox: str = "") -> str:
    """Why ``case`` cannot be graded for its expectation here (``Case.needs``), or ``""``."""
    if case.needs == "cgroups":
        from grader.engine.cgroups import ServerGroup

        group = ServerGroup.create()
        if group is None:
            return "cgroups are not usable here (no writable v1 controllers or delegated v2 tree, or AGTOOL_CGROUPS=0)"
        group.remove()
    elif case.needs == "confined_fs":
        from grader.engine.confine import mounts_enabled

        if not sandbox and not mounts_enabled():
            return (
                "the step's files cannot be confined here: not root (no mount namespace of its own) "
                "and no sandbox, or AGTOOL_STEP_MOUNTS=0"
            )
    return ""


def extra_check_problems(run: Run, engine: EngineClient, secret: str) -> list[str]:
    """Run the case's ``checks`` (see the manifest); return what did not hold."""
    problems = []
    report = run.report
    for check in run.case.checks:
        name, _, arg = check.partition(":")
        if (run.sandbox or READ_ONLY_MARK in (report.limits if report else "")) and name in FILE_EVIDENCE:
            continue  # the step's file system is read-only (a sandbox, or the step's own mount namespace):
            # the case cannot leave this evidence
        if name == "output_has":
            if not any(arg in text for text in report.output.values()):
                problems.append(f"{arg!r} is not in the captured output (stdout/stderr are not captured?)")
        elif name == "output_lacks":
            said = [line for text in report.output.values() for line in text.splitlines() if arg in line]
            if said:
                problems.append(f"the case says it got through: {said[:3]}")
        elif name in STEP_LIMIT_EVIDENCE:
            problems += STEP_LIMIT_EVIDENCE[name](run)
        elif name == "error_has":
            if arg not in report.error:
                problems.append(f"report.error does not mention {arg!r}: {report.error!r}")
        elif name == "message_has":
            if arg not in run.refused:
                problems.append(f"the refusal does not mention {arg!r}: {run.refused!r}")
        elif name == "output_capped":
            sizes = {step: len(text.encode()) for step, text in report.output.items()}
            if any(size > OUTPUT_CAP + 200 for size in sizes.values()):
                problems.append(f"captured output not capped at {OUTPUT_CAP} bytes: {sizes}")
            if "truncated" not in report.output.get("8", ""):
                problems.append("step 8's output carries no truncation mark")
            if run.rss_growth_kib > 256 << 10:
                problems.append(f"the grading process grew by {run.rss_growth_kib >> 10} MiB while reading it")
        elif name == "fill_bounded":
            problems += _fill_problems(run.outside / "fill.txt")
        elif name == "ticker_quiet":
            problems += _ticker_problems(run.outside / "ticker")
        elif name == "nothing_shadowed":
            shadowed = run.outside / "shadowed.txt"
            if shadowed.exists():
                problems.append(f"files beside tools.py shadowed modules: {shadowed.read_text().split()}")
        elif name == "no_secret":
            problems += _secret_problems(run, secret)
        elif name == "next_learner_graded":  # every step, several step children at once
            after = grade(SOLUTION, seed=run.seed, timeout=STEP_TIMEOUT, engine=engine)
            if not after.passed or after.failure is not None:
                failed = [f"{c.id}: {c.message[:120]}" for c in after.failed[:3]]
                problems.append(f"the next learner on this worker: {after.summary()} {after.error[:300]} {failed}")
        elif name == "grader_still_works":
            after = grade(SOLUTION, steps=[1], seed=run.seed, timeout=STEP_TIMEOUT, engine=engine)
            if not after.passed:
                problems.append(f"the next grading after the case failed: {after.summary()} {after.error}")
        else:
            raise AssertionError(f"unknown check {check!r} in the manifest")
    return problems


def _said_numbers(report: Report, word: str) -> list[int]:
    """The numbers a case printed after ``word`` (``HOSTILE-PIDS-MADE 250``), in every step's output."""
    found = []
    for text in report.output.values():
        for line in text.splitlines():
            if line.startswith(word + " ") and line.split()[1].isdigit():
                found.append(int(line.split()[1]))
    return found


STEP_MEMORY_MIB, STEP_PIDS = 1024, 256  # the grader's default budgets of a step


def memory_problems(run: Run) -> list[str]:
    """The case's children held more memory at once than a step's 1 GiB, or step 7 does not say why it lost."""
    held = _said_numbers(run.report, "HOSTILE-MEM-HELD-MIB")
    if not held:
        return ["the memory case said nothing (it never ran?)"]
    if max(held) > STEP_MEMORY_MIB:
        return [f"one step's children held {max(held)} MiB at once, the step's budget is {STEP_MEMORY_MIB} MiB"]
    said = _step_words(run, 7)
    if "memory" not in said:
        return [f"step 7 does not say it went over its memory budget; it says: {said[:400]!r}"]
    return []


def _step_words(run: Run, step: int) -> str:
    # What a step's checks say, each different message once (quoted in a failure, so that a miss shows its cause).
    return " | ".join(dict.fromkeys(c.message for c in run.report.checks if c.step == step))


def pids_problems(run: Run) -> list[str]:
    """More processes than the step's pids budget, or no word of the limit in step 8."""
    made = _said_numbers(run.report, "HOSTILE-PIDS-MADE")
    if not made:
        return ["the fork bomb said nothing (it never ran?)"]
    if max(made) >= STEP_PIDS:
        return [f"one step forked {max(made)} processes, its budget is {STEP_PIDS} tasks"]
    said = _step_words(run, 8)
    if "processes" not in said:
        return [f"step 8 does not say it went over its process budget; it says: {said[:400]!r}"]
    return []


def disk_problems(run: Run) -> list[str]:
    """Files the case wrote that are still on disk after grading, or no word of the budget in step 5."""
    left = []
    for place in (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), run.path, Path.home()):
        for depth in range(4):  # the case writes at most three folders below these (scratch/agtool)
            try:
                left += [str(p) for p in place.glob("*/" * depth + f"hostile-disk-{run.marker}-*")]
            except OSError:
                continue
    problems = [f"files the case wrote are still there: {left[:4]}"] if left else []
    if not _said_numbers(run.report, "HOSTILE-DISK-WROTE"):
        problems.append("the disk case said nothing (it never ran?)")
    if "disk budget" not in " ".join(c.message for c in run.report.checks if c.step == 5):
        problems.append("step 5 does not say it went over its disk budget")
    return problems


STEP_LIMIT_EVIDENCE = {
    "memory_bounded": memory_problems,
    "pids_bounded": pids_problems,
    "no_disk_leftovers": disk_problems,
}


def _fill_problems(record: Path) -> list[str]:
    if not record.exists():
        return ["the disk-fill case left no record (it never ran?)"]
    written, _, stopped = record.read_text().strip().partition(" ")
    problems = []
    if int(written) > 64 << 20:
        problems.append(f"a learner wrote a {int(written) >> 20} MiB file: no file-size limit")
    if not stopped:
        problems.append("nothing stopped the 1 GiB write")
    return problems


def _ticker_problems(ticker: Path) -> list[str]:
    before = ticker.stat().st_size if ticker.exists() else 0
    time.sleep(0.7)  # the escaped grandchild ticks every 0.2 s while it lives
    after = ticker.stat().st_size if ticker.exists() else 0
    return [f"an escaped grandchild is still writing ({before} -> {after} bytes)"] if after != before else []


def _secret_problems(run: Run, secret: str) -> list[str]:
    problems = []
    if secret in run.cli_output:
        problems.append("the secret appears in the grader's output")
    loot_file = run.outside / "loot.jsonl"
    if not loot_file.exists():
        return problems + ["the case left no record of what it saw (it never ran?)"]
    for line in loot_file.read_text().splitlines():
        loot = json.loads(line)
        for where in ("environ", "self", "parent"):
            if secret in json.dumps(loot[where]):
                problems.append(f"the secret was readable in the child's {where} environment")
        unexpected = sorted(set(loot["environ"]) - {"PATH", "HOME", "LANG", "LC_ALL"})
        if unexpected:
            problems.append(f"the child's environment holds more than PATH/HOME/LANG/LC_ALL: {unexpected}")
    return sorted(set(problems))
