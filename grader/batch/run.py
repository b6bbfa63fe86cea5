"""Grade a whole class: find the submissions, grade them in parallel, keep every result.

``agtool-grade batch SUBMISSIONS --out OUT`` is :func:`run_batch`; SUBMISSIONS
is what :mod:`grader.batch.discovery` accepts (learner folders, loose files,
a glob, an LMS zip).

Each learner's result is written as soon as it is known, atomically, to
``OUT/results/<learner>.json`` together with the sha256 of the bytes that
were graded (:mod:`grader.batch.records`). ``--resume`` skips learners whose
file and seed are unchanged. The class-wide outputs (gradebook, feedback,
Gradescope files, plots, summary) are rebuilt from those files at the end by
:mod:`grader.outputs.class_folder`, so a batch that was killed and resumed ends
with the same bytes as one that ran straight through.

The grading itself happens in long-lived batch workers (the local pool of
:mod:`grader.batch.pool`, or a Dask cluster via :mod:`grader.batch.dask_executor`);
each calls :func:`grader.batch.task.grade_task` on a private copy of exactly
the hashed bytes.

Options of :func:`run_batch`:

``seed`` is one seed for the whole class (random if ``None``; on
``resume`` the previous batch's seed). ``scheduler`` is a Dask scheduler
address or ``distributed.Client`` when ``executor="dask"``. ``sandbox``
(``"bwrap"``/``"auto"``) runs learner code inside bubblewrap, read-only
file system included, so a submission cannot touch ``out`` or other
learners' files (default: ``$AGTOOL_SANDBOX``, else none).
``grade_fn`` replaces ``grader.grading.grade`` (tests inject fakes).
``seed_key`` (default ``$AGTOOL_SEED_KEY``; ignored when ``seed`` is
given) keeps the grade that counts out of the learners' reach: see
:class:`SeedPlan` and SECURITY.md.
``course`` (a course file's path, a ``grader.course.policy.Course`` or ``Policy``)
adds weights and late credit to every output (with several assignments, a
credited column per assignment); each learner's one attempt
is timed ``submitted_at`` (default: now, the time this run collects the
files; a file's mtime is the learner's to set, so it is not trusted), and
``--resume`` keeps the time of the run that first graded unchanged bytes.
``roster`` (a CSV: learner,lms_id,...) adds ``OUT/lms/canvas.csv``,
``moodle.csv`` and ``unmatched.csv`` (:mod:`grader.outputs.lms`).
``similarity`` writes ``OUT/similarity.html`` and ``similarity.csv``
(:mod:`grader.outputs.similarity`); ``reference`` (e.g. the solution,
read here by the instructor's process only) flags submissions close to it.

Example::

    >>> result = run_batch("submissions/", "out/", jobs=2, seed=7)   # doctest: +SKIP
    >>> result.graded, result.skipped                                # doctest: +SKIP
    (31, 0)
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from tqdm.auto import tqdm

from grader.batch.dask_executor import run_on_dask
from grader.batch.discovery import LearnerFile, discover
from grader.batch.pool import WorkerPool, run_pool
from grader.batch.records import MANIFEST, RESULTS_DIR, load_record, load_records, result_record, write_json_atomically
from grader.batch.task import (
    GradeFn,
    GradeTask,
    failed_report,
    grade_task,
    step_timeout,
    warm_engine,
)
from grader.checks.registry import checks_for
from grader.course.policy import Course, Policy, batch_course_credit, load_course, single_course
from grader.grading import MAX_SOURCE_BYTES
from grader.limits import SUBMISSION_TIMEOUT, WORKER_GRACE
from grader.locate import SubmissionNotFound, read_submission
from grader.messages import WORKER_DIED, grader_failed, over_time
from grader.outputs.class_folder import write_extras, write_outputs
from grader.outputs.lms import read_roster
from grader.outputs.record import LearnerRecord
from grader.report import STEPS, FailureKind, new_seed
from grader.seeds import SeedPlan, class_key
from grader.settings import current as current_settings

GRACE = WORKER_GRACE  # extra seconds before the pool kills a batch worker whose grade() has not returned


@dataclass
class BatchResult:
    """What :func:`run_batch` did: where the outputs are and how many learners it graded."""

    out: Path
    seed: int | None
    learners: list[str] = field(default_factory=list)
    graded: int = 0
    skipped: int = 0
    outputs: dict = field(default_factory=dict)
    archive_skipped: list = field(default_factory=list)  # (zip member, why) that could not be extracted
    seeds: str = ""  # how the seeds were chosen, for the command's summary line
    unmatched: list = field(default_factory=list)  # (learner, why) the --roster did not match
    similar: list = field(default_factory=list)  # grader.outputs.similarity.Pair, ranked (--similarity)
    isolation: list = field(default_factory=list)  # how learner code ran, in this run's reports (each way once)
    # A course of several assignments: per assignment (id, name, mean credited score, points, learners credited).
    assignments: list = field(default_factory=list)


def assignment_means(records: list[LearnerRecord]) -> list[tuple[str, str, float | None, float, int]]:
    """Per assignment of a course of several: (id, name, mean credited score, points, learners credited).

    >>> assignment_means([LearnerRecord("ana", {}, assignments={"lab-a": {"name": "Lab A", "points": 4,
    ...                                        "credit": {"credited": 3.0, "max_score": 4}}})])
    [('lab-a', 'Lab A', 3.0, 4, 1)]
    """
    entries: dict[str, list] = {}
    for r in records:
        for key, entry in (r.assignments or {}).items() if r.graded else ():
            entries.setdefault(key, []).append(entry)
    means = []
    for key, got in entries.items():
        credits = [e["credit"] for e in got if e.get("credit")]
        mean = round(sum(c["credited"] for c in credits) / len(credits), 2) if credits else None
        most = max((c["max_score"] for c in credits), default=got[0]["points"])  # the reports' maximum, as the exports
        means.append((key, got[0].get("name") or key, mean, most, len(credits)))
    return means


def run_batch(
    submissions: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    seed: int | None = None,
    resume: bool = False,
    timeout: float | None = SUBMISSION_TIMEOUT,
    steps: Iterable[int] | None = None,
    only: Iterable[str] | None = None,
    executor: str = "local",
    scheduler=None,
    sandbox: str | None = None,
    grade_fn: GradeFn | None = None,
    progress: bool = True,
    seed_key: str | bytes | None = None,
    course=None,
    submitted_at: dt.datetime | None = None,
    roster: str | os.PathLike[str] | None = None,
    similarity: bool = False,
    reference: str | os.PathLike[str] | None = None,
) -> BatchResult:
    """Grade every submission and write the class outputs under ``out`` (options: the module's docstring).

    >>> run_batch("class/", "out/", seed=3).outputs["csv"]   # doctest: +SKIP
    PosixPath('out/grades.csv')
    """
    selection = {"steps": sorted(set(steps)) if steps else None, "only": sorted(set(only)) if only else None}
    _check_selection(selection)
    _check_limits(timeout, jobs)
    policy = _course(course)  # a bad course file (or roster) is refused before anyone is graded
    lms_roster = _roster(roster)
    references = _references(reference)
    now = (submitted_at or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc)
    out = _out_folder(out)
    # The workers start now, their fork servers importing LangGraph while this
    # process finds, reads and hashes the submissions (0.6-0.8 s for 1,000 learners).
    pool = _early_pool(executor, jobs, timeout, grade_fn, sandbox)
    try:
        plan = _choose_plan(out, seed, class_key(seed_key, current_settings()) if seed is None else None, resume)
        write_json_atomically(out / MANIFEST, {**plan.manifest(), "submissions": os.fspath(submissions), **selection})
        batch = _Batch(out, selection, plan, stamp=_stamp(now, policy), keep_sources=similarity or bool(references))
        tasks = batch.plan_tasks(_find(submissions, out, batch.result), resume=resume, timeout=timeout, sandbox=sandbox)
        for task, report in _execute(
            tasks,
            executor=executor,
            scheduler=scheduler,
            jobs=jobs,
            grade_fn=grade_fn,
            timeout=timeout,
            progress=progress,
            pool=pool,
        ):
            batch.collect(task, report)
    finally:
        if pool is not None:
            pool.close()
    result = batch.result
    records = batch.records(policy, now)
    result.isolation = sorted({r.report.get("isolation") or "" for r in records} - {""})
    result.assignments = assignment_means(records)
    result.outputs = write_outputs(records, out, archive_skipped=result.archive_skipped, sources=batch.texts)
    paths, result.unmatched, result.similar = write_extras(
        records,
        out,
        roster=lms_roster,
        assignment=(policy.policy.name if policy and policy.policy.name else "agtool lab"),
        sources=batch.texts if batch.keep_sources else None,
        references=references,
    )
    result.outputs.update(paths)
    return result


class _Batch:
    """One run's state: the result so far, records that could not be saved, and each learner's runs until all are in."""

    def __init__(self, out: Path, selection: dict, plan: SeedPlan, *, stamp: str | None, keep_sources: bool):
        self.out, self.selection, self.plan, self.stamp = out, selection, plan, stamp
        self.keep_sources = keep_sources
        self.result = BatchResult(out=out, seed=plan.seed, seeds=plan.describe())
        self.kept: dict[str, LearnerRecord] = {}  # records that could not be saved: still rows of this run's outputs
        self.texts: dict[str, str] = {}  # learner -> source text: starter check, --similarity (never executed)
        self.runs: dict[str, dict[str, dict]] = {}  # learner -> purpose -> report, until a learner's runs are all in

    def plan_tasks(self, found: list[LearnerFile], *, resume: bool, timeout, sandbox) -> list[GradeTask]:
        """The grading tasks of ``found``; a submission that cannot be read is stored as its failed row now."""
        self.result.learners = [s.learner for s in found]
        selection, tasks = self.selection, []
        for sub in found:
            seed = self.plan.grading(sub.learner)
            source, problem = _read_submission(sub)
            if problem:
                report = failed_report(
                    seed,
                    sub.display,
                    problem,
                    steps=selection["steps"],
                    only=selection["only"],
                    kind=FailureKind.REFUSED,  # not read: no module, a link out, too large...
                )
                self.store(
                    result_record(
                        sub.learner, sub.display, "", seed, selection, report.to_dict(), submitted_at=self.stamp
                    )
                )
                continue
            self.texts[sub.learner] = source.decode("utf-8", "replace")
            digest = hashlib.sha256(source).hexdigest()
            old = load_record(self.out, sub.learner) if resume else None
            if _still_valid(old, digest, seed, selection, self.plan.feedback(sub.learner)):
                self.result.skipped += 1
                continue
            task = GradeTask(
                sub.learner,
                sub.display,
                source,
                digest,
                seed,
                tuple(selection["steps"]) if selection["steps"] else None,
                tuple(selection["only"]) if selection["only"] else None,
                step_timeout(timeout, len(selection["steps"] or STEPS)),
                sandbox,
            )
            tasks.append(task)
            if self.plan.key:
                tasks.append(dataclasses.replace(task, seed=self.plan.feedback(sub.learner), purpose="feedback"))
        return tasks

    def collect(self, task: GradeTask, report: dict) -> None:
        """Keep one finished run; store the learner's record once all their runs are in."""
        got = self.runs.setdefault(task.learner, {})
        got[task.purpose] = report
        if self.plan.key and len(got) < 2:
            return
        feedback = (self.plan.feedback(task.learner), got["feedback"]) if self.plan.key else None
        self.store(
            result_record(
                task.learner,
                task.display,
                task.sha256,
                self.plan.grading(task.learner),
                self.selection,
                got["grade"],
                feedback,
                submitted_at=self.stamp,
            )
        )
        self.result.graded += 1

    def store(self, record: LearnerRecord) -> None:
        _store(self.out, record, self.kept)

    def records(self, course: Course | None, now: dt.datetime) -> list[LearnerRecord]:
        """This run's learners' records, as saved (or kept), with their credit under the course file."""
        learners = self.result.learners
        saved = {r.learner: r for r in load_records(self.out, learners)}
        records = [
            saved.get(learner) or self.kept[learner] for learner in learners if learner in saved or learner in self.kept
        ]
        if course is None:
            return records
        # A failure of the grading machinery is no attempt: it gets no credit (it is graded again).
        return [_credited(r, course, now) if r.graded else r for r in records]


def _credited(record: LearnerRecord, course: Course, now: dt.datetime) -> LearnerRecord:
    """``record`` with its credit (and, with several assignments, each assignment's) under ``course``."""
    got, assignments = batch_course_credit(record.report, record.submitted_at, course, now)
    return dataclasses.replace(record, credit=got, assignments=assignments)


def _stamp(now: dt.datetime, policy) -> str | None:
    """The attempt's time, in the records, under a course policy only (due dates).

    Without one a record holds nothing that changes between two runs on the
    same bytes (local and Dask agree).
    """
    return now.replace(microsecond=0, tzinfo=None).isoformat() + "Z" if policy is not None else None


def _out_folder(out) -> Path:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder: name a new or existing folder for the outputs")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _find(submissions, out: Path, result: BatchResult) -> list[LearnerFile]:
    """The submissions, minus OUT itself (it may sit inside the submissions folder; it is not a learner)."""
    found = discover(submissions, workdir=out, skipped=result.archive_skipped)
    return [s for s in found if not (s.path is None and Path(s.display).resolve() == out.resolve())]


def _references(reference) -> dict[str, str]:
    """The ``--reference`` file's text, named ``reference:<file name>`` so no learner id can equal it."""
    if reference is None:
        return {}
    path = Path(reference)
    try:
        return {f"reference:{path.name}": path.read_text(encoding="utf-8")}
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"--reference {path} cannot be read ({type(exc).__name__}); give the path of a "
            "tools.py (e.g. solutions/tools.py)"
        ) from None


