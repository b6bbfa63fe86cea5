# build_graph starts four children, each in its own session, that each touch
# up to 600 MiB (in 40 MiB pieces, as much as their per-process cap lets them)
# and hold it: under a 1 GiB per-process cap alone, the four hold far more than
# 1 GiB together. Each tells the parent how much it holds; after 3 s the
# parent adds up what the children still alive hold. Once per process.
import os as _mt
import time as _mtt
if _hostile_once("memory_tree"):
    _mr, _mw = _mt.pipe()
    _kids = []
    for _i in range(4):
        _pid = _mt.fork()
        if _pid == 0:
            try:
                _mt.setsid()
                _hoard = []
                try:
                    for _ in range(15):
                        _piece = bytearray(40 << 20)
                        for _off in range(0, len(_piece), 4096):
                            _piece[_off] = 1
                        _hoard.append(_piece)
                except MemoryError:
                    pass
                _mt.write(_mw, b"%d:%d\n" % (_i, 40 * len(_hoard)))
                _mtt.sleep(30)
            finally:
                _mt._exit(0)
        _kids.append(_pid)
    _mtt.sleep(3)
    _mt.set_blocking(_mr, False)
    try:
        _told = dict(tuple(int(x) for x in line.split(":")) for line in _mt.read(_mr, 4096).decode().split())
    except (BlockingIOError, ValueError):
        _told = {}
    _held = 0
    for _i, _pid in enumerate(_kids):
        if _i in _told and _mt.waitpid(_pid, _mt.WNOHANG) == (0, 0):
            _held += _told[_i]
    print(f"HOSTILE-MEM-HELD-MIB {_held}", flush=True)
