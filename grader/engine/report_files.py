"""Step 8's report files, read by the fork server once the step is over.

The step child runs learner code, and learner code can reach every object of
that process (through frames, ``gc``, ``sys.modules``): whatever the step
child reads back, a module could have rewritten on the way. So the report
probe only says *where* ``write_report`` wrote (``files_at``, and
``cwd_files_at`` for files written to the working folder instead), and the
fork server, which owns the step's scratch folder and runs no learner code,
reads the two files there after the step's processes are gone.

A place is read only when it is a real folder inside the step's scratch folder
(no symbolic link on the way); a file only when it is a regular file (opened
with ``O_NOFOLLOW | O_NONBLOCK``, checked with ``fstat``), and only up to a cap.

Example::

    >>> import os, tempfile
    >>> scratch = tempfile.mkdtemp()
    >>> folder = os.path.join(scratch, "grader_report_1")
    >>> os.mkdir(folder)
    >>> with open(os.path.join(folder, "tool_report.json"), "w") as fh:
    ...     _ = fh.write('{"attempts": 2}')
    >>> obs = {"records": [{"value": None, "files_at": folder}]}
    >>> resolve_report_files(obs, scratch)["records"][0]["files"]
    {'json_exists': True, 'md_exists': False, 'json': {'attempts': 2}}
    >>> resolve_report_files({"records": [{"files_at": "/etc"}]}, scratch)["records"][0]["files"]["refused"]
    'the report folder is not inside the step scratch folder'
"""

from __future__ import annotations

import codecs
import errno
import json
import os
import stat
from typing import Any

from grader.engine.encode import encode
from grader.engine.protocol import MAX_MESSAGE_BYTES, MAX_REPORT_TEXT
from grader.engine.wire import JsonDict

REPORT_FILES = ("tool_report.json", "tool_report.md")
# Where the probe says it left files -> where the judges read them.
PLACES = {"files_at": "files", "cwd_files_at": "cwd_files"}
MAX_PLACES = 16  # report places read per step; a step child that names more gets them refused
MAX_JSON_BYTES = MAX_MESSAGE_BYTES  # the bound the step child's own observations had
_NOT_INSIDE = "the report folder is not inside the step scratch folder"


def names_report_files(obs: Any) -> bool:
    """Whether :func:`resolve_report_files` has anything to do in ``obs`` (a record naming or claiming files).

    >>> names_report_files({"records": [{"files_at": "/tmp/x"}]}), names_report_files({"records": [{"value": 1}]})
    (True, False)
    """
    records = obs.get("records") if isinstance(obs, dict) else None
    if not isinstance(records, list):
        return False
    keys = (*PLACES, *PLACES.values())
    return any(isinstance(record, dict) and any(key in record for key in keys) for record in records)


def resolve_report_files(obs: Any, scratch: str) -> Any:
    """Replace each record's ``files_at`` / ``cwd_files_at`` in ``obs`` (in place) by the files read there.

    Only the records of a ``calls`` observation are looked at (where the
    report probe puts its output), and what a record itself claims as
    ``files`` / ``cwd_files`` is dropped: only what is read here counts.
    Places beyond :data:`MAX_PLACES` and places outside ``scratch`` read as
    refused (no file exists for the judges). Returns ``obs``.
    """
    records = obs.get("records") if isinstance(obs, dict) else None
    if not isinstance(records, list):
        return obs
    budget, root = MAX_PLACES, None
    for record in records:
        if not isinstance(record, dict):
            continue
        for place, key in PLACES.items():
            record.pop(key, None)  # a step child's own reading is never trusted
            if place in record:
                root = root or os.path.realpath(scratch)  # only for records that name a place
                where = record.pop(place)
                budget -= 1
                record[key] = (
                    read_report_folder(where, root)
                    if budget >= 0
                    else _refused("more report folders than a step may name")
                )
    return obs


def read_report_folder(folder: Any, root: str) -> JsonDict:
    """Both report files of ``folder`` as the judges read them; ``root`` is the step's real scratch path.

    >>> read_report_folder(7, "/tmp")["refused"]
    'the report folder is not inside the step scratch folder'
    """
    if not isinstance(folder, str) or "\0" in folder or not _inside(folder, root):
        return _refused(_NOT_INSIDE)
    read = {
        key: _read_regular(os.path.join(folder, name), MAX_JSON_BYTES if key == "json" else 4 * MAX_REPORT_TEXT + 4)
        for name, key in zip(REPORT_FILES, ("json", "md"))
    }
    out: JsonDict = {f"{key}_exists": data is not None or bool(problem) for key, (data, problem) in read.items()}
    for key, (data, problem) in read.items():
        if problem:
            out[f"{key}_error"] = problem
        elif data is not None:
            try:
                if key == "json":
                    out["json"] = encode(json.loads(data.decode("utf-8")))
                else:
                    # Up to MAX_REPORT_TEXT characters: a cut in the middle of a
                    # character is the cap's doing, not a decoding error.
                    out["md"] = codecs.getincrementaldecoder("utf-8")().decode(data)[:MAX_REPORT_TEXT]
            except Exception as exc:
                out[f"{key}_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    return out


def _inside(folder: str, root: str) -> bool:
    """``folder`` is ``root`` or below it, with no symbolic link anywhere on the way."""
    if not os.path.isabs(folder):
        return False
    normal = os.path.normpath(folder)
    real = os.path.realpath(normal)
    return real == normal and (real == root or real.startswith(root + os.sep)) and os.path.isdir(real)


def _read_regular(path: str, cap: int) -> tuple[bytes | None, str]:
    """(bytes, "") for a regular file; (None, "") when there is none; (None, problem) otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, f"{os.path.basename(path)} is a symbolic link: write the file itself"
        return None, f"{type(exc).__name__}: {exc.strerror}"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, f"{os.path.basename(path)} is not a regular file"
        if info.st_size > cap:
            if path.endswith(".json"):
                return None, f"{os.path.basename(path)} is {info.st_size} bytes, more than the {cap} a report may have"
        chunks, left = [], cap
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), ""
    finally:
        os.close(fd)


def _refused(why: str) -> JsonDict:
    return {"json_exists": False, "md_exists": False, "refused": why}
