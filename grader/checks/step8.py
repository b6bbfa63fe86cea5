"""Step 8 checks: ``write_report`` measures the module and writes two files.

Every number of the learner's report is compared with the grader's own
measurement of the same module, made in the same child right after the
report (spies count the tool runs).

A grading runs two reports, each shared by the checks that judge it (a
``fresh`` probe drawn from a shared random stream: identical for every check,
so the engine runs it once):

* ``step8/as_is`` -- the module untouched, ``write_report(folder=...)``: the
  files, the returned dict, every value, the headings and the attempt limit.
* ``step8/changed`` -- the module changed first, ``write_report()``: the default
  folder, and values that must follow the change. A random ``MAX_ATTEMPTS``
  (4..9), one more tool, a result contract that keeps big results and a region
  rule without ``allowed``: a wrong-region order then finds no rows and gives up
  after one attempt, so ``repaired``, ``attempts``, ``tools``,
  ``bad_result_reasons`` and the written limit all differ from the spec's
  numbers, and none of them can be written by hand.
"""
from __future__ import annotations

import random

from grader.checks import cases
from grader import spec
from grader.checks._common import (TOOL_SPIES_ORIGINAL, Fail, add, call_probe, mentions_number, op,
                                   records_of, call_op, value_of)
from grader.engine.encode import encode, show, strict_equal
from grader.checks.registry import Probe, Verdict, shared_rng

JSON_FILE, MD_FILE = spec.REPORT_FILES
FAILURE_HEADINGS = {h[-1] for h in spec.HEADING_SETS.values()}
# In the changed module a wrong region is no longer refused, so how many of the learner's own wrong
# calls still are blocked depends on which calls they chose: that key is judged in the module as is.
CHANGED_REPORT_KEYS = tuple(k for k in spec.REPORT_KEYS if k != "blocked_before_call")
EXTRA_TOOL = "grader_extra_tool"
AS_IS, CHANGED = "step8/as_is", "step8/changed"


def _report_op(folder: str = "scratch") -> dict:
    label = "write_report()" if folder == "default" else "write_report(folder=<a new scratch folder>)"
    return op("report", folder=folder, label=label)


def _report_record(probe: Probe, obs: dict) -> tuple[dict, dict]:
    """The (operation, record) of the probe's write_report call, which must have returned."""
    for operation, rec in zip(probe.params["operations"], records_of(probe, obs)):
        if operation.get("op") == "report":
            value_of(rec, operation, "write_report raised, so the grader could read no report: fix that "
                                     "exception first (its type and message are shown as 'got'); the files, "
                                     "their folder and their values are judged once it runs.")
            return operation, rec
    raise Fail("The grader's probe has no write_report operation.")  # a grader bug; never for learners


def _files(operation: dict, rec: dict, *, json_needed: bool = True, md_needed: bool = False,
           anywhere: bool = False) -> dict:
    """The report files the record read; ``anywhere``: those in the working folder if the default had none.

    ``step8/default_folder`` alone judges where ``write_report()`` writes; the
    checks of what the files say judge them wherever they were written.
    """
    files = rec.get("files", {})
    elsewhere = rec.get("cwd_files")
    if anywhere and not (files.get("json_exists") or files.get("md_exists")) and isinstance(elsewhere, dict):
        files = elsewhere
    where = "next to the module file" if operation.get("folder") == "default" else "in the folder passed as folder="
    for name, key in ((JSON_FILE, "json_exists"), (MD_FILE, "md_exists")):
        if not files.get(key):
            raise Fail(f"{name} was not written {where}.", call=operation["label"], expected=f"a file {name}",
                       got="no such file")
    if json_needed and "json" not in files:
        raise Fail(f"{JSON_FILE} is not valid JSON.", call=operation["label"], expected="a JSON object",
                   got=files.get("json_error", "unreadable"))
    if md_needed and type(files.get("md")) is not str:
        raise Fail(f"{MD_FILE} could not be read as UTF-8 text.", call=operation["label"],
                   got=files.get("md_error", "unreadable"))
    return files


# --------------------------------------------------------------------------- the grader's own measurement