def _roster(roster):
    """The ``--roster`` entries, read and checked now (``None``: no LMS files)."""
    if roster is None:
        return None
    return read_roster(roster)


def _course(course) -> Course | None:
    """The batch's course: ``None``, a ``Course``, a ``Policy``, or a course file's path (read and validated now)."""
    if course is None or isinstance(course, Course):
        return course
    return single_course(course) if isinstance(course, Policy) else load_course(course)


def _store(out: Path, record: LearnerRecord, kept: dict[str, LearnerRecord]) -> None:
    """Save one learner's record; a failure to save it becomes that learner's row, not the batch's end.

    The record that could not be written (a report the JSON encoder refuses,
    a file name the file system refuses, a full disk) is replaced by a
    failed row saying why, which ``--resume`` grades again; when even that
    cannot be written, the row is kept in ``kept`` for this run's outputs.
    """
    path = out / RESULTS_DIR / f"{record.learner}.json"
    try:
        write_json_atomically(path, record.to_dict())
        return
    except (OSError, TypeError, ValueError) as exc:
        selection = record.selection or {}
        message = grader_failed(exc, "its result could not be saved")
        report = failed_report(
            record.seed,
            record.source,
            message,
            steps=selection.get("steps"),
            only=selection.get("only"),
            kind=FailureKind.GRADER,
        )
        record = dataclasses.replace(record, report=report.to_dict())
    try:
        write_json_atomically(path, record.to_dict())
    except OSError:
        kept[record.learner] = record


