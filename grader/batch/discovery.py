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

Learner ids keep Unicode letters (NFC), are unique and stable: when two
entries would get the same id, each one that is not a folder named exactly
that id gets a suffix derived from its own name (never from its position),
so a learner's feedback file does not change hands between runs.

Example::

    >>> sanitize_learner_id("bob smith"), sanitize_learner_id("김민준")
    ('bob_smith', '김민준')
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import stat
import unicodedata
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from grader.limits import FILE_NAME_BYTES, ZIP_MEMBER_BYTES, ZIP_MEMBERS, ZIP_TOTAL_BYTES
from grader.locate import SubmissionNotFound, module_in, resolve_submission
from grader.outputs.learner_ids import sanitize_learner_id, unique_ids  # noqa: F401 (re-exported: the batch's face)

# Caps for zip extraction (grader.limits says why).
ZIP_MAX_MEMBERS, ZIP_MAX_MEMBER_BYTES, ZIP_MAX_TOTAL_BYTES = ZIP_MEMBERS, ZIP_MEMBER_BYTES, ZIP_TOTAL_BYTES

_SKIPPED_NAMES = {"__MACOSX", "__pycache__", ".ipynb_checkpoints"}
# Loose files a file manager or an LMS leaves beside the uploads: not learners.
_NOT_UPLOADS = {"thumbs.db", "desktop.ini"}
NAME_MAX_BYTES = FILE_NAME_BYTES  # longest file name most file systems accept (grader.limits)


class UnsafeArchive(ValueError):
    """A zip that tries to escape its folder, or is too big: nothing is extracted."""


@dataclass(frozen=True)
class LearnerFile:
    """One learner's submission as found on disk.

    ``path`` is the ``tools.py`` to grade, or ``None`` when the learner's
    folder holds none (``error`` then says why; the learner still gets a row).
    ``display`` is the path shown in reports and feedback. ``within`` is
    the folder the instructor named (the class folder, or a glob's fixed
    part): no component of the learner's path may lead out of their own
    folder below it, so a folder linked to a classmate's is refused.
    """

    learner: str
    path: Path | None
    display: str
    error: str = ""
    within: Path | None = None