def measurement_ops(rng: random.Random, *, blocked: bool = True) -> tuple[list, dict]:
    """Operations that measure the module as the report must, and where each part sits.

    ``blocked=False`` leaves out the wrong-argument calls (and ``where["blocked"]``).

    >>> ops, where = measurement_ops(random.Random(1), blocked=False)
    >>> sorted(where), ops[where["repaired"]]["fn"]
    (['bad', 'gave_up', 'memo', 'repaired', 'tools'], 'handle')
    """
    ops: list = [op("keys", name="TOOLS")]
    where: dict = {"tools": 0}
    if blocked:
        kinds = rng.sample(list(cases.DEFECT_KINDS), 5)
        first = len(ops)
        ops += [call_op("call_tool", *cases.single_defect(rng, kind)[:2]) for kind in kinds]
        where["blocked"] = [first - 1, len(ops) - 1]
    shape = rng.choice([k for k in cases.BAD_RESULT_KINDS if k.startswith("shape")])
    where["bad"] = list(range(len(ops), len(ops) + 4))
    ops += [call_op("validate_result", "stock_lookup", cases.bad_result(rng, kind)[0])
            for kind in (shape, spec.EMPTY, spec.TOO_BIG, spec.RANGE)]
    args = {"sku": "SKU-1001", "region": "central", "limit": rng.randint(1, spec.MAX_ROWS)}
    ops += [op("clear_cache"), call_op("call_tool", "stock_lookup", args), call_op("call_tool", "stock_lookup", args)]
    where["memo"] = [len(ops) - 2, len(ops) - 1]
    ops += [call_op("handle", spec.REPAIR_EXAMPLE), call_op("handle", spec.EMPTY_EXAMPLE)]
    where["repaired"], where["gave_up"] = len(ops) - 2, len(ops) - 1
    return ops, where


def _runs(rec: dict) -> int:
    return sum(n for n in rec.get("spy_runs", {}).values() if type(n) is int)


def measured_values(ops: list, records: list, where: dict) -> dict:
    """The report a correct ``write_report`` would write for this module, from the grader's records.

    Only the parts ``where`` locates are measured (``blocked_before_call`` may be absent).
    """
    out: dict = {}
    tools_rec = records[where["tools"]]
    if tools_rec.get("not_dict") or not isinstance(tools_rec.get("value"), list):
        raise Fail("The grader could not read the keys of TOOLS to measure the module.", call="sorted(TOOLS)")
    out["tools"] = sorted(tools_rec["value"], key=str)
    if "blocked" in where:
        lo, hi = where["blocked"]
        out["blocked_before_call"] = _runs(records[hi]) - _runs(records[lo])
    reasons = []
    for i in where["bad"]:
        reasons.append(value_of(records[i], ops[i], "The grader's own measurement of bad results failed: "
                                                     "validate_result raised."))
    out["bad_result_reasons"] = sorted(reasons, key=str)
    first, second = where["memo"]
    out["memo_second_call_runs"] = _runs(records[second]) - _runs(records[first])
    repaired = value_of(records[where["repaired"]], ops[where["repaired"]],
                        "The grader's own run of handle on the wrong-region order failed.")
    empty = value_of(records[where["gave_up"]], ops[where["gave_up"]],
                     "The grader's own run of handle on the empty order failed.")
    if not isinstance(repaired, dict) or not isinstance(empty, dict):
        raise Fail("handle must return a dict.", call=ops[where["repaired"]]["label"], got=show(repaired))
    out["repaired"] = bool(repaired.get("ok") is True and repaired.get("fixes"))
    out["attempts"] = repaired.get("attempts")
    out["gave_up"] = empty.get("ok") is not True
    return out


def _measured_report_probe(rng: random.Random, folder: str = "scratch", sets: "dict | None" = None,
                           changes: "list[tuple[list, str]] | None" = None, blocked: bool = True) -> Probe:
    """A fresh probe: ``sets`` and ``changes`` (operations, note), ``write_report``, then the measurement."""
    ops = [op("set", name=k, value=v) for k, v in (sets or {}).items()]
    notes = [f"{k} = {v!r}" for k, v in (sets or {}).items()]
    for operations, note in changes or []:
        ops += operations
        notes.append(note)
    report = _report_op(folder)
    if notes:
        report["label"] += "  # with " + ", ".join(notes)
    ops.append(report)
    measure, where = measurement_ops(rng, blocked=blocked)
    offset = len(ops)
    where = {k: ([i + offset for i in v] if isinstance(v, list) else v + offset) for k, v in where.items()}
    return call_probe(ops + measure, spies=TOOL_SPIES_ORIGINAL, measure=where, fresh=True)