def _check_limits(timeout, jobs) -> None:
    """Refuse limits that cannot work before grading anyone (``inf`` raised late, ``nan`` spun, ``-10`` gave 0s)."""
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0
    ):
        raise ValueError(
            f"timeout={timeout!r} is not a time limit: give a finite number of seconds above 0 "
            f"(or None for {SUBMISSION_TIMEOUT:g})"
        )
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(
            f"jobs={jobs!r} is not a number of worker processes: give a whole number of at least 1 "
            "(or None for one per core)"
        )


def _check_selection(selection: dict) -> None:
    """Refuse a bad step number or check id before grading anyone (not once per learner)."""
    bad = [step for step in selection["steps"] or () if step not in STEPS]
    if bad:
        raise ValueError(f"no step {bad[0]}: steps are {STEPS[0]}..{STEPS[-1]}")
    checks_for(selection["steps"], selection["only"])  # KeyError for an unknown check id


def _still_valid(old: LearnerRecord | None, digest: str, seed: int, selection: dict, feedback: int | None) -> bool:
    """Whether a saved result can stand: same bytes, seeds and selection, and a grade.

    A failure of the grading machinery (``failure_of(report).retry``: the
    grader, a worker that died) is no grade: graded again.
    """
    if not old or (old.sha256, old.seed, old.selection) != (digest, seed, selection):
        return False
    return old.feedback_seed == feedback and old.graded


