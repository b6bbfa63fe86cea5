"""The class outputs of a batch, built from the per-learner result records.

A *record* is the JSON of ``OUT/results/<learner>.json`` written by
:mod:`grader.batch.records`: ``learner``, ``source``, ``sha256``, ``seed``,
``selection`` and ``report`` (``Report.to_dict()``). Everything here is a
pure function of the records, sorted by learner, so the same records always
give the same bytes. Nothing here judges: scores come from the reports.

Example::

    >>> frame = gradebook_frame(records)              # doctest: +SKIP
    >>> list(frame.columns[:4])                        # doctest: +SKIP
    ['learner', 'score', 'max_score', 'step1']
"""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pandas as pd

from grader.batch.gradescope import write_results
from grader.batch.plots import start_plots
from grader.escape import csv_cell, md_cell, md_code, md_code_cell, md_text, terminal_text
from grader.render import render_markdown
from grader.report import STEPS, Report

WRONG_ANSWERS_SHOWN = 10
HARDEST_SHOWN = 10


def _sorted(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda r: r["learner"])


def check_columns(records: list[dict]) -> list[str]:
    """Every check id seen, in step order and then in the order the grader ran them."""
    order: dict[str, tuple[int, int]] = {}
    for record in _sorted(records):
        for position, check in enumerate(record["report"]["checks"]):
            order.setdefault(check["id"], (check["step"], position))
    return sorted(order, key=lambda cid: (order[cid], cid))


def gradebook_frame(records: list[dict]) -> pd.DataFrame:
    """One row per learner: totals, points per step, points per check, seed, error and source (the file graded).

    A step or check that was not graded for a learner is left empty (NA),
    so a partial ``--steps`` run is not mistaken for zero points.
    """
    columns = check_columns(records)
    rows = []
    for record in _sorted(records):
        report = record["report"]
        row = {"learner": record["learner"], "score": report["score"], "max_score": report["max_score"]}
        for step in STEPS:
            row[f"step{step}"] = report["steps"].get(str(step), {}).get("score")
        points = {c["id"]: c["points"] for c in report["checks"]}
        for cid in columns:
            row[cid] = points.get(cid)
        row["seed"] = record["seed"]
        # First line only: a gradebook cell stays one line in a spreadsheet (grades.json has it all).
        row["error"] = (report.get("error") or "").split("\n", 1)[0]
        # Which file the row is: two learners whose ids were made unique by a suffix stay told apart.
        row["source"] = record.get("source", "")
        rows.append(row)
    credit_columns = []
    if any("credit" in r for r in records):  # a course policy: which attempt counted, its scores, and why
        credit_columns = list(CREDIT_COLUMNS)
        for row, record in zip(rows, _sorted(records)):
            got = record.get("credit") or {}
            row.update({column: got.get(key) for column, key in CREDIT_COLUMNS.items()})
    frame = pd.DataFrame(rows, columns=["learner", "score", "max_score",
                                        *[f"step{s}" for s in STEPS], *columns, "seed", "error", "source",
                                        *credit_columns])
    for name in [f"step{s}" for s in STEPS] + columns:
        frame[name] = frame[name].astype("Int64")
    return frame


# grades.csv column -> key of a record's ``credit`` (grader.course.policy.Credit), after the raw columns.
CREDIT_COLUMNS = {"weighted_score": "score", "weighted_max": "max_score", "credit_factor": "factor",
                  "credited_score": "credited", "submitted_at": "submitted_at", "period": "period",
                  "counted": "attempt", "why": "why"}


def credit_line(record: dict) -> str:
    """One Markdown line saying what counted under the course policy (``""`` without a policy).

    >>> print(credit_line({"credit": {"credited": 8.0, "max_score": 10.0, "attempt": 3, "why": "late *80%*"}}))
    **Credited: 8/10** (attempt 3): late \\*80%\\*
    <BLANKLINE>
    <BLANKLINE>
    """
    got = record.get("credit")
    if not got:
        return ""
    return (f"**Credited: {got['credited']:g}/{got['max_score']:g}** (attempt {md_text(got['attempt'])}): "
            f"{md_text(got['why'])}\n\n")


