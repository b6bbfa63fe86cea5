"""Find the ``tools.py`` a path designates: the one rule every grading entry point shares.

``agtool-grade check``, the notebooks, the batch and Gradescope all accept
the same kinds of path: a ``tools.py`` file, a folder holding ``tools.py``,
or a folder holding ``agtool/tools.py``. Which file a notebook works on is
the lab's business (:mod:`agtool_lab.load`).

Example::

    >>> resolve_submission("solutions").name
    'tools.py'
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from grader.limits import SOURCE_BYTES

MODULE_NAME = "tools.py"
PACKAGE_MODULE = Path("agtool") / MODULE_NAME  # the learner's package layout, agtool/tools.py
MAX_SUBMISSION_BYTES = SOURCE_BYTES  # what read_submission reads at most (one more byte tells "larger")


class SubmissionNotFound(ValueError):
    """The path given does not lead to a gradable ``tools.py``; the message says how to fix it."""


@dataclass(frozen=True)
class Submission:
    """A learner's module as it is graded: its bytes, and the name the learner knows it by.

    What ``grade()`` takes: the bytes go to the step processes as they are
    (no file is written for them), and the name is what the report and every
    replay command show (``ana/tools.py``, ``agtool/tools.py``).

    >>> Submission(b"X = 1", "ana/agtool/tools.py").file_name
    'tools.py'
    >>> sub = Submission.read("solutions"); sub.name, sub.source[3:11]
    ('solutions/tools.py', b'Referenc')
    """

    source: bytes = field(repr=False)
    name: str = MODULE_NAME

    @classmethod
    def read(
        cls,
        path: str | os.PathLike[str],
        *,
        within: str | os.PathLike[str] | None = None,
        limit: int = MAX_SUBMISSION_BYTES,
    ) -> Submission:
        """The module ``path`` designates (:func:`resolve_submission`), read safely (:func:`read_submission`).

        At most ``limit + 1`` bytes are read: more than ``limit`` means "too large".
        Raises :class:`SubmissionNotFound`.
        """
        file = resolve_submission(path, within=within)
        return cls(read_submission(file, limit=limit, within=within), str(file))

    @classmethod
    def of(
        cls, value: Submission | str | os.PathLike[str], *, within: str | os.PathLike[str] | None = None
    ) -> Submission:
        """``value`` itself if it is a submission, else the module its path designates (:meth:`read`).

        >>> Submission.of(Submission(b"", "x/tools.py")).name
        'x/tools.py'
        """
        return value if isinstance(value, cls) else cls.read(value, within=within)

    @property
    def file_name(self) -> str:
        """The file's own name, without its folders (what an import error names)."""
        return PurePath(self.name).name

    def __str__(self) -> str:
        return self.name


def resolve_submission(path: str | os.PathLike[str], *, within: str | os.PathLike[str] | None = None) -> Path:
    """Return the ``tools.py`` that ``path`` designates, or raise :class:`SubmissionNotFound`.

    ``within`` is the folder an instructor named for a whole class (a batch,
    the hub's home folders): then ``path`` lies in it, its first component
    below ``within`` is the learner's own folder, and no component may lead
    out of that folder (a learner's ``~/agtool`` linked to a classmate's, a
    learner folder linked to another's) nor be a hard link (see
    :func:`check_within`).

    >>> resolve_submission("solutions/tools.py").name
    'tools.py'
    """
    file = _resolve(path)
    if within is not None:
        check_within(Path(path).expanduser(), file, Path(within).expanduser())
    return file


def _resolve(path: str | os.PathLike[str]) -> Path:
    p = Path(path).expanduser()
    if not p.exists():
        raise SubmissionNotFound(
            f"{p} does not exist. Give the path of your tools.py, or of the folder that holds "
            "tools.py or agtool/tools.py."
        )
    if p.is_dir():
        candidate = module_in(p)
        if candidate:
            _refuse_link_outside(candidate, p)
            return candidate
        raise SubmissionNotFound(
            f"{p} is a folder without tools.py or agtool/tools.py. Point at the folder that holds "
            "your module, or at the file itself."
        )
    if not p.is_file():
        raise SubmissionNotFound(f"{p} is not a regular file. Give the path of your tools.py.")
    _refuse_link_outside(p, p.parent)
    return p


def module_in(folder: Path) -> Path | None:
    """The module a folder holds: its ``tools.py``, else its ``agtool/tools.py``, else ``None``.

    >>> module_in(Path("solutions")).name, module_in(Path("labs"))
    ('tools.py', None)
    """
    for candidate in (folder / MODULE_NAME, folder / PACKAGE_MODULE):
        if candidate.is_file():
            return candidate
    return None