def _read_submission(sub: LearnerFile) -> tuple[bytes, str]:
    """The submitted bytes, or why there are none (no module, unreadable, too big)."""
    if sub.path is None:
        return b"", sub.error
    try:  # no link followed, no FIFO waited on, never out of the class folder
        source = read_submission(sub.path, limit=MAX_SOURCE_BYTES, within=sub.within)
    except SubmissionNotFound as exc:
        return b"", str(exc)
    if len(source) > MAX_SOURCE_BYTES:
        return b"", f"{sub.display} is larger than {MAX_SOURCE_BYTES} bytes; it was not graded."
    return source, ""


def _choose_plan(out: Path, seed: int | None, key: bytes | None, resume: bool) -> SeedPlan:
    """The batch's seeds: a given seed; else with a key, per-learner seeds; else a class seed (kept on resume)."""
    if key is None:
        return SeedPlan(seed=_choose_seed(out, seed, resume))
    try:
        previous = int(json.loads((out / MANIFEST).read_text()).get("feedback_round") or 0)
    except (FileNotFoundError, ValueError, AttributeError):
        previous = 0
    return SeedPlan(key=key, round=previous if resume and previous else previous + 1)


def _choose_seed(out: Path, seed: int | None, resume: bool) -> int:
    if seed is not None:
        return int(seed)
    if resume:
        try:
            return int(json.loads((out / MANIFEST).read_text())["seed"])
        except (FileNotFoundError, KeyError, TypeError, ValueError):  # none saved, or keyed seeds
            pass
    return new_seed()


