"""Find a class's submissions: learner folders, loose files, a glob, or a zip from an LMS.

SUBMISSIONS is one of

* a folder with one folder per learner (each holding ``tools.py`` or
  ``agtool/tools.py``); the learner id is the folder name; loose ``.py``
  files in it are learners too (``ana_1234_tools.py`` -> ``ana_1234``);
* a glob such as ``'/home/*/agtool/tools.py'``; the learner id is the first
  path part that differs between the matches (``alice`` for
  ``/home/alice/agtool/tools.py``);
* a zip of learner folders (an LMS download), extracted safely into
  ``OUT/submissions/``.

Example::

    >>> sanitize_learner_id("bob smith")
    'bob_smith'
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from grader.locate import SubmissionNotFound, module_in, resolve_submission

# Caps for zip extraction: an LMS download of a class is a few megabytes.
ZIP_MAX_MEMBERS = 20_000
ZIP_MAX_MEMBER_BYTES = 5 * 1024 * 1024
ZIP_MAX_TOTAL_BYTES = 500 * 1024 * 1024

_SKIPPED_NAMES = {"__MACOSX", "__pycache__", ".ipynb_checkpoints"}


class UnsafeArchive(ValueError):
    """A zip that tries to escape its folder, or is too big: nothing is extracted."""


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
        if module_in(only):
            return folder
        folder = only
