# Finds the grading service's SQLite database and writes into it
# (a 133/133 attempt for its author). Says HOSTILE-WROTE for each it changed.
# It writes only the database the test planted (a path with "agtool-hostile"):
# a guard for a developer's machine where a fix is turned off, not a limit a
# real learner would keep; it reads, and says it could have written, any other.
import os as _hwo
import sqlite3 as _hws


def _write_databases():
    for _path in _hostile_find(_HOSTILE_DB_PLACES, lambda p: p.endswith((".sqlite3", ".sqlite", ".db"))):
        if "agtool-hostile" not in _path:
            if _hwo.access(_path, _hwo.W_OK) and _hwo.access(_hwo.path.dirname(_path), _hwo.W_OK):
                print("HOSTILE-WROTE (could have)", _path)
            continue
        try:
            _db = _hws.connect(_path, timeout=0.2)
            _db.execute("insert into attempts values ('hostile', 133, 'forged')")
            _db.commit()
            _db.close()
            print("HOSTILE-WROTE", _path)
        except (OSError, _hws.Error):
            continue


_write_databases()