def _lost_report(task: GradeTask, timed_out: bool, *, budget: float) -> dict:
    """The row of a learner whose worker died (the machinery's failure) or ran over its budget (the submission's).

    Its kind is said, not read back from the text, as the service's lost runs do.

    >>> task = GradeTask("ana", "ana/tools.py", b"", "", seed=1, only=("step1/names",))
    >>> [_lost_report(task, over, budget=60.0)["failure"]["kind"] for over in (True, False)]
    ['time', 'grader']
    """
    if timed_out:
        report = failed_report(
            task.seed, task.display, over_time(budget), steps=task.steps, only=task.only, kind=FailureKind.TIME
        )
    else:
        report = failed_report(
            task.seed, task.display, WORKER_DIED, steps=task.steps, only=task.only, kind=FailureKind.GRADER
        )
    return report.to_dict()


def _hard_limit(timeout) -> float:
    """Seconds a batch worker may take for one task before the pool kills it: the budget and a grace."""
    return (timeout if timeout else SUBMISSION_TIMEOUT) + GRACE


def _early_pool(executor, jobs, timeout, grade_fn, sandbox) -> WorkerPool | None:
    """The local executor's pool, started before there are tasks (``None`` for Dask).

    With the real grader each worker starts its fork server at once
    (:func:`grader.batch.task.warm_engine`), so LangGraph is imported while
    the submissions are found and read, not after.
    """
    if executor != "local":
        return None
    limit = _hard_limit(timeout)
    prepare = partial(warm_engine, sandbox) if grade_fn is None else None
    return WorkerPool(
        partial(grade_task, grade_fn=grade_fn),
        jobs=jobs or os.cpu_count() or 1,
        hard_limit=limit,
        on_lost=partial(_lost_report, budget=limit - GRACE),
        prepare=prepare,
    ).start()


def _execute(tasks, *, executor, scheduler, jobs, grade_fn, timeout, progress, pool=None):
    bar = tqdm(total=len(tasks), desc="grading", unit="learner", disable=not progress or not tasks)
    try:
        if executor == "dask":
            results = run_on_dask(tasks, scheduler=scheduler, grade_fn=grade_fn)
        elif executor == "local":
            limit = _hard_limit(timeout)
            results = run_pool(
                tasks,
                jobs=jobs or os.cpu_count() or 1,
                hard_limit=limit,
                work=partial(grade_task, grade_fn=grade_fn),
                on_lost=partial(_lost_report, budget=limit - GRACE),
                pool=pool,
            )
        else:
            raise ValueError(f"unknown executor {executor!r}: use 'local' or 'dask'")
        for task, report in results:
            bar.set_postfix_str(task.learner, refresh=False)
            bar.update(1)
            yield task, report
    finally:
        bar.close()
