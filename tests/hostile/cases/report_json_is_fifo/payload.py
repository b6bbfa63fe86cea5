# write_report writes tool_report.md, and makes tool_report.json a FIFO that
# nobody ever writes to: whoever opens it to read waits forever. The grader
# must read neither with a blocking open nor past a non-regular file; step 8
# is lost, and the grading costs no timeout.
import os as _fo


def _fifo_json(folder):
    path = _fo.path.join(str(folder), "tool_report.json")
    try:
        _fo.unlink(path)
    except OSError:
        pass
    _fo.mkfifo(path)
