# Sleeps for days at import (no CPU used: only a wall-clock limit stops it).
import time as _st

_st.sleep(10 ** 6)
