# write_report leaves a setsid() grandchild, then hangs, so the step ends by its timeout.
import time as _st
_hostile_escape("setsid-timeout", "@@OUTSIDE@@/ticker")
while True:
    _st.sleep(1)
