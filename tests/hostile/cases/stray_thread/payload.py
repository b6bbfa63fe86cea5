# Starts a non-daemon thread at import that never ends (and keeps printing):
# the interpreter cannot exit normally, but the results already sent must count.
import threading as _tt
import time as _st


def _forever():
    while True:
        print("HOSTILE: still here", flush=True)
        _st.sleep(0.05)


_tt.Thread(target=_forever, name="hostile-stray", daemon=False).start()