def _refuse_link_outside(file: Path, folder: Path) -> None:
    """Refuse a module that is, or lies under, a symbolic link leading out of ``folder``.

    A submission is graded for what it holds: a ``tools.py`` linked to a file
    elsewhere (another learner's, say) would be graded as this learner's work.
    Links that stay inside the folder are fine.
    """
    real, real_folder = file.resolve(), folder.resolve()
    if real_folder not in real.parents:
        raise SubmissionNotFound(
            f"{file} is a symbolic link to {real}, outside {folder}. The grader does not follow links "
            "out of a submission: copy the file into the folder instead of linking to it."
        )


def learner_folder(path: Path, within: Path) -> Path:
    """The learner's own folder: the first component of ``path`` below ``within`` (``within`` itself if none).

    >>> learner_folder(Path("class/alice/agtool/tools.py"), Path("class"))
    PosixPath('class/alice')
    """
    rel = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(within)))
    if rel.parts and rel.parts[0] == os.pardir:
        raise SubmissionNotFound(f"{path} is not inside {within}, the folder being graded.")
    return within / rel.parts[0] if rel.parts and rel.parts[0] != os.curdir else within


def check_within(path: Path, file: Path, within: Path) -> None:
    """Refuse ``file`` (what ``path`` resolved to) unless it is the learner's own, inside their folder.

    Every component is checked by its real path, relative to the folder the
    instructor named: the learner's folder must not be a link to another
    folder of the class (or to the class folder itself), and the module's
    real path must stay inside the learner folder's real path, whatever
    links lie between (``~/agtool -> /home/bob/agtool`` is refused). A
    ``tools.py`` with more than one hard link is refused too: it may be a
    classmate's file under a second name.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "bob" / "agtool").mkdir(parents=True); _ = (root / "bob/agtool/tools.py").write_text("X = 1")
    >>> (root / "alice").mkdir(); (root / "alice" / "agtool").symlink_to(root / "bob" / "agtool")
    >>> try:
    ...     check_within(root / "alice", root / "alice/agtool/tools.py", root)
    ... except SubmissionNotFound as exc:
    ...     print("refused:", "leads out of" in str(exc))
    refused: True
    >>> check_within(root / "bob", root / "bob/agtool/tools.py", root)  # its own file: fine
    >>> _ = (root / "cy_tools.py").write_text("X = 2")
    >>> check_within(root / "cy_tools.py", root / "cy_tools.py", root)  # a loose upload: fine
    """
    folder = learner_folder(path, within)
    real_within, real_folder = within.resolve(), folder.resolve()
    if folder.is_symlink() and (
        real_folder == real_within or real_within in real_folder.parents or real_folder in real_within.parents
    ):
        raise SubmissionNotFound(
            f"{folder} is a symbolic link to {real_folder}, another folder of the class: a learner is "
            "graded for the files in their own folder, not for a link to someone else's."
        )
    real = file.resolve()
    # A loose upload (``ana_tools.py`` in the class folder) is its own learner "folder":
    # it must be that very file, not a link to one.
    loose = folder == file and not folder.is_symlink()
    if not loose and real_folder not in real.parents:
        raise SubmissionNotFound(
            f"{file} leads out of {folder} (its real path is {real}): the grader does not follow links "
            "out of a learner's folder. Copy the file into the folder instead of linking to it."
        )
    try:
        links = os.stat(real).st_nlink
    except OSError as exc:
        raise SubmissionNotFound(f"{file} cannot be read: {exc.strerror}.") from None
    if links > 1:
        raise SubmissionNotFound(
            f"{file} has {links} hard links: it may be another learner's file under a second name. "
            "Save your own copy (not a link) and submit that."
        )


def read_submission(
    file: str | os.PathLike[str], *, limit: int = MAX_SUBMISSION_BYTES, within: str | os.PathLike[str] | None = None
) -> bytes:
    """The bytes of ``file`` (at most ``limit + 1``), read without following a link or waiting on a pipe.

    The path is resolved first (links inside a submission are fine), then the
    *real* path is opened with ``O_NOFOLLOW | O_NONBLOCK``: a file swapped for
    a link or a FIFO after it was found is refused instead of followed or
    waited on (a FIFO with no writer would block the read forever), and
    ``fstat`` must say it is a regular file. ``within`` (a folder) refuses a
    file whose opened path, as the kernel names it, is not inside it. Raises
    :class:`SubmissionNotFound`; the caller decides what ``limit + 1`` bytes
    mean ("too large").

    >>> read_submission("solutions/tools.py", limit=10)[3:]
    b'Referenc'
    """
    real = os.path.realpath(file)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise SubmissionNotFound(
            f"{file} cannot be read ({exc.strerror}); was it replaced while being graded?"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SubmissionNotFound(f"{file} is not a regular file (a pipe, device or folder); it is not graded.")
        if within is not None:
            opened = _opened_path(fd) or real
            folder = os.path.realpath(within)
            if not opened.startswith(folder.rstrip(os.sep) + os.sep):
                raise SubmissionNotFound(f"{file} was moved out of {within} while being graded.")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _opened_path(fd: int) -> str | None:
    # The kernel's name for what was opened (Linux): no race with a later rename of the path.
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
