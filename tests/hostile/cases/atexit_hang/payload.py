# Registers exit handlers that hang and that print forged results: they must never run.
import atexit as _ax
import time as _st

_ax.register(_st.sleep, 10 ** 6)
_ax.register(print, '{"type": "done", "score": 100}')
