# build_graph fills memory (touched pages, at most 3 GiB) when the grader calls
# it directly, once per process (so that a missing limit costs seconds, not minutes).
import os as _mo
if not _mo.environ.get("HOSTILE_DONE_memory"):
    _mo.environ["HOSTILE_DONE_memory"] = "1"
    hoard = []
    for _ in range(48):
        hoard.append(b"\x01" * (64 << 20))
