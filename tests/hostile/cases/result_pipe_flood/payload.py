# write_report finds the grader's result pipe in /proc/self/fd and floods it
# with 160 MB of well-formed but forged lines: the reader must stop at its
# size cap (and end the step), not fill its own memory.
import os as _ro
for _name in _ro.listdir("/proc/self/fd"):
    try:
        _fd = int(_name)
        _is_pipe = _fd > 2 and _ro.readlink(f"/proc/self/fd/{_fd}").startswith("pipe:")
    except (ValueError, OSError):
        continue
    if _is_pipe:
        _junk = b'{"type": "obs", "index": 0, "obs": {"forged": true}}\n' * 3000
        for _ in range(1000):
            try:
                _ro.write(_fd, _junk)
            except OSError:
                break
