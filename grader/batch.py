"""Grade a whole class: find the submissions, grade them in parallel, keep every result.

``agtool-grade batch SUBMISSIONS --out OUT`` is :func:`run_batch`. SUBMISSIONS
is one of

* a folder with one folder per learner (each holding ``tools.py`` or
  ``agtool/tools.py``); the learner id is the folder name; loose ``.py``
  files in it are learners too (``ana_1234_tools.py`` -> ``ana_1234``);
* a glob such as ``'/home/*/agtool/tools.py'``; the learner id is the first
  path part that differs between the matches (``alice`` for
  ``/home/alice/agtool/tools.py``);
* a zip of learner folders (an LMS download), extracted safely into
  ``OUT/submissions/``.

Each learner's result is written as soon as it is known, atomically, to
``OUT/results/<learner>.json`` together with the sha256 of the bytes that
were graded. ``--resume`` skips learners whose file and seed are unchanged.
The class-wide outputs (gradebook, feedback, Gradescope files, plots,
summary) are rebuilt from those files at the end by :mod:`grader.gradebook`,
so a batch that was killed and resumed ends with the same bytes as one that
ran straight through.

The grading itself happens in long-lived worker processes (the local pool of
:mod:`grader.pool`, or a Dask cluster via :mod:`grader.dask_executor`); each worker calls
``grader.runner.grade`` on a private copy of exactly the hashed bytes.

Example::

    >>> result = run_batch("submissions/", "out/", jobs=2, seed=7)   # doctest: +SKIP
    >>> result.graded, result.skipped                                # doctest: +SKIP
    (31, 0)
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable

from grader.locate import SubmissionNotFound, resolve_submission
from grader.report import STEPS, CheckResult, Report

RESULTS_DIR = "results"
MANIFEST = "batch.json"
DEFAULT_TIMEOUT = 60.0  # seconds per submission; a correct module needs well under one
GRACE = 5.0  # extra seconds before the pool kills a worker whose grade() has not returned
MIN_STEP_TIMEOUT = 0.5  # below this a correct step can miss its limit on a busy machine

# Caps for zip extraction: an LMS download of a class is a few megabytes.
ZIP_MAX_MEMBERS = 20_000
ZIP_MAX_MEMBER_BYTES = 5 * 1024 * 1024
ZIP_MAX_TOTAL_BYTES = 500 * 1024 * 1024

_SKIPPED_NAMES = {"__MACOSX", "__pycache__", ".ipynb_checkpoints"}

# Errors of the grading machinery, not of the learner: --resume grades these
# learners again instead of keeping the failed row.
GRADER_FAILED = "the grader failed: "
WORKER_DIED = "the grading process died"
CLUSTER_FAILED = "grading failed on the Dask cluster: "
RETRY_ON_RESUME = (GRADER_FAILED, WORKER_DIED, CLUSTER_FAILED)

GradeFn = Callable[..., Report]


class UnsafeArchive(ValueError):
    """A zip that tries to escape its folder, or is too big: nothing is extracted."""


# --------------------------------------------------------------------------
# Discovery
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Submission:
    """One learner's submission as found on disk.

    ``path`` is the ``tools.py`` to grade, or ``None`` when the learner's
    folder holds none (``error`` then says why; the learner still gets a row).
    ``display`` is the path shown in reports and feedback.
    """

    learner: str
    path: Path | None
    display: str
    error: str = ""


def sanitize_learner_id(raw: str) -> str:
    """A learner id that is safe as a file name on every system.

    >>> sanitize_learner_id("Ana María/../x y")
    'Ana_Mar_a_.._x_y'
    """
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", raw).lstrip(".") or "learner"
    return cleaned[:100]


def _unique_ids(raw_ids: list[str]) -> list[str]:
    # Sanitising can merge two ids ("a b" and "a_b"): suffix the later ones, in order.
    used: set[str] = set()
    result = []
    for raw in raw_ids:
        base = candidate = sanitize_learner_id(raw)
        n = 1
        while candidate in used:
            n += 1
            candidate = f"{base}-{n}"
        used.add(candidate)
        result.append(candidate)
    return result


def discover(submissions: "str | os.PathLike[str]", *, workdir: "Path | None" = None) -> list[Submission]:
    """Find every learner's submission; sorted by learner id.

    ``workdir`` is where a zip is extracted (required for zips).

    >>> [s.learner for s in discover("tests/fixtures/class")]   # doctest: +SKIP
    ['alice', 'bob']
    """
    text = os.fspath(submissions)
    path = Path(text).expanduser()
    if path.is_dir():
        return _from_folder(path)
    if path.is_file() and zipfile.is_zipfile(path):
        if workdir is None:
            raise ValueError("a zip of submissions needs a workdir to extract into")
        return _from_folder(_unwrap(extract_zip_safely(path, workdir)))
    if glob.has_magic(text):
        return _from_glob(text)
    raise SubmissionNotFound(
        f"{text} is neither a folder of learner folders, a zip of them, nor a glob "
        "(quote globs so the shell does not expand them: '/home/*/agtool/tools.py')."
    )


def _visible_dirs(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir()
        if p.is_dir() and not p.name.startswith(".") and p.name not in _SKIPPED_NAMES
    )


def _from_folder(folder: Path) -> list[Submission]:
    # One folder per learner; loose .py files count too, one learner each, as
    # an LMS that renames uploads writes them (Canvas: "ana_1234_5678_tools.py").
    dirs = _visible_dirs(folder)
    files = sorted(p for p in folder.glob("*.py") if p.is_file() and not p.name.startswith("."))
    names = [d.name for d in dirs] + [re.sub(r"[_-]?tools$", "", f.stem) or f.stem for f in files]
    return _submissions(_unique_ids(names), [*dirs, *files])


def _from_glob(pattern: str) -> list[Submission]:
    matches = sorted(Path(m) for m in glob.glob(os.path.expanduser(pattern)))
    if not matches:
        raise SubmissionNotFound(f"no file matches {pattern!r}")
    return _submissions(_unique_ids(_ids_from_paths(matches, pattern)), matches)


def _submissions(learners: list[str], entries: list[Path]) -> list[Submission]:
    """A submission per learner, sorted by id; an entry without a module still gets a row, with why."""
    found = []
    for learner, entry in zip(learners, entries):
        try:
            file = resolve_submission(entry)
            found.append(Submission(learner, file, str(file)))
        except SubmissionNotFound as exc:
            found.append(Submission(learner, None, str(entry), error=str(exc)))
    return sorted(found, key=lambda s: s.learner)


def _ids_from_paths(paths: list[Path], pattern: str) -> list[str]:
    """The first path part that differs between matches (the wildcard's part for one match)."""
    parts = [p.parts for p in paths]
    if len(paths) == 1:
        pattern_parts = Path(os.path.expanduser(pattern)).parts
        index = next((i for i, part in enumerate(pattern_parts) if glob.has_magic(part)), 0)
        index = min(index, len(parts[0]) - 1)
        return [parts[0][index]]
    first_diff = next(
        i for i in range(max(len(p) for p in parts))
        if len({p[i] if i < len(p) else None for p in parts}) > 1
    )
    ids = [p[first_diff] if first_diff < len(p) else p[-1] for p in parts]
    if len(set(ids)) == len(ids):
        return ids
    # Two matches under one differing part (/home/a/x/tools.py, /home/a/y/tools.py):
    # name them by every part between the common prefix and the common suffix.
    suffix = 0
    while all(len(p) > suffix + first_diff and p[-1 - suffix] == parts[0][-1 - suffix] for p in parts):
        suffix += 1
    return ["-".join(p[first_diff:len(p) - suffix]) or p[-1] for p in parts]


def extract_zip_safely(archive: Path, workdir: Path) -> Path:
    """Extract ``archive`` into ``workdir/submissions`` (emptied first) and return that folder.

    Refuses the whole archive (:class:`UnsafeArchive`) when a member is an
    absolute path or climbs out with ``..``, or when the size caps are
    exceeded; symlinks and special files are skipped. Sizes are counted on
    the bytes actually decompressed, not on what the headers claim.
    """
    dest = Path(workdir) / "submissions"
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()
        if len(members) > ZIP_MAX_MEMBERS:
            raise UnsafeArchive(f"{archive} has {len(members)} members (cap {ZIP_MAX_MEMBERS})")
        for info in members:
            _check_member_name(info.filename)
        total = 0
        for info in members:
            kind = stat.S_IFMT(info.external_attr >> 16)  # 0 when the zip tool recorded no type
            if info.is_dir() or kind not in (0, stat.S_IFREG):
                continue  # folders are made on demand; symlinks and devices are never created
            target = dest.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            total += _copy_capped(zf, info, target, ZIP_MAX_TOTAL_BYTES - total)
    return dest


def _check_member_name(name: str) -> None:
    posix = PurePosixPath(name.replace("\\", "/"))
    if posix.is_absolute() or re.match(r"^[A-Za-z]:", name) or ".." in posix.parts:
        raise UnsafeArchive(f"zip member {name!r} would be written outside the extraction folder")


def _copy_capped(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, budget: int) -> int:
    written = 0
    with zf.open(info) as src, open(target, "wb") as dst:
        while chunk := src.read(64 * 1024):
            written += len(chunk)
            if written > ZIP_MAX_MEMBER_BYTES:
                raise UnsafeArchive(f"zip member {info.filename!r} exceeds {ZIP_MAX_MEMBER_BYTES} bytes")
            if written > budget:
                raise UnsafeArchive(f"zip contents exceed {ZIP_MAX_TOTAL_BYTES} bytes in total")
            dst.write(chunk)
    os.chmod(target, 0o644)
    return written


def _unwrap(folder: Path) -> Path:
    # LMS downloads often wrap the class in one folder ("hw3/alice/tools.py"):
    # descend while there is a single folder that is not itself a submission.
    while True:
        dirs = _visible_dirs(folder)
        files = [p for p in folder.iterdir() if p.is_file()]
        if len(dirs) != 1 or files:
            return folder
        only = dirs[0]
        if (only / "tools.py").is_file() or (only / "agtool" / "tools.py").is_file():
            return folder
        folder = only


# --------------------------------------------------------------------------
# One task, graded in a worker
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class GradeTask:
    """Everything a worker needs to grade one learner, as picklable data.

    The source bytes travel with the task, so what is graded is exactly what
    was hashed, and a remote Dask worker needs no shared file system.
    """

    learner: str
    display: str
    source: bytes
    sha256: str
    seed: int
    steps: tuple[int, ...] | None = None
    only: tuple[str, ...] | None = None
    timeout: float | None = None  # per step, as grade() takes it
    sandbox: str | None = None  # "none", "bwrap" or "auto"; None: $AGTOOL_SANDBOX of the worker


def step_timeout(budget: float | None, n_steps: int) -> float | None:
    """Share a submission's time budget between its steps, capped by the grader's own default.

    So a module that hangs in every step still finishes inside its budget,
    with the points of the steps that did not hang.

    >>> step_timeout(60, 8), step_timeout(2, 8)
    (7.5, 0.5)
    """
    if not budget:
        return None
    from grader.runner import DEFAULT_TIMEOUT as STEP_DEFAULT

    return max(MIN_STEP_TIMEOUT, min(STEP_DEFAULT, budget / max(1, n_steps)))


def failed_report(seed: int, path: str, message: str, *, steps=None, only=None) -> Report:
    """A report where every selected check failed with ``message`` (used when grading could not run)."""
    from grader.registry import checks_for

    checks = [
        CheckResult(id=c.id, step=c.step, passed=False, points=0, max_points=c.points,
                    title=c.title, message=message, hint=c.hint)
        for c in checks_for(list(steps) if steps else None, list(only) if only else None)
    ]
    return Report(seed=seed, path=path, checks=checks, error=message)


def _default_grade(path, **kwargs) -> Report:
    from grader.runner import grade

    return grade(path, **kwargs)


def grade_task(task: GradeTask, grade_fn: GradeFn | None = None) -> dict:
    """Grade one task in the calling process and return ``Report.to_dict()``.

    Learner code never runs here: ``grade`` runs it in child processes. The
    report's paths name the learner's original file, not the scratch copy.
    """
    import tempfile

    grade = grade_fn or _default_grade
    _use_sandbox(task.sandbox)
    with tempfile.TemporaryDirectory(prefix="agtool-batch-") as tmp:
        file = Path(tmp) / task.learner / "tools.py"
        file.parent.mkdir()
        file.write_bytes(task.source)
        try:
            report = grade(file, steps=list(task.steps) if task.steps else None,
                           only=list(task.only) if task.only else None,
                           seed=task.seed, timeout=task.timeout)
        except Exception as exc:  # a grader bug must cost one row, not the batch
            report = failed_report(task.seed, str(file), f"{GRADER_FAILED}{type(exc).__name__}: {exc}",
                                   steps=task.steps, only=task.only)
        return _rebase(report.to_dict(), {str(file): task.display, str(file.parent): str(Path(task.display).parent)})


def _use_sandbox(mode: str | None) -> None:
    """Make this process's warm runner use ``mode`` (restarting it if it runs another one)."""
    from grader import warm

    if mode and os.environ.get(warm.SANDBOX_ENV, "none") != mode:
        os.environ[warm.SANDBOX_ENV] = mode
        warm.close()  # the next grade() starts a warm parent in the new mode


def _rebase(data, replacements: dict[str, str]):
    """Replace scratch paths by the learner's paths in every string of ``data``."""
    if isinstance(data, str):
        for old, new in replacements.items():
            data = data.replace(old, new)
        return data
    if isinstance(data, dict):
        return {k: _rebase(v, replacements) for k, v in data.items()}
    if isinstance(data, list):
        return [_rebase(v, replacements) for v in data]
    return data


# --------------------------------------------------------------------------
# Result files and the batch
# --------------------------------------------------------------------------


def write_json_atomically(path: Path, data: dict) -> None:
    """Write ``data`` as JSON so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # Compact: with ``indent`` json falls back to its pure-Python encoder, ~10x slower, once per learner.
    tmp.write_text(json.dumps(data, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def result_record(learner: str, display: str, sha256: str, seed: int, selection: dict, report: dict) -> dict:
    return {"learner": learner, "source": display, "sha256": sha256, "seed": seed,
            "selection": selection, "report": report}


def load_record(out: Path, learner: str) -> dict | None:
    try:
        return json.loads((Path(out) / RESULTS_DIR / f"{learner}.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def load_records(out: "str | os.PathLike[str]", learners: Iterable[str] | None = None) -> list[dict]:
    """The result records under ``out/results``, sorted by learner (all, or only ``learners``).

    >>> [r["learner"] for r in load_records("out/")]   # doctest: +SKIP
    ['alice', 'bob']
    """
    out = Path(out)
    if learners is None:
        learners = [p.stem for p in (out / RESULTS_DIR).glob("*.json")]
    records = [load_record(out, learner) for learner in sorted(learners)]
    return [r for r in records if r]


@dataclass
class BatchResult:
    """What :func:`run_batch` did: where the outputs are and how many learners it graded."""

    out: Path
    seed: int
    learners: list[str] = field(default_factory=list)
    graded: int = 0
    skipped: int = 0
    outputs: dict = field(default_factory=dict)


def run_batch(
    submissions: "str | os.PathLike[str]",
    out: "str | os.PathLike[str]",
    *,
    jobs: int | None = None,
    seed: int | None = None,
    resume: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    steps: Iterable[int] | None = None,
    only: Iterable[str] | None = None,
    executor: str = "local",
    scheduler=None,
    sandbox: str | None = None,
    grade_fn: GradeFn | None = None,
    progress: bool = True,
) -> BatchResult:
    """Grade every submission and write the class outputs under ``out``.

    ``seed`` is one seed for the whole class (random if ``None``; on
    ``resume`` the previous batch's seed). ``scheduler`` is a Dask scheduler
    address or ``distributed.Client`` when ``executor="dask"``. ``sandbox``
    (``"bwrap"``/``"auto"``) runs learner code inside bubblewrap, read-only
    file system included, so a submission cannot touch ``out`` or other
    learners' files (default: ``$AGTOOL_SANDBOX``, else none).
    ``grade_fn`` replaces ``grader.runner.grade`` (tests inject fakes).

    >>> run_batch("class/", "out/", seed=3).outputs["csv"]   # doctest: +SKIP
    PosixPath('out/grades.csv')
    """
    from grader import gradebook

    selection = {"steps": sorted(set(steps)) if steps else None, "only": sorted(set(only)) if only else None}
    _check_selection(selection)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seed = _choose_seed(out, seed, resume)
    write_json_atomically(out / MANIFEST, {"seed": seed, "submissions": os.fspath(submissions), **selection})

    # OUT may sit inside the submissions folder; it is not a learner.
    found = [s for s in discover(submissions, workdir=out)
             if not (s.path is None and Path(s.display).resolve() == out.resolve())]
    result = BatchResult(out=out, seed=seed, learners=[s.learner for s in found])
    tasks = []
    for sub in found:
        source, problem = _read_submission(sub)
        if problem:
            report = failed_report(seed, sub.display, problem, steps=selection["steps"], only=selection["only"])
            write_json_atomically(out / RESULTS_DIR / f"{sub.learner}.json",
                                  result_record(sub.learner, sub.display, "", seed, selection, report.to_dict()))
            continue
        digest = hashlib.sha256(source).hexdigest()
        old = load_record(out, sub.learner) if resume else None
        if _still_valid(old, digest, seed, selection):
            result.skipped += 1
            continue
        tasks.append(GradeTask(sub.learner, sub.display, source, digest, seed,
                               tuple(selection["steps"]) if selection["steps"] else None,
                               tuple(selection["only"]) if selection["only"] else None,
                               step_timeout(timeout, len(selection["steps"] or STEPS)), sandbox))

    for task, report in _execute(tasks, executor=executor, scheduler=scheduler, jobs=jobs,
                                 grade_fn=grade_fn, timeout=timeout, progress=progress):
        write_json_atomically(out / RESULTS_DIR / f"{task.learner}.json",
                              result_record(task.learner, task.display, task.sha256, seed, selection, report))
        result.graded += 1

    result.outputs = gradebook.write_outputs(load_records(out, result.learners), out)
    return result


def _check_selection(selection: dict) -> None:
    """Refuse a bad step number or check id before grading anyone (not once per learner)."""
    from grader.registry import checks_for

    bad = [step for step in selection["steps"] or () if step not in STEPS]
    if bad:
        raise ValueError(f"no step {bad[0]}: steps are {STEPS[0]}..{STEPS[-1]}")
    checks_for(selection["steps"], selection["only"])  # KeyError for an unknown check id


def _still_valid(old: dict | None, digest: str, seed: int, selection: dict) -> bool:
    """Whether a saved result can stand: same bytes, seed and selection, and not a grader failure."""
    if not old or (old.get("sha256"), old.get("seed"), old.get("selection")) != (digest, seed, selection):
        return False
    return not old["report"].get("error", "").startswith(RETRY_ON_RESUME)


def _read_submission(sub: Submission) -> tuple[bytes, str]:
    """The submitted bytes, or why there are none (no module, unreadable, too big)."""
    if sub.path is None:
        return b"", sub.error
    from grader.runner import MAX_SOURCE_BYTES

    try:
        if sub.path.stat().st_size > MAX_SOURCE_BYTES:
            return b"", f"{sub.display} is larger than {MAX_SOURCE_BYTES} bytes; it was not graded."
        return sub.path.read_bytes(), ""
    except OSError as exc:
        return b"", f"{sub.display} could not be read: {exc.strerror or exc}"


def _choose_seed(out: Path, seed: int | None, resume: bool) -> int:
    if seed is not None:
        return int(seed)
    if resume:
        try:
            return int(json.loads((out / MANIFEST).read_text())["seed"])
        except (FileNotFoundError, KeyError, ValueError):
            pass
    return secrets.randbelow(1_000_000)


def _lost_report(task: GradeTask, timed_out: bool, *, budget: float) -> dict:
    """The row of a learner whose worker died or ran over its budget (and was killed)."""
    message = f"grading stopped: over the time limit of {budget:g} s" if timed_out else WORKER_DIED
    return failed_report(task.seed, task.display, message, steps=task.steps, only=task.only).to_dict()


def _execute(tasks, *, executor, scheduler, jobs, grade_fn, timeout, progress):
    from tqdm.auto import tqdm

    bar = tqdm(total=len(tasks), desc="grading", unit="learner", disable=not progress or not tasks)
    try:
        if executor == "dask":
            from grader.dask_executor import run_on_dask

            results = run_on_dask(tasks, scheduler=scheduler, grade_fn=grade_fn)
        elif executor == "local":
            from functools import partial

            from grader.pool import run_pool

            limit = (timeout if timeout else DEFAULT_TIMEOUT) + GRACE
            results = run_pool(tasks, jobs=jobs or os.cpu_count() or 1, hard_limit=limit,
                               work=partial(grade_task, grade_fn=grade_fn),
                               on_lost=partial(_lost_report, budget=limit - GRACE))
        else:
            raise ValueError(f"unknown executor {executor!r}: use 'local' or 'dask'")
        for task, report in results:
            bar.set_postfix_str(task.learner, refresh=False)
            bar.update(1)
            yield task, report
    finally:
        bar.close()


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def add_batch_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``agtool-grade batch`` on an ``argparse`` subparsers object."""
    p = subparsers.add_parser("batch", help="grade a whole class and write the gradebook",
                              description=__doc__.split("\n\n")[0])
    _add_batch_arguments(p)
    return p


def _add_batch_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("submissions", help="folder of learner folders, a quoted glob, or a zip")
    p.add_argument("--out", required=True, type=Path, help="output folder")
    p.add_argument("--jobs", type=int, default=None, help="parallel workers (default: number of cores)")
    p.add_argument("--seed", type=int, default=None, help="one seed for the class (default: random)")
    p.add_argument("--resume", action="store_true", help="skip learners whose file is unchanged")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"wall-clock seconds per submission, shared between its steps (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--steps", type=lambda s: [int(x) for x in s.split(",")], default=None,
                   help="only these steps, e.g. 1,2,3")
    p.add_argument("--only", action="append", default=None, help="only this check id (repeatable)")
    p.add_argument("--executor", choices=["local", "dask"], default="local")
    p.add_argument("--scheduler", default=None, help="Dask scheduler address, e.g. tcp://host:8786")
    p.add_argument("--sandbox", choices=["none", "bwrap", "auto"], default=None,
                   help="run learner code inside bubblewrap (read-only file system, no network); "
                        "default $AGTOOL_SANDBOX or none")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=batch_command)