def csv_frame(book: pd.DataFrame) -> pd.DataFrame:
    """``book`` as written to ``grades.csv``: no text cell (or column name) a spreadsheet would evaluate.

    >>> csv_frame(pd.DataFrame({"learner": ["-1-1", "ana"], "score": [-1, 2]}))["learner"].tolist()
    ["'-1-1", 'ana']
    """
    frame = book.copy()
    for name in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[name]):  # text columns (object or str dtype)
            frame[name] = frame[name].map(csv_cell)
    return frame.rename(columns=csv_cell)


def check_stats(records: list[dict]) -> pd.DataFrame:
    """Per check: step, title, points, how many learners passed it and the pass rate."""
    stats: dict[str, dict] = {}
    for record in _sorted(records):
        for c in record["report"]["checks"]:
            s = stats.setdefault(c["id"], {"check": c["id"], "step": c["step"], "title": c["title"],
                                           "max_points": c["max_points"], "graded": 0, "passed": 0})
            s["graded"] += 1
            s["passed"] += bool(c["passed"])
    frame = pd.DataFrame([stats[cid] for cid in check_columns(records)],
                         columns=["check", "step", "title", "max_points", "graded", "passed"])
    frame["pass_rate"] = (frame["passed"] / frame["graded"]).round(4)
    return frame


def step_frame(records: list[dict]) -> pd.DataFrame:
    """Long table: one row per (learner, step) with the points and the maximum of that step."""
    rows = [
        {"learner": r["learner"], "step": int(step), "score": t["score"], "max_score": t["max_score"]}
        for r in _sorted(records)
        for step, t in sorted(r["report"]["steps"].items(), key=lambda kv: int(kv[0]))
    ]
    return pd.DataFrame(rows, columns=["learner", "step", "score", "max_score"])