def as_is_probe(rng: random.Random) -> Probe:
    """The untouched module's report into a new folder, then the grader's measurement (shared by 5 checks)."""
    return _measured_report_probe(shared_rng(rng, AS_IS))


def changed_probe(rng: random.Random) -> Probe:
    """The changed module's report into its default folder, then the grader's measurement (shared by 2 checks).

    >>> p = changed_probe(random.Random(4))
    >>> p.params["operations"][0]["name"], 4 <= p.params["operations"][0]["value"] <= 9, p.params["fresh"]
    ('MAX_ATTEMPTS', True, True)
    """
    shared = shared_rng(rng, CHANGED)
    limit = shared.randint(4, 9)  # never 2 or 3, the spec's attempts and limit
    extra = ([op("add_tool", name=EXTRA_TOOL, like="stock_lookup")], f"one more tool {EXTRA_TOOL!r} in TOOLS")
    # A result contract that no longer refuses big results: 'too_big' must leave the reasons.
    big = ([op("contract", path=[tool, "returns", "rows", "max_len"], value=1000) for tool in spec.TOOL_NAMES],
           "returns['rows']['max_len'] = 1000 for both tools")
    # Any region passes: a wrong-region order finds no rows and gives up after its first fetch.
    any_region = ([op("contract", path=[tool, "args", "region", "allowed"], delete=True) for tool in spec.TOOL_NAMES],
                  "no 'allowed' list for region in both tools")
    return _measured_report_probe(shared, "default", {"MAX_ATTEMPTS": limit}, [extra, big, any_region],
                                  blocked=False)


# --------------------------------------------------------------------------- files and the returned dict


def _files_judge(probes: list, observations: list) -> Verdict:
    for probe, obs in zip(probes, observations):
        _files(*_report_record(probe, obs), md_needed=True)
    return Verdict.ok()


add("step8/writes_both_files", 2, f"write_report(folder) writes {JSON_FILE} and {MD_FILE} there",
    f"Write both files into the folder you are given (Path(folder) / '{JSON_FILE}'); the JSON must load "
    "with json.load and the Markdown be UTF-8.",
    ["8.files"], lambda rng: [as_is_probe(rng)], _files_judge)

add("step8/default_folder", 1, "write_report() without a folder writes next to the module file",
    "If write_report() raised, fix that first (the message shows the exception). Default folder: the folder "
    "that holds tools.py (think of __file__), not the current working folder.",
    ["8.default_folder"], lambda rng: [changed_probe(rng)], _files_judge)


def _returns_judge(probes: list, observations: list) -> Verdict:
    operation, rec = _report_record(probes[0], observations[0])
    files = _files(operation, rec)
    value = rec["value"]
    if not isinstance(value, dict) or not strict_equal(value, files["json"]):
        raise Fail(f"write_report must return the same dict it wrote to {JSON_FILE}.", call=operation["label"],
                   expected=show(files["json"]), got=show(value))
    return Verdict.ok()


add("step8/returns_json_dict", 2, "write_report returns the dict it wrote as JSON",
    "Build the dict once, write it with json.dump and return that same dict.",
    ["8.returns"], lambda rng: [as_is_probe(rng)], _returns_judge)


# --------------------------------------------------------------------------- values


def judge_values(probes: list, observations: list, keys: tuple = spec.REPORT_KEYS, *,
                 anywhere: bool = False) -> Verdict:
    """Each of ``keys`` in the written JSON equals the grader's measurement made right after the report."""
    for probe, obs in zip(probes, observations):
        operation, rec = _report_record(probe, obs)
        files = _files(operation, rec, anywhere=anywhere)
        report = files["json"]
        ops, records = probe.params["operations"], records_of(probe, obs)
        want = measured_values(ops, records, probe.params["measure"])
        if not isinstance(report, dict) or any(k.startswith("$") for k in report):
            raise Fail(f"{JSON_FILE} must hold a JSON object.", call=operation["label"], got=show(report))
        for key in keys:
            if key not in report:
                raise Fail(f"{JSON_FILE} has no key {key!r}.", call=operation["label"], expected=f"a key {key!r}",
                           got=show(sorted(report)))
            if not strict_equal(report[key], encode(want[key])):
                raise Fail(f"{key!r} in {JSON_FILE} is not what the module does now: the grader measured "
                           "the same module right after the report.", call=operation["label"],
                           expected=f"{key}: {want[key]!r}", got=f"{key}: {show(report[key])}")
    return Verdict.ok()