def batch_command(args: argparse.Namespace) -> int:
    """Run :func:`run_batch` from parsed arguments and print where the outputs are."""
    if args.executor == "dask" and not args.scheduler:
        print("--executor dask needs --scheduler ADDRESS", file=sys.stderr)
        return 2
    try:
        result = run_batch(args.submissions, args.out, jobs=args.jobs, seed=args.seed, resume=args.resume,
                           timeout=args.timeout, steps=args.steps, only=args.only, executor=args.executor,
                           scheduler=args.scheduler, sandbox=args.sandbox, progress=not args.no_progress)
    except (SubmissionNotFound, UnsafeArchive, ValueError) as exc:
        print(f"agtool-grade batch: {exc}", file=sys.stderr)
        return 2
    except KeyError as exc:
        print(f"agtool-grade batch: {exc.args[0]}. See the ids with: agtool-grade checks", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # e.g. --executor dask without Dask installed
        print(f"agtool-grade batch: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted: the results graded so far are in {args.out / RESULTS_DIR}; "
              "run the same command with --resume to continue.", file=sys.stderr)
        return 130
    if not result.learners:
        print(f"agtool-grade batch: no learner found in {args.submissions} (a folder needs one folder "
              "per learner)", file=sys.stderr)
    print(f"seed {result.seed}: {len(result.learners)} learners, {result.graded} graded, "
          f"{result.skipped} unchanged (skipped)")
    for name, path in result.outputs.items():
        print(f"  {name:<22} {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m grader.batch ...``: the same as ``agtool-grade batch ...``."""
    parser = argparse.ArgumentParser(prog="python -m grader.batch")
    _add_batch_arguments(parser)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