def discover(
    submissions: str | os.PathLike[str], *, workdir: Path | None = None, skipped: list[tuple[str, str]] | None = None
) -> list[LearnerFile]:
    """Find every learner's submission; sorted by learner id.

    ``workdir`` is where a zip is extracted (required for zips); zip members
    that cannot be extracted are appended to ``skipped`` as (name, why).

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
        return _from_folder(_unwrap(extract_zip_safely(path, workdir, skipped=skipped)))
    if glob.has_magic(text):
        return _from_glob(text)
    raise SubmissionNotFound(
        f"{text} is neither a folder of learner folders, a zip of them, nor a glob "
        "(quote globs so the shell does not expand them: '/home/*/agtool/tools.py')."
    )


def _visible_dirs(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name not in _SKIPPED_NAMES
    )


def _from_folder(folder: Path) -> list[LearnerFile]:
    # One folder per learner; loose .py files count too, one learner each, as
    # an LMS that renames uploads writes them (Canvas: "ana_1234_5678_tools.py").
    # A loose file meant as the module but not a .py file (a notebook,
    # "tools.py.txt") gets a row saying why it was not graded instead of vanishing.
    dirs = _visible_dirs(folder)
    loose = sorted(
        p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".") and p.name.lower() not in _NOT_UPLOADS
    )
    files = [p for p in loose if p.suffix == ".py"]
    others = [p for p in loose if p.suffix != ".py" and _looks_like_upload(p)]
    names = [d.name for d in dirs] + [_upload_id(f) for f in [*files, *others]]
    keys = [d.name for d in dirs] + [f.name for f in [*files, *others]]
    ids = unique_ids(names, keys)
    found = _submissions(ids[: len(dirs) + len(files)], [*dirs, *files], folder)
    found += [
        LearnerFile(learner, None, str(f), error=not_a_module(f))
        for learner, f in zip(ids[len(dirs) + len(files) :], others)
    ]
    return sorted(found, key=lambda s: s.learner)


def _looks_like_upload(file: Path) -> bool:
    """A loose file meant as the module (a notebook, ``tools.py.txt``, ``ana_tools.PY``), not a class note.

    >>> [_looks_like_upload(Path(n)) for n in ("a_tools.ipynb", "tools.py.txt", "b.PY", "notes.txt")]
    [True, True, True, False]
    """
    name = file.name.lower()
    return file.suffix.lower() == ".ipynb" or ".py" in name or "tools" in name


def _upload_id(file: Path) -> str:
    """The learner id an LMS-renamed upload carries: ``ana_1234_tools.py.txt`` -> ``ana_1234``."""
    stem = file.name.rsplit(".", 1)[0] if "." in file.name[1:] else file.name
    if stem.endswith(".py"):
        stem = stem[:-3]
    return re.sub(r"[_-]?tools$", "", stem) or stem


def not_a_module(file: Path) -> str:
    """Why a loose upload that is not a ``.py`` file was not graded, and what to do.

    >>> print(not_a_module(Path("ana_tools.ipynb")))
    ana_tools.ipynb was not graded: it is a notebook, not a .py file. Upload tools.py itself (in JupyterLab: File > Save and Export Notebook As > Executable Script, or the tools.py the notebooks edit).
    """
    kind = "a notebook" if file.suffix == ".ipynb" else f"a {file.suffix or 'extension-less'} file"
    return (
        f"{file.name} was not graded: it is {kind}, not a .py file. Upload tools.py itself (in JupyterLab: "
        "File > Save and Export Notebook As > Executable Script, or the tools.py the notebooks edit)."
    )


def _from_glob(pattern: str) -> list[LearnerFile]:
    matches = sorted(Path(m) for m in glob.glob(os.path.expanduser(pattern)))
    if not matches:
        raise SubmissionNotFound(f"no file matches {pattern!r}")
    return _submissions(
        unique_ids(_ids_from_paths(matches, pattern), [str(m) for m in matches]), matches, glob_base(pattern)
    )


def glob_base(pattern: str) -> Path:
    """The fixed part of a glob: the folder above its first wildcard (what the instructor named).

    >>> glob_base("/home/*/agtool/tools.py"), glob_base("class/a*/tools.py")
    (PosixPath('/home'), PosixPath('class'))
    """
    parts = Path(os.path.expanduser(pattern)).parts
    index = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts) - 1)
    return Path(*parts[:index]) if index else Path(os.curdir)


def _submissions(learners: list[str], entries: list[Path], within: Path) -> list[LearnerFile]:
    """A submission per learner, sorted by id; an entry without a module still gets a row, with why."""
    found = []
    for learner, entry in zip(learners, entries):
        try:
            file = resolve_submission(entry, within=within)
            found.append(LearnerFile(learner, file, str(file), within=within))
        except SubmissionNotFound as exc:
            found.append(LearnerFile(learner, None, str(entry), error=str(exc)))
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
        i for i in range(max(len(p) for p in parts)) if len({p[i] if i < len(p) else None for p in parts}) > 1
    )
    ids = [p[first_diff] if first_diff < len(p) else p[-1] for p in parts]
    if len(set(ids)) == len(ids):
        return ids
    # Two matches under one differing part (/home/a/x/tools.py, /home/a/y/tools.py):
    # name them by every part between the common prefix and the common suffix.
    suffix = 0
    while all(len(p) > suffix + first_diff and p[-1 - suffix] == parts[0][-1 - suffix] for p in parts):
        suffix += 1
    return ["-".join(p[first_diff : len(p) - suffix]) or p[-1] for p in parts]


def extract_zip_safely(archive: Path, workdir: Path, *, skipped: list[tuple[str, str]] | None = None) -> Path:
    """Extract ``archive`` into ``workdir/submissions`` (emptied first) and return that folder.

    Refuses the whole archive (:class:`UnsafeArchive`) when a member is an
    absolute path or climbs out with ``..``, or when the size caps are
    exceeded; symlinks and special files are skipped. Sizes are counted on
    the bytes actually decompressed, not on what the headers claim.

    A member that cannot be extracted on its own -- a name part over 255
    bytes, a file where a folder of the same name is (or the other way
    round), a second member of the same name, a bad CRC, encryption, an
    unknown compression -- is left out and appended to ``skipped`` as
    (name, why): one learner's broken upload does not refuse the class.
    """
    skipped = [] if skipped is None else skipped
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
        seen: dict[str, str] = {}  # folded path -> "file" or "dir", of the members extracted so far
        for info in members:
            kind = stat.S_IFMT(info.external_attr >> 16)  # 0 when the zip tool recorded no type
            if info.is_dir() or kind not in (0, stat.S_IFREG):
                continue  # folders are made on demand; symlinks and devices are never created
            parts = PurePosixPath(info.filename.replace("\\", "/")).parts
            problem = _member_problem(parts, seen)
            if problem:
                skipped.append((info.filename, problem))
                continue
            target = dest.joinpath(*parts)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                total += _copy_capped(zf, info, target, ZIP_MAX_TOTAL_BYTES - total)
            except UnsafeArchive:
                raise
            except (OSError, zipfile.BadZipFile, RuntimeError, NotImplementedError, EOFError) as exc:
                # RuntimeError: an encrypted member; NotImplementedError: an unknown compression method.
                if target.is_file():  # half written before the error: no learner is graded on part of a file
                    target.unlink()
                skipped.append((info.filename, _member_error(exc)))
    return dest


def _member_problem(parts: tuple[str, ...], seen: dict[str, str]) -> str:
    """Why a member with these path parts cannot be extracted beside the ones before it ("" if it can)."""
    for part in parts:
        if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX_BYTES:
            return f"a name part is longer than {NAME_MAX_BYTES} bytes (no file system accepts it)"
    # Case- and normalisation-insensitive: extracted on macOS or Windows these would be one file.
    folded = [unicodedata.normalize("NFC", part).casefold() for part in parts]
    for depth in range(1, len(folded)):
        if seen.get("/".join(folded[:depth])) == "file":
            return f"{'/'.join(parts[:depth])} is a file in this zip, so it cannot also be a folder"
    key = "/".join(folded)
    if key in seen:
        return (
            "a folder of the same name is in this zip"
            if seen[key] == "dir"
            else "a second member of the same name (the first one was kept)"
        )
    seen[key] = "file"
    for depth in range(1, len(folded)):
        seen.setdefault("/".join(folded[:depth]), "dir")
    return ""


def _member_error(exc: BaseException) -> str:
    if isinstance(exc, zipfile.BadZipFile):
        return f"corrupt in the zip ({exc})"
    if isinstance(exc, RuntimeError):
        return f"cannot be read ({exc}); upload it without a password"
    if isinstance(exc, NotImplementedError):
        return f"compressed with a method the grader cannot read ({exc})"
    return f"could not be written ({getattr(exc, 'strerror', None) or exc})"


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
