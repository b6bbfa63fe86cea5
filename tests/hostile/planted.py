"""The class's data a least-privilege case looks for, planted where a real setup keeps it (root only).

On a hub, learners' modules live in ``/home/<learner>/agtool/tools.py``, a
course checkout (with ``solutions/``) and the service's SQLite database
somewhere on the machine, batch outputs in a folder of the instructor's.
:func:`planted_class_data` puts a copy of each at such places for the time
of a test (each file carries :data:`PLANTED_MARK`), and removes them after.
Planting needs root (``/home``, ``/srv``, ``/root``); elsewhere nothing is
planted and it yields ``False``: the cases then look for what is there.

Example::

    >>> with planted_class_data(enabled=False) as planted:
    ...     planted
    False
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from .build import SOLUTION

PLANTED_MARK = "agtool-hostile-planted"
HOME = Path("/home/agtool-hostile-classmate")
COURSE = Path("/srv/agtool-hostile-course")
ROOT_SECRET = Path("/root/agtool-hostile-secret.txt")
DATABASE = COURSE / "service-data" / "agtool.sqlite3"
OUT = COURSE / "batch-out"


@contextlib.contextmanager
def planted_class_data(enabled: bool | None = None) -> Iterator[bool]:
    """Plant a classmate's module, a course checkout, a service database, batch outputs and a /root file."""
    enabled = os.geteuid() == 0 if enabled is None else enabled
    if not enabled:
        yield False
        return
    made = [p for p in (HOME, COURSE, ROOT_SECRET) if not p.exists()]
    try:
        _plant()
        yield True
    finally:
        for path in made:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def _plant() -> None:
    solution = SOLUTION.read_text(encoding="utf-8") + f"\n# {PLANTED_MARK}\n"
    for path in (HOME / "agtool" / "tools.py", COURSE / "solutions" / "tools.py"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(solution, encoding="utf-8")
    DATABASE.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(DATABASE)) as db:
        db.execute("create table if not exists attempts (learner text, score int, note text)")
        db.execute("insert into attempts values ('classmate', 97, ?)", (PLANTED_MARK,))
        db.commit()
    (OUT / "results").mkdir(parents=True, exist_ok=True)
    (OUT / "results" / "classmate.json").write_text(json.dumps({"note": PLANTED_MARK, "score": 97}), encoding="utf-8")
    (OUT / "results" / "feedback.md").write_text(f"# {PLANTED_MARK}\n", encoding="utf-8")
    ROOT_SECRET.write_text(PLANTED_MARK + "\n", encoding="utf-8")


def database_rows() -> list[tuple]:
    """Every row of every table of the planted database (to see that nobody wrote it)."""
    with contextlib.closing(sqlite3.connect(f"file:{DATABASE}?mode=ro", uri=True)) as db:
        tables = [r[0] for r in db.execute("select name from sqlite_master where type = 'table'")]
        return [(t, *row) for t in tables for row in db.execute(f"select * from {t}")]