add("step8/json_values", 3, f"Every value of {JSON_FILE} matches the grader's measurement of the module",
    "Obtain each number by running the module in write_report (count tool runs with CALLS, call "
    "validate_result, call handle): tools sorted, blocked 0, four sorted reasons, memo 0, repaired, attempts, "
    "gave_up.",
    ["8.values"], lambda rng: [as_is_probe(rng)], judge_values)


# --------------------------------------------------------------------------- Markdown


def headings_of(md: str) -> list[str]:
    return [line.rstrip() for line in md.splitlines() if line.startswith("## ")]


def failure_section(md: str) -> "str | None":
    """The text under the 'failure path' heading, up to the next ## heading."""
    lines, inside, out = md.splitlines(), False, []
    for line in lines:
        if line.startswith("## "):
            inside = line.rstrip() in FAILURE_HEADINGS
            continue
        if inside:
            out.append(line)
    return "\n".join(out) if any(line.rstrip() in FAILURE_HEADINGS for line in lines) else None


def _md(probe: Probe, obs: dict, *, anywhere: bool = False) -> tuple[dict, str]:
    operation, rec = _report_record(probe, obs)
    return operation, _files(operation, rec, json_needed=False, md_needed=True, anywhere=anywhere)["md"]


def _headings_judge(probes: list, observations: list) -> Verdict:
    operation, md = _md(probes[0], observations[0])
    found = headings_of(md)
    for name, wanted in spec.HEADING_SETS.items():
        if sorted(found) == sorted(wanted):
            return Verdict.ok()
    raise Fail(f"{MD_FILE} needs exactly four ## sections, all four headings from one set (Korean or English, "
               "as in the step 8 notes).", call=operation["label"], expected="\n".join(spec.HEADING_SETS["English"]),
               got="\n".join(found) or "no ## headings")


add("step8/md_headings", 2, f"{MD_FILE} has the four ## sections of one heading set",
    "Copy the four headings exactly (one set: all Korean or all English) as lines starting with '## '.",
    ["8.headings"], lambda rng: [as_is_probe(rng)], _headings_judge)


def _limit_in_md(operation: dict, md: str, limit: int) -> None:
    section = failure_section(md)
    if section is None:
        raise Fail(f"{MD_FILE} has no failure-path section ({spec.HEADING_SETS['English'][-1]}).",
                   call=operation["label"], expected="that heading", got="\n".join(headings_of(md)))
    if not mentions_number(section, limit):
        raise Fail("The failure-path section must state the attempt limit, the value of MAX_ATTEMPTS when the "
                   "report is written.", call=operation["label"], expected=f"the number {limit} in that section",
                   got=section.strip()[:400])


def _attempt_limit_judge(probes: list, observations: list) -> Verdict:
    operation, md = _md(probes[0], observations[0])
    _limit_in_md(operation, md, spec.MAX_ATTEMPTS)
    return Verdict.ok()


add("step8/md_attempt_limit", 1, "The failure section states the attempt limit (MAX_ATTEMPTS)",
    "Write MAX_ATTEMPTS into the last section with an f-string, e.g. 'The attempt limit is {MAX_ATTEMPTS}.'",
    ["8.attempt_limit"], lambda rng: [as_is_probe(rng)], _attempt_limit_judge)


def _follows_judge(probes: list, observations: list) -> Verdict:
    judge_values(probes, observations, CHANGED_REPORT_KEYS, anywhere=True)
    operation, md = _md(probes[0], observations[0], anywhere=True)
    _limit_in_md(operation, md, probes[0].params["operations"][0]["value"])
    return Verdict.ok()


add("step8/follows_module", 3, "The report follows the module when it changes (no hand-written numbers)",
    "Before calling write_report the grader sets MAX_ATTEMPTS to another value, adds a tool, lets the result "
    "contract keep big results and drops the region's allowed list (a wrong region then finds nothing and gives "
    "up): every number in both files must come from running the module at that moment.",
    ["8.values", "8.attempt_limit"], lambda rng: [changed_probe(rng)], _follows_judge)