def common_wrong_answers(records: list[dict], top: int = WRONG_ANSWERS_SHOWN) -> pd.DataFrame:
    """Failing answers grouped by (check id, what the learner's code gave), most frequent first.

    Submissions that could not be graded at all (import error, time-out) are
    left out: they did not answer anything.
    """
    groups: dict[tuple[str, str], dict] = {}
    for record in _sorted(records):
        report = record["report"]
        if report.get("error"):
            continue
        for c in report["checks"]:
            if c["passed"] or (not c["got"] and not c["expected"]):
                continue
            g = groups.setdefault((c["id"], c["got"]), {"learners": [], "expected": Counter()})
            if record["learner"] not in g["learners"]:
                g["learners"].append(record["learner"])
            g["expected"][c["expected"]] += 1
    rows = []
    for (cid, got), g in groups.items():
        # Cases are random per check, so "expected" can vary: show the most common one.
        expected = sorted(g["expected"].items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        rows.append({"check": cid, "got": got, "expected": expected, "count": len(g["learners"]),
                     "learners": ", ".join(g["learners"])})
    rows.sort(key=lambda r: (-r["count"], r["check"], r["got"]))
    return pd.DataFrame(rows[:top], columns=["check", "got", "expected", "count", "learners"])


def render_summary(records: list[dict], archive_skipped: "list[tuple[str, str]]" = ()) -> str:
    """``summary.md``: score statistics, per-step means, hardest checks, common wrong answers, errors.

    ``archive_skipped`` lists the zip members that could not be extracted
    (name, why), so a learner whose file was in one is not lost silently.

    >>> print(render_summary([], [("ana/`x`.py", "bad CRC")]).split("## ")[-1])
    Skipped from the zip
    <BLANKLINE>
    - ``ana/`x`.py``: bad CRC
    <BLANKLINE>
    """
    records = _sorted(records)
    book = gradebook_frame(records)
    seeds = sorted({r["seed"] for r in records})
    lines = ["# Class summary", "",
             f"- learners: {len(records)}",
             f"- seed: {', '.join(map(str, seeds)) or '-'}"]
    if records:
        max_score = int(book["max_score"].max())
        scores = book["score"]
        lines += [f"- mean score: {scores.mean():.2f} / {max_score}",
                  f"- median score: {scores.median():g} / {max_score}",
                  f"- full marks: {int((scores == book['max_score']).sum())}",
                  f"- could not be graded: {int((book['error'] != '').sum())}"]
    steps = step_frame(records)
    if not steps.empty:
        lines += ["", "## Score per step", "", "| step | mean | max | learners with full marks |",
                  "|---|---|---|---|"]
        for step, group in steps.groupby("step"):
            full = int((group["score"] == group["max_score"]).sum())
            lines.append(f"| {step} | {group['score'].mean():.2f} | {int(group['max_score'].max())} | {full} |")
    stats = check_stats(records)
    if not stats.empty:
        hardest = stats.sort_values(["pass_rate", "check"], kind="mergesort").head(HARDEST_SHOWN)
        lines += ["", "## Hardest checks", "", "| check | title | passed | pass rate |", "|---|---|---|---|"]
        for row in hardest.itertuples():
            lines.append(f"| {md_code_cell(row.check)} | {md_cell(row.title)} | {row.passed}/{row.graded} | {row.pass_rate:.0%} |")
    wrong = common_wrong_answers(records)
    lines += ["", "## Most common wrong answers", ""]
    if wrong.empty:
        lines.append("No wrong answers among the graded submissions.")
    for row in wrong.itertuples():
        who = "learner" if row.count == 1 else "learners"
        lines.append(f"- {row.count} {who} returned {md_code(_short(row.got))} where {md_code(_short(row.expected))} "
                     f"was expected ({md_code(row.check)}): {md_text(row.learners)}")
    errors = [(r["learner"], r["report"]["error"]) for r in records if r["report"].get("error")]
    if errors:
        lines += ["", "## Could not be graded", ""]
        # An import error's first line is learner text: a code span, never raw HTML or a link.
        lines += [f"- {md_text(learner)}: {md_code(_short(error.split(chr(10), 1)[0] if error else ''))}"
                  for learner, error in errors]
    credited = [r for r in records if r.get("credit")]
    if credited:
        periods = Counter(r["credit"]["period"] for r in credited)
        lines += ["", "## Course policy", "",
                  f"- mean credited score: {sum(r['credit']['credited'] for r in credited) / len(credited):.2f}"
                  f" / {max(r['credit']['max_score'] for r in credited):g}",
                  *[f"- {md_text(period)}: {count}" for period, count in sorted(periods.items())]]
    if archive_skipped:
        lines += ["", "## Skipped from the zip", ""]
        lines += [f"- {md_code(member)}: {md_text(reason)}" for member, reason in archive_skipped]
    return "\n".join(lines) + "\n"


def _short(text: str, limit: int = 120) -> str:
    """One line of at most ``limit`` characters, for a summary line (grades.json has it all).

    >>> _short("a\\nb"), len(_short("x" * 500))
    ('a b', 121)
    """
    text = str(text).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "\u2026"


KEYED_NOTE = ("**The grade that counts: {score}/{max_score}.** It was graded on cases drawn from a seed "
              "that is not shown, so no answer can be fitted to them. The checks below ran on other cases "
              "of the same kinds; each failed one has a command that replays exactly what you see here.\n\n")


def render_feedback(record: dict) -> str:
    """Markdown feedback for one learner: the grader's own renderer, so it matches ``agtool-grade check``.

    With a seed key the learner sees the feedback run (its own seed, replayable)
    under the score of the grade that counts, never that grade's cases.

    >>> report = {"seed": 1, "path": "t.py", "checks": [], "score": 0, "max_score": 0}
    >>> render_feedback({"report": report, "feedback_report": {**report, "seed": 2}}).startswith("**The grade")
    True
    """
    return _feedback_text(record, *learner_reports(record))


def learner_reports(record: dict) -> "tuple[Report, Report]":
    """``(shown, counting)``: the report a learner is shown and the grade that counts, each parsed once.

    They are the same report unless the class has a seed key (a feedback run).

    >>> report = {"seed": 1, "path": "t.py", "checks": []}
    >>> shown, counting = learner_reports({"report": report})
    >>> shown is counting, learner_reports({"report": report, "feedback_report": {**report, "seed": 2}})[0].seed
    (True, 2)
    """
    counting = Report.from_dict(record["report"])
    shown = Report.from_dict(record["feedback_report"]) if record.get("feedback_report") else counting
    return shown, counting


def _feedback_text(record: dict, shown: Report, counting: Report) -> str:
    """:func:`render_feedback` from the record's reports, already parsed by :func:`learner_reports`."""
    if "feedback_report" not in record:
        return credit_line(record) + render_markdown(shown)
    return (credit_line(record) + KEYED_NOTE.format(score=counting.score, max_score=counting.max_score)
            + render_markdown(shown))


def _credit_gradescope(path: Path, got: dict) -> None:
    """Gradescope's score is the credited one; its output and extra data say which attempt counted and why."""
    data = json.loads(path.read_text(encoding="utf-8"))
    data["score"] = float(got["credited"])
    data["output"] = (f"Credited: {got['credited']:g}/{got['max_score']:g} ({terminal_text(got['why'])}).\n"
                      + data["output"])
    data.setdefault("extra_data", {})["credit"] = got
    path.write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")


def write_learner_outputs(record: dict, out: Path) -> None:
    """Write one learner's ``feedback/<learner>.md`` and ``gradescope/<learner>/results.json`` under ``out``.

    >>> report = {"seed": 1, "path": "t.py", "checks": []}
    >>> write_learner_outputs({"learner": "ana", "report": report}, Path("out"))   # doctest: +SKIP
    """
    shown, counting = learner_reports(record)
    (out / "feedback" / f"{record['learner']}.md").write_text(_feedback_text(record, shown, counting),
                                                              encoding="utf-8")
    results = write_results(shown, out / "gradescope" / record["learner"] / "results.json", score=counting.score)
    if "credit" in record:
        _credit_gradescope(results, record["credit"])


def write_outputs(records: list[dict], out: "str | Path", *,
                  archive_skipped: "list[tuple[str, str]]" = ()) -> dict[str, Path]:
    """Write every class output under ``out`` and return their paths by name.

    The per-learner folders (``feedback/``, ``gradescope/``) and ``plots/``
    are emptied first, so learners no longer in the class leave no files.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    records = _sorted(records)
    book = gradebook_frame(records)
    for sub in ("feedback", "gradescope", "plots"):
        shutil.rmtree(out / sub, ignore_errors=True)
        (out / sub).mkdir(parents=True)
    # Drawn by a second process while this one writes the rest: the plots are half the work.
    wait_for_plots = start_plots(book, check_stats(records), step_frame(records), out / "plots")
    csv_path = out / "grades.csv"
    csv_frame(book).to_csv(csv_path, index=False, lineterminator="\n")

    json_path = out / "grades.json"
    json_path.write_text(json.dumps({
        "seeds": sorted({r["seed"] for r in records}),
        "learners": [{"learner": r["learner"], "source": r["source"], "sha256": r["sha256"],
                      "score": r["report"]["score"], "max_score": r["report"]["max_score"],
                      "error": r["report"].get("error", ""), "report": r["report"],
                      **({"credit": r["credit"]} if "credit" in r else {})} for r in records],
    }, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")  # no indent: the C encoder (1,000 reports)

    for r in records:
        write_learner_outputs(r, out)

    summary_path = out / "summary.md"
    summary_path.write_text(render_summary(records, archive_skipped), encoding="utf-8")
    plots = wait_for_plots()
    return {"csv": csv_path, "json": json_path, "summary": summary_path, "feedback": out / "feedback",
            "gradescope": out / "gradescope", **{f"plot:{p.stem}": p for p in plots}}
