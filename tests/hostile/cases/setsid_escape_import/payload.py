# At import (once per process), leave a setsid() grandchild that ticks into a
# file outside the submission; the module itself is correct.
if _hostile_once("escape"):
    _hostile_escape("setsid-import", "@@OUTSIDE@@/ticker")
